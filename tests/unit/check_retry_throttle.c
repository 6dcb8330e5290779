/* Client-side adaptive throttling (SRE book): exact probabilities, the sliding window, admit, knobs. */
#include <check.h>
#include <pthread.h>
#include <string.h>

#include "common/clock.h"
#include "common/prng.h"
#include "common/retry/retry.h"
#include "common/retry/retry_throttle.h"

#define MS(x) ((uint64_t)(x) * NS_PER_MS)
#define SEC(x) ((uint64_t)(x) * NS_PER_SEC)

static struct retry_throttle *sre(double k, uint64_t window_ns, uint64_t now)
{
	struct retry_throttle_params tp = { .kind = RETRY_THROTTLE_SRE, .k = k, .window_ns = window_ns };
	struct retry_throttle *t = retry_throttle_new(&tp, now);

	ck_assert_ptr_nonnull(t);
	return t;
}

static void record_n(struct retry_throttle *t, uint64_t now, unsigned n, bool accepted)
{
	for (unsigned i = 0; i < n; i++)
		retry_throttle_record(t, now, accepted);
}

/* (requests - K * accepts) / (requests + 1), floored at 0, for scripted counts. */
START_TEST(probability_exact)
{
	static const struct {
		double k;
		unsigned fails, accepts;
		double p;
	} ROWS[] = {
		{ 2, 0, 0, 0.0 },            { 2, 10, 0, 10.0 / 11 },     { 2, 5, 5, 0.0 },
		{ 2, 7, 3, 4.0 / 11 },       { 2, 90, 10, 80.0 / 101 },   { 2, 0, 50, 0.0 },
		{ 1, 5, 5, 5.0 / 11 },       { 1, 90, 10, 90.0 / 101 },   { 1, 0, 10, 0.0 },
		{ 1, 1, 0, 1.0 / 2 },        { 3, 90, 10, 70.0 / 101 },   { 2, 1000, 0, 1000.0 / 1001 },
	};

	for (size_t i = 0; i < sizeof(ROWS) / sizeof(ROWS[0]); i++) {
		struct retry_throttle *t = sre(ROWS[i].k, SEC(120), 0);
		uint64_t req, acc;

		record_n(t, SEC(1), ROWS[i].fails, false);
		record_n(t, SEC(1), ROWS[i].accepts, true);
		ck_assert_msg(retry_throttle_probability(t, SEC(2)) == ROWS[i].p, "row %zu: p = %.17g, want %.17g",
		              i, retry_throttle_probability(t, SEC(2)), ROWS[i].p);
		retry_throttle_counts(t, SEC(2), &req, &acc);
		ck_assert_uint_eq(req, ROWS[i].fails + ROWS[i].accepts);
		ck_assert_uint_eq(acc, ROWS[i].accepts);
		retry_throttle_free(t);
	}
}
END_TEST

/* A 20 s window slides in 1 s buckets: counts leave it whole, exactly window_ns after their bucket began. */
START_TEST(window_slides)
{
	struct retry_throttle *t = sre(2, SEC(20), 0);
	uint64_t req, acc;

	record_n(t, 0, 10, false);
	record_n(t, SEC(5) + MS(500), 5, false);
	record_n(t, SEC(5) + MS(999), 2, true);
	ck_assert(retry_throttle_probability(t, SEC(6)) == 13.0 / 18);       /* 17 - 2 * 2 over 18 */
	ck_assert(retry_throttle_probability(t, SEC(20) - 1) == 13.0 / 18);  /* bucket [0, 1 s) still in */
	retry_throttle_counts(t, SEC(20), &req, &acc);                      /* ... and out at 20 s */
	ck_assert_uint_eq(req, 7);
	ck_assert_uint_eq(acc, 2);
	ck_assert(retry_throttle_probability(t, SEC(20)) == 3.0 / 8);
	ck_assert(retry_throttle_probability(t, SEC(25) - 1) == 3.0 / 8);
	ck_assert(retry_throttle_probability(t, SEC(25)) == 0.0);            /* everything has left */
	retry_throttle_counts(t, SEC(25), &req, &acc);
	ck_assert_uint_eq(req + acc, 0);
	/* A bucket reused a window later starts from zero; a time older than the window does not count. */
	record_n(t, SEC(40) + MS(1), 3, false);
	record_n(t, SEC(3), 50, false);
	retry_throttle_counts(t, SEC(41), &req, &acc);
	ck_assert_uint_eq(req, 3);
	ck_assert(retry_throttle_probability(t, SEC(41)) == 3.0 / 4);
	retry_throttle_free(t);
}
END_TEST

