/* The flag parser: getopt_long semantics and the exact line each mistake gets. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cli.h"
#include "common/cli_help.h"
#include "common/clock.h"
#include "common/suggest.h"

struct opts {
	bool quiet;
	const char *name;
	uint64_t count;
	uint32_t threads;
	uint8_t small;
	uint64_t wait_ns, timeout_ns, window_ns;
	double rate, ratio;
	int mode;
	bool herd;
	const char *headers[3];
	size_t nheaders;
	const char *urls[2];
	uint32_t nurls;
	unsigned actions;
	const char *custom;
	bool count_given;
	uint32_t body;
};

static const char *const MODES[] = { "request", "occ", NULL };

static int even(void *base, const struct cli_option *o, const char *v, char *why, size_t wl)
{
	(void)o;
	if (strlen(v) % 2 != 0)
		return snprintf(why, wl, "has an odd length"), -1;
	((struct opts *)base)->custom = v;
	return 0;
}

static int bump(void *base, const struct cli_option *o, const char *v, char *why, size_t wl)
{
	(void)o;
	ck_assert_ptr_null(v);
	if (((struct opts *)base)->actions == 2)
		return snprintf(why, wl, "given too often"), -1;
	((struct opts *)base)->actions++;
	return 0;
}

static const char *even_words(void)
{
	return "aa, bbbb, cccccc";
}

static const struct cli_option OPTS[] = {
	{ "--quiet", CLI_BOOL, CLI_FIELD(struct opts, quiet) },
	{ "--name", CLI_STRING, CLI_FIELD(struct opts, name) },
	{ "--count", CLI_U64, CLI_FIELD(struct opts, count), .min = 1, .max = 100, CLI_GIVEN(struct opts, count_given) },
	{ "--threads", CLI_U64, CLI_FIELD(struct opts, threads), .min = 1, .max = 256 },
	{ "--small", CLI_U64, CLI_FIELD(struct opts, small), .min = 0, .max = 255 },
	{ "--wait", CLI_DURATION, CLI_FIELD(struct opts, wait_ns), .max = UINT64_MAX },
	{ "--timeout", CLI_DURATION, CLI_FIELD(struct opts, timeout_ns), .min = NS_PER_MS, .max = UINT64_MAX },
	{ "--window", CLI_DURATION, CLI_FIELD(struct opts, window_ns), .min = 1, .max = UINT64_MAX },
	{ "--rate", CLI_RATE, CLI_FIELD(struct opts, rate), .dmin = 0.001, .dmax = 1e7 },
	{ "--ratio", CLI_DOUBLE, CLI_FIELD(struct opts, ratio), .dmin = 0, .dmax = 1 },
	{ "--workload", CLI_CHOICE, CLI_FIELD(struct opts, mode), .words = MODES },
	{ "--header", CLI_LIST, CLI_FIELD(struct opts, headers), .max = 3, CLI_COUNT(struct opts, nheaders) },
	{ "--even", CLI_CUSTOM, .fn = even, .values = even_words },
	{ "--body", CLI_BYTES, CLI_FIELD(struct opts, body), .min = 1, .max = 1ULL << 30 },
	{ "--bump", CLI_ACTION, .fn = bump },
	{ "URL", CLI_LIST, CLI_FIELD(struct opts, urls), .max = 2, CLI_COUNT(struct opts, nurls) },
	{ NULL },
};

static void no_usage(FILE *f)
{
	(void)f;
}

static const struct cli_command CMD = { "test", no_usage, NULL };

static char err[512];

/* Parse a NULL-terminated argv (without the command name) into *o. */
static int run(struct opts *o, const char *const *args)
{
	char *argv[32] = { "test" };
	int argc = 1;
	struct cli_group g = { OPTS, o };

	memset(o, 0, sizeof(*o));
	while (args[argc - 1] != NULL) {
		argv[argc] = (char *)args[argc - 1];
		argc++;
	}
	err[0] = '\0';
	return cli_parse(&CMD, &g, 1, argc, argv, err, sizeof(err));
}

#define FAILS(line, ...)                                                        \
	do {                                                                    \
		const char *const a_[] = { __VA_ARGS__, NULL };                 \
		ck_assert_int_eq(run(&o, a_), -1);                              \
		ck_assert_str_eq(err, line);                                    \
	} while (0)

