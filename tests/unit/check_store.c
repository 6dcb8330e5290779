/* The in-process key table: cap and LRU eviction, idle expiry, release, reset, threads. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "server/store/store.h"

static struct store *store_for(const char *limiter, uint64_t limit, size_t max_keys, size_t shards)
{
	struct limiter_params p = { .limit = limit, .window_ns = NS_PER_SEC };
	const struct limiter_ops *ops = limiter_find(limiter);
	char err[256];
	struct store *s;

	ck_assert_ptr_nonnull(ops);
	ck_assert_msg(limiter_params_check(ops, &p, err, sizeof(err)) == 0, "%s", err);
	s = store_memory_new(ops, &p, max_keys, shards);
	ck_assert_ptr_nonnull(s);
	return s;
}

/* One decision, which must succeed (asserted only on failure: a passing ck_assert costs a write, and loops make a million). */
static bool go(struct store *s, const char *key, uint64_t now, struct limiter_decision *d)
{
	int rc = s->ops->decide(s, key, strlen(key), now, 1, d);

	if (rc != 0)
		ck_abort_msg("decide(%s) returned %d", key, rc);
	return d->admitted;
}

static int go_n(struct store *s, const char *key, uint64_t now, int n)
{
	struct limiter_decision d;
	int admitted = 0;

	for (int i = 0; i < n; i++)
		admitted += go(s, key, now, &d);
	return admitted;
}

static struct store_stats stats_of(struct store *s)
{
	struct store_stats st;

	s->ops->stats(s, &st);
	return st;
}

START_TEST(keys_are_separate)
{
	struct store *s = store_for("token-bucket", 5, 100, 0);
	struct limiter_decision d;

	ck_assert_str_eq(s->ops->name, "memory");
	ck_assert_int_eq(go_n(s, "10.0.0.1", 0, 40), 5);
	ck_assert_int_eq(go_n(s, "10.0.0.2", 0, 40), 5);
	ck_assert(!go(s, "10.0.0.1", 0, &d));
	ck_assert_uint_eq(d.wait_ns, 200 * NS_PER_MS);
	ck_assert_int_eq(go_n(s, "10.0.0.1", 200 * NS_PER_MS, 3), 1);
	ck_assert_uint_eq(stats_of(s).live_keys, 2);
	ck_assert_uint_eq(stats_of(s).errors, 0);
	s->ops->free(s);
}
END_TEST

START_TEST(long_keys)
{
	struct store *s = store_for("token-bucket", 2, 100, 1);
	char a[300], b[300];

	memset(a, 'x', sizeof(a) - 1);
	a[sizeof(a) - 1] = '\0';
	memcpy(b, a, sizeof(a));
	b[sizeof(b) - 2] = 'y';  /* differs only in the last byte, far past the inline prefix */
	ck_assert_int_eq(go_n(s, a, 0, 5), 2);
	ck_assert_int_eq(go_n(s, b, 0, 5), 2);
	ck_assert_int_eq(go_n(s, a, 0, 5), 0);
	/* A 46-byte key and a longer one sharing its prefix stay apart too. */
	a[46] = '\0';
	ck_assert_int_eq(go_n(s, a, 0, 5), 2);
	ck_assert_uint_eq(stats_of(s).live_keys, 3);
	s->ops->free(s);
}
END_TEST

START_TEST(cap_evicts_exactly)
{
	struct store *s = store_for("token-bucket", 5, 1000, 0);
	struct limiter_decision d;
	struct store_stats st;
	char key[32];
	int admitted = 0;

	for (int i = 0; i < 300000; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		admitted += go(s, key, 0, &d);
	}
	ck_assert_int_eq(admitted, 300000);
	st = stats_of(s);
	ck_assert_uint_eq(st.live_keys, 1000);
	ck_assert_uint_eq(st.evictions, 300000 - 1000);
	ck_assert_uint_eq(st.expirations, 0);
	s->ops->free(s);
}
END_TEST

START_TEST(lru_victim)
{
	struct store *s = store_for("token-bucket", 5, 3, 1);
	struct limiter_decision d;

	go_n(s, "a", 0, 2);
	go_n(s, "b", 0, 2);
	go_n(s, "c", 0, 2);
	go_n(s, "a", 0, 1);  /* a is now the most recent; b the least */
	go_n(s, "d", 0, 1);
	ck_assert_uint_eq(stats_of(s).evictions, 1);
	go(s, "a", 0, &d);
	ck_assert_uint_eq(d.remaining, 1);  /* kept: 4 taken */
	go(s, "c", 0, &d);
	ck_assert_uint_eq(d.remaining, 2);  /* kept: 3 taken */
	ck_assert_uint_eq(stats_of(s).evictions, 1);
	go(s, "b", 0, &d);
	ck_assert_uint_eq(d.remaining, 4);  /* evicted: came back fresh */
	ck_assert_uint_eq(stats_of(s).evictions, 2);
	ck_assert_uint_eq(stats_of(s).live_keys, 3);
	s->ops->free(s);
}
END_TEST

