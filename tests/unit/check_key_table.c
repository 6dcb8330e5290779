/*
 * The memory key table at its edges: a token bucket smaller than its limit,
 * keys around the inline-key length, and exact LRU across node chunks.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/siphash.h"
#include "server/server.h"
#include "server/server_args.h"
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
	int rc = s->ops->decide(s, key, len, now, 1, &d);

	/* Asserted only on failure: a passing ck_assert costs a write, and loops make 50,000. */
	if (rc != 0)
		ck_abort_msg("decide(%.*s) returned %d", (int)len, key, rc);
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
			if (decide(s, key, (size_t)len, 0).remaining != 4)
				ck_abort_msg("round %d, key-%d: remaining is not 4", round, i);
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

/*
 * The hash key is the table's layout: given it, a test can find keys that share one
 * bucket at every table size up to 1024 buckets (low 10 bits of SipHash-1-3 equal) and
 * check that a chain of them keeps each key's own state, through eviction from its
 * middle and a reset.
 */
static int colliding_keys(const struct siphash_key *hk, char keys[][16], int n)
{
	int found = 0;

	for (unsigned i = 0; found < n && i < 10000000; i++) {
		int len = snprintf(keys[found], 16, "c%u", i);

		if ((siphash13(hk, keys[found], (size_t)len) & 1023) == 0)
			found++;
	}
	return found;
}

START_TEST(one_chain_keeps_keys_apart)
{
	static char keys[300][16];
	const struct siphash_key hk = { 0x0123456789abcdefULL, 0xfedcba9876543210ULL };
	struct limiter_params p = { .limit = 2, .window_ns = NS_PER_SEC };
	const struct limiter_ops *ops = limiter_find("token-bucket");
	struct store_stats st;
	struct store *s;
	char err[256];

	ck_assert_int_eq(limiter_params_check(ops, &p, err, sizeof(err)), 0);
	ck_assert_int_eq(colliding_keys(&hk, keys, 300), 300);
	s = store_memory_new_keyed(ops, &p, 200, 1, &hk);
	ck_assert_ptr_nonnull(s);
	for (int i = 0; i < 300; i++)
		ck_assert_uint_eq(decide(s, keys[i], strlen(keys[i]), 0).remaining, 1);
	s->ops->stats(s, &st);
	ck_assert_uint_eq(st.live_keys, 200);
	ck_assert_uint_eq(st.evictions, 100);
	/* The newest 200 each took one token; the oldest 100 were evicted and start full again. */
	for (int i = 299; i >= 100; i--)
		ck_assert_uint_eq(decide(s, keys[i], strlen(keys[i]), 0).remaining, 0);
	for (int i = 0; i < 100; i++)
		ck_assert_uint_eq(decide(s, keys[i], strlen(keys[i]), 0).remaining, 1);
	s->ops->stats(s, &st);
	ck_assert_uint_eq(st.evictions, 200);
	s->ops->reset(s);
	ck_assert_uint_eq(decide(s, keys[150], strlen(keys[150]), 0).remaining, 1);
	s->ops->free(s);
}
END_TEST

/* Two tables with different hash keys answer the same; only their layouts differ. */
START_TEST(hash_key_changes_no_answer)
{
	const struct siphash_key k1 = { 1, 2 }, k2 = { 3, 4 };
	struct limiter_params p = { .limit = 3, .window_ns = NS_PER_SEC };
	const struct limiter_ops *ops = limiter_find("token-bucket");
	struct store *a, *b;
	char err[256], key[32];

	ck_assert_int_eq(limiter_params_check(ops, &p, err, sizeof(err)), 0);
	a = store_memory_new_keyed(ops, &p, 500, 4, &k1);
	b = store_memory_new_keyed(ops, &p, 500, 4, &k2);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	for (int i = 0; i < 3000; i++) {
		int len = snprintf(key, sizeof(key), "key-%d", i % 700);
		struct limiter_decision da = decide(a, key, (size_t)len, (uint64_t)i);
		struct limiter_decision db = decide(b, key, (size_t)len, (uint64_t)i);

		ck_assert_int_eq(da.admitted, db.admitted);
		ck_assert_uint_eq(da.remaining, db.remaining);
	}
	a->ops->free(a);
	b->ops->free(b);
}
END_TEST

Suite *key_table_suite(void)
{
	Suite *s = suite_create("key_table");
	TCase *tc = tcase_create("key_table");

	tcase_add_test(tc, burst_below_limit);
	tcase_add_test(tc, inline_key_boundary);
	tcase_add_test(tc, cap_across_chunks);
	tcase_add_test(tc, one_chain_keeps_keys_apart);
	tcase_add_test(tc, hash_key_changes_no_answer);
	suite_add_tcase(s, tc);
	return s;
}
