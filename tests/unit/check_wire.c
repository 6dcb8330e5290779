#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "hammer/wire.h"

/* ---- URLs and request bytes ---- */

static char *request(const char *url, const char *method, const char *const *headers, size_t n,
                     const char *data)
{
	struct wire_spec spec = { .method = method, .headers = headers, .nheaders = n, .data = data };
	size_t len = 0;
	char *r = wire_request_new(url, &spec, &len);

	if (r != NULL)
		ck_assert_uint_eq(len, strlen(r));
	return r;
}

START_TEST(url_support)
{
	ck_assert(wire_url_supported("http://127.0.0.1:8080/"));
	ck_assert(wire_url_supported("HTTP://localhost"));
	ck_assert(wire_url_supported("http://[::1]:9000/x?y=1#frag"));
	ck_assert(!wire_url_supported("https://127.0.0.1/"));
	ck_assert(!wire_url_supported("http://user:pw@127.0.0.1/"));
	ck_assert(!wire_url_supported("http://127.0.0.1:0/"));
	ck_assert(!wire_url_supported("http://127.0.0.1:65536/"));
	ck_assert(!wire_url_supported("http://127.0.0.1:80x/"));
	ck_assert(!wire_url_supported("http://127.0.0.1/a b"));
	ck_assert(!wire_url_supported("http:///path"));
	ck_assert(!wire_url_supported("http://[::1/"));
	ck_assert(!wire_url_supported("ftp://127.0.0.1/"));
	ck_assert(!wire_url_supported(NULL));
}
END_TEST

START_TEST(get_request_bytes)
{
	char *r = request("http://127.0.0.1:8080/api/x?k=1#frag", NULL, NULL, 0, NULL);

	ck_assert_str_eq(r, "GET /api/x?k=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAccept: */*\r\n\r\n");
	free(r);
	r = request("http://localhost", "HEAD", NULL, 0, NULL);
	ck_assert_str_eq(r, "HEAD / HTTP/1.1\r\nHost: localhost\r\nAccept: */*\r\n\r\n");
	free(r);
	r = request("http://h:81?q", NULL, NULL, 0, NULL);
	ck_assert_str_eq(r, "GET /?q HTTP/1.1\r\nHost: h:81\r\nAccept: */*\r\n\r\n");
	free(r);
}
END_TEST

START_TEST(post_request_bytes)
{
	char *r = request("http://127.0.0.1:8080/", "POST", NULL, 0, "a=1");

	ck_assert_str_eq(r, "POST / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAccept: */*\r\n"
	                    "Content-Length: 3\r\nContent-Type: application/x-www-form-urlencoded\r\n\r\na=1");
	free(r);
	r = request("http://127.0.0.1:8080/", "POST", NULL, 0, NULL);
	ck_assert_ptr_nonnull(strstr(r, "Content-Length: 0\r\n"));
	free(r);
}
END_TEST

/* libcurl's conventions: a header replaces the default, "Name:" removes it, "Name;" sends it empty. */
START_TEST(user_headers)
{
	static const char *const h[] = { "Accept: text/plain", "Host:", "X-Empty;", "X-Key: abc",
	                                 "Content-Type: application/json" };
	char *r = request("http://127.0.0.1:8080/", "PUT", h, 5, "{}");

	ck_assert_str_eq(r, "PUT / HTTP/1.1\r\nContent-Length: 2\r\n"
	                    "Accept: text/plain\r\nX-Empty:\r\nX-Key: abc\r\nContent-Type: application/json\r\n\r\n{}");
	free(r);
	ck_assert_ptr_null(request("https://127.0.0.1/", NULL, NULL, 0, NULL));
}
END_TEST