START_TEST(idle_keys_expire)
{
	struct store *s = store_for("token-bucket", 5, 100, 1);
	struct store_stats st;

	go_n(s, "a", 0, 5);
	go_n(s, "b", 4500 * NS_PER_MS, 5);
	/* At 5 s, a is full again (idle) and unused for 5 s; b is not full: a new key expires a only. */
	go_n(s, "c", 5 * NS_PER_SEC, 1);
	st = stats_of(s);
	ck_assert_uint_eq(st.expirations, 1);
	ck_assert_uint_eq(st.live_keys, 2);
	ck_assert_uint_eq(st.evictions, 0);
	s->ops->free(s);
	/* Idle but used within the grace (~1.07 s): kept, so a returning client keeps its node. */
	s = store_for("token-bucket", 5, 100, 1);
	go_n(s, "a", 0, 1);
	go_n(s, "b", 1000 * NS_PER_MS, 1);
	st = stats_of(s);
	ck_assert_uint_eq(st.expirations, 0);
	ck_assert_uint_eq(st.live_keys, 2);
	go_n(s, "c", 1100 * NS_PER_MS, 1);
	ck_assert_uint_eq(stats_of(s).expirations, 1);
	ck_assert_uint_eq(stats_of(s).live_keys, 2);
	s->ops->free(s);
}
END_TEST

START_TEST(concurrency_release)
{
	struct store *s = store_for("concurrency", 2, 100, 0);

	ck_assert_int_eq(go_n(s, "k", 0, 3), 2);
	s->ops->release(s, "k", 1, 1);
	ck_assert_int_eq(go_n(s, "k", 2, 3), 1);
	s->ops->release(s, "k", 1, 3);
	s->ops->release(s, "k", 1, 3);
	s->ops->release(s, "k", 1, 3);  /* one too many: must not create a spare slot */
	s->ops->release(s, "nobody", 6, 3);
	ck_assert_int_eq(go_n(s, "k", 4, 5), 2);
	ck_assert_uint_eq(stats_of(s).live_keys, 1);
	s->ops->free(s);
}
END_TEST

START_TEST(reset_forgets)
{
	struct store *s = store_for("token-bucket", 5, 2, 1);

	go_n(s, "a", 0, 9);
	go_n(s, "b", 0, 9);
	go_n(s, "c", 0, 9);
	ck_assert_uint_eq(stats_of(s).evictions, 1);
	s->ops->reset(s);
	ck_assert_uint_eq(stats_of(s).live_keys, 0);
	ck_assert_uint_eq(stats_of(s).evictions, 0);
	ck_assert_int_eq(go_n(s, "b", 0, 9), 5);
	s->ops->free(s);
}
END_TEST

struct hammer_arg {
	struct store *s;
	int id;
	int shared_admitted, own_admitted;
};

static void *hammer_store(void *p)
{
	struct hammer_arg *a = p;
	struct limiter_decision d;
	char key[32];

	for (int i = 0; i < 20000; i++) {
		if (a->s->ops->decide(a->s, "shared", 6, 0, 1, &d) == 0 && d.admitted)
			a->shared_admitted++;
		snprintf(key, sizeof(key), "t%d-%d", a->id, i % 500);
		if (a->s->ops->decide(a->s, key, strlen(key), 0, 1, &d) == 0 && d.admitted)
			a->own_admitted++;
	}
	return NULL;
}

START_TEST(threads_exact_totals)
{
	struct store *s = store_for("token-bucket", 1000, 10000, 0);
	struct hammer_arg a[2] = { { s, 0, 0, 0 }, { s, 1, 0, 0 } };
	pthread_t t[2];

	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, hammer_store, &a[i]), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	ck_assert_int_eq(a[0].shared_admitted + a[1].shared_admitted, 1000);
	/* 500 own keys each, 40 requests per key, all within the burst. */
	ck_assert_int_eq(a[0].own_admitted, 20000);
	ck_assert_int_eq(a[1].own_admitted, 20000);
	ck_assert_uint_eq(stats_of(s).live_keys, 1001);
	s->ops->free(s);
}
END_TEST

static long rss_kb(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f == NULL)
		return -1;
	if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
		rss = -1;
	fclose(f);
	return rss < 0 ? -1 : rss * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Sanitizers add shadow memory and slow every call: smaller run, no RSS figure. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define STORE_SANITIZED 1
#else
#define STORE_SANITIZED 0
#endif

