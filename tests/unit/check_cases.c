/* cases_run_file: the retry-cases table replayed through the engine (the CLI: integration/check_cases_cli.c). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lab/cases.h"
#include "tests/harness/testutil.h"

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
	ck_assert_msg(cases_run_file(path, -1, out, &passed, &failed, err, sizeof(err)) == 0, "%s", err);
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
	char path[512], err[512] = "";
	unsigned passed = 9, failed = 9;
	FILE *out = tmpfile();
	char *text;

	testutil_path("tests/fixtures/cases-wrong.json", path, sizeof(path));
	ck_assert_int_eq(cases_run_file(path, -1, out, &passed, &failed, err, sizeof(err)), 0);
	ck_assert_uint_eq(passed, 1);
	ck_assert_uint_eq(failed, 1);
	text = slurp(out);
	ck_assert_ptr_nonnull(strstr(text, "ok   1 signaldb: POST 429 retried (000 §What is retried)\n"));
	ck_assert_ptr_nonnull(strstr(text, "FAIL 2 signaldb: POST 503 (wrong row) (000 §What is retried): "
	                                   "expected retry got give up (not-retryable)\n"));
	ck_assert_ptr_nonnull(strstr(text, "1 passed, 1 failed\n"));
	free(text);
	fclose(out);
}
END_TEST

START_TEST(malformed_table_names_file_and_line)
{
	char path[512], err[512] = "", want[640];
	unsigned passed = 0, failed = 0;
	FILE *out = tmpfile();
	char *text;

	testutil_path("tests/fixtures/cases-malformed.json", path, sizeof(path));
	ck_assert_int_eq(cases_run_file(path, -1, out, &passed, &failed, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "%s:4: row 2: unknown policy 'nosuch'", path);
	ck_assert_str_eq(err, want);
	text = slurp(out);
	ck_assert_str_eq(text, "");  /* nothing replayed from a malformed table */
	free(text);
	fclose(out);
	ck_assert_int_eq(cases_run_file("/nonexistent/t.json", -1, NULL, &passed, &failed, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "/nonexistent/t.json: cannot open");
}
END_TEST

/* A table of n rows that each pass (lab, 429 on a first attempt: retry), written to path. */
static void write_rows(const char *path, unsigned n, const char *first_expect)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fputs("[\n", f);
	for (unsigned i = 0; i < n; i++)
		fprintf(f, "{\"id\": \"r%u\", \"policy\": \"lab\", \"status\": 429, \"attempt\": 1, \"expect\": %s}%s\n", i,
		        i == 0 && first_expect ? first_expect : "{\"retry\": true}", i + 1 < n ? "," : "");
	fputs("]\n", f);
	ck_assert_int_eq(fclose(f), 0);
}

/*
 * A table's size and its rows' bounds: any table up to 100,000 rows replays
 * (65,537 said "out of memory"), one past it is named as too long, and a
 * wait range whose low bound is over its high one is malformed (exit 2), not
 * a row that fails.
 */
START_TEST(table_bounds_are_named)
{
	char path[] = "/tmp/ratelab-cases-XXXXXX", err[512] = "", want[640];
	unsigned passed = 0, failed = 0;
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	close(fd);
	write_rows(path, 70000, NULL);
	ck_assert_msg(cases_run_file(path, -1, NULL, &passed, &failed, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(passed, 70000);
	ck_assert_uint_eq(failed, 0);
	write_rows(path, 100001, NULL);
	ck_assert_int_eq(cases_run_file(path, -1, NULL, &passed, &failed, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "%s:1: 100001 rows, more than the 100000 a table may have", path);
	ck_assert_str_eq(err, want);
	write_rows(path, 2, "{\"retry\": true, \"wait_ms\": [300, 100]}");
	ck_assert_int_eq(cases_run_file(path, -1, NULL, &passed, &failed, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "%s:2: row 1: \"wait_ms\" [lo, hi] has lo over hi", path);
	ck_assert_str_eq(err, want);
	unlink(path);
}
END_TEST

/* The table's output (its FAIL lines show the waits drawn) with seed_given. */
static char *replay_text(const char *path, int64_t seed_given)
{
	unsigned passed = 0, failed = 0;
	char err[512] = "";
	FILE *out = tmpfile();
	char *text;

	ck_assert_ptr_nonnull(out);
	ck_assert_msg(cases_run_file(path, seed_given, out, &passed, &failed, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(failed, 2);
	text = slurp(out);
	fclose(out);
	return text;
}

START_TEST(given_seed_replaces_the_tables)
{
	/* Full-jitter waits expected to be exactly 0: each row fails and prints the wait it drew. */
	static const char TABLE[] = "{\"rng_seed\": 5, \"cases\": [\n"
		"{\"id\": 1, \"policy\": \"signaldb\", \"method\": \"GET\", \"status\": 429, \"attempt\": 3,\n"
		" \"expect\": {\"retry\": true, \"wait_ms\": 0}},\n"
		"{\"id\": 2, \"policy\": \"signaldb\", \"method\": \"GET\", \"status\": 503, \"attempt\": 3,\n"
		" \"expect\": {\"retry\": true, \"wait_ms\": 0}}]}\n";
	char path[] = "/tmp/ratelab-cases-XXXXXX";
	int fd = mkstemp(path);
	char *own, *five, *six;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, TABLE, sizeof(TABLE) - 1), (ssize_t)(sizeof(TABLE) - 1));
	close(fd);
	own = replay_text(path, -1);
	five = replay_text(path, 5);
	six = replay_text(path, 6);
	unlink(path);
	ck_assert_str_eq(own, five);        /* the table's rng_seed is 5 */
	ck_assert_str_ne(own, six);         /* another seed draws other waits */
	free(own);
	free(five);
	free(six);
}
END_TEST

Suite *cases_suite(void)
{
	Suite *s = suite_create("cases");
	TCase *tc = tcase_create("replay");

	tcase_add_test(tc, replays_the_project_table);
	tcase_add_test(tc, wrong_row_is_one_failure);
	tcase_add_test(tc, malformed_table_names_file_and_line);
	tcase_add_test(tc, table_bounds_are_named);
	tcase_add_test(tc, given_seed_replaces_the_tables);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	return s;
}