/* A shape's path replaces the URL's path and query; the Host stays the URL's. */
START_TEST(path_replaces_the_urls)
{
	struct wire_spec spec = { .method = "PUT", .data = "{}", .path = "/occ" };
	size_t len = 0;
	char *r = wire_request_new("http://h:81/x?q=1", &spec, &len);

	ck_assert_str_eq(r, "PUT /occ HTTP/1.1\r\nHost: h:81\r\nAccept: */*\r\nContent-Length: 2\r\n"
	                    "Content-Type: application/x-www-form-urlencoded\r\n\r\n{}");
	ck_assert_uint_eq(len, strlen(r));
	free(r);
}
END_TEST

/* head_len marks where the headers end, so a call's own lines can go in before the blank line. */
START_TEST(target_marks_the_headers_end)
{
	struct wire_spec spec = { .method = "POST", .data = "a=1" };
	struct wire_target t;
	char err[256];

	ck_assert_int_eq(wire_target_init(&t, "http://127.0.0.1:8080/", &spec, err, sizeof(err)), 0);
	ck_assert_uint_eq(t.reqlen - t.head_len, strlen("\r\na=1"));
	ck_assert(memcmp(t.request + t.head_len, "\r\na=1", 5) == 0);
	ck_assert(memcmp(t.request + t.head_len - 2, "\r\n", 2) == 0);
	wire_target_destroy(&t);
}
END_TEST

