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
#include <sys/socket.h>
#include <unistd.h>

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

/* The proxy in front of u with one upstream connection and a 60 s --upstream-timeout, and a raw client's GET /hang sent. */
static int hang_start(struct test_server *px, const struct py_upstream *u)
{
	const char *args[] = { "--quiet", "--upstream", u->url, "--limit", "1000", "--upstream-connections", "1",
		               "--upstream-timeout", "60s", NULL };
	const char req[] = "GET /hang HTTP/1.1\r\nHost: x\r\n\r\n";
	int fd;

	ck_assert_int_eq(testutil_server_start(px, args, 10000), 0);
	ck_assert_int_ge(fd = testutil_raw_connect(px->port, 1), 0);
	ck_assert_int_eq(write(fd, req, sizeof(req) - 1), (ssize_t)(sizeof(req) - 1));
	for (int i = 0; i < 500 && py_count(u, "hang") != 1; i++)
		poll(NULL, 0, 10);
	ck_assert_int_eq(py_count(u, "hang"), 1);
	return fd;
}

/* /stats "upstream" "results" `result` once it is n (at most 5 s), else what it was. */
static long long results_reach(const struct test_server *px, const char *result, long long n)
{
	long long got = -1;

	for (int i = 0; i < 500 && got != n; i++) {
		if ((got = upstream_results(px, result)) != n)
			poll(NULL, 0, 10);
	}
	return got;
}

/*
 * A client that closes its connection while the upstream has not answered
 * (and never will, for 30 s) ends its call at once: the one upstream
 * connection is free again long before --upstream-timeout (60 s), and the
 * next request gets its answer.
 */
START_TEST(client_hang_up_ends_the_call)
{
	struct py_upstream u;
	struct test_server px;
	double t0;
	int fd;

	ck_assert_int_eq(py_start(&u), 0);
	fd = hang_start(&px, &u);
	close(fd);
	ck_assert_int_eq(results_reach(&px, "client_gone", 1), 1);
	t0 = testutil_mono_ms();
	ck_assert_int_eq(get_raw(&px, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi", NULL, NULL), 200);
	ck_assert_msg(testutil_mono_ms() - t0 < 10000, "the next answer took %.0f ms", testutil_mono_ms() - t0);
	ck_assert_int_eq(upstream_results(&px, "timeout"), 0);
	ck_assert_int_eq(upstream_results(&px, "ok"), 1);
	ck_assert_int_eq(testutil_server_stop(&px, 5000), 0);
	py_stop(&u);
}
END_TEST

/* A client that shuts down its sending side is taken as gone too (as nginx does), and is told so in a 502. */
START_TEST(half_closed_client_is_told)
{
	struct py_upstream u;
	struct test_server px;
	char buf[1024];
	int fd;

	ck_assert_int_eq(py_start(&u), 0);
	fd = hang_start(&px, &u);
	shutdown(fd, SHUT_WR);
	testutil_raw_read_until(fd, buf, sizeof(buf), "}\n", 10000);
	ck_assert_msg(strncmp(buf, "HTTP/1.1 502 ", 13) == 0 &&
	                  strstr(buf, "\"detail\":\"the client hung up before the upstream answered\"}\n"),
	              "%s", buf);
	close(fd);
	ck_assert_int_eq(upstream_results(&px, "client_gone"), 1);
	ck_assert_int_eq(testutil_server_stop(&px, 5000), 0);
	py_stop(&u);
}
END_TEST

Suite *proxy_answers_suite(void)
{
	const struct testutil_case tests[] = {
		{ "connection_options_are_not_passed_on", connection_options_are_not_passed_on },
		{ "switching_protocols_is_a_bad_answer", switching_protocols_is_a_bad_answer },
		{ "client_hang_up_ends_the_call", client_hang_up_ends_the_call },
		{ "half_closed_client_is_told", half_closed_client_is_told },
	};

	return testutil_suite_per_test("proxy_answers", tests, sizeof(tests) / sizeof(tests[0]), 60);
}
