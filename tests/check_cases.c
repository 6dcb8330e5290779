/* `ratelab cases` and cases_run_file: the retry-cases table replayed through the engine. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hammer/cases.h"
#include "tests/testutil.h"

/* Two rows: the first right, the second deliberately wrong (signaldb does not retry POST 503). */
static const char WRONG_TABLE[] =
	"{\"rng_seed\": 3, \"cases\": [\n"
	"  {\"id\": 1, \"seed\": \"000\", \"rule\": \"What is retried\", \"name\": \"POST 429 retried\",\n"
	"   \"policy\": \"signaldb\", \"method\": \"POST\", \"status\": 429,\n"
	"   \"expect\": {\"retry\": true, \"reason\": \"retry\", \"wait_ms\": [0, 250]}},\n"
	"  {\"id\": 2, \"seed\": \"000\", \"rule\": \"What is retried\", \"name\": \"POST 503 (wrong row)\",\n"
	"   \"policy\": \"signaldb\", \"method\": \"POST\", \"status\": 503,\n"
	"   \"expect\": {\"retry\": true}}\n"
	"]}\n";

/* Row 2 (line 4) names a policy that does not exist. */
static const char MALFORMED_TABLE[] =
	"[\n"
	"  {\"policy\": \"lab\", \"status\": 429, \"expect\": {\"retry\": true}},\n"
	"\n"
	"  {\"policy\": \"nosuch\", \"status\": 429, \"expect\": {\"retry\": true}}\n"
	"]\n";

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

/* Everything written to f, as a malloc'd string. */
static char *slurp(FILE *f)
{
	long n;
	char *s;

	fflush(f);
	n = ftell(f);
	ck_assert_int_ge(n, 0);
	s = calloc(1, (size_t)n + 1);
	rewind(f);
	ck_assert_uint_eq(fread(s, 1, (size_t)n, f), (size_t)n);
	return s;
}

START_TEST(replays_the_project_table)
{
	char path[512], err[512] = "", last[64];
	unsigned passed = 0, failed = 0;
	FILE *out = tmpfile();
	char *text;

	testutil_path("tests/retry-cases.json", path, sizeof(path));
	ck_assert_msg(cases_run_file(path, out, &passed, &failed, err, sizeof(err)) == 0, "%s", err);
	text = slurp(out);
	ck_assert_msg(failed == 0, "%u failing rows, the first: %.300s", failed,
	              strstr(text, "FAIL") ? strstr(text, "FAIL") : "?");
	ck_assert_uint_ge(passed, 40);
	snprintf(last, sizeof(last), "\n%u passed, 0 failed\n", passed);
	ck_assert_ptr_nonnull(strstr(text, last));
	ck_assert_ptr_nonnull(strstr(text, "ok   2 signaldb: 429 on POST is retried"));
	ck_assert_ptr_nonnull(strstr(text, "(000 §What is retried)"));
	/* Every seed and preset is covered. */
	ck_assert_ptr_nonnull(strstr(text, "(001 §Retry budget)"));
	ck_assert_ptr_nonnull(strstr(text, "(002 §Retry politely)"));
	ck_assert_ptr_nonnull(strstr(text, "(004 §Decision Outcome)"));
	ck_assert_ptr_nonnull(strstr(text, " aws-standard: "));
	ck_assert_ptr_nonnull(strstr(text, " grpc: "));
	free(text);
	fclose(out);
}
END_TEST

START_TEST(wrong_row_is_one_failure)
{
	char path[64], err[512] = "";
	unsigned passed = 9, failed = 9;
	FILE *out = tmpfile();
	char *text;

	write_temp(WRONG_TABLE, path, sizeof(path));
	ck_assert_int_eq(cases_run_file(path, out, &passed, &failed, err, sizeof(err)), 0);
	ck_assert_uint_eq(passed, 1);
	ck_assert_uint_eq(failed, 1);
	text = slurp(out);
	ck_assert_ptr_nonnull(strstr(text, "ok   1 signaldb: POST 429 retried (000 §What is retried)\n"));
	ck_assert_ptr_nonnull(strstr(text, "FAIL 2 signaldb: POST 503 (wrong row) (000 §What is retried): "
	                                   "expected retry got give up (not-retryable)\n"));
	ck_assert_ptr_nonnull(strstr(text, "1 passed, 1 failed\n"));
	free(text);
	fclose(out);
	unlink(path);
}
END_TEST

START_TEST(malformed_table_names_file_and_line)
{
	char path[64], err[512] = "", want[128];
	unsigned passed = 0, failed = 0;
	FILE *out = tmpfile();
	char *text;

	write_temp(MALFORMED_TABLE, path, sizeof(path));
	ck_assert_int_eq(cases_run_file(path, out, &passed, &failed, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "%s:4: row 2: unknown policy 'nosuch'", path);
	ck_assert_str_eq(err, want);
	text = slurp(out);
	ck_assert_str_eq(text, "");  /* nothing replayed from a malformed table */
	free(text);
	fclose(out);
	unlink(path);
	ck_assert_int_eq(cases_run_file("/nonexistent/t.json", NULL, &passed, &failed, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "/nonexistent/t.json: cannot open");
}
END_TEST

START_TEST(cli_exit_codes)
{
	char good[512], wrong[64], bad[64], syntax[64];
	struct test_run r;

	testutil_path("tests/retry-cases.json", good, sizeof(good));
	write_temp(WRONG_TABLE, wrong, sizeof(wrong));
	write_temp(MALFORMED_TABLE, bad, sizeof(bad));
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
		ck_assert_ptr_nonnull(strstr(r.err, "one FILE only"));
		ck_assert(testutil_one_line(r.err));
		testutil_run_free(&r);
	}
	{
		const char *a[] = { "cases", "--frobnicate", NULL };
		ck_assert_int_eq(testutil_run(&r, a, NULL, 10000), 0);
		ck_assert_int_eq(r.status, 2);
		ck_assert_str_eq(r.err, "ratelab cases: unknown option '--frobnicate' (try --help)\n");
		testutil_run_free(&r);
	}
	{
		const char *a[] = { "cases", NULL };
		ck_assert_int_eq(testutil_run(&r, a, NULL, 10000), 0);
		ck_assert_int_eq(r.status, 2);
		testutil_run_free(&r);
	}
	{
		const char *a[] = { "cases", "--help", NULL };
		ck_assert_int_eq(testutil_run(&r, a, NULL, 10000), 0);
		ck_assert_int_eq(r.status, 0);
		ck_assert_ptr_nonnull(strstr(r.out, "usage: ratelab cases FILE"));
		testutil_run_free(&r);
	}
	unlink(wrong);
	unlink(bad);
	unlink(syntax);
}
END_TEST

Suite *cases_suite(void)
{
	Suite *s = suite_create("cases");
	TCase *tc = tcase_create("replay");

	tcase_add_test(tc, replays_the_project_table);
	tcase_add_test(tc, wrong_row_is_one_failure);
	tcase_add_test(tc, malformed_table_names_file_and_line);
	tcase_add_test(tc, cli_exit_codes);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	return s;
}
