/* Every subcommand's command line, through the real binary: each mistake's exact line and exit 2. */
#include <check.h>
#include <curl/curl.h>
#include <microhttpd.h>
#include <stdio.h>
#include <string.h>

#include "common/version.h"
#include "tests/harness/testutil.h"

#define RUN_MS 10000

struct mistake {
	const char *args[16];   /* the subcommand first, NULL-terminated */
	const char *err;        /* the whole of stderr */
};

/* Each row exits 2 with exactly its line on stderr and nothing on stdout. */
static void expect_mistakes(const struct mistake *m, size_t n)
{
	struct test_run r;

	for (size_t i = 0; i < n; i++) {
		ck_assert_int_eq(testutil_run(&r, m[i].args, NULL, RUN_MS), 0);
		ck_assert_msg(r.status == 2, "%s %s: exit %d (stderr '%s')", m[i].args[0], m[i].args[1], r.status, r.err);
		ck_assert_str_eq(r.err, m[i].err);
		ck_assert_str_eq(r.out, "");
		testutil_run_free(&r);
	}
}

/* `CMD --help` and `CMD -h` exit 0 with the usage on stdout and nothing on stderr. */
static void expect_help(const char *cmd)
{
	const char *flags[] = { "--help", "-h" };
	char want[64];
	struct test_run r;

	snprintf(want, sizeof(want), "usage: ratelab %s", cmd);
	for (size_t i = 0; i < 2; i++) {
		const char *args[] = { cmd, flags[i], NULL };

		ck_assert_int_eq(testutil_run(&r, args, NULL, RUN_MS), 0);
		ck_assert_msg(r.status == 0, "%s %s: exit %d", cmd, flags[i], r.status);
		ck_assert_msg(strncmp(r.out, want, strlen(want)) == 0, "%s %s: stdout '%.80s'", cmd, flags[i], r.out);
		ck_assert_str_eq(r.err, "");
		testutil_run_free(&r);
	}
}

START_TEST(version_names_the_libraries)
{
	const char *args[] = { "--version", NULL };
	char want[256];
	struct test_run r;

	snprintf(want, sizeof(want), "ratelab %s\nlibmicrohttpd %s\nlibcurl %s\n", RATELAB_VERSION, MHD_get_version(),
	         curl_version_info(CURLVERSION_NOW)->version);
	ck_assert_int_eq(testutil_run(&r, args, NULL, RUN_MS), 0);
	ck_assert_int_eq(r.status, 0);
	ck_assert_str_eq(r.out, want);
	ck_assert_str_eq(r.err, "");
	testutil_run_free(&r);
}
END_TEST

START_TEST(cases_mistakes)
{
	static const struct mistake M[] = {
		{ { "cases", "--bogus", "t.json", NULL }, "ratelab cases: unknown option '--bogus'\n" },
		{ { "cases", "t.json", "--seed", NULL }, "ratelab cases: --seed needs a value\n" },
		{ { "cases", "--seed", "x", "t.json", NULL },
		  "ratelab cases: --seed: 'x' is not a number from 0 to 9223372036854775807\n" },
		{ { "cases", "--seed=9223372036854775808", "t.json", NULL },
		  "ratelab cases: --seed: '9223372036854775808' is not a number from 0 to 9223372036854775807\n" },
		{ { "cases", NULL }, "ratelab cases: missing FILE\n" },
		{ { "cases", "a.json", "b.json", NULL }, "ratelab cases: unexpected argument 'b.json'\n" },
	};
	char path[512];
	struct test_run r;

	expect_mistakes(M, sizeof(M) / sizeof(M[0]));
	expect_help("cases");
	testutil_path("tests/retry-cases.json", path, sizeof(path));
	{
		const char *args[] = { "cases", "--seed=7", path, NULL };

		ck_assert_int_eq(testutil_run(&r, args, NULL, RUN_MS), 0);
		ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
		ck_assert_ptr_nonnull(strstr(r.out, " passed, 0 failed\n"));
		testutil_run_free(&r);
	}
}
END_TEST

Suite *cli_suite(void)
{
	Suite *s = suite_create("cli");
	TCase *tc = tcase_create("cli");

	tcase_add_test(tc, version_names_the_libraries);
	tcase_add_test(tc, cases_mistakes);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
