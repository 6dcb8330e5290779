/*
 * The hammer's two transports against the real server on port 0: its own
 * HTTP/1.1 path (wire, the default for http://) and libcurl must count the
 * same, send the same request, and survive the same server behaviour.
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "tests/testutil.h"

#define RUN_MS 20000

static json_t *run_json(const char *const *args, struct test_run *r)
{
	json_error_t je;
	json_t *j;

	ck_assert_int_eq(testutil_run(r, args, NULL, RUN_MS), 0);
	ck_assert_msg(r->status == 0, "exit %d: %s", r->status, r->err);
	j = json_loads(r->out, 0, &je);
	ck_assert_msg(j != NULL, "not JSON (%s): %s / %s", je.text, r->out, r->err);
	return j;
}

static long jint(json_t *j, const char *a, const char *b)
{
	json_t *v = json_object_get(j, a);

	if (b != NULL)
		v = json_object_get(v, b);
	return json_is_integer(v) ? (long)json_integer_value(v) : -1;
}

static const char *jstr(json_t *j, const char *a, const char *b)
{
	json_t *v = json_object_get(json_object_get(j, a), b);

	return json_is_string(v) ? json_string_value(v) : "";
}

static const char *const TRANSPORTS[] = { "wire", "curl" };

/* A limit of 5 per hour admits exactly 5 of 40, whichever transport sends them. */
START_TEST(same_counts)
{
	static const char *const sargs[] = { "--limiter", "token-bucket", "--limit", "5", "--window", "1h",
	                                     "--key", "global", NULL };
	struct test_server s;
	struct test_run r;
	char url[96], reset[128];
	long status = 0;
	json_t *j;

	ck_assert_int_eq(testutil_server_start(&s, sargs, 5000), 0);
	snprintf(url, sizeof(url), "%s/", s.url);
	for (int t = 0; t < 2; t++) {
		const char *args[] = { "hammer", url, "--requests", "40", "--concurrency", "4", "--no-retry",
		                       "--transport", TRANSPORTS[t], "--json", "-", NULL };

		j = run_json(args, &r);
		ck_assert_str_eq(jstr(j, "config", "transport"), TRANSPORTS[t]);
		ck_assert_int_eq(jint(j, "ok", NULL), 5);
		ck_assert_int_eq(jint(j, "statuses", "429"), 35);
		ck_assert_int_eq(jint(j, "calls", NULL), 40);
		ck_assert_int_eq(jint(j, "answered", NULL), 40);
		json_decref(j);
		testutil_run_free(&r);
		/* the next transport starts from a full bucket */
		snprintf(reset, sizeof(reset), "%s/reset", s.url);
		ck_assert_int_eq(testutil_http("POST", reset, "", &status, NULL, NULL), 0);
		ck_assert_int_eq(status, 200);
	}
	testutil_server_stop(&s, 3000);
}
END_TEST

/* The method, a header the limiter keys on, and a body all reach the server. */
START_TEST(headers_and_body_arrive)
{
	static const char *const sargs[] = { "--limiter", "fixed-window", "--limit", "2", "--window", "1h",
	                                     "--key", "header:X-Key", NULL };
	struct test_server s;
	struct test_run r;
	char url[96];
	json_t *j;

	ck_assert_int_eq(testutil_server_start(&s, sargs, 5000), 0);
	snprintf(url, sizeof(url), "%s/upload", s.url);
	for (int t = 0; t < 2; t++) {
		/* a key per transport: each gets its own 2 */
		const char *key = t == 0 ? "X-Key: wire" : "X-Key: curl";
		const char *args[] = { "hammer", url, "--requests", "5", "--concurrency", "1", "--no-retry",
		                       "--method", "PUT", "--header", key, "--data", "a=1&b=2",
		                       "--transport", TRANSPORTS[t], "--json", "-", NULL };

		j = run_json(args, &r);
		ck_assert_int_eq(jint(j, "ok", NULL), 2);
		ck_assert_int_eq(jint(j, "statuses", "429"), 3);
		json_decref(j);
		testutil_run_free(&r);
	}
	testutil_server_stop(&s, 3000);
}
END_TEST

/*
 * The server closes a kept-alive connection after 1 s idle; the next
 * request, 2 s later, opens a new one instead of failing.
 */
