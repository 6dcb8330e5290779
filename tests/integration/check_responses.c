/*
 * What the server answers on a kept-alive connection: rejections rewritten in
 * place, headers that change mid-connection, and header blocks that fit the
 * 8 KiB connection pool.
 */
#include <check.h>
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "server/server.h"
#include "server/server_args.h"
#include "server/store/store.h"
#include "tests/harness/testutil.h"

static struct server *start_args(int argc, char **argv, char *base, size_t len)
{
	struct server_config cfg;
	char err[256] = "";
	struct server *srv;

	ck_assert_msg(server_config_from_args(&cfg, argc, argv, err, sizeof(err)) == 0, "%s", err);
	cfg.port = 0;
	cfg.quiet = true;
	srv = server_start(&cfg, err, sizeof(err));
	ck_assert_msg(srv != NULL, "server_start: %s", err);
	snprintf(base, len, "http://127.0.0.1:%d", server_port(srv));
	return srv;
}

/* Parse a 429's body: valid JSON whose length is what was received; returns wait_ms. */
static double check_problem(const struct test_reply *r)
{
	json_error_t e;
	json_t *j = json_loadb(r->body, r->blen, 0, &e);
	double w;

	ck_assert_msg(j != NULL, "429 body is not JSON (%s): %s", e.text, r->body);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "status")), 429);
	w = json_number_value(json_object_get(j, "wait_ms"));
	ck_assert_int_eq(json_integer_value(json_object_get(j, "retry_after_s")), (json_int_t)(w / 1000.0) + 1);
	json_decref(j);
	return w;
}

/* 200 rejections on one keep-alive connection: fresh body text each time, exact waits falling. */
START_TEST(rejections_on_one_connection)
{
	char *argv[] = { "serve", "--limit", "1", "--window", "100s", NULL };
	struct test_reply r;
	char base[64], url[128];
	struct server *srv = start_args(5, argv, base, sizeof(base));
	CURL *c = curl_easy_init();
	double prev = 1e9, w;
	long conns = 0;

	snprintf(url, sizeof(url), "%s/", base);
	ck_assert_int_eq(testutil_fire(c, "GET", url, NULL, &r), CURLE_OK);
	ck_assert_int_eq(r.status, 200);
	for (int i = 0; i < 200; i++) {
		ck_assert_int_eq(testutil_fire(c, "GET", url, NULL, &r), CURLE_OK);
		ck_assert_int_eq(r.status, 429);
		ck_assert_ptr_nonnull(strstr(r.headers, "Retry-After: 100\r\n"));
		ck_assert_ptr_nonnull(strstr(r.headers, "RateLimit: \"default\";r=0;t=100\r\n"));
		w = check_problem(&r);
		ck_assert_msg(w < prev && w > 99000.0, "wait_ms %f after %f", w, prev);
		prev = w;
	}
	curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &conns);
	ck_assert_int_eq(conns, 0);  /* the last request reused the first connection */
	curl_easy_cleanup(c);
	server_stop(srv);
}
END_TEST

/* Retry-After dropped for about half the rejections: the kept answer must follow each change. */
START_TEST(rejection_headers_change_mid_connection)
{
	char *argv[] = { "serve", "--limit", "1", "--window", "100s", "--faults", "no-retry-after:50", NULL };
	struct test_reply r;
	char base[64], url[128];
	struct server *srv = start_args(7, argv, base, sizeof(base));
	CURL *c = curl_easy_init();
	int with = 0, without = 0, switches = 0;
	bool last = false;

	snprintf(url, sizeof(url), "%s/", base);
	ck_assert_int_eq(testutil_fire(c, "GET", url, NULL, &r), CURLE_OK);
	for (int i = 0; i < 200; i++) {
		bool has;

		ck_assert_int_eq(testutil_fire(c, "GET", url, NULL, &r), CURLE_OK);
		ck_assert_int_eq(r.status, 429);
		check_problem(&r);
		has = strstr(r.headers, "Retry-After: 100\r\n") != NULL;
		ck_assert(has || strstr(r.headers, "Retry-After") == NULL);
		with += has;
		without += !has;
		switches += i > 0 && has != last;
		last = has;
	}
	/* 50 %: 200 draws land in 60..140 with overwhelming odds for any seed. */
	ck_assert_msg(with >= 60 && without >= 60 && switches >= 40, "with %d without %d switches %d", with, without,
	              switches);
	curl_easy_cleanup(c);
	server_stop(srv);
}
END_TEST