/* admit rejects exactly when its one draw is under p, and counts what it rejects as a request. */
START_TEST(admit_draws_once_and_counts_rejections)
{
	struct retry_throttle *t = sre(2, SEC(120), 0);
	struct prng rng, mirror;
	double req = 10, acc = 0;
	unsigned rejected = 0;

	record_n(t, 0, 10, false);
	prng_seed(&rng, 42);
	prng_seed(&mirror, 42);
	for (int i = 0; i < 200; i++) {
		double p = (req - 2 * acc) / (req + 1);
		bool want = !(prng_double(&mirror) < (p > 0 ? p : 0));
		bool got = retry_throttle_admit(t, SEC(1), &rng);

		ck_assert_msg(got == want, "call %d: admit %d, want %d", i, got, want);
		if (!got) {
			req++;
			rejected++;
		} else if (i % 3 == 0) {   /* a sent attempt: the backend accepts one in three */
			retry_throttle_record(t, SEC(1), true);
			req++;
			acc++;
		}
	}
	ck_assert_uint_gt(rejected, 50);
	ck_assert_uint_eq(retry_throttle_rejected(t), rejected);
	ck_assert(retry_throttle_probability(t, SEC(1)) == (req - 2 * acc > 0 ? (req - 2 * acc) / (req + 1) : 0));
	ck_assert_uint_eq(prng_next(&rng), prng_next(&mirror));  /* one draw per call, no more */
	retry_throttle_free(t);
}
END_TEST

/* The same seed and script give the same decisions; another seed does not. */
static unsigned long long admit_pattern(uint64_t seed)
{
	struct retry_throttle *t = sre(1, SEC(60), 0);
	struct prng rng;
	unsigned long long bits = 0;

	prng_seed(&rng, seed);
	record_n(t, 0, 30, false);
	record_n(t, 0, 10, true);
	for (int i = 0; i < 64; i++)
		bits = bits << 1 | (retry_throttle_admit(t, MS(100) * (uint64_t)i, &rng) ? 1u : 0u);
	retry_throttle_free(t);
	return bits;
}

START_TEST(deterministic_with_seed)
{
	unsigned long long a = admit_pattern(7);

	ck_assert(a == admit_pattern(7));
	ck_assert(a != admit_pattern(8));
	ck_assert(a != 0 && a != ~0ULL);  /* both answers occur */
}
END_TEST

/*
 * The SRE book's claim: the backend receives about K times what it accepts.
 * A client that wants 100 attempts/s meets a backend that accepts 10/s (the
 * first 10 of each second); after 10 minutes, over the last 2-minute window,
 * what it sends is within 10 % of K * accepted.  With K = 2 the backend's
 * capacity is used in full (10/s accepted); with K = 1 every rate under it is
 * an equilibrium, so less may be accepted, but the client sends what it gets.
 */