START_TEST(both_forms_and_types)
{
	struct opts o;
	const char *const a[] = { "--quiet", "--name", "x", "--count=7", "--threads", "256", "--small=200",
		                  "--wait", "250ms", "--timeout=2s", "--rate", "30/1m", "--ratio=0.5",
		                  "--workload", "occ", "--even=ab", "--bump", "--bump", NULL };

	ck_assert_int_eq(run(&o, a), 0);
	ck_assert(o.quiet);
	ck_assert_str_eq(o.name, "x");
	ck_assert_uint_eq(o.count, 7);
	ck_assert(o.count_given);
	ck_assert_uint_eq(o.threads, 256);
	ck_assert_uint_eq(o.small, 200);
	ck_assert_uint_eq(o.wait_ns, 250 * NS_PER_MS);
	ck_assert_uint_eq(o.timeout_ns, 2 * NS_PER_SEC);
	ck_assert_double_eq_tol(o.rate, 0.5, 1e-12);
	ck_assert_double_eq_tol(o.ratio, 0.5, 1e-12);
	ck_assert_int_eq(o.mode, 1);
	ck_assert_str_eq(o.custom, "ab");
	ck_assert_uint_eq(o.actions, 2);
	ck_assert_uint_eq(o.nurls, 0);
	ck_assert(!run(&o, (const char *const[]){ "--rate", "2.5", "--name=", "--count", "3", "--count", "9", NULL }));
	ck_assert_double_eq_tol(o.rate, 2.5, 1e-12);
	ck_assert_str_eq(o.name, "");           /* --flag= gives the empty value */
	ck_assert_uint_eq(o.count, 9);          /* the later flag wins */
	ck_assert(!run(&o, (const char *const[]){ "--name", "--other", NULL }));
	ck_assert_str_eq(o.name, "--other");    /* a value-taking flag takes the next argument... */
	ck_assert(!run(&o, (const char *const[]){ "--name=--quiet", NULL }));
	ck_assert_str_eq(o.name, "--quiet");    /* ...and one of its own flags with = only */
	ck_assert(!o.quiet && !o.count_given);
}
END_TEST

START_TEST(mistakes_have_one_wording)
{
	struct opts o;

	FAILS("ratelab test: unknown option '--x'", "--x");
	FAILS("ratelab test: unknown option '--x'", "--x=1");
	FAILS("ratelab test: unknown option '-q'", "-q");
	FAILS("ratelab test: --count needs a value", "--quiet", "--count");
	FAILS("ratelab test: --quiet takes no value", "--quiet=yes");
	FAILS("ratelab test: --count: '0' is not a number from 1 to 100", "--count", "0");
	FAILS("ratelab test: --count: 'x' is not a number from 1 to 100", "--count=x");
	FAILS("ratelab test: --count: '-1' is not a number from 1 to 100", "--count", "-1");
	FAILS("ratelab test: --count: '' is not a number from 1 to 100", "--count=");
	FAILS("ratelab test: --threads: '257' is not a number from 1 to 256", "--threads", "257");
	FAILS("ratelab test: --small: '256' is not a number from 0 to 255", "--small", "256");
	FAILS("ratelab test: --wait: 'soon' is not a duration such as 250ms, 2s or 1m", "--wait", "soon");
	FAILS("ratelab test: --wait: '5' needs a unit, e.g. 5ms or 5s (ns, us, ms, s, m, h, d)", "--wait", "5");
	FAILS("ratelab test: --wait: '0.5' needs a unit, e.g. 0.5ms or 0.5s (ns, us, ms, s, m, h, d)", "--wait", "0.5");
	FAILS("ratelab test: unknown option '--cuont' (did you mean --count?)", "--cuont", "3");
	FAILS("ratelab test: unknown option '--qiet' (did you mean --quiet?)", "--qiet");
	FAILS("ratelab test: unknown option '--xyzzy'", "--xyzzy");
	FAILS("ratelab test: --count needs a value before --quiet", "--count", "--quiet");
	FAILS("ratelab test: --count needs a value before --wait", "--count", "--wait=1s");
	FAILS("ratelab test: --timeout: '500us' is not a duration of at least 1ms", "--timeout", "500us");
	FAILS("ratelab test: --window: '0' is not a duration above 0", "--window", "0");
	/* not a duration at all, whatever the bounds; and one past any duration, not "at least 1ms" */
	FAILS("ratelab test: --timeout: '1sec' is not a duration such as 250ms, 2s or 1m", "--timeout", "1sec");
	FAILS("ratelab test: --timeout: '99999999999s' is longer than any duration (over 100,000 days)", "--timeout",
	      "99999999999s");
	FAILS("ratelab test: --rate: 'x' is not a rate such as 50, 2.5 or 30/1m (0.001 to 1e+07 per second)",
	      "--rate", "x");
	FAILS("ratelab test: --rate: '0' is not a rate such as 50, 2.5 or 30/1m (0.001 to 1e+07 per second)",
	      "--rate", "0");
	FAILS("ratelab test: --ratio: '1.5' is not a number from 0 to 1", "--ratio", "1.5");
	FAILS("ratelab test: --workload: 'write' is not one of request, occ", "--workload", "write");
	FAILS("ratelab test: --even: 'abc' has an odd length", "--even", "abc");
	FAILS("ratelab test: --bump given too often", "--bump", "--bump", "--bump");
	FAILS("ratelab test: --header: 'd' is one too many (at most 3)", "--header", "a", "--header", "b",
	      "--header", "c", "--header", "d");
	FAILS("ratelab test: URL: 'c' is one too many (at most 2)", "a", "b", "c");
}
END_TEST

