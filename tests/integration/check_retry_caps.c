/* The hammer's retry caps against the real server: a Retry-After past a preset's cap ends the request. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/harness/testutil.h"

#define RUN_MS 10000

/* A scenario file: 31 years (issue 15), then an integer past 64 bits (292 years once saturated). */
static const char SCRIPT[] = "[{\"status\":429,\"retry_after\":\"999999999\"},"
                             "{\"status\":429,\"retry_after\":\"99999999999999999999999\"}]";

static void serve_script(struct test_server *s)
{
	char path[] = "/tmp/ratelab-caps-XXXXXX";
	int fd = mkstemp(path);
	const char *const args[] = { "--scenario", path, "--quiet", NULL };

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, SCRIPT, sizeof(SCRIPT) - 1), (ssize_t)(sizeof(SCRIPT) - 1));
	close(fd);
	ck_assert_msg(testutil_server_start(s, args, 5000) == 0, "serve --scenario FILE did not start");
	unlink(path);  /* read at start */
}

static json_t *load_json(const char *path)
{
	json_error_t e;
	json_t *j = json_load_file(path, 0, &e);

	ck_assert_msg(j != NULL, "%s: %s", path, e.text);
	return j;
}

/* `hammer --retry` (the lab preset) gives up at once on both, in the summary and in --json. */
START_TEST(lab_preset_fails_fast_on_31_years)
{
	struct test_server s;
	struct test_run r;
	char url[96], jpath[] = "/tmp/ratelab-caps-json-XXXXXX";
	int fd = mkstemp(jpath);
	json_t *j;

	ck_assert_int_ge(fd, 0);
	close(fd);
	serve_script(&s);
	snprintf(url, sizeof(url), "%s/", s.url);
	const char *text[] = { "hammer", url, "--retry", "--requests", "1", "--json", jpath, NULL };
	ck_assert_int_eq(testutil_run(&r, text, NULL, RUN_MS), 0);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_msg(r.seconds < 2.0, "took %.2fs", r.seconds);
	ck_assert_msg(strstr(r.out, "\ngave up: retry-after-too-long x1\n") != NULL, "%s", r.out);
	ck_assert_msg(strncmp(r.out, "429  x1\n1 requests in ", 22) == 0, "%s", r.out);
	ck_assert_msg(strstr(r.out, "\n1 calls, 0 retries") != NULL, "%s", r.out);
	testutil_run_free(&r);
	j = load_json(jpath);
	unlink(jpath);
	ck_assert_int_eq(testutil_jint(j, "gave_up", "retry-after-too-long"), 1);
	ck_assert_int_eq(testutil_jint(j, "statuses", "429"), 1);
	ck_assert_int_eq(testutil_jint(j, "calls", NULL), 1);
	ck_assert_int_eq(testutil_jint(j, "retries", NULL), 0);
	json_decref(j);

	const char *js[] = { "hammer", url, "--retry", "--requests", "1", "--json", "-", NULL };
	j = testutil_run_json(&r, js, NULL, RUN_MS);
	ck_assert_int_eq(testutil_server_stop(&s, 3000), 0);
	ck_assert_msg(j != NULL, "not JSON: %s / %s", r.out, r.err);
	ck_assert_int_eq(r.status, 0);
	ck_assert_msg(r.seconds < 2.0, "took %.2fs", r.seconds);
	ck_assert_int_eq(testutil_jint(j, "gave_up", "retry-after-too-long"), 1);
	ck_assert_int_eq(testutil_jint(j, "calls", NULL), 1);
	json_decref(j);
	testutil_run_free(&r);
}
END_TEST

Suite *retry_caps_suite(void)
{
	Suite *s = suite_create("retry_caps");
	TCase *tc = tcase_create("live");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, lab_preset_fails_fast_on_31_years);
	suite_add_tcase(s, tc);
	return s;
}
