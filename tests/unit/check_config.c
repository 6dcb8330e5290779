/* --config route files: what is accepted, and errors that name file, line and problem. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "server/config.h"

static int parse(const char *text, struct config_route *r, size_t *n, char *err, size_t errlen)
{
	return config_parse(text, "routes.json", r, CONFIG_MAX_ROUTES, n, err, errlen);
}

START_TEST(two_routes)
{
	static const char *text =
		"{\"routes\": [\n"
		"  {\"prefix\": \"/api\", \"limiter\": \"token-bucket\", \"limit\": 5, \"window\": \"2s\", \"burst\": 10, \"key\": \"header:X-User\"},\n"
		"  {\"prefix\": \"/login\", \"layers\": [\"30/1m\", \"500/1h\"]}\n"
		"]}\n";
	struct config_route r[CONFIG_MAX_ROUTES];
	size_t n = 0;
	char err[256] = "";

	ck_assert_msg(parse(text, r, &n, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(r[0].prefix, "/api");
	ck_assert_str_eq(r[0].limiter, "token-bucket");
	ck_assert_uint_eq(r[0].params.limit, 5);
	ck_assert_uint_eq(r[0].params.window_ns, 2 * NS_PER_SEC);
	ck_assert_uint_eq(r[0].params.burst, 10);
	ck_assert(r[0].key_set);
	ck_assert_int_eq(r[0].key, CONFIG_KEY_HEADER);
	ck_assert_str_eq(r[0].key_header, "X-User");
	ck_assert_str_eq(r[1].limiter, "layered");
	ck_assert_uint_eq(r[1].params.nlayers, 2);
	ck_assert_uint_eq(r[1].params.layers[1].limit, 500);
	ck_assert_uint_eq(r[1].params.layers[1].window_ns, 3600 * NS_PER_SEC);
	ck_assert(!r[1].key_set);
}
END_TEST

/* A prefix is kept in the normal form request paths are matched in: "/api/../x" matches "/x". */
START_TEST(prefixes_normalised)
{
	static const char *text = "{\"routes\": [{\"prefix\": \"/api/../x\"}, {\"prefix\": \"//b/./c/\"},"
	                          " {\"prefix\": \"/%7Eu\"}, {\"prefix\": \"/l\", \"limit\": 4294967295}]}";
	struct config_route r[CONFIG_MAX_ROUTES];
	size_t n = 0;
	char err[256] = "";

	ck_assert_msg(parse(text, r, &n, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(n, 4);
	ck_assert_str_eq(r[0].prefix, "/x");
	ck_assert_str_eq(r[1].prefix, "/b/c/");
	ck_assert_str_eq(r[2].prefix, "/~u");
	ck_assert_uint_eq(r[3].params.limit, 4294967295u);
}
END_TEST

struct bad_case {
	const char *text;
	const char *want;
};

START_TEST(errors_name_line_and_problem)
{
	static const struct bad_case bad[] = {
		{ "{\"routes\": [\n  {\"prefix\": \"/a\",\n   \"limit\": 5,,\n}]}", "routes.json:3:" },
		{ "{\"routes\": [\n  {\"prefix\": \"/a\"},\n  {\"prefix\": \"/b\",\n   \"limiter\": \"bogus\"}\n]}",
		  "routes.json:4: routes[1].limiter: unknown limiter" },
		{ "{\"routes\": [\n  {\"prefix\": \"/a\", \"limt\": 5}\n]}", "routes.json:2: routes[0].limt: unknown field" },
		{ "{\"routes\": [\n  {\"limit\": 5}\n]}", "routes.json:2: routes[0]: needs \"prefix\"" },
		{ "{\"routes\": [\n  {\"prefix\": \"/a\",\n   \"limit\": 0}\n]}", "routes.json:3: routes[0].limit: must be" },
		{ "{\"routes\": [\n  {\"prefix\": \"/a\",\n\n   \"window\": \"soon\"}\n]}", "routes.json:4: routes[0].window" },
		{ "{\"routes\": [\n  {\"prefix\": \"/a\",\n   \"layers\": [\"30/1m\", \"x/y\"]}\n]}",
		  "routes.json:3: routes[0].layers: layer 1" },
		{ "{\"routes\": [{\"prefix\": \"/a\"},\n {\"prefix\": \"/a\"}]}", "routes.json:2: routes[1].prefix: duplicate" },
		/* prefixes meet in the normal form of request paths: these were a second, dead route */
		{ "{\"routes\": [{\"prefix\": \"/api\"},\n {\"prefix\": \"//api\"}]}",
		  "routes.json:2: routes[1].prefix: duplicate" },
		{ "{\"routes\": [{\"prefix\": \"/api\"},\n {\"prefix\": \"/x/../%61pi\"}]}",
		  "routes.json:2: routes[1].prefix: duplicate" },
		{ "{\"routes\": [{\"prefix\": \"/a%zz\"}]}", "routes[0].prefix: " },
		/* the command line's bounds: --limit and --burst stop at 4294967295 */
		{ "{\"routes\": [{\"prefix\": \"/a\", \"limiter\": \"concurrency\", \"limit\": 4294967297}]}",
		  "routes[0].limit: must be a whole number from 1 to 4294967295" },
		{ "{\"routes\": [{\"prefix\": \"/a\", \"burst\": 4294967296}]}",
		  "routes[0].burst: must be a whole number from 1 to 4294967295" },
		/* what the command line refuses, a route refuses too: it was accepted and ignored */
		{ "{\"routes\": [{\"prefix\": \"/a\", \"limiter\": \"gcra\", \"layers\": [\"1/10s\"]}]}",
		  "routes.json:1: routes[0]: gcra takes no layers (only layered does)" },
		{ "{\"routes\": [{\"prefix\": \"/a\", \"limiter\": \"sliding-log\", \"burst\": 3}]}",
		  "routes.json:1: routes[0].burst: goes with token-bucket, leaky-bucket and gcra only" },
		{ "{\"routes\": []}", "routes.json:1: needs an object with a non-empty \"routes\" list" },
		{ "{\"routes\": [{\"prefix\": \"/a\"}], \"extra\": 1}", "only \"routes\"" },
		{ "", "routes.json:1:" },
	};
	struct config_route r[CONFIG_MAX_ROUTES];
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t n = 0;

		err[0] = '\0';
		ck_assert_msg(parse(bad[i].text, r, &n, err, sizeof(err)) == -1, "case %zu accepted", i);
		ck_assert_msg(strstr(err, bad[i].want) != NULL, "case %zu: '%s' lacks '%s'", i, err, bad[i].want);
	}
}
END_TEST

START_TEST(load_file)
{
	char path[] = "/tmp/ratelab-config-XXXXXX";
	struct config_route r[CONFIG_MAX_ROUTES];
	size_t n = 0;
	char err[256] = "";
	int fd = mkstemp(path);
	FILE *f;

	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	fputs("{\"routes\": [{\"prefix\": \"/x\", \"limiter\": \"fixed-window\", \"limit\": 3}]}\n", f);
	fclose(f);
	ck_assert_msg(config_load(path, r, CONFIG_MAX_ROUTES, &n, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(r[0].limiter, "fixed-window");
	/* layers alone mean the layered limiter, as --layer alone does */
	f = fopen(path, "w");
	fputs("{\"routes\": [{\"prefix\": \"/x\", \"layers\": [\"1/10s\", \"5/1m\"]}]}\n", f);
	fclose(f);
	ck_assert_msg(config_load(path, r, CONFIG_MAX_ROUTES, &n, err, sizeof(err)) == 0, "%s", err);
	ck_assert_str_eq(r[0].limiter, "layered");
	ck_assert_uint_eq(r[0].params.nlayers, 2);
	unlink(path);
	ck_assert_int_eq(config_load(path, r, CONFIG_MAX_ROUTES, &n, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, path));
}
END_TEST

START_TEST(keys)
{
	enum config_key k;
	char h[CONFIG_HEADER_LEN], err[128];

	ck_assert_int_eq(config_parse_key("global", &k, h, sizeof(h), err, sizeof(err)), 0);
	ck_assert_int_eq(k, CONFIG_KEY_GLOBAL);
	ck_assert_int_eq(config_parse_key("header:X-Api-Key", &k, h, sizeof(h), err, sizeof(err)), 0);
	ck_assert_str_eq(h, "X-Api-Key");
	ck_assert_int_eq(config_parse_key("header:", &k, h, sizeof(h), err, sizeof(err)), -1);
	ck_assert_int_eq(config_parse_key("cookie", &k, h, sizeof(h), err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "cookie"));
}
END_TEST

Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("routes");

	tcase_add_test(tc, two_routes);
	tcase_add_test(tc, prefixes_normalised);
	tcase_add_test(tc, errors_name_line_and_problem);
	tcase_add_test(tc, load_file);
	tcase_add_test(tc, keys);
	suite_add_tcase(s, tc);
	return s;
}
