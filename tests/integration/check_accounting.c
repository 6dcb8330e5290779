/*
 * Nothing lost, nothing double-counted: the hammer's own figures
 * (--json -) against the server's /stats after the same run.  Every attempt
 * the hammer sent is a request the server saw, every 200 the hammer counted
 * is a 200 the server gave, and the hammer's totals add up.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/harness/testutil.h"

static long long sum_object(json_t *o)
{
	long long sum = 0;
	const char *k;
	json_t *v;

	json_object_foreach(o, k, v)
		sum += json_integer_value(v);
	return sum;
}

/* Run the hammer with args (after the URL) against s and return its --json figures. */
static json_t *hammer_json(const struct test_server *s, const char *const *extra, int want_rc)
{
	const char *args[32];
	char url[128];
	size_t n = 0;
	struct test_run r;
	json_t *j;

	snprintf(url, sizeof(url), "%s/", s->url);
	args[n++] = "hammer";
	args[n++] = url;
	for (size_t i = 0; extra[i] && n < 29; i++)
		args[n++] = extra[i];
	args[n++] = "--json";
	args[n++] = "-";
	args[n] = NULL;
	ck_assert_int_eq(testutil_run(&r, args, NULL, 60000), 0);
	ck_assert_msg(r.status == want_rc, "hammer exit %d (stderr: %.300s)", r.status, r.err);
	j = json_loads(r.out, 0, NULL);
	ck_assert_msg(j != NULL, "hammer --json - is not JSON: %.200s", r.out);
	testutil_run_free(&r);
	return j;
}

/* The hammer's totals add up by themselves. */
static void hammer_self_consistent(json_t *h, long long requests)
{
	ck_assert_int_eq(testutil_jint_req(h, "requests", NULL), requests);
	ck_assert_int_eq(sum_object(json_object_get(h, "statuses")) + sum_object(json_object_get(h, "errors")),
	                 requests);
	ck_assert_int_eq(testutil_jint_req(h, "ok", NULL) + testutil_jint_req(h, "failed", NULL), requests);
	ck_assert_int_eq(testutil_jint_req(h, "calls", NULL), requests + testutil_jint_req(h, "retries", NULL));
	ck_assert_int_eq(sum_object(json_object_get(h, "attempt_statuses")) +
	                 sum_object(json_object_get(h, "transport_errors")), testutil_jint_req(h, "calls", NULL));
	ck_assert_int_eq(testutil_jint_req(h, "unfinished", NULL), 0);
	ck_assert_int_eq(testutil_jint_req(h, "dropped", NULL), 0);
}

START_TEST(retry_against_token_bucket)
{
	/* 100/s with a burst of 100: 300 requests need about 2 s and a few hundred 429s. */
	static const char *const sargs[] = { "--limiter", "token-bucket", "--limit", "100", "--window", "1s", NULL };
	static const char *const hargs[] = { "--requests", "300", "--concurrency", "16", "--retry", "--seed", "1",
		                             NULL };
	struct test_server s;
	json_t *h, *st;

	ck_assert_int_eq(testutil_server_start(&s, sargs, 10000), 0);
	h = hammer_json(&s, hargs, 0);
	/* read after the run: /stats is not limited, so it is not in its own counts */
	st = testutil_stats(&s);
	ck_assert_ptr_nonnull(st);
	hammer_self_consistent(h, 300);
	ck_assert_int_gt(testutil_jint_req(h, "retries", NULL), 0);
	/* the hammer's 200s are the server's 200s, its 429s the server's 429s */
	ck_assert_int_eq(testutil_jint_req(h, "statuses", "200"), testutil_jint_req(st, "status", "200"));
	ck_assert_int_eq(testutil_jint_req(h, "attempt_statuses", "200"), testutil_jint_req(st, "status", "200"));
	ck_assert_int_eq(testutil_jint_req(h, "attempt_statuses", "429"), testutil_jint_req(st, "status", "429"));
	/* every call the hammer sent is a request the server saw, and no more */
	ck_assert_int_eq(testutil_jint_req(h, "calls", NULL), testutil_jint_req(st, "requests", NULL));
	ck_assert_int_eq(testutil_jint_req(h, "calls", NULL), testutil_jint_req(st, "routes", "admitted") + testutil_jint_req(st, "routes", "rejected"));
	fprintf(stderr, "accounting: 300 requests, %lld calls, %lld retries, %lld x 200 on both sides\n",
	        testutil_jint_req(h, "calls", NULL), testutil_jint_req(h, "retries", NULL), testutil_jint_req(st, "status", "200"));
	json_decref(h);
	json_decref(st);
	ck_assert_int_eq(testutil_server_stop(&s, 5000), 0);
}
END_TEST

START_TEST(retry_with_injected_faults)
{
	/* 503s are retried by the lab preset and resets are not: the accounts must balance either way. */
	static const char *const sargs[] = { "--limiter", "token-bucket", "--limit", "200", "--window", "1s",
		                             "--faults", "503:10,reset:3", "--seed", "3", NULL };
	static const char *const hargs[] = { "--requests", "300", "--concurrency", "16", "--retry", "--seed", "1",
		                             NULL };
	struct test_server s;
	json_t *h, *st;

	ck_assert_int_eq(testutil_server_start(&s, sargs, 10000), 0);
	h = hammer_json(&s, hargs, 0);
	st = testutil_stats(&s);
	ck_assert_ptr_nonnull(st);
	hammer_self_consistent(h, 300);
	ck_assert_int_eq(testutil_jint_req(h, "statuses", "200"), testutil_jint_req(st, "status", "200"));
	ck_assert_int_eq(testutil_jint_req(h, "attempt_statuses", "503"), testutil_jint_req(st, "status", "503"));
	ck_assert_int_eq(testutil_jint_req(h, "attempt_statuses", "429"), testutil_jint_req(st, "status", "429"));
	/* a reset the server made is a reset the hammer saw: none resent behind its back */
	ck_assert_int_eq(testutil_jint_req(h, "transport_errors", "reset"), testutil_jint_req(st, "status", "reset"));
	ck_assert_int_eq(testutil_jint_req(h, "calls", NULL), testutil_jint_req(st, "requests", NULL));
	json_decref(h);
	json_decref(st);
	ck_assert_int_eq(testutil_server_stop(&s, 5000), 0);
}
END_TEST

Suite *accounting_suite(void)
{
	Suite *s = suite_create("accounting");
	TCase *tc = tcase_create("accounting");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, retry_against_token_bucket);
	tcase_add_test(tc, retry_with_injected_faults);
	suite_add_tcase(s, tc);
	return s;
}