START_TEST(duration_bounds_read_exactly)
{
	static const struct cli_option T[] = {
		{ "--t", CLI_DURATION, .min = 1500 * NS_PER_US, .max = 90 * NS_PER_SEC },
		{ NULL },
	};
	uint64_t ns = 0;
	struct cli_group g = { T, &ns };
	char *argv[] = { "test", "--t", "1ms", NULL };

	ck_assert_int_eq(cli_parse(&CMD, &g, 1, 3, argv, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "ratelab test: --t: '1ms' is not a duration from 1500us to 90s");
	argv[2] = "1m";
	ck_assert_int_eq(cli_parse(&CMD, &g, 1, 3, argv, err, sizeof(err)), 0);
	ck_assert_uint_eq(ns, 60 * NS_PER_SEC);
}
END_TEST

START_TEST(values_are_quoted_on_one_line)
{
	struct opts o;
	char long_value[400];

	FAILS("ratelab test: --count: 'a\\r\\nb\\t\\x01' is not a number from 1 to 100", "--count", "a\r\nb\t\x01");
	FAILS("ratelab test: unknown option '--x\\ny'", "--x\ny");
	memset(long_value, '7', sizeof(long_value) - 1);
	long_value[sizeof(long_value) - 1] = '\0';
	FAILS("ratelab test: --count: '777777777777777777777777777777777777777777777777777777777777"
	      "777777777777777777777777777777777777777777777777777777777777...' is not a number from 1 to 100",
	      "--count", long_value);
	ck_assert(cli_has_crlf("a\rb") && cli_has_crlf("a\n") && !cli_has_crlf("a b") && !cli_has_crlf(NULL));
	/* whatever a reason or a later check quotes stays on one line too */
	ck_assert_int_eq(cli_fail(err, sizeof(err), "test", "--scenario: '%s' is not a file", "a\nb"), -1);
	ck_assert_str_eq(err, "ratelab test: --scenario: 'a\\nb' is not a file");
	ck_assert_int_eq(cli_bad_value(err, sizeof(err), "test", "--f", "v\r", "has '%s'", "\r"), -1);
	ck_assert_str_eq(err, "ratelab test: --f: 'v\\r' has '\\r'");
}
END_TEST

START_TEST(positional_arguments)
{
	struct opts o;
	const char *const a[] = { "http://a/", "--quiet", "http://b/", NULL };
	const char *const dd[] = { "--", "--quiet", NULL };

	ck_assert_int_eq(run(&o, a), 0);
	ck_assert_uint_eq(o.nurls, 2);
	ck_assert_str_eq(o.urls[0], "http://a/");
	ck_assert_str_eq(o.urls[1], "http://b/");
	ck_assert(o.quiet);
	ck_assert_int_eq(run(&o, dd), 0);                 /* after "--" a flag is an argument */
	ck_assert_uint_eq(o.nurls, 1);
	ck_assert_str_eq(o.urls[0], "--quiet");
	ck_assert(!o.quiet);
	ck_assert_int_eq(run(&o, (const char *const[]){ "-", NULL }), 0);  /* "-" is an argument */
	ck_assert_str_eq(o.urls[0], "-");
}
END_TEST

struct file_opts {
	const char *file;
	const char *scenario;
	char **cmd;
	bool verbose;
};

static const struct cli_option FILE_OPTS[] = {
	{ "FILE", CLI_STRING, CLI_FIELD(struct file_opts, file), .required = true },
	{ NULL },
};

static const struct cli_option REST_OPTS[] = {
	{ "--scenario", CLI_STRING, CLI_FIELD(struct file_opts, scenario), .required = true },
	{ "--verbose", CLI_BOOL, CLI_FIELD(struct file_opts, verbose) },
	{ "COMMAND", CLI_REST, CLI_FIELD(struct file_opts, cmd), .required = true },
	{ NULL },
};

static int parse_with(const struct cli_option *t, struct file_opts *o, int argc, char **argv)
{
	struct cli_group g = { t, o };

	memset(o, 0, sizeof(*o));
	err[0] = '\0';
	return cli_parse(&CMD, &g, 1, argc, argv, err, sizeof(err));
}

START_TEST(one_file_and_a_command_after_dashdash)
{
	struct file_opts o;
	char *one[] = { "test", "t.json", "extra", NULL };
	char *rest[] = { "test", "--scenario", "s", "--", "curl", "--help", "-v", NULL };
	char *before[] = { "test", "--scenario", "s", "curl", NULL };

	ck_assert_int_eq(parse_with(FILE_OPTS, &o, 2, one), 0);
	ck_assert_str_eq(o.file, "t.json");
	ck_assert_int_eq(parse_with(FILE_OPTS, &o, 3, one), -1);
	ck_assert_str_eq(err, "ratelab test: unexpected argument 'extra'");
	ck_assert_int_eq(parse_with(FILE_OPTS, &o, 1, one), -1);
	ck_assert_str_eq(err, "ratelab test: missing FILE");
	ck_assert_int_eq(parse_with(REST_OPTS, &o, 7, rest), 0);
	ck_assert_str_eq(o.scenario, "s");
	ck_assert_ptr_eq(o.cmd, rest + 4);
	ck_assert_str_eq(o.cmd[1], "--help");   /* the command's own flags are left alone */
	ck_assert_ptr_null(o.cmd[3]);
	ck_assert_int_eq(parse_with(REST_OPTS, &o, 4, before), -1);
	ck_assert_str_eq(err, "ratelab test: unexpected argument 'curl' (COMMAND goes after --)");
	ck_assert_int_eq(parse_with(REST_OPTS, &o, 4, rest), -1);
	ck_assert_str_eq(err, "ratelab test: missing COMMAND after --");
	ck_assert_int_eq(parse_with(REST_OPTS, &o, 1, rest), -1);
	ck_assert_str_eq(err, "ratelab test: --scenario is required");
}
END_TEST

START_TEST(help_comes_first)
{
	struct opts o;

	ck_assert_int_eq(run(&o, (const char *const[]){ "--help", NULL }), 1);
	ck_assert_int_eq(run(&o, (const char *const[]){ "--quiet", "-h", "--bogus", NULL }), 1);
	ck_assert_int_eq(run(&o, (const char *const[]){ "--bogus", "--help", NULL }), -1);
	ck_assert_int_eq(run(&o, (const char *const[]){ "--", "--help", NULL }), 0);
	ck_assert_str_eq(o.urls[0], "--help");
	ck_assert_int_eq(run(&o, (const char *const[]){ "--name", "--help", NULL }), 0);  /* a value */
	ck_assert_str_eq(o.name, "--help");
}
END_TEST

struct other {
	bool verbose;
	uint64_t seed;
};

START_TEST(groups_write_their_own_struct)
{
	static const struct cli_option OTHER[] = {
		{ "--verbose", CLI_BOOL, CLI_FIELD(struct other, verbose) },
		{ "--seed", CLI_U64, CLI_FIELD(struct other, seed), .max = UINT64_MAX },
		{ NULL },
	};
	struct opts o = { 0 };
	struct other x = { 0 };
	struct cli_group g[] = { { OPTS, &o }, { OTHER, &x } };
	char *argv[] = { "test", "--verbose", "--count", "5", "--seed=18446744073709551615", NULL };

	ck_assert_int_eq(cli_parse(&CMD, g, 2, 5, argv, err, sizeof(err)), 0);
	ck_assert(x.verbose);
	ck_assert_uint_eq(x.seed, UINT64_MAX);
	ck_assert_uint_eq(o.count, 5);
}
END_TEST

START_TEST(messages_for_later_checks)
{
	ck_assert_int_eq(cli_bad_value(err, sizeof(err), "herd", "--url", "nan\r", "is not an %s URL", "http://"), -1);
	ck_assert_str_eq(err, "ratelab herd: --url: 'nan\\r' is not an http:// URL");
	ck_assert_int_eq(cli_fail(err, sizeof(err), "herd", "--policies lists %d policies", 0), -1);
	ck_assert_str_eq(err, "ratelab herd: --policies lists 0 policies");
	ck_assert_int_eq(cli_fail(err, 8, "herd", "%s", "long text"), -1);
	ck_assert_str_eq(err, "ratelab");      /* cut at the buffer, still terminated */
}
END_TEST

START_TEST(result_files_are_checked_before_a_run)
{
	char dir[] = "/tmp/ratelab-cli-XXXXXX", path[160];

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/out.json", dir);
	ck_assert_int_eq(cli_check_output(err, sizeof(err), "hammer", "--json", NULL), 0);
	ck_assert_int_eq(cli_check_output(err, sizeof(err), "hammer", "--json", "-"), 0);
	ck_assert_int_eq(cli_check_output(err, sizeof(err), "hammer", "--json", path), 0);
	ck_assert_int_eq(access(path, F_OK), -1);   /* the check creates nothing */
	ck_assert_int_eq(cli_check_output(err, sizeof(err), "hammer", "--json", "/nonexistent-dir/x.json"), -1);
	ck_assert_str_eq(err, "ratelab hammer: --json: '/nonexistent-dir/x.json' cannot be written (No such file or directory)");
	ck_assert_int_eq(cli_check_output(err, sizeof(err), "verify", "--json", dir), -1);
	snprintf(path, sizeof(path), "ratelab verify: --json: '%s' cannot be written (a directory)", dir);
	ck_assert_str_eq(err, path);
	ck_assert_int_eq(cli_check_output(err, sizeof(err), "verify", "--json", ""), -1);
	ck_assert_str_eq(err, "ratelab verify: --json: '' cannot be written (an empty path)");
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* Sizes read one way everywhere (binary units); near misses name the word meant. */
START_TEST(sizes_and_suggestions)
{
	static const struct { const char *v; uint32_t bytes; } SIZES[] = {
		{ "65536", 65536 }, { "64K", 65536 }, { "64k", 65536 }, { "64KB", 65536 }, { "64KiB", 65536 },
		{ "1M", 1048576 }, { "1MB", 1048576 }, { "1MiB", 1048576 }, { "1G", 1073741824 },
	};
	struct opts o;
	char near[32];

	for (size_t i = 0; i < sizeof(SIZES) / sizeof(SIZES[0]); i++) {
		ck_assert_int_eq(run(&o, (const char *const[]){ "--body", SIZES[i].v, NULL }), 0);
		ck_assert_uint_eq(o.body, SIZES[i].bytes);
	}
	FAILS("ratelab test: --body: '2G' is not a size such as 64K, 1M or 1MiB (1 B to 1 GiB; K = 1024)", "--body", "2G");
	FAILS("ratelab test: --body: '1.5M' is not a size such as 64K, 1M or 1MiB (1 B to 1 GiB; K = 1024)", "--body",
	      "1.5M");
	FAILS("ratelab test: --workload: 'ocx' is not one of request, occ (did you mean occ?)", "--workload", "ocx");
	FAILS("ratelab test: --even: 'bbbbb' has an odd length (did you mean bbbb?)", "--even", "bbbbb");
	FAILS("ratelab test: --even: 'zzz' has an odd length", "--even", "zzz");
	ck_assert(suggest_closest("navie", "none, lab, naive", near, sizeof(near)));
	ck_assert_str_eq(near, "naive");
	ck_assert(suggest_closest("server", "serve hammer", near, sizeof(near)));
	ck_assert_str_eq(near, "serve");
	ck_assert(!suggest_closest("naive", "naive, lab", near, sizeof(near)));  /* itself is no suggestion */
	ck_assert(!suggest_closest("xyz", "naive, lab", near, sizeof(near)));
}
END_TEST

/* The table the completion generator reads: every option, its kind and its words, in table order. */
START_TEST(options_table_is_written)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	const struct cli_option *const tables[] = { OPTS, NULL };

	ck_assert_int_eq(cli_help_write_options(f, tables), 0);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(buf, "--quiet flag\n--name file\n--count value\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\n--workload value request occ\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\n--even value aa bbbb cccccc\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\n--bump flag\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\nURL positional\n"));
	free(buf);
}
END_TEST

