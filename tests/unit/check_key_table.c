/*
 * The memory key table at its edges: a token bucket smaller than its limit,
 * keys around the inline-key length, and exact LRU across node chunks.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "server/server.h"
#include "server/store/store.h"

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

Suite *key_table_suite(void)
{
	Suite *s = suite_create("key_table");
	TCase *tc = tcase_create("key_table");

	tcase_add_test(tc, burst_below_limit);
	tcase_add_test(tc, inline_key_boundary);
	tcase_add_test(tc, cap_across_chunks);
	suite_add_tcase(s, tc);
	return s;
}