static void steady_state(double k, unsigned min_accepted)
{
	struct retry_throttle *t = sre(k, SEC(120), 0);
	struct prng rng;
	unsigned sent = 0, accepted = 0;

	prng_seed(&rng, 1);
	for (unsigned s = 0; s < 600; s++) {
		unsigned this_second = 0;

		for (unsigned j = 0; j < 100; j++) {
			uint64_t now = SEC(s) + MS(10) * j;
			bool ok;

			if (!retry_throttle_admit(t, now, &rng))
				continue;
			ok = this_second++ < 10;
			retry_throttle_record(t, now, ok);
			if (s >= 480) {
				sent++;
				accepted += ok ? 1 : 0;
			}
		}
	}
	ck_assert_uint_ge(accepted, min_accepted);
	ck_assert_uint_le(accepted, 1200);
	ck_assert_msg(sent >= 0.9 * k * accepted && sent <= 1.1 * k * accepted, "K=%g: sent %u for %u accepted",
	              k, sent, accepted);
	retry_throttle_free(t);
}

START_TEST(backend_sees_k_times_accepts)
{
	steady_state(2, 1200);
	steady_state(1, 120);
}
END_TEST

struct recorder {
	struct retry_throttle *t;
	bool accepted;
};

static void *record_many(void *arg)
{
	struct recorder *r = arg;

	record_n(r->t, SEC(1), 1000, r->accepted);
	return NULL;
}