/* Length of the wait_ms number's text in a 429 body (0 when absent). */
static size_t wait_ms_digits(const char *body)
{
	const char *p = strstr(body, "\"wait_ms\":");

	return p ? strcspn(p + 10, ",}") : 0;
}

/*
 * A kept-alive connection's rejections reuse one response and pad its body to
 * one length: whatever the wait's digit count, the body is one JSON object
 * that ends in "}\n", with any padding inside it, before the brace.
 */
START_TEST(rejection_body_ends_in_brace_newline)
{
	char *argv[] = { "serve", "--limit", "1", "--window", "100s", NULL };
	struct test_reply r;
	char base[64], url[128];
	struct server *srv = start_args(5, argv, base, sizeof(base));
	CURL *c = curl_easy_init();
	bool seen[32] = { false };
	int lengths = 0, padded = 0, n = 0;

	snprintf(url, sizeof(url), "%s/", base);
	ck_assert_int_eq(testutil_fire(c, "GET", url, NULL, &r), CURLE_OK);
	ck_assert_int_eq(r.status, 200);
	/* Exact waits end in 0 to 6 decimals; 300 rejections see several lengths (bounded: 2000). */
	for (; n < 2000 && (n < 300 || lengths < 3); n++) {
		const char *tail;
		size_t digits;

		ck_assert_int_eq(testutil_fire(c, "GET", url, NULL, &r), CURLE_OK);
		ck_assert_int_eq(r.status, 429);
		check_problem(&r);
		ck_assert_msg(r.blen > 2 && memcmp(r.body + r.blen - 2, "}\n", 2) == 0, "body ends '%s'",
		              r.body + (r.blen > 8 ? r.blen - 8 : 0));
		ck_assert_msg(strchr(r.body, '\n') == r.body + r.blen - 1, "more than one line: %s", r.body);
		/* Between the detail's closing quote and the brace: only spaces. */
		tail = strstr(r.body, " s)\"");
		ck_assert_ptr_nonnull(tail);
		tail += 4;
		ck_assert_uint_eq(strspn(tail, " "), r.blen - 2 - (size_t)(tail - r.body));
		padded += r.body[r.blen - 3] == ' ';
		digits = wait_ms_digits(r.body);
		ck_assert_msg(digits > 0 && digits < 32, "wait_ms in %s", r.body);
		lengths += !seen[digits];
		seen[digits] = true;
	}
	ck_assert_msg(lengths >= 3, "only %d wait lengths in %d rejections", lengths, n);
	ck_assert_int_gt(padded, 0);
	curl_easy_cleanup(c);
	server_stop(srv);
}
END_TEST

/* The 8 KiB connection pool still takes a 6 kB header block; a 20 kB one is refused. */
START_TEST(header_sizes_with_small_pool)
{
	char *argv[] = { "serve", "--limiter", "none", NULL };
	struct test_reply r;
	char base[64], url[128], *h = malloc(20100);
	struct server *srv = start_args(3, argv, base, sizeof(base));
	CURL *c = curl_easy_init();
	CURLcode rc;

	snprintf(url, sizeof(url), "%s/", base);
	memcpy(h, "X-Big: ", 7);
	memset(h + 7, 'a', 6000);
	h[6007] = '\0';
	ck_assert_int_eq(testutil_fire(c, "GET", url, h, &r), CURLE_OK);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(r.body, "ok\n");
	memset(h + 7, 'a', 20000);
	h[20007] = '\0';
	rc = testutil_fire(c, "GET", url, h, &r);
	ck_assert_msg(rc != CURLE_OK || r.status == 431, "20 kB header: rc %d status %ld", rc, r.status);
	ck_assert_int_eq(testutil_fire(c, "GET", url, NULL, &r), CURLE_OK);
	ck_assert_int_eq(r.status, 200);
	free(h);
	curl_easy_cleanup(c);
	server_stop(srv);
}
END_TEST

Suite *responses_suite(void)
{
	Suite *s = suite_create("responses");
	TCase *tc = tcase_create("responses");

	tcase_add_test(tc, rejections_on_one_connection);
	tcase_add_test(tc, rejection_headers_change_mid_connection);
	tcase_add_test(tc, rejection_body_ends_in_brace_newline);
	tcase_add_test(tc, header_sizes_with_small_pool);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