START_TEST(idle_connection_closed_by_server)
{
	static const char *const sargs[] = { "--limiter", "none", "--connection-timeout", "1s", NULL };
	struct test_server s;
	struct test_run r;
	char url[96];
	json_t *j;

	ck_assert_int_eq(testutil_server_start(&s, sargs, 5000), 0);
	snprintf(url, sizeof(url), "%s/", s.url);
	const char *args[] = { "hammer", url, "--requests", "3", "--rate", "1/1500ms", "--concurrency", "1",
	                       "--threads", "1", "--no-retry", "--transport", "wire", "--json", "-", NULL };
	j = run_json(args, &r);
	ck_assert_int_eq(jint(j, "ok", NULL), 3);
	ck_assert_int_eq(jint(j, "calls", NULL), 3);
	ck_assert_int_eq(jint(j, "transport_errors", "reset"), 0);
	ck_assert_int_eq(jint(j, "transport_errors", "other"), 0);
	json_decref(j);
	testutil_run_free(&r);
	testutil_server_stop(&s, 3000);
}
END_TEST

static json_t *server_at(json_t *j, size_t i)
{
	return json_array_get(json_object_get(j, "servers"), i);
}

/*
 * One client alternating between two servers must reach each: the first
 * admits everything, the second one request per hour.
 */
START_TEST(each_request_reaches_its_server)
{
	static const char *const open_args[] = { "--limiter", "none", NULL };
	static const char *const tight_args[] = { "--limiter", "fixed-window", "--limit", "1", "--window",
	                                          "1h", "--key", "global", NULL };
	struct test_server a, b;
	struct test_run r;
	char ua[96], ub[96], reset[128];
	long status = 0;
	json_t *j;

	ck_assert_int_eq(testutil_server_start(&a, open_args, 5000), 0);
	ck_assert_int_eq(testutil_server_start(&b, tight_args, 5000), 0);
	snprintf(ua, sizeof(ua), "%s/", a.url);
	snprintf(ub, sizeof(ub), "%s/", b.url);
	snprintf(reset, sizeof(reset), "%s/reset", b.url);
	for (int t = 0; t < 2; t++) {
		const char *args[] = { "hammer", ua, ub, "--requests", "10", "--concurrency", "1", "--threads",
		                       "1", "--no-retry", "--transport", TRANSPORTS[t], "--json", "-", NULL };

		j = run_json(args, &r);
		ck_assert_int_eq(jint(server_at(j, 0), "ok", NULL), 5);
		ck_assert_int_eq(jint(server_at(j, 1), "ok", NULL), 1);
		ck_assert_int_eq(jint(server_at(j, 1), "failed", NULL), 4);
		ck_assert_int_eq(jint(j, "calls", NULL), 10);
		json_decref(j);
		testutil_run_free(&r);
		ck_assert_int_eq(testutil_http("POST", reset, "", &status, NULL, NULL), 0);
		ck_assert_int_eq(status, 200);
	}
	testutil_server_stop(&a, 3000);
	testutil_server_stop(&b, 3000);
}
END_TEST

START_TEST(transport_usage_errors)
{
	static const char *const bad[][5] = {
		{ "hammer", "--transport", "tcp", NULL },
		{ "hammer", "https://127.0.0.1:1/", "--transport", "wire", NULL },
		{ "hammer", "http://u:p@127.0.0.1:1/", "--transport", "wire", NULL },
	};
	struct test_run r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(testutil_run(&r, (const char *const *)bad[i], NULL, RUN_MS), 0);
		ck_assert_msg(r.status == 2, "case %zu: exit %d", i, r.status);
		ck_assert_msg(strstr(r.err, "--transport") != NULL, "'%s'", r.err);
		ck_assert_msg(strchr(r.err, '\n') == r.err + strlen(r.err) - 1, "not one line: '%s'", r.err);
		testutil_run_free(&r);
	}
}
END_TEST

Suite *transport_suite(void)
{
	Suite *s = suite_create("transport");
	TCase *tc = tcase_create("integration");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, same_counts);
	tcase_add_test(tc, headers_and_body_arrive);
	tcase_add_test(tc, idle_connection_closed_by_server);
	tcase_add_test(tc, each_request_reaches_its_server);
	tcase_add_test(tc, transport_usage_errors);
	suite_add_tcase(s, tc);
	return s;
}