static const struct cli_option HELP_OPTS[] = {
	{ "--out", CLI_STRING, CLI_FIELD(struct opts, name), .arg = "FILE", .section = CLI_SEC_OUTPUT,
	  .help = "where the result goes" },
	{ "--workload", CLI_CHOICE, CLI_FIELD(struct opts, mode), .words = MODES, .arg = "W", .section = CLI_SEC_RUN,
	  .help = "what each client does, a sentence long enough to be wrapped at eighty columns by the writer." },
	{ "--a-very-long-flag-name", CLI_BOOL, CLI_FIELD(struct opts, quiet), .section = CLI_SEC_RUN, .help = "short" },
	{ "--hidden", CLI_BOOL, CLI_FIELD(struct opts, herd) },
	{ NULL },
};

/* The shared layout: sections in order, words appended, a long lead on its own line, 80 columns. */
START_TEST(usage_has_one_layout)
{
	static const struct cli_option *const tables[] = { HELP_OPTS, NULL };
	static const struct cli_help help = {
		.usage = "ratelab test [options]\nratelab test --list",
		.about = "Tests the writer.",
		.tables = tables,
		.exits = "0\tdone\n2\ta bad flag or value\n",
	};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cli_help_write(f, &help);
	fclose(f);
	ck_assert_str_eq(buf,
	                 "usage: ratelab test [options]\n"
	                 "       ratelab test --list\n"
	                 "\n"
	                 "Tests the writer.\n"
	                 "\n"
	                 "what to run:\n"
	                 "  --workload W          what each client does, a sentence long enough to be\n"
	                 "                        wrapped at eighty columns by the writer. One of:\n"
	                 "                        request, occ.\n"
	                 "  --a-very-long-flag-name\n"
	                 "                        short\n"
	                 "\n"
	                 "output:\n"
	                 "  --out FILE            where the result goes\n"
	                 "\n"
	                 "exit status:\n"
	                 "  0     done\n"
	                 "  2     a bad flag or value\n");
	free(buf);
}
END_TEST