START_TEST(shared_by_threads)
{
	struct retry_throttle *t = sre(2, SEC(120), 0);
	struct recorder rec[4];
	pthread_t th[4];
	uint64_t req, acc;

	for (int i = 0; i < 4; i++) {
		rec[i].t = t;
		rec[i].accepted = i % 2 == 0;
		ck_assert_int_eq(pthread_create(&th[i], NULL, record_many, &rec[i]), 0);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	retry_throttle_counts(t, SEC(1), &req, &acc);
	ck_assert_uint_eq(req, 4000);
	ck_assert_uint_eq(acc, 2000);
	retry_throttle_free(t);
}
END_TEST

START_TEST(none_and_null)
{
	struct retry_throttle_params none = { .kind = RETRY_THROTTLE_NONE, .k = 2, .window_ns = SEC(1) };
	struct prng rng, mirror;
	uint64_t req = 9, acc = 9;

	ck_assert_ptr_null(retry_throttle_new(&none, 0));
	ck_assert_ptr_null(retry_throttle_new(NULL, 0));
	prng_seed(&rng, 3);
	prng_seed(&mirror, 3);
	ck_assert(retry_throttle_admit(NULL, 0, &rng));
	ck_assert_uint_eq(prng_next(&rng), prng_next(&mirror));  /* no draw */
	ck_assert(retry_throttle_probability(NULL, 0) == 0.0);
	retry_throttle_record(NULL, 0, true);
	retry_throttle_counts(NULL, 0, &req, &acc);
	ck_assert_uint_eq(req + acc, 0);
	ck_assert_uint_eq(retry_throttle_rejected(NULL), 0);
	retry_throttle_free(NULL);
}
END_TEST

START_TEST(what_counts_as_accepted)
{
	static const int NOT[] = { 0, 429, 502, 503, 504, -1, 600 };
	static const int YES[] = { 200, 204, 304, 400, 404, 409, 500, 501 };

	for (size_t i = 0; i < sizeof(NOT) / sizeof(NOT[0]); i++)
		ck_assert_msg(!retry_throttle_accepted(NOT[i]), "%d counted as accepted", NOT[i]);
	for (size_t i = 0; i < sizeof(YES) / sizeof(YES[0]); i++)
		ck_assert_msg(retry_throttle_accepted(YES[i]), "%d not counted as accepted", YES[i]);
}
END_TEST

/* --budget sre[,k=K,window=DUR] through retry_policy_set, and the sre-adaptive preset. */
START_TEST(knob_and_preset)
{
	struct retry_policy p;
	char err[200];

	ck_assert_int_eq(retry_policy_preset("sre-adaptive", &p), 0);
	ck_assert_int_eq(p.throttle.kind, RETRY_THROTTLE_SRE);
	ck_assert(p.throttle.k == 2 && p.throttle.window_ns == SEC(120));
	ck_assert_int_eq(p.budget.kind, BUDGET_NONE);
	ck_assert_int_eq(p.backoff, BACKOFF_FULL);
	ck_assert_int_eq(retry_policy_preset("wasm", &p), 0);
	ck_assert_int_eq(p.throttle.kind, RETRY_THROTTLE_NONE);
	ck_assert_int_eq(retry_policy_set(&p, "budget", "on", err, sizeof(err)), 0);
	ck_assert_int_eq(retry_policy_set(&p, "budget", "sre", err, sizeof(err)), 0);
	ck_assert_int_eq(p.throttle.kind, RETRY_THROTTLE_SRE);
	ck_assert(p.throttle.k == 2 && p.throttle.window_ns == SEC(120));
	ck_assert_int_eq(p.budget.kind, BUDGET_NONE);   /* one client-wide limiter at a time */
	ck_assert_int_eq(retry_policy_set(&p, "budget", "sre,k=1.5,window=30s", err, sizeof(err)), 0);
	ck_assert(p.throttle.k == 1.5 && p.throttle.window_ns == SEC(30));
	ck_assert_int_eq(retry_policy_set(&p, "budget", "sre,window=2m", err, sizeof(err)), 0);
	ck_assert(p.throttle.k == 2 && p.throttle.window_ns == SEC(120));
	ck_assert_int_eq(retry_policy_set(&p, "budget", "ratio=0.1", err, sizeof(err)), 0);
	ck_assert_int_eq(p.budget.kind, BUDGET_RATIO);
	ck_assert_int_eq(p.throttle.kind, RETRY_THROTTLE_NONE);
	ck_assert_int_eq(retry_policy_set(&p, "budget", "sre,k=1", err, sizeof(err)), 0);
	ck_assert_int_eq(retry_policy_set(&p, "budget", "none", err, sizeof(err)), 0);
	ck_assert_int_eq(p.throttle.kind, RETRY_THROTTLE_NONE);
	ck_assert_int_eq(p.budget.kind, BUDGET_NONE);
}
END_TEST

START_TEST(knob_bad_values)
{
	static const char *const BAD[][2] = {
		{ "sre,k=0.5", "0.5" }, { "sre,k=x", "x" }, { "sre,k=101", "101" }, { "sre,window=1ms", "1ms" },
		{ "sre,window=soon", "soon" }, { "sre,speed=3", "speed" }, { "sre,", "''" }, { "sre,k", "'k'" },
		{ "srex", "srex" },
	};
	struct retry_policy p, orig;
	char err[200];

	ck_assert_int_eq(retry_policy_preset("sre-adaptive", &p), 0);
	orig = p;
	for (size_t i = 0; i < sizeof(BAD) / sizeof(BAD[0]); i++) {
		err[0] = '\0';
		ck_assert_msg(retry_policy_set(&p, "budget", BAD[i][0], err, sizeof(err)) == -1, "accepted %s",
		              BAD[i][0]);
		ck_assert_msg(strncmp(err, "--budget: ", 10) == 0 && strstr(err, BAD[i][1]) != NULL &&
		              strchr(err, '\n') == NULL, "--budget %s: '%s'", BAD[i][0], err);
	}
	ck_assert_int_eq(memcmp(&p, &orig, sizeof(p)), 0);  /* a failed set changes nothing */
}
END_TEST

Suite *retry_throttle_suite(void)
{
	Suite *s = suite_create("retry_throttle");
	TCase *tc = tcase_create("sre");

	tcase_add_test(tc, probability_exact);
	tcase_add_test(tc, window_slides);
	tcase_add_test(tc, admit_draws_once_and_counts_rejections);
	tcase_add_test(tc, deterministic_with_seed);
	tcase_add_test(tc, backend_sees_k_times_accepts);
	tcase_add_test(tc, shared_by_threads);
	tcase_add_test(tc, none_and_null);
	tcase_add_test(tc, what_counts_as_accepted);
	tcase_add_test(tc, knob_and_preset);
	tcase_add_test(tc, knob_bad_values);
	suite_add_tcase(s, tc);
	return s;
}
