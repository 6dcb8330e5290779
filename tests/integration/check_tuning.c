/*
 * The server's speed work (issue 2 benchmarks) must not change behaviour:
 * a token bucket smaller than the limit, the one-cache-line key table at its
 * inline-key and chunk boundaries, the connection-owned rejection answer that
 * is rewritten in place on keep-alive, and the 8 KiB connection pool.
 */
#include <check.h>
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "server/server.h"
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

static struct store *tb_store(uint64_t limit, uint64_t burst, size_t max_keys, size_t shards)
{
	struct limiter_params p = { .limit = limit, .window_ns = NS_PER_SEC, .burst = burst };
	const struct limiter_ops *ops = limiter_find("token-bucket");
	char err[256];
	struct store *s;

	ck_assert_msg(limiter_params_check(ops, &p, err, sizeof(err)) == 0, "%s", err);
	s = store_memory_new(ops, &p, max_keys, shards);
	ck_assert_ptr_nonnull(s);
	return s;
}

static struct limiter_decision decide(struct store *s, const char *key, size_t len, uint64_t now)
{
	struct limiter_decision d;

	ck_assert_int_eq(s->ops->decide(s, key, len, now, 1, &d), 0);
	return d;
}

/* --limit 5 --burst 1: accepted; one at a time, one every 200 ms, waits exact. */
START_TEST(burst_below_limit)
{
	char *argv[] = { "serve", "--limiter", "token-bucket", "--limit", "5", "--burst", "1", NULL };
	struct server_config cfg;
	struct store *s = tb_store(5, 1, 100, 1);
	struct limiter_decision d;
	char err[256] = "";
	int admitted = 0;

	ck_assert_msg(server_config_from_args(&cfg, 7, argv, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(cfg.routes[0].params.burst, 1);
	ck_assert_uint_eq(cfg.routes[0].params.limit, 5);
	for (int i = 0; i < 10; i++)
		admitted += decide(s, "k", 1, 0).admitted;
	ck_assert_int_eq(admitted, 1);
	d = decide(s, "k", 1, 0);
	ck_assert_uint_eq(d.wait_ns, 200 * NS_PER_MS);
	ck_assert_uint_eq(d.remaining, 0);
	ck_assert(!decide(s, "k", 1, 200 * NS_PER_MS - 1).admitted);
	d = decide(s, "k", 1, 200 * NS_PER_MS);
	ck_assert(d.admitted);
	ck_assert_uint_eq(d.reset_ns, 200 * NS_PER_MS);
	/* Idle for 10 s: the bucket holds 1, not 5 or 50. */
	admitted = 0;
	for (int i = 0; i < 10; i++)
		admitted += decide(s, "k", 1, 10 * NS_PER_SEC).admitted;
	ck_assert_int_eq(admitted, 1);
	s->ops->free(s);
}
END_TEST

/* A --burst or --limit the limiters cannot take: the message names the flag and its value. */
START_TEST(bad_burst_names_value)
{
	char *too_big[] = { "serve", "--limit", "5", "--window", "1h", "--burst", "4000000000", NULL };
	char *zero[] = { "serve", "--burst", "0", NULL };
	struct server_config cfg;
	char err[512] = "";

	ck_assert_int_eq(server_config_from_args(&cfg, 7, too_big, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "--burst '4000000000'") != NULL, "%s", err);
	ck_assert_ptr_null(strchr(err, '\n'));
	ck_assert_int_eq(server_config_from_args(&cfg, 3, zero, err, sizeof(err)), -1);
	/* the value once: parse_u64's message quotes it, the flag is named before it */
	ck_assert_str_eq(err, "ratelab serve: --burst: '0' out of range (1 to 4294967295)");
}
END_TEST

/* Keys around the 27-byte inline limit, and long keys differing only at the end, stay apart. */
START_TEST(inline_key_boundary)
{
	struct store *s = tb_store(2, 0, 1000, 1);
	char k[200];

	memset(k, 'x', sizeof(k));
	for (size_t len = 25; len <= 30; len++) {
		ck_assert(decide(s, k, len, 0).admitted);
		ck_assert_uint_eq(decide(s, k, len, 0).remaining, 0);  /* the same key again */
	}
	ck_assert_uint_eq(decide(s, k, 200, 0).remaining, 1);
	ck_assert_uint_eq(decide(s, k, 200, 0).remaining, 0);
	ck_assert(!decide(s, k, 200, 0).admitted);
	k[199] = 'y';
	ck_assert_uint_eq(decide(s, k, 200, 0).remaining, 1);  /* fresh: differs only in its last byte */
	ck_assert_uint_eq(decide(s, k, 17, 0).remaining, 1);   /* an IPv6 key's length, inline */
	{
		struct store_stats st;

		s->ops->stats(s, &st);
		ck_assert_uint_eq(st.live_keys, 9);
	}
	s->ops->free(s);
}
END_TEST

/* One shard holding 10,000 keys spans several node chunks: exact LRU across them, and after reset. */
START_TEST(cap_across_chunks)
{
	struct store *s = tb_store(5, 0, 10000, 1);
	struct store_stats st;
	char key[32];
	int len;

	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 25000; i++) {
			len = snprintf(key, sizeof(key), "key-%d", i);
			ck_assert_uint_eq(decide(s, key, (size_t)len, 0).remaining, 4);
		}
		s->ops->stats(s, &st);
		ck_assert_uint_eq(st.live_keys, 10000);
		ck_assert_uint_eq(st.evictions, 15000);
		/* The newest 10,000 are kept (second take: 3 left); the one before them was evicted. */
		for (int i = 24999; i >= 15000; i -= 997) {
			len = snprintf(key, sizeof(key), "key-%d", i);
			ck_assert_uint_eq(decide(s, key, (size_t)len, 0).remaining, 3);
		}
		len = snprintf(key, sizeof(key), "key-%d", 14999);
		ck_assert_uint_eq(decide(s, key, (size_t)len, 0).remaining, 4);
		s->ops->reset(s);
		s->ops->stats(s, &st);
		ck_assert_uint_eq(st.live_keys, 0);
	}
	s->ops->free(s);
}
END_TEST

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

Suite *tuning_suite(void)
{
	Suite *s = suite_create("tuning");
	TCase *tc = tcase_create("tuning");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, burst_below_limit);
	tcase_add_test(tc, bad_burst_names_value);
	tcase_add_test(tc, inline_key_boundary);
	tcase_add_test(tc, cap_across_chunks);
	tcase_add_test(tc, rejections_on_one_connection);
	tcase_add_test(tc, rejection_headers_change_mid_connection);
	tcase_add_test(tc, header_sizes_with_small_pool);
	suite_add_tcase(s, tc);
	return s;
}
