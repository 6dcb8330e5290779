/*
 * What the real `ratelab serve` makes of requests at the HTTP level, over raw
 * sockets on 127.0.0.1: routes matched on the normalised path, every answer
 * counted (libmicrohttpd's own included), smuggling refused.  Every wait is
 * bounded.
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/harness/testutil.h"

/* Send req on a fresh connection and read until the server closes (at most 3 s) into out. */
static void exchange(const struct test_server *s, const char *req, size_t n, char *out, size_t cap)
{
	int fd = testutil_raw_connect(s->port, 1);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(send(fd, req, n, MSG_NOSIGNAL), (ssize_t)n);
	testutil_raw_read(fd, out, cap, 3000);
	close(fd);
}

/* The status of the first answer to req (a fresh connection, closed after it); 0 when none came. */
static int status_of(const struct test_server *s, const char *req)
{
	static char out[65536];
	int code = 0;

	exchange(s, req, strlen(req), out, sizeof(out));
	sscanf(out, "HTTP/1.1 %d", &code);
	return code;
}

/* GET target on a fresh connection: its status. */
static int get(const struct test_server *s, const char *target)
{
	char req[512];

	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", target);
	return status_of(s, req);
}

/* The integer at route prefix's field, from /stats's "routes". */
static long long route_field(json_t *j, const char *prefix, const char *field)
{
	json_t *routes = json_object_get(j, "routes"), *r;
	size_t i;

	json_array_foreach(routes, i, r)
		if (strcmp(json_string_value(json_object_get(r, "prefix")), prefix) == 0)
			return json_integer_value(json_object_get(r, field));
	return -1;
}

/*
 * Routes /api (limited) and / (not): every spelling of /api lands on /api,
 * on segment boundaries, with case and an encoded '/' kept; query arguments
 * are still decoded for --query-faults.
 */
START_TEST(routes_on_normal_path)
{
	static const char *const on_api[] = { "/api", "//api", "/./api", "/x/../api", "/%61pi", "/api/x",
		                              "/%2e%2e/api", "/stats/../api", NULL };
	static const char *const on_root[] = { "/apix", "/API", "/api%2Fx", "/ap", NULL };
	char cfg[] = "/tmp/ratelab-routes-XXXXXX";
	int fd = mkstemp(cfg);
	FILE *f = fdopen(fd, "w");
	struct test_server s;
	json_t *j;

	fputs("{\"routes\":[{\"prefix\":\"/api\",\"limiter\":\"fixed-window\",\"limit\":100,\"window\":\"1h\"}]}\n", f);
	fclose(f);
	const char *const args[] = { "--limiter", "none", "--query-faults", "--config", cfg, NULL };
	testutil_start(&s, args);
	unlink(cfg);
	for (size_t i = 0; on_api[i]; i++)
		ck_assert_msg(get(&s, on_api[i]) == 200, "%s", on_api[i]);
	for (size_t i = 0; on_root[i]; i++)
		ck_assert_msg(get(&s, on_root[i]) == 200, "%s", on_root[i]);
	ck_assert_int_eq(get(&s, "/?status=503%3A100"), 503);
	ck_assert_int_eq(get(&s, "/api?st%61tus=502"), 502);
	ck_assert_int_eq(get(&s, "/?delay=1%30ms"), 200);
	ck_assert_int_eq(get(&s, "/%zz"), 400);
	/* "//stats" is /stats, not a limited path */
	ck_assert_int_eq(get(&s, "//stats"), 200);
	j = testutil_stats(&s);
	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq(route_field(j, "/api", "admitted"), 8 + 1);
	ck_assert_int_eq(route_field(j, "/", "admitted"), 4 + 2);
	ck_assert_int_eq(testutil_jint(j, "status", "400"), 1);
	json_decref(j);
	ck_assert_int_eq(testutil_server_stop(&s, 5000), 0);
}
END_TEST

/*
 * Answers libmicrohttpd sends itself, and the 404s of targets that are not
 * paths, are in /stats and /metrics: one of each, exactly.
 */