START_TEST(memory_bounded)
{
	const int nkeys = STORE_SANITIZED ? 100000 : 1000000;
	struct store *s = store_for("token-bucket", 5, (size_t)nkeys / 10, 0);
	long before = rss_kb(), after;
	char key[48];

	for (int i = 0; i < nkeys; i++) {
		snprintf(key, sizeof(key), "2001:db8::%x:%x", i >> 16, i & 0xffff);
		go_n(s, key, (uint64_t)i, 1);
	}
	after = rss_kb();
	ck_assert_uint_eq(stats_of(s).live_keys, (uint64_t)nkeys / 10);
	ck_assert_uint_eq(stats_of(s).evictions, (uint64_t)nkeys - nkeys / 10);
	/* About 112 bytes a key: 100000 keys need ~12 MB. */
	if (!STORE_SANITIZED)
		ck_assert_msg(after - before < 32 * 1024, "RSS grew by %ld kB", after - before);
	s->ops->free(s);
}
END_TEST

/* A cap of 2^32 keys costs nothing until keys come: no bucket array or node sized by the cap. */
START_TEST(huge_cap_is_lazy)
{
	long before = rss_kb(), after;
	struct store *s = store_for("token-bucket", 5, (size_t)1 << 32, 0);
	char key[32];

	after = rss_kb();
	if (!STORE_SANITIZED)
		ck_assert_msg(after - before < 2 * 1024, "a 2^32-key table took %ld kB empty", after - before);
	for (int i = 0; i < 20000; i++) {
		snprintf(key, sizeof(key), "10.1.%d.%d", i / 256, i % 256);
		ck_assert_int_eq(go_n(s, key, 0, 6), 5);
	}
	ck_assert_uint_eq(stats_of(s).live_keys, 20000);
	ck_assert_uint_eq(stats_of(s).evictions, 0);
	/* 20,000 keys of 64 bytes plus their buckets: a few MB, not the cap's share. */
	if (!STORE_SANITIZED)
		ck_assert_msg(rss_kb() - before < 8 * 1024, "20000 keys took %ld kB", rss_kb() - before);
	s->ops->free(s);
}
END_TEST

/* What a key can cost in a full table: its node (whole cache lines) and at most two bucket slots. */
START_TEST(key_bytes)
{
	struct limiter_params tb = { .limit = 5, .window_ns = NS_PER_SEC };
	struct limiter_params sl = { .limit = 1000, .window_ns = NS_PER_SEC };
	char err[256];

	ck_assert_int_eq(limiter_params_check(limiter_find("token-bucket"), &tb, err, sizeof(err)), 0);
	ck_assert_int_eq(limiter_params_check(limiter_find("sliding-log"), &sl, err, sizeof(err)), 0);
	ck_assert_uint_eq(store_memory_key_bytes(limiter_find("token-bucket"), &tb), 64 + 8);
	/* 48 bytes of links and key, 16 of ring indices, 8 per timestamp: 8064, already whole lines. */
	ck_assert_uint_eq(store_memory_key_bytes(limiter_find("sliding-log"), &sl), 8064 + 8);
}
END_TEST

/* Every limiter behind the table, with churn: exact per-key admissions, live keys within the cap. */
START_TEST(every_limiter_through_the_table)
{
	static const char *names[] = { "token-bucket", "leaky-bucket", "fixed-window", "sliding-log",
	                               "sliding-window", "gcra", "concurrency", "layered", "none" };
	static const uint64_t first[] = { 3, 4, 3, 3, 3, 3, 3, 3, 5 };  /* of 5 at once, fresh key */
	struct limiter_decision d;
	char key[32];

	for (size_t l = 0; l < sizeof(names) / sizeof(names[0]); l++) {
		struct store *s = store_for(names[l], 3, 1000, 4);
		uint64_t admitted = 0, now = 0;

		for (int i = 0; i < 5000; i++) {
			snprintf(key, sizeof(key), "key-%d", i);
			for (int j = 0; j < 5; j++) {
				admitted += go(s, key, now, &d);
			}
			now += 1000;
		}
		ck_assert_msg(admitted == 5000 * first[l], "%s: %llu admitted", names[l],
		              (unsigned long long)admitted);
		ck_assert_uint_le(stats_of(s).live_keys, 1000);
		ck_assert_uint_eq(stats_of(s).live_keys + stats_of(s).evictions + stats_of(s).expirations,
		                  5000);
		s->ops->free(s);
	}
}
END_TEST

Suite *store_suite(void)
{
	Suite *s = suite_create("store");
	TCase *tc = tcase_create("memory");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, keys_are_separate);
	tcase_add_test(tc, long_keys);
	tcase_add_test(tc, cap_evicts_exactly);
	tcase_add_test(tc, lru_victim);
	tcase_add_test(tc, idle_keys_expire);
	tcase_add_test(tc, concurrency_release);
	tcase_add_test(tc, reset_forgets);
	tcase_add_test(tc, threads_exact_totals);
	tcase_add_test(tc, memory_bounded);
	tcase_add_test(tc, huge_cap_is_lazy);
	tcase_add_test(tc, key_bytes);
	tcase_add_test(tc, every_limiter_through_the_table);
	suite_add_tcase(s, tc);
	return s;
}