START_TEST(target_resolves)
{
	struct wire_spec spec = { 0 };
	struct wire_target t;
	char err[256];

	ck_assert_int_eq(wire_target_init(&t, "http://127.0.0.1:8080/", &spec, err, sizeof(err)), 0);
	ck_assert_int_eq(t.addr.ss_family, AF_INET);
	ck_assert(!t.head);
	wire_target_destroy(&t);
	ck_assert_int_eq(wire_target_init(&t, "https://127.0.0.1/", &spec, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "https://127.0.0.1/: not a plain http:// URL");
	ck_assert_int_eq(wire_target_init(&t, "http://no-such-host.invalid/", &spec, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "cannot resolve no-such-host.invalid"));
}
END_TEST

/* ---- answers ---- */

static const char ANSWER_429[] =
	"HTTP/1.1 429 Too Many Requests\r\n"
	"Retry-After:  3 \r\n"
	"RateLimit-Policy: \"default\";q=5;w=1\r\n"
	"RateLimit: \"default\";r=0;t=3\r\n"
	"Content-Type: application/problem+json\r\n"
	"Content-Length: 10\r\n"
	"\r\n"
	"0123456789";

static enum wire_parse feed_all(struct wire_resp *r, const char *s, size_t n, size_t *used)
{
	return wire_resp_feed(r, s, n, used);
}

START_TEST(whole_answer)
{
	struct wire_resp r;
	size_t used = 0;

	wire_resp_init(&r, false);
	ck_assert_int_eq(feed_all(&r, ANSWER_429, strlen(ANSWER_429), &used), WIRE_DONE);
	ck_assert_uint_eq(used, strlen(ANSWER_429));
	ck_assert_int_eq(r.status, 429);
	ck_assert_str_eq(r.retry_after, "3");
	ck_assert_str_eq(r.ratelimit, "\"default\";r=0;t=3");
	ck_assert(!r.close);
	ck_assert_str_eq(r.etag, "");
}
END_TEST

/* The ETag of an answer is kept for the workloads; Expires and Etc, on the same first letter, are not. */
START_TEST(etag_kept)
{
	static const char a[] = "HTTP/1.1 200 OK\r\nExpires: 0\r\nEtc: x\r\nETag:  \"12\" \r\n"
	                        "Content-Length: 0\r\n\r\n";
	struct wire_resp r;
	size_t used = 0;

	wire_resp_init(&r, false);
	ck_assert_int_eq(wire_resp_feed(&r, a, strlen(a), &used), WIRE_DONE);
	ck_assert_str_eq(r.etag, "\"12\"");
	wire_resp_init(&r, false);
	ck_assert_str_eq(r.etag, "");
}
END_TEST

/* Every split of the answer into two reads, and byte by byte, gives the same result. */
START_TEST(split_anywhere)
{
	size_t n = strlen(ANSWER_429);

	for (size_t cut = 0; cut <= n; cut++) {
		struct wire_resp r;
		size_t used = 0, used2 = 0;
		enum wire_parse p;

		wire_resp_init(&r, false);
		p = wire_resp_feed(&r, ANSWER_429, cut, &used);
		if (cut < n) {
			ck_assert_int_eq(p, WIRE_MORE);
			ck_assert_uint_eq(used, cut);
			p = wire_resp_feed(&r, ANSWER_429 + cut, n - cut, &used2);
		}
		ck_assert_int_eq(p, WIRE_DONE);
		ck_assert_int_eq(r.status, 429);
		ck_assert_str_eq(r.retry_after, "3");
	}
	{
		struct wire_resp r;
		size_t used = 0;
		enum wire_parse p = WIRE_MORE;

		wire_resp_init(&r, false);
		for (size_t i = 0; i < n; i++) {
			p = wire_resp_feed(&r, ANSWER_429 + i, 1, &used);
			ck_assert_int_eq(p, i + 1 < n ? WIRE_MORE : WIRE_DONE);
		}
		ck_assert_str_eq(r.ratelimit, "\"default\";r=0;t=3");
	}
}
END_TEST

START_TEST(chunked_answer)
{
	static const char a[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n"
	                        "5;ext=1\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-Trailer: 1\r\n\r\n";
	struct wire_resp r;
	size_t used = 0;

	wire_resp_init(&r, false);
	ck_assert_int_eq(wire_resp_feed(&r, a, strlen(a), &used), WIRE_DONE);
	ck_assert_uint_eq(used, strlen(a));
	ck_assert_int_eq(r.status, 200);
	/* a chunk not followed by CRLF is malformed */
	static const char bad[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n";

	wire_resp_init(&r, false);
	ck_assert_int_eq(wire_resp_feed(&r, bad, strlen(bad), &used), WIRE_BAD);
}
END_TEST

/* libcurl's header lines, one at a time: only Retry-After, RateLimit and ETag are kept. */
START_TEST(capture_from_lines)
{
	struct wire_resp r;

	wire_resp_init(&r, false);
	wire_resp_capture(&r, "HTTP/1.1 429 Too Many Requests\r\n", 32);
	wire_resp_capture(&r, "Content-Type: text/plain\r\n", 26);
	ck_assert_str_eq(r.retry_after, "");
	wire_resp_capture(&r, "retry-after:  3 \r\n", 18);
	wire_resp_capture(&r, "RateLimit: \"default\";r=0;t=3\r\n", 30);
	wire_resp_capture(&r, "ETag: \"7\"\r\n", 11);
	wire_resp_capture(&r, "\r\n", 2);
	ck_assert_str_eq(r.retry_after, "3");
	ck_assert_str_eq(r.ratelimit, "\"default\";r=0;t=3");
	ck_assert_str_eq(r.etag, "\"7\"");
}
END_TEST

/* Two answers in one read: the first ends where its body does. */
START_TEST(used_stops_at_the_end)
{
	static const char a[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n";
	struct wire_resp r;
	size_t used = 0;

	wire_resp_init(&r, false);
	ck_assert_int_eq(wire_resp_feed(&r, a, strlen(a), &used), WIRE_DONE);
	ck_assert_uint_eq(used, 40);
}
END_TEST

START_TEST(bodyless_answers)
{
	static const char head[] = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n";
	static const char nc[] = "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n";
	static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 Service Unavailable\r\n"
	                           "Content-Length: 0\r\n\r\n";
	struct wire_resp r;
	size_t used = 0;

	wire_resp_init(&r, true);
	ck_assert_int_eq(wire_resp_feed(&r, head, strlen(head), &used), WIRE_DONE);
	wire_resp_init(&r, false);
	ck_assert_int_eq(wire_resp_feed(&r, nc, strlen(nc), &used), WIRE_DONE);
	ck_assert_int_eq(r.status, 204);
	wire_resp_init(&r, false);
	ck_assert_int_eq(wire_resp_feed(&r, cont, strlen(cont), &used), WIRE_DONE);
	ck_assert_int_eq(r.status, 503);
	ck_assert_uint_eq(used, strlen(cont));
}
END_TEST

START_TEST(body_to_the_close)
{
	static const char a[] = "HTTP/1.0 200 OK\r\n\r\nsome body";
	static const char b[] = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\n";
	static const char c[] = "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n";
	struct wire_resp r;
	size_t used = 0;

	wire_resp_init(&r, false);
	ck_assert_int_eq(wire_resp_eof(&r), WIRE_BAD);
	ck_assert_int_eq(wire_resp_feed(&r, a, strlen(a), &used), WIRE_MORE);
	ck_assert(r.close);
	ck_assert_int_eq(wire_resp_eof(&r), WIRE_DONE);
	wire_resp_init(&r, false);
	ck_assert_int_eq(wire_resp_feed(&r, b, strlen(b), &used), WIRE_MORE);
	ck_assert(r.close);
	ck_assert_int_eq(wire_resp_eof(&r), WIRE_BAD);
	wire_resp_init(&r, false);
	ck_assert_int_eq(wire_resp_feed(&r, c, strlen(c), &used), WIRE_DONE);
	ck_assert(!r.close);
}
END_TEST

START_TEST(malformed_answers)
{
	static const char *const bad[] = {
		"HTTP/2 200 OK\r\n\r\n", "HTTP/1.1 20 OK\r\n\r\n", "HTTP/1.1 099 X\r\n\r\n",
		"ICY 200 OK\r\n\r\n", "HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
	};
	struct wire_resp r;
	size_t used = 0;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		wire_resp_init(&r, false);
		ck_assert_msg(wire_resp_feed(&r, bad[i], strlen(bad[i]), &used) == WIRE_BAD, "%s", bad[i]);
	}
}
END_TEST

/* Headers are bounded: an endless header block is refused, a long line is cut, not overflowed. */
START_TEST(bounded_headers)
{
	char *big = malloc(WIRE_HEADERS_MAX + 64);
	struct wire_resp r;
	size_t used = 0;
	const char *line = "Retry-After: 7 and then a long tail of text that goes on and on and on "
	                   "and on and on and on and on and on and on and on and on and on\r\n";

	wire_resp_init(&r, false);
	ck_assert_int_eq(wire_resp_feed(&r, "HTTP/1.1 429 X\r\n", 16, &used), WIRE_MORE);
	ck_assert_int_eq(wire_resp_feed(&r, line, strlen(line), &used), WIRE_MORE);
	ck_assert_uint_eq(strlen(r.retry_after), sizeof(r.retry_after) - 1);
	ck_assert(strncmp(r.retry_after, "7 and then", 10) == 0);
	memset(big, 'a', WIRE_HEADERS_MAX + 64);
	ck_assert_int_eq(wire_resp_feed(&r, big, WIRE_HEADERS_MAX + 64, &used), WIRE_BAD);
	free(big);
}
END_TEST

Suite *wire_suite(void)
{
	Suite *s = suite_create("wire");
	TCase *t = tcase_create("request");

	tcase_add_test(t, url_support);
	tcase_add_test(t, get_request_bytes);
	tcase_add_test(t, post_request_bytes);
	tcase_add_test(t, user_headers);
	tcase_add_test(t, path_replaces_the_urls);
	tcase_add_test(t, target_marks_the_headers_end);
	tcase_add_test(t, target_resolves);
	suite_add_tcase(s, t);
	t = tcase_create("answer");
	tcase_add_test(t, whole_answer);
	tcase_add_test(t, etag_kept);
	tcase_add_test(t, split_anywhere);
	tcase_add_test(t, chunked_answer);
	tcase_add_test(t, used_stops_at_the_end);
	tcase_add_test(t, capture_from_lines);
	tcase_add_test(t, bodyless_answers);
	tcase_add_test(t, body_to_the_close);
	tcase_add_test(t, malformed_answers);
	tcase_add_test(t, bounded_headers);
	suite_add_tcase(s, t);
	return s;
}
