/* `ratelab serve` options parsed into a config: the messages a bad value gets. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/server.h"
#include "server/server_args.h"

/* A --burst or --limit the limiters cannot take: the message names the flag and its value. */
START_TEST(bad_burst_names_value)
{
	char *too_big[] = { "serve", "--limit", "5", "--window", "1h", "--burst", "4000000000", NULL };
	char *zero[] = { "serve", "--burst", "0", NULL };
	struct server_config cfg;
	char err[512] = "";

	ck_assert_int_eq(server_config_from_args(&cfg, 7, too_big, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "ratelab serve: token-bucket: --burst 4000000000 is too large for a 3600000000000 ns window");
	ck_assert_int_eq(server_config_from_args(&cfg, 3, zero, err, sizeof(err)), -1);
	/* the value once, after the flag */
	ck_assert_str_eq(err, "ratelab serve: --burst: '0' is not a number from 1 to 4294967295");
}
END_TEST

/*
 * What serve would ignore it refuses: a --burst to a limiter without one, and
 * flags for "/" beside a --config whose own "/" route replaces them (a
 * --capacity so given was dropped without a word).
 */
START_TEST(ignored_flags_are_refused)
{
	char path[] = "/tmp/ratelab-serve-args-XXXXXX";
	char *burst[] = { "serve", "--limiter", "fixed-window", "--burst", "1", NULL };
	char *both[] = { "serve", "--config", path, "--capacity", "workers=1,service=500ms", NULL };
	char *alone[] = { "serve", "--config", path, "--key", "global", NULL };
	char *unproxied[] = { "serve", "--upstream-timeout", "5s", NULL };
	struct server_config *cfg = malloc(sizeof(*cfg));
	char err[512] = "", want[640];
	int fd = mkstemp(path);
	FILE *f;

	ck_assert_int_eq(server_config_from_args(cfg, 5, burst, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "ratelab serve: --limiter: 'fixed-window' takes no --burst (token-bucket, leaky-bucket and gcra "
	                      "do)");
	ck_assert_int_ge(fd, 0);
	ck_assert_ptr_nonnull(f = fdopen(fd, "w"));
	fputs("{\"routes\": [{\"prefix\": \"/\", \"limit\": 50}]}\n", f);
	fclose(f);
	ck_assert_int_eq(server_config_from_args(cfg, 5, both, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "ratelab serve: --config: %s has a \"/\" route, which replaces the flags given for "
	         "\"/\" (--limiter, --limit, --window, --burst, --layer, --capacity, --trigger): put them in that route, "
	         "or leave it out", path);
	ck_assert_str_eq(err, want);
	/* flags that are not the route's go with it */
	ck_assert_msg(server_config_from_args(cfg, 5, alone, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(cfg->routes[0].params.limit, 50);
	/* an --upstream-* flag without --upstream bounds nothing */
	ck_assert_int_eq(server_config_from_args(cfg, 3, unproxied, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "ratelab serve: --upstream-timeout goes with --upstream");
	unlink(path);
	free(cfg);
}
END_TEST

static int parse(struct server_config *cfg, char **argv)
{
	char err[512] = "";
	int argc = 0, rc;

	while (argv[argc] != NULL)
		argc++;
	rc = server_config_from_args(cfg, argc, argv, err, sizeof(err));
	ck_assert_msg(rc == 0, "%s", err);
	return rc;
}

#define GIB (1ULL << 30)

/* The default cap of a large-state limiter is lowered to what fits, and says so. */
START_TEST(key_memory_lowers_default_cap)
{
	char *small[] = { "serve", NULL };
	char *log[] = { "serve", "--limiter", "sliding-log", "--limit", "1000", NULL };
	struct server_config cfg;
	char msg[512];

	parse(&cfg, small);
	ck_assert_uint_eq(cfg.max_key_memory, 64ULL << 20);
	ck_assert_int_eq(server_config_fit_keys(&cfg, 8 * GIB, msg, sizeof(msg)), 0);
	ck_assert_str_eq(msg, "");
	ck_assert_uint_eq(cfg.max_keys, 100000);
	parse(&cfg, log);
	ck_assert_int_eq(server_config_fit_keys(&cfg, 8 * GIB, msg, sizeof(msg)), 0);
	ck_assert_str_eq(msg, "ratelab serve: keys per route capped at 8313 (sliding-log --limit 1000 takes 8072 "
	                      "bytes a key; --max-key-memory 64 MiB)");
	ck_assert_uint_eq(cfg.max_keys, 8313);
	/* 8313 keys of 8072 bytes: 64 MiB or just under it */
	ck_assert_uint_le(cfg.max_keys * 8072, 64ULL << 20);
}
END_TEST

/* A --max-keys the budget cannot hold is refused in one line that names what it would need. */
START_TEST(key_memory_refuses_explicit_cap)
{
	char *log[] = { "serve", "--limiter", "sliding-log", "--limit", "1000", "--max-keys", "100000", NULL };
	char *huge[] = { "serve", "--max-keys", "4294967296", NULL };
	char *big_budget[] = { "serve", "--max-keys", "4294967296", "--max-key-memory", "300G", NULL };
	char *over_ram[] = { "serve", "--max-key-memory", "16G", NULL };
	struct server_config cfg;
	char msg[512];

	parse(&cfg, log);
	ck_assert_int_eq(server_config_fit_keys(&cfg, 8 * GIB, msg, sizeof(msg)), -1);
	ck_assert_str_eq(msg, "ratelab serve: --max-keys 100000: sliding-log --limit 1000 takes 8072 bytes a key, "
	                      "so the key tables could grow to 769.8 MiB, over --max-key-memory 64 MiB; use "
	                      "--max-keys 8313 or less, or raise --max-key-memory");
	parse(&cfg, huge);
	ck_assert_int_eq(server_config_fit_keys(&cfg, 8 * GIB, msg, sizeof(msg)), -1);
	ck_assert_str_eq(msg, "ratelab serve: --max-keys 4294967296: token-bucket --limit 10 takes 72 bytes a key, "
	                      "so the key tables could grow to 288 GiB, over --max-key-memory 64 MiB; use "
	                      "--max-keys 932067 or less, or raise --max-key-memory");
	parse(&cfg, big_budget);
	ck_assert_int_eq(server_config_fit_keys(&cfg, 512 * GIB, msg, sizeof(msg)), 0);
	ck_assert_uint_eq(cfg.max_keys, 4294967296ULL);
	ck_assert_int_eq(server_config_fit_keys(&cfg, 8 * GIB, msg, sizeof(msg)), -1);
	ck_assert_str_eq(msg, "ratelab serve: --max-key-memory 300 GiB: more than this machine's 8 GiB");
	parse(&cfg, over_ram);
	ck_assert_int_eq(server_config_fit_keys(&cfg, 8 * GIB, msg, sizeof(msg)), -1);
	ck_assert_int_eq(server_config_fit_keys(&cfg, 0, msg, sizeof(msg)), 0);  /* memory unknown */
}
END_TEST

/* Every route holds max_keys keys: the budget covers their sum. */
START_TEST(key_memory_counts_every_route)
{
	struct server_config cfg;
	char msg[512];

	server_config_defaults(&cfg);
	cfg.routes[1] = cfg.routes[0];
	snprintf(cfg.routes[1].prefix, sizeof(cfg.routes[1].prefix), "/api");
	cfg.nroutes = 2;
	cfg.max_key_memory = 10ULL << 20;
	ck_assert_int_eq(server_config_fit_keys(&cfg, 8 * GIB, msg, sizeof(msg)), 0);
	/* 2 x 72 bytes a key in 10 MiB */
	ck_assert_uint_eq(cfg.max_keys, (10ULL << 20) / 144);
	ck_assert_str_eq(msg, "ratelab serve: keys per route capped at 72817 (2 routes take 144 bytes a key; "
	                      "--max-key-memory 10 MiB)");
}
END_TEST

/* The connection limits sized to the open-file limit, and a limit that does not fit refused. */
START_TEST(connections_fit_open_files)
{
	struct server_config cfg;
	char msg[512];

	server_config_defaults(&cfg);
	ck_assert_int_eq(server_config_fit_connections(&cfg, 20000, msg, sizeof(msg)), 0);
	ck_assert_str_eq(msg, "");
	ck_assert_uint_eq(cfg.max_connections, SERVER_CONNECTIONS_DEFAULT);
	ck_assert_uint_eq(cfg.max_connections_per_ip, 12288);
	/* a soft limit of 1024 (64 + 4 x 2 listeners kept) */
	server_config_defaults(&cfg);
	ck_assert_int_eq(server_config_fit_connections(&cfg, 1024, msg, sizeof(msg)), 0);
	ck_assert_uint_eq(cfg.max_connections, 952);
	ck_assert_uint_eq(cfg.max_connections_per_ip, 714);
	/* given: kept; tiny limits keep every slot for one address */
	server_config_defaults(&cfg);
	cfg.max_connections = 2;
	ck_assert_int_eq(server_config_fit_connections(&cfg, 1024, msg, sizeof(msg)), 0);
	ck_assert_uint_eq(cfg.max_connections, 2);
	ck_assert_uint_eq(cfg.max_connections_per_ip, 2);
	cfg.max_connections_per_ip = 0;
	cfg.max_connections = 100000;
	cfg.threads = 4;
	ck_assert_int_eq(server_config_fit_connections(&cfg, 20000, msg, sizeof(msg)), -1);
	ck_assert_str_eq(msg, "ratelab serve: --max-connections 100000: the open-file limit is 20000 and the server "
	                      "keeps 80 for itself; use --max-connections 19920 or less, or raise the limit (ulimit -n)");
	/* a given per-address cap stands */
	server_config_defaults(&cfg);
	cfg.max_connections_per_ip = 10;
	ck_assert_int_eq(server_config_fit_connections(&cfg, 200000, msg, sizeof(msg)), 0);
	ck_assert_uint_eq(cfg.max_connections, SERVER_CONNECTIONS_DEFAULT);
	ck_assert_uint_eq(cfg.max_connections_per_ip, 10);
}
END_TEST

/* The defaults: a 10 s head deadline, connection limits left to the open-file limit. */
START_TEST(connection_defaults)
{
	char *none[] = { "serve", NULL };
	char *given[] = { "serve", "--header-timeout", "2500ms", "--max-connections-per-ip", "7", NULL };
	struct server_config cfg;

	parse(&cfg, none);
	ck_assert_uint_eq(cfg.header_timeout_ns, 10 * 1000000000ULL);
	ck_assert_uint_eq(cfg.max_connections, 0);
	ck_assert_uint_eq(cfg.max_connections_per_ip, 0);
	parse(&cfg, given);
	ck_assert_uint_eq(cfg.header_timeout_ns, 2500 * 1000000ULL);
	ck_assert_uint_eq(cfg.max_connections_per_ip, 7);
}
END_TEST

/* --headers takes a comma list of dialects; --ipv6-prefix is 64 unless given, within 1..128. */
START_TEST(dialects_and_ipv6_prefix)
{
	char *none[] = { "serve", NULL };
	char *given[] = { "serve", "--headers", "draft-03,github", "--ipv6-prefix", "48", NULL };
	char *too_long[] = { "serve", "--ipv6-prefix", "129", NULL };
	char *clash[] = { "serve", "--headers", "legacy,x-ratelimit", NULL };
	struct server_config cfg;
	char err[256];

	parse(&cfg, none);
	ck_assert_int_eq(cfg.headers, HEADERS_IETF);
	ck_assert_uint_eq(cfg.ipv6_prefix, 64);
	parse(&cfg, given);
	ck_assert_int_eq(cfg.headers, HEADERS_DRAFT03 | HEADERS_GITHUB);
	ck_assert_uint_eq(cfg.ipv6_prefix, 48);
	ck_assert_int_eq(server_config_from_args(&cfg, 3, too_long, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "ratelab serve: --ipv6-prefix: '129' is not a number from 1 to 128");
	ck_assert_int_eq(server_config_from_args(&cfg, 3, clash, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "ratelab serve: --headers: 'legacy,x-ratelimit' sends X-RateLimit-Limit twice "
	                      "(legacy, x-ratelimit and github each send it: pick one)");
}
END_TEST

Suite *serve_args_suite(void)
{
	Suite *s = suite_create("serve_args");
	TCase *tc = tcase_create("serve_args");

	tcase_add_test(tc, bad_burst_names_value);
	tcase_add_test(tc, ignored_flags_are_refused);
	tcase_add_test(tc, key_memory_lowers_default_cap);
	tcase_add_test(tc, key_memory_refuses_explicit_cap);
	tcase_add_test(tc, key_memory_counts_every_route);
	tcase_add_test(tc, connections_fit_open_files);
	tcase_add_test(tc, connection_defaults);
	tcase_add_test(tc, dialects_and_ipv6_prefix);
	suite_add_tcase(s, tc);
	return s;
}
