/* `ratelab cases` on the command line: exit codes and messages (the replay itself: unit/check_cases.c). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/harness/testutil.h"

/* Write text to a fresh temporary file; its path goes into path. */
static void write_temp(const char *text, char *path, size_t len)
{
	int fd;

	snprintf(path, len, "/tmp/ratelab-cases-XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

START_TEST(cli_exit_codes)
{
	char good[512], wrong[512], bad[512], syntax[64];
	struct test_run r;

	testutil_path("tests/retry-cases.json", good, sizeof(good));
	testutil_path("tests/fixtures/cases-wrong.json", wrong, sizeof(wrong));
	testutil_path("tests/fixtures/cases-malformed.json", bad, sizeof(bad));
	write_temp("{\"cases\": [\n  {\"policy\": \"lab\",\n", syntax, sizeof(syntax));
	{
		const char *a[] = { "cases", good, NULL };
		ck_assert_int_eq(testutil_run(&r, a, NULL, 10000), 0);
		ck_assert_int_eq(r.status, 0);
		ck_assert_ptr_nonnull(strstr(r.out, " passed, 0 failed\n"));
		testutil_run_free(&r);
	}
	{
		const char *a[] = { "cases", wrong, NULL };
		ck_assert_int_eq(testutil_run(&r, a, NULL, 10000), 0);
		ck_assert_int_eq(r.status, 1);
		ck_assert_ptr_nonnull(strstr(r.out, "1 passed, 1 failed\n"));
		testutil_run_free(&r);
	}
	{
		const char *a[] = { "cases", bad, NULL };
		ck_assert_int_eq(testutil_run(&r, a, NULL, 10000), 0);
		ck_assert_int_eq(r.status, 2);
		ck_assert_ptr_nonnull(strstr(r.err, ":4: row 2: unknown policy 'nosuch'\n"));
		ck_assert_ptr_nonnull(strstr(r.err, bad));
		testutil_run_free(&r);
	}
	{
		const char *a[] = { "cases", syntax, NULL };
		ck_assert_int_eq(testutil_run(&r, a, NULL, 10000), 0);
		ck_assert_int_eq(r.status, 2);
		ck_assert_ptr_nonnull(strstr(r.err, syntax));
		testutil_run_free(&r);
	}
	{
		const char *a[] = { "cases", "/nonexistent-dir/t.json", NULL };
		ck_assert_int_eq(testutil_run(&r, a, NULL, 10000), 0);
		ck_assert_int_eq(r.status, 2);
		ck_assert_str_eq(r.err, "ratelab cases: /nonexistent-dir/t.json: cannot open\n");
		testutil_run_free(&r);
	}
	{
		const char *a[] = { "cases", good, good, NULL };
		ck_assert_int_eq(testutil_run(&r, a, NULL, 10000), 0);
		ck_assert_int_eq(r.status, 2);
		char want[600];

		snprintf(want, sizeof(want), "ratelab cases: unexpected argument '%s'\n", good);
		ck_assert_str_eq(r.err, want);
		testutil_run_free(&r);
	}
	{
		const char *a[] = { "cases", "--frobnicate", NULL };
		ck_assert_int_eq(testutil_run(&r, a, NULL, 10000), 0);
		ck_assert_int_eq(r.status, 2);
		ck_assert_str_eq(r.err, "ratelab cases: unknown option '--frobnicate'\n");
		testutil_run_free(&r);
	}
	{
		const char *a[] = { "cases", NULL };
		ck_assert_int_eq(testutil_run(&r, a, NULL, 10000), 0);
		ck_assert_int_eq(r.status, 2);
		ck_assert_str_eq(r.err, "ratelab cases: missing FILE\n");
		testutil_run_free(&r);
	}
	{
		const char *a[] = { "cases", "--help", NULL };
		ck_assert_int_eq(testutil_run(&r, a, NULL, 10000), 0);
		ck_assert_int_eq(r.status, 0);
		ck_assert_ptr_nonnull(strstr(r.out, "usage: ratelab cases FILE"));
		testutil_run_free(&r);
	}
	unlink(syntax);
}
END_TEST

/* --junit: one testcase per row, the failed row with what was expected and what the engine decided. */
START_TEST(junit_one_testcase_per_row)
{
	char wrong[512], xml_path[] = "/tmp/ratelab-cases-junit-XXXXXX";
	int fd = mkstemp(xml_path);
	const char *a[] = { "cases", wrong, "--junit", xml_path, NULL };
	const char *unwritable[] = { "cases", wrong, "--junit", "/nonexistent-dir/c.xml", NULL };
	const char *to_stdout[] = { "cases", wrong, "--junit", "-", NULL };
	FILE *f;
	struct test_run r;
	char *xml = NULL;

	ck_assert_int_ge(fd, 0);
	close(fd);
	testutil_path("tests/fixtures/cases-wrong.json", wrong, sizeof(wrong));
	ck_assert_int_eq(testutil_run(&r, a, NULL, 10000), 0);
	ck_assert_int_eq(r.status, 1);
	ck_assert_ptr_nonnull(strstr(r.out, "1 passed, 1 failed\n"));
	testutil_run_free(&r);
	ck_assert_msg(testutil_junit_read(xml_path, &xml) == 0, "not JUnit XML: %s", xml);
	unlink(xml_path);
	ck_assert_msg(strstr(xml, "suites=1 tests=2 failures=1 skipped=0 errors=0\n") != NULL, "%s", xml);
	ck_assert_msg(strstr(xml, " | pass | \n") != NULL, "%s", xml);
	ck_assert_msg(strstr(xml, " | failure | expected ") != NULL && strstr(xml, " got ") != NULL, "%s", xml);
	ck_assert_msg(strstr(xml, " | ratelab.cases.") != NULL, "%s", xml);
	free(xml);
	/* --junit -: standard output holds the XML alone, the rows' lines go to stderr */
	ck_assert_int_eq(testutil_run(&r, to_stdout, NULL, 10000), 0);
	ck_assert_int_eq(r.status, 1);
	ck_assert_msg(strncmp(r.out, "<?xml", 5) == 0, "%s", r.out);
	ck_assert_ptr_nonnull(strstr(r.err, "1 passed, 1 failed\n"));
	ck_assert_ptr_nonnull(f = fopen(xml_path, "w"));
	fputs(r.out, f);
	fclose(f);
	testutil_run_free(&r);
	ck_assert_msg(testutil_junit_read(xml_path, &xml) == 0, "not JUnit XML: %s", xml);
	unlink(xml_path);
	ck_assert_msg(strstr(xml, "suites=1 tests=2 failures=1 skipped=0 errors=0\n") != NULL, "%s", xml);
	free(xml);
	ck_assert_int_eq(testutil_run(&r, unwritable, NULL, 10000), 0);
	ck_assert_int_eq(r.status, 2);
	ck_assert_str_eq(r.err, "ratelab cases: --junit: '/nonexistent-dir/c.xml' cannot be written (No such file or "
	                        "directory)\n");
	testutil_run_free(&r);
}
END_TEST

Suite *cases_cli_suite(void)
{
	Suite *s = suite_create("cases_cli");
	TCase *tc = tcase_create("cli");

	tcase_add_test(tc, cli_exit_codes);
	tcase_add_test(tc, junit_one_testcase_per_row);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	return s;
}