/* Two word lists as one for a help's "One of:": each word once, ", " between, the first list's order first. */
START_TEST(word_lists_join_without_repeats)
{
	char out[128], tiny[12];

	cli_words_join(out, sizeof(out), "none,exponential,full", "none, lab, full, grpc");
	ck_assert_str_eq(out, "none, exponential, full, lab, grpc");
	cli_words_join(out, sizeof(out), "", "a, b");
	ck_assert_str_eq(out, "a, b");
	cli_words_join(out, sizeof(out), "a,,b, ", "");
	ck_assert_str_eq(out, "a, b");
	/* no room: whole words only */
	cli_words_join(tiny, sizeof(tiny), "alpha,beta,gamma", "");
	ck_assert_str_eq(tiny, "alpha");
}
END_TEST

Suite *cli_suite(void)
{
	Suite *s = suite_create("cli");
	TCase *tc = tcase_create("cli");

	tcase_add_test(tc, both_forms_and_types);
	tcase_add_test(tc, mistakes_have_one_wording);
	tcase_add_test(tc, duration_bounds_read_exactly);
	tcase_add_test(tc, values_are_quoted_on_one_line);
	tcase_add_test(tc, positional_arguments);
	tcase_add_test(tc, word_lists_join_without_repeats);
	tcase_add_test(tc, one_file_and_a_command_after_dashdash);
	tcase_add_test(tc, help_comes_first);
	tcase_add_test(tc, groups_write_their_own_struct);
	tcase_add_test(tc, messages_for_later_checks);
	tcase_add_test(tc, result_files_are_checked_before_a_run);
	tcase_add_test(tc, sizes_and_suggestions);
	tcase_add_test(tc, options_table_is_written);
	tcase_add_test(tc, usage_has_one_layout);
	suite_add_tcase(s, tc);
	return s;
}