START_TEST(every_answer_counted)
{
	static const char *const args[] = { "--limiter", "none", NULL };
	static char big[24000];
	struct test_server s;
	char url[128], *metrics = NULL;
	long st = 0;
	json_t *j;

	testutil_start(&s, args);
	ck_assert_int_eq(status_of(&s, "GET / HTTP/1.1\r\nHost x\r\n\r\n"), 400);
	ck_assert_int_eq(status_of(&s, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n"),
	                 413);
	snprintf(big, sizeof(big), "GET /%020000d HTTP/1.1\r\nHost: x\r\n\r\n", 0);
	ck_assert_int_eq(status_of(&s, big), 414);
	snprintf(big, sizeof(big), "GET / HTTP/1.1\r\nHost: x\r\nX-Big: %020000d\r\n\r\n", 0);
	ck_assert_int_eq(status_of(&s, big), 431);
	ck_assert_int_eq(status_of(&s, "GET / HTTP/3.0\r\nHost: x\r\n\r\n"), 505);
	ck_assert_int_eq(status_of(&s, "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n"), 404);
	ck_assert_int_eq(status_of(&s, "CONNECT x:443 HTTP/1.1\r\nHost: x:443\r\n\r\n"), 404);
	ck_assert_int_eq(status_of(&s, "GET http://x/ HTTP/1.1\r\nHost: x\r\n\r\n"), 404);
	j = testutil_stats(&s);
	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq(testutil_jint(j, "status", "400"), 1);
	ck_assert_int_eq(testutil_jint(j, "status", "413"), 1);
	ck_assert_int_eq(testutil_jint(j, "status", "414"), 1);
	ck_assert_int_eq(testutil_jint(j, "status", "431"), 1);
	ck_assert_int_eq(testutil_jint(j, "status", "505"), 1);
	ck_assert_int_eq(testutil_jint(j, "status", "404"), 3);
	ck_assert_int_eq(testutil_jint(j, "requests", NULL), 8);
	json_decref(j);
	snprintf(url, sizeof(url), "%s/metrics", s.url);
	ck_assert_int_eq(testutil_http("GET", url, NULL, &st, NULL, &metrics), 0);
	ck_assert_ptr_nonnull(strstr(metrics, "ratelab_requests_total{status=\"414\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(metrics, "ratelab_requests_total{status=\"431\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(metrics, "ratelab_requests_total{status=\"404\"} 3\n"));
	free(metrics);
	ck_assert_int_eq(testutil_server_stop(&s, 5000), 0);
}
END_TEST

/* Count the answers (status lines) in a stream of them. */
static int answers_in(const char *out)
{
	int n = 0;

	for (const char *p = out; (p = strstr(p, "HTTP/1.1 ")); p++)
		n++;
	return n;
}

/*
 * A request with both Transfer-Encoding and Content-Length, or with two
 * Content-Length values, gets 400 with Connection: close, and the request
 * smuggled after it on the same connection never reaches the server.
 */
START_TEST(smuggling_refused)
{
	static const char *const args[] = { "--limiter", "none", NULL };
	static const char te_cl[] = "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 41\r\nTransfer-Encoding: chunked\r\n\r\n"
	                            "0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n";
	static const char cl_cl[] = "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 40\r\n\r\n"
	                            "helloGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n";
	/* A space before the colon, and an obs-folded value: Transfer-Encoding all the same (RFC 9112 5.1, 5.2). */
	static const char te_space[] = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\nContent-Length: 41\r\n\r\n"
	                               "0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n";
	static const char te_fold[] = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n chunked\r\nContent-Length: 41\r\n\r\n"
	                              "0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n";
	const char *const reqs[] = { te_cl, cl_cl, te_space, te_fold };
	const size_t nreqs = sizeof(reqs) / sizeof(reqs[0]);
	struct test_server s;
	char out[4096];
	json_t *j;

	testutil_start(&s, args);
	for (size_t i = 0; i < nreqs; i++) {
		exchange(&s, reqs[i], strlen(reqs[i]), out, sizeof(out));
		ck_assert_msg(strncmp(out, "HTTP/1.1 400 ", 13) == 0, "answer %zu: '%.200s'", i, out);
		ck_assert_ptr_nonnull(strstr(out, "\r\nConnection: close\r\n"));
		ck_assert_ptr_nonnull(strstr(out, "\r\n\r\nbad framing: "));
		/* one answer, then the close: the smuggled request was never read as one */
		ck_assert_int_eq(answers_in(out), 1);
	}
	j = testutil_stats(&s);
	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq(testutil_jint(j, "status", "400"), (long long)nreqs);
	ck_assert_int_eq(testutil_jint(j, "refused", "smuggling"), (long long)nreqs);
	ck_assert_int_eq(testutil_jint(j, "requests", NULL), (long long)nreqs);
	ck_assert_int_eq(route_field(j, "/", "admitted"), 0);
	json_decref(j);
	ck_assert_int_eq(testutil_server_stop(&s, 5000), 0);
}
END_TEST

Suite *http_suite(void)
{
	const struct testutil_case tests[] = {
		{ "routes_on_normal_path", routes_on_normal_path }, { "every_answer_counted", every_answer_counted },
		{ "smuggling_refused", smuggling_refused },
	};

	return testutil_suite_per_test("http", tests, sizeof(tests) / sizeof(tests[0]), 30);
}
