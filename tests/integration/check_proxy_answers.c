/*
 * `ratelab serve --upstream URL` against answers a hostile or broken
 * upstream sends, byte for byte (tests/harness/upstream.py's /raw/): what
 * the client gets, and what /stats counts.  127.0.0.1 only; every wait is
 * bounded.
 */
#include <check.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/harness/testutil.h"
#include "tests/harness/upstream_proc.h"

/* The proxy in front of u, with a limit it never meets. */
static void proxy_start(struct test_server *px, const struct py_upstream *u)
{
	const char *args[] = { "--quiet", "--upstream", u->url, "--limit", "1000", NULL };

	ck_assert_int_eq(testutil_server_start(px, args, 10000), 0);
}

/* GET through the proxy of an upstream answer that is `answer`'s bytes (percent-encoded into /raw/): its status. */
static long get_raw(const struct test_server *px, const char *answer, char **headers, char **body)
{
	static const char HEX[] = "0123456789ABCDEF";
	char url[4096];
	size_t n = (size_t)snprintf(url, sizeof(url), "%s/raw/", px->url);
	long status = 0;

	for (const unsigned char *p = (const unsigned char *)answer; *p && n + 4 < sizeof(url); p++) {
		url[n++] = '%';
		url[n++] = HEX[*p >> 4];
		url[n++] = HEX[*p & 15];
	}
	url[n] = '\0';
	if (testutil_http("GET", url, NULL, &status, headers, body) < 0)
		return -1;
	return status;
}

/* The count of upstream calls that ended as `result` (/stats "upstream" "results"). */
static long long upstream_results(const struct test_server *px, const char *result)
{
	json_t *j = testutil_stats(px);
	long long n = testutil_jint(json_object_get(j, "upstream"), "results", result);

	json_decref(j);
	return n;
}

/*
 * A header the upstream's Connection header names is hop-by-hop (RFC 9110
 * 7.6.1), as one the client's names is on the way there: not passed on.
 */
START_TEST(connection_options_are_not_passed_on)
{
	struct py_upstream u;
	struct test_server px;
	char *h = NULL, *b = NULL, v[64];

	ck_assert_int_eq(py_start(&u), 0);
	proxy_start(&px, &u);
	ck_assert_int_eq(get_raw(&px,
	                         "HTTP/1.1 200 OK\r\nConnection: X-Secret, close\r\nX-Secret: token\r\n"
	                         "Connection: x-other\r\nX-Other: 1\r\nX-Kept: 1\r\nContent-Length: 2\r\n\r\nhi",
	                         &h, &b),
	                 200);
	ck_assert_str_eq(b, "hi");
	ck_assert(testutil_header(h, "X-Kept", v, sizeof(v)));
	ck_assert_str_eq(v, "1");
	ck_assert_msg(!testutil_header(h, "X-Secret", v, sizeof(v)), "%s", h);
	ck_assert_msg(!testutil_header(h, "X-Other", v, sizeof(v)), "%s", h);
	ck_assert_msg(!strstr(h, "x-other") && !strstr(h, "X-Secret"), "%s", h);
	free(h);
	free(b);
	ck_assert_int_eq(upstream_results(&px, "ok"), 1);
	ck_assert_int_eq(testutil_server_stop(&px, 5000), 0);
	py_stop(&u);
}
END_TEST

/* The upstream's calls in flight now (/stats "upstream" "in_flight"), once 0 (at most 10 s); -1 when never. */
static long long in_flight_settles(const struct test_server *px)
{
	for (int i = 0; i < 1000; i++) {
		json_t *j = testutil_stats(px);
		long long n = testutil_jint(j, "upstream", "in_flight");

		json_decref(j);
		if (n == 0)
			return 0;
		poll(NULL, 0, 10);
	}
	return -1;
}

/*
 * A 101 Switching Protocols the proxy did not ask for, then bytes of
 * another protocol: no final answer, so 502 and a bad answer in /stats
 * (not a client that went away: the client is there and gets the 502).
 */
START_TEST(switching_protocols_is_a_bad_answer)
{
	struct py_upstream u;
	struct test_server px;
	char *b = NULL;

	ck_assert_int_eq(py_start(&u), 0);
	proxy_start(&px, &u);
	ck_assert_int_eq(get_raw(&px, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\nrawbytes",
	                         NULL, &b),
	                 502);
	ck_assert_msg(strstr(b, "\"detail\":\"the upstream's answer is not HTTP or ended early\"") != NULL, "%s", b);
	free(b);
	ck_assert_int_eq(in_flight_settles(&px), 0);
	ck_assert_int_eq(upstream_results(&px, "bad_answer"), 1);
	ck_assert_int_eq(upstream_results(&px, "client_gone"), 0);
	ck_assert_int_eq(testutil_server_stop(&px, 5000), 0);
	py_stop(&u);
}
END_TEST

Suite *proxy_answers_suite(void)
{
	const struct testutil_case tests[] = {
		{ "connection_options_are_not_passed_on", connection_options_are_not_passed_on },
		{ "switching_protocols_is_a_bad_answer", switching_protocols_is_a_bad_answer },
	};

	return testutil_suite_per_test("proxy_answers", tests, sizeof(tests) / sizeof(tests[0]), 60);
}
