/* The retry-policy engine: backoff formulas, caps, deadline, budgets, presets, knobs. */
#include <check.h>
#include <pthread.h>
#include <string.h>

#include "common/clock.h"
#include "common/prng.h"
#include "common/retry/retry.h"

#define MS(x) ((uint64_t)(x) * NS_PER_MS)
#define SEC(x) ((uint64_t)(x) * NS_PER_SEC)

static struct retry_policy policy(const char *name)
{
	struct retry_policy p;

	ck_assert_int_eq(retry_policy_preset(name, &p), 0);
	return p;
}

static struct retry_input input(const char *method, int status)
{
	struct retry_input in;

	memset(&in, 0, sizeof(in));
	in.method = method;
	in.status = status;
	in.idempotent = -1;
	in.attempt = 1;
	in.now_wall_s = 784111777;
	return in;
}

static struct retry_decision decide(const struct retry_policy *p, const struct retry_input *in)
{
	struct retry_decision d;
	struct prng rng;

	prng_seed(&rng, 7);
	retry_decide(p, in, &rng, &d);
	return d;
}

/* The next prng_double of a fresh generator seeded with seed. */
static double first_draw(uint64_t seed)
{
	struct prng r;

	prng_seed(&r, seed);
	return prng_double(&r);
}

START_TEST(backoff_formulas_exact)
{
	struct retry_policy p = policy("none");
	struct prng rng;
	double r = first_draw(42);

	p.base_ns = MS(100);
	p.cap_ns = SEC(2);
	p.backoff = BACKOFF_NONE;
	prng_seed(&rng, 42);
	ck_assert_uint_eq(retry_backoff(&p, 3, 0, &rng), 0);
	p.backoff = BACKOFF_CONSTANT;
	ck_assert_uint_eq(retry_backoff(&p, 5, 0, &rng), MS(100));
	p.backoff = BACKOFF_EXPONENTIAL;
	ck_assert_uint_eq(retry_backoff(&p, 1, 0, &rng), MS(100));
	ck_assert_uint_eq(retry_backoff(&p, 3, 0, &rng), MS(400));
	ck_assert_uint_eq(retry_backoff(&p, 6, 0, &rng), SEC(2));  /* 3.2 s capped */
	p.backoff = BACKOFF_FULL;
	prng_seed(&rng, 42);
	ck_assert_uint_eq(retry_backoff(&p, 3, 0, &rng), (uint64_t)(r * 400e6));
	p.backoff = BACKOFF_EQUAL;
	prng_seed(&rng, 42);
	ck_assert_uint_eq(retry_backoff(&p, 3, 0, &rng), (uint64_t)(200e6 + r * 200e6));
	p.backoff = BACKOFF_RANDOMIZED;
	prng_seed(&rng, 42);
	ck_assert_uint_eq(retry_backoff(&p, 3, 0, &rng), (uint64_t)((0.5 + r / 2) * 400e6));
	p.backoff = BACKOFF_DECORRELATED;
	prng_seed(&rng, 42);
	ck_assert_uint_eq(retry_backoff(&p, 2, MS(300), &rng), (uint64_t)(100e6 + r * 800e6));
	prng_seed(&rng, 42);  /* first retry: prev is taken as base, so [base, 3 base] */
	ck_assert_uint_eq(retry_backoff(&p, 1, 0, &rng), (uint64_t)(100e6 + r * 200e6));
	p.multiplier = 3;
	p.backoff = BACKOFF_EXPONENTIAL;
	ck_assert_uint_eq(retry_backoff(&p, 3, 0, &rng), MS(900));
}
END_TEST

/*
 * Full and equal jitter under the herd's OCC settings (base 5 ms, cap 2 s): on the
 * same draw u, full waits u * e and equal e/2 + u * e/2, at every retry number,
 * the capped ones included.  (A herd run where both made 1584 calls was chance:
 * the calls depend on the server's timing, not only on the seed.)
 */
START_TEST(backoff_full_and_equal_apart)
{
	struct retry_policy p = policy("none");
	struct prng a, b, mirror;

	p.base_ns = MS(5);
	p.cap_ns = SEC(2);
	prng_seed(&a, 11);
	prng_seed(&b, 11);
	prng_seed(&mirror, 11);
	for (unsigned n = 1; n <= 14; n++) {
		double e = n < 10 ? 5e6 * (double)(1u << (n - 1)) : 2e9;  /* 5 ms * 2^(n-1); 2.56 s is capped */
		double u = prng_double(&mirror);
		uint64_t full, equal;

		p.backoff = BACKOFF_FULL;
		full = retry_backoff(&p, n, 0, &a);
		p.backoff = BACKOFF_EQUAL;
		equal = retry_backoff(&p, n, 0, &b);
		ck_assert_uint_eq(full, (uint64_t)(u * e));
		ck_assert_uint_eq(equal, (uint64_t)(e / 2 + u * (e / 2)));
		ck_assert_uint_gt(equal, full);  /* (1 + u) / 2 > u for every u < 1 */
	}
}
END_TEST

START_TEST(backoff_bounds)
{
	static const enum backoff_kind K[] = { BACKOFF_FULL, BACKOFF_EQUAL, BACKOFF_RANDOMIZED,
	                                       BACKOFF_DECORRELATED };
	static const uint64_t LO[] = { 0, MS(500), MS(500), MS(250) };
	struct retry_policy p = policy("signaldb");
	struct prng rng;

	prng_seed(&rng, 1);
	for (size_t k = 0; k < 4; k++) {
		uint64_t min = UINT64_MAX, max = 0;

		p.backoff = K[k];
		for (int i = 0; i < 10000; i++) {
			uint64_t w = retry_backoff(&p, 3, MS(400), &rng);  /* e = 1 s; decorrelated [250 ms, 1.2 s] */

			min = w < min ? w : min;
			max = w > max ? w : max;
		}
		ck_assert_uint_ge(min, LO[k]);
		ck_assert_uint_le(max, k == 3 ? MS(1200) : SEC(1));
		ck_assert_uint_lt(min, LO[k] + MS(10));   /* the range is really used */
		ck_assert_uint_gt(max, (k == 3 ? MS(1200) : SEC(1)) - MS(10));
	}
}
END_TEST

START_TEST(backoff_huge_saturates)
{
	struct retry_policy p = policy("none");
	struct prng rng;

	prng_seed(&rng, 1);
	p.backoff = BACKOFF_EXPONENTIAL;
	p.base_ns = SEC(1);
	p.cap_ns = 0;
	ck_assert_uint_eq(retry_backoff(&p, 1000, 0, &rng), RETRY_WAIT_MAX_NS);
	p.cap_ns = SEC(20);
	ck_assert_uint_eq(retry_backoff(&p, 1000, 0, &rng), SEC(20));
}
END_TEST

START_TEST(reproducible_with_seed)
{
	struct retry_policy p = policy("lab");
	struct retry_input in = input("GET", 429);
	struct retry_decision a = decide(&p, &in), b = decide(&p, &in);

	ck_assert(a.retry && b.retry);
	ck_assert_uint_eq(a.wait_ns, b.wait_ns);
	ck_assert_uint_eq(a.wait_ns, (uint64_t)(first_draw(7) * 100e6));
}
END_TEST

START_TEST(signaldb_matrix)
{
	struct retry_policy p = policy("signaldb");
	struct retry_input in = input("POST", 503);

	ck_assert_int_eq(decide(&p, &in).reason, RETRY_REASON_NOT_RETRYABLE);
	in.status = 429;
	ck_assert(decide(&p, &in).retry);
	in.method = "GET";
	in.status = 503;
	ck_assert(decide(&p, &in).retry);
	in.status = 500;
	ck_assert_int_eq(decide(&p, &in).reason, RETRY_REASON_NOT_RETRYABLE);
	in.status = 0;
	in.error = RETRY_ERR_RESET;
	ck_assert(decide(&p, &in).retry);
	in.method = "POST";
	ck_assert_int_eq(decide(&p, &in).reason, RETRY_REASON_NOT_RETRYABLE);
	in.idempotent = 1;  /* declared idempotent: retried whatever the method */
	ck_assert(decide(&p, &in).retry);
	in.error = RETRY_ERR_OTHER;
	ck_assert_int_eq(decide(&p, &in).reason, RETRY_REASON_NOT_RETRYABLE);
	in = input("GET", 204);
	ck_assert_int_eq(decide(&p, &in).reason, RETRY_REASON_OK);
	ck_assert(!decide(&p, &in).retry);
	ck_assert_uint_eq(p.attempt_timeout_ns, SEC(30));
}
END_TEST

START_TEST(fail_fast_3600)
{
	static const char *const NAMES[] = { "signaldb", "saia" };

	for (int i = 0; i < 2; i++) {
		struct retry_policy p = policy(NAMES[i]);
		struct retry_input in = input("GET", 429);
		struct retry_decision d;

		in.retry_after = "3600";
		d = decide(&p, &in);
		ck_assert_msg(!d.retry, "%s retried a 3600 s Retry-After", NAMES[i]);
		ck_assert_int_eq(d.reason, RETRY_REASON_RETRY_AFTER_TOO_LONG);
		ck_assert_str_eq(retry_reason_name(d.reason), "retry-after-too-long");
		ck_assert_uint_eq(d.wait_ns, SEC(3600));  /* kept: what the server asked for */
		ck_assert(d.server_wait);
	}
}
END_TEST

/* The preset, with Retry-After honoured and 429 retried on GET whatever it says otherwise. */
static struct retry_policy honouring(const char *name)
{
	struct retry_policy p = policy(name);
	char err[160];

	ck_assert_int_eq(retry_policy_set(&p, "retry-after", "honour", err, sizeof(err)), 0);
	p.retry_on[429] = true;
	if (p.max_attempts < 2)
		p.max_attempts = 2;
	return p;
}

/* Issue 15's Retry-After: 999999999 (31 years) under each preset as it ships. */
START_TEST(preset_caps_31_years)
{
	static const struct {
		const char *name;
		enum retry_reason reason;
		uint64_t wait_ns;
	} ROWS[] = {
		{ "none", RETRY_REASON_NOT_RETRYABLE, 0 },
		{ "lab", RETRY_REASON_RETRY_AFTER_TOO_LONG, SEC(999999999) },
		{ "signaldb", RETRY_REASON_RETRY_AFTER_TOO_LONG, SEC(999999999) },
		{ "wasm", RETRY_REASON_RETRY, SEC(10) },            /* clamped to maxDelayMs */
		{ "saia", RETRY_REASON_RETRY_AFTER_TOO_LONG, SEC(999999999) },
		{ "aws-standard", RETRY_REASON_RETRY, 0 },          /* ignored: full jitter of 1 s */
		{ "grpc", RETRY_REASON_RETRY, 0 },                  /* ignored: full jitter of 100 ms */
		{ "naive", RETRY_REASON_RETRY, 0 },                 /* ignored: again at once */
		{ "sre-adaptive", RETRY_REASON_RETRY_AFTER_TOO_LONG, SEC(999999999) },
	};
	uint64_t aws = (uint64_t)(first_draw(7) * 1e9), grpc = (uint64_t)(first_draw(7) * 100e6);

	for (size_t i = 0; i < sizeof(ROWS) / sizeof(ROWS[0]); i++) {
		struct retry_policy p = policy(ROWS[i].name);
		struct retry_input in = input("GET", 429);
		struct retry_decision d;
		uint64_t want = i == 5 ? aws : i == 6 ? grpc : ROWS[i].wait_ns;

		in.retry_after = "999999999";
		d = decide(&p, &in);
		ck_assert_msg(d.reason == ROWS[i].reason, "%s: %s", ROWS[i].name, retry_reason_name(d.reason));
		ck_assert_msg(d.wait_ns == want, "%s: wait %llu ns", ROWS[i].name, (unsigned long long)d.wait_ns);
	}
}
END_TEST

/* The per-wait cap of each preset (Retry-After honoured): the cap itself is waited, one second more is not. */
START_TEST(preset_caps_per_wait)
{
	static const struct {
		const char *name;
		const char *at, *past;
		uint64_t cap_ns;
		bool clamps;
	} ROWS[] = {
		{ "none", "10", "11", SEC(10), false }, { "lab", "10", "11", SEC(10), false },
		{ "signaldb", "10", "11", SEC(10), false }, { "wasm", "10", "11", SEC(10), true },
		{ "saia", "60", "61", SEC(60), false }, { "aws-standard", "20", "21", SEC(20), false },
		{ "grpc", "10", "11", SEC(10), false }, { "naive", "10", "11", SEC(10), false },
		{ "sre-adaptive", "10", "11", SEC(10), false },
	};

	for (size_t i = 0; i < sizeof(ROWS) / sizeof(ROWS[0]); i++) {
		struct retry_policy p = honouring(ROWS[i].name);
		struct retry_input in = input("GET", 429);
		uint64_t jitter = strcmp(ROWS[i].name, "lab") == 0 ? (uint64_t)(first_draw(7) * 100e6) : 0;
		struct retry_decision d;

		in.retry_after = ROWS[i].at;
		d = decide(&p, &in);
		ck_assert_msg(d.retry && d.wait_ns == ROWS[i].cap_ns + jitter, "%s at the cap", ROWS[i].name);
		in.retry_after = ROWS[i].past;
		d = decide(&p, &in);
		if (ROWS[i].clamps)
			ck_assert_msg(d.retry && d.wait_ns == ROWS[i].cap_ns, "%s does not clamp", ROWS[i].name);
		else
			ck_assert_msg(d.reason == RETRY_REASON_RETRY_AFTER_TOO_LONG && d.wait_ns == ROWS[i].cap_ns + SEC(1),
			              "%s past the cap: %s", ROWS[i].name, retry_reason_name(d.reason));
	}
}
END_TEST

/* The total cap of each preset: a 1 s wait that ends exactly on it is taken, 1 ns later it is not. */
START_TEST(preset_caps_total)
{
	static const struct {
		const char *name;
		uint64_t total_ns;
		bool deadline;     /* elapsed time from the first start; else the sum of the waits */
	} ROWS[] = {
		{ "none", SEC(30), true }, { "lab", SEC(30), true }, { "signaldb", SEC(30), false },
		{ "wasm", SEC(30), false }, { "saia", SEC(120), false }, { "aws-standard", SEC(40), false },
		{ "grpc", SEC(30), true }, { "naive", SEC(30), true }, { "sre-adaptive", SEC(30), true },
	};

	for (size_t i = 0; i < sizeof(ROWS) / sizeof(ROWS[0]); i++) {
		struct retry_policy p = honouring(ROWS[i].name);
		struct retry_input in = input("GET", 429);
		uint64_t jitter = strcmp(ROWS[i].name, "lab") == 0 ? (uint64_t)(first_draw(7) * 100e6) : 0;
		uint64_t *used = ROWS[i].deadline ? &in.elapsed_ns : &in.waited_ns;
		struct retry_decision d;

		ck_assert_uint_eq(ROWS[i].deadline ? p.deadline_ns : p.total_wait_cap_ns, ROWS[i].total_ns);
		in.retry_after = "1";
		*used = ROWS[i].total_ns - SEC(1) - jitter;
		d = decide(&p, &in);
		ck_assert_msg(d.retry && d.wait_ns == SEC(1) + jitter, "%s: a wait ending on the cap", ROWS[i].name);
		*used += 1;
		d = decide(&p, &in);
		ck_assert_msg(d.reason == RETRY_REASON_DEADLINE, "%s past the cap: %s", ROWS[i].name,
		              retry_reason_name(d.reason));
	}
}
END_TEST

/* The one-line caps of each preset, as `hammer --help` prints them. */
START_TEST(preset_caps_described)
{
	static const char *const ROWS[][2] = {
		{ "none", "1 attempt (no retries); deadline 30s" },
		{ "lab", "5 attempts; backoff full 100ms-2s; Retry-After up to 10s, longer fails fast "
		         "(+100ms jitter); deadline 30s" },
		{ "signaldb", "4 attempts; backoff full 250ms-10s; Retry-After up to 10s, longer fails fast; "
		              "waits 30s in all" },
		{ "wasm", "4 attempts; backoff randomized 100ms-10s; Retry-After clamped to 10s; waits 30s in all" },
		{ "saia", "3 attempts; no wait given: 31s x2; Retry-After up to 1m, longer fails fast, 0 fails fast; "
		          "waits 2m in all" },
		{ "aws-standard", "3 attempts; backoff full 1s-20s; Retry-After ignored; waits 40s in all; "
		                  "AWS retry quota 500" },
		{ "grpc", "4 attempts; backoff full 100ms-1s; Retry-After ignored; deadline 30s; "
		          "gRPC retry throttling 10 tokens, ratio 0.1" },
		{ "naive", "5 attempts; retries at once; Retry-After ignored; deadline 30s" },
		{ "sre-adaptive", "5 attempts; backoff full 100ms-2s; Retry-After up to 10s, longer fails fast; "
		                  "deadline 30s; adaptive throttling K=2 over 2m" },
	};
	char buf[256], small[12];
	struct retry_policy p;

	for (size_t i = 0; i < sizeof(ROWS) / sizeof(ROWS[0]); i++) {
		p = policy(ROWS[i][0]);
		retry_policy_describe(&p, buf, sizeof(buf));
		ck_assert_str_eq(buf, ROWS[i][1]);
	}
	retry_policy_describe(&p, small, sizeof(small));
	ck_assert_str_eq(small, "5 attempts;");  /* cut to fit */
	p = policy("lab");
	ck_assert_int_eq(retry_policy_set(&p, "max-retry-after", "1500ms", buf, sizeof(buf)), 0);
	ck_assert_int_eq(retry_policy_set(&p, "deadline", "0s", buf, sizeof(buf)), 0);
	retry_policy_describe(&p, buf, sizeof(buf));
	ck_assert_str_eq(buf, "5 attempts; backoff full 100ms-2s; Retry-After up to 1500ms, longer fails fast "
	                      "(+100ms jitter); no total cap");
}
END_TEST

START_TEST(caps_deadline_total)
{
	struct retry_policy p = policy("signaldb");
	struct retry_input in = input("GET", 429);
	struct retry_decision d;

	in.retry_after = "10";
	d = decide(&p, &in);
	ck_assert(d.retry && d.server_wait);
	ck_assert_uint_eq(d.wait_ns, SEC(10));
	in.retry_after = "6";
	in.waited_ns = SEC(24);
	ck_assert_uint_eq(decide(&p, &in).wait_ns, SEC(6));  /* 30 s exactly: allowed */
	in.waited_ns = SEC(24) + 1;
	ck_assert_int_eq(decide(&p, &in).reason, RETRY_REASON_DEADLINE);
	p = policy("lab");
	p.deadline_ns = SEC(5);
	in = input("GET", 503);
	in.retry_after = "1";
	in.elapsed_ns = MS(3899);  /* 1 s + at most 100 ms of jitter still ends before 5 s */
	ck_assert(decide(&p, &in).retry);
	in.elapsed_ns = MS(4500);
	ck_assert_int_eq(decide(&p, &in).reason, RETRY_REASON_DEADLINE);
	in.attempt = 5;
	ck_assert_int_eq(decide(&p, &in).reason, RETRY_REASON_ATTEMPTS);
}
END_TEST

START_TEST(lab_and_wasm_retry_after)
{
	struct retry_policy p = policy("lab");
	struct retry_input in = input("GET", 429);
	struct retry_decision d;

	in.retry_after = "1";
	d = decide(&p, &in);
	ck_assert_uint_eq(d.wait_ns, SEC(1) + (uint64_t)(first_draw(7) * 100e6));
	p = policy("wasm");
	in.retry_after = "30";
	d = decide(&p, &in);
	ck_assert(d.retry);
	ck_assert_uint_eq(d.wait_ns, SEC(10));
	in.retry_after = "abc";  /* malformed: as if absent, so the randomised backoff */
	d = decide(&p, &in);
	ck_assert(!d.server_wait);
	ck_assert_uint_eq(d.wait_ns, (uint64_t)((0.5 + first_draw(7) / 2) * 100e6));
	in.method = "PATCH";
	ck_assert_int_eq(decide(&p, &in).reason, RETRY_REASON_NOT_RETRYABLE);
}
END_TEST

START_TEST(saia_rules)
{
	struct retry_policy p = policy("saia");
	struct retry_input in = input("GET", 429);
	struct retry_decision d;

	d = decide(&p, &in);
	ck_assert(d.retry && d.blind);
	ck_assert_uint_eq(d.wait_ns, SEC(31));
	in.attempt = 2;
	in.blind_waits = 1;
	ck_assert_uint_eq(decide(&p, &in).wait_ns, SEC(31));
	p.max_attempts = 9;
	in.attempt = 3;
	in.blind_waits = 2;
	ck_assert_int_eq(decide(&p, &in).reason, RETRY_REASON_ATTEMPTS);
	in.retry_after = "0";
	ck_assert_int_eq(decide(&p, &in).reason, RETRY_REASON_RETRY_AFTER_TOO_LONG);
	in.retry_after = "60";
	ck_assert_uint_eq(decide(&p, &in).wait_ns, SEC(60));
	in.idempotent = 0;
	ck_assert_int_eq(decide(&p, &in).reason, RETRY_REASON_NOT_RETRYABLE);
}
END_TEST

/* The storm's naive retrier: again at once, any method, overload and transport failures, 5 attempts. */
START_TEST(naive_rules)
{
	struct retry_policy p = policy("naive");
	struct retry_input in = input("POST", 503);
	struct retry_decision d;

	d = decide(&p, &in);
	ck_assert(d.retry && !d.server_wait);
	ck_assert_uint_eq(d.wait_ns, 0);
	in.status = 0;
	in.error = RETRY_ERR_TIMEOUT;
	ck_assert(decide(&p, &in).retry);
	in.error = RETRY_ERR_REFUSED;
	ck_assert(decide(&p, &in).retry);
	in = input("GET", 429);
	in.retry_after = "5";
	d = decide(&p, &in);
	ck_assert(d.retry && !d.server_wait);
	ck_assert_uint_eq(d.wait_ns, 0);
	in.attempt = 5;
	ck_assert_int_eq(decide(&p, &in).reason, RETRY_REASON_ATTEMPTS);
	in = input("GET", 500);
	ck_assert_int_eq(decide(&p, &in).reason, RETRY_REASON_NOT_RETRYABLE);
	ck_assert_int_eq(p.budget.kind, BUDGET_NONE);
	ck_assert_int_eq(p.throttle.kind, RETRY_THROTTLE_NONE);
}
END_TEST

/* sre-adaptive's retry rules are exponential backoff with full jitter; the throttle acts before sending. */
START_TEST(sre_adaptive_rules)
{
	struct retry_policy p = policy("sre-adaptive");
	struct retry_input in = input("GET", 503);
	struct retry_decision d;

	in.attempt = 3;
	d = decide(&p, &in);
	ck_assert(d.retry);
	ck_assert_uint_eq(d.wait_ns, (uint64_t)(first_draw(7) * 400e6));
	in.status = 0;
	in.error = RETRY_ERR_TIMEOUT;
	ck_assert(decide(&p, &in).retry);
	in = input("POST", 503);
	ck_assert_int_eq(decide(&p, &in).reason, RETRY_REASON_NOT_RETRYABLE);
	in = input("GET", 429);
	in.retry_after = "2";
	ck_assert_uint_eq(decide(&p, &in).wait_ns, SEC(2));
}
END_TEST

START_TEST(ratelimit_header_fallback)
{
	struct retry_policy p = policy("signaldb");
	struct retry_input in = input("GET", 429);

	in.ratelimit = "\"default\";r=0;t=4";
	ck_assert_uint_eq(decide(&p, &in).wait_ns, SEC(4));
	in.retry_after = "2";
	ck_assert_uint_eq(decide(&p, &in).wait_ns, SEC(2));
}
END_TEST

static struct retry_budget *ratio_budget(uint64_t now)
{
	struct retry_policy p = policy("wasm");
	char err[128];

	ck_assert_int_eq(retry_policy_set(&p, "budget", "ratio=0.2,min=10,window=10s", err, sizeof(err)), 0);
	return retry_budget_new(&p.budget, now);
}

START_TEST(budget_ratio_refusal_and_refill)
{
	struct retry_budget *b = ratio_budget(0);
	int i;

	for (i = 0; i < 100; i++)   /* min 10/s over 10 s */
		ck_assert(retry_budget_spend(b, 0, RETRY_ERR_NONE));
	ck_assert(!retry_budget_check(b, 0, RETRY_ERR_NONE));
	ck_assert(!retry_budget_spend(b, MS(500), RETRY_ERR_NONE));
	ck_assert_uint_eq(retry_budget_refused(b), 1);
	for (i = 0; i < 5; i++)     /* one retry per five first attempts */
		retry_budget_on_first(b, MS(500));
	ck_assert(retry_budget_spend(b, MS(500), RETRY_ERR_NONE));
	ck_assert(!retry_budget_check(b, MS(500), RETRY_ERR_NONE));
	ck_assert(!retry_budget_check(b, MS(9999), RETRY_ERR_NONE));
	/* At 10 s the tenth holding the 100 spends is out of the window; the 0.5 s tenth is not. */
	ck_assert_double_eq_tol(retry_budget_tokens(b, SEC(10)), 100.0, 1e-9);
	ck_assert(retry_budget_check(b, SEC(10), RETRY_ERR_NONE));
	ck_assert_double_eq_tol(retry_budget_tokens(b, SEC(11)), 100.0, 1e-9);
	retry_budget_free(b);
}
END_TEST

START_TEST(budget_ratio_slides_in_tenths)
{
	struct retry_budget *b = ratio_budget(0);
	int i;

	for (i = 0; i < 50; i++)
		ck_assert(retry_budget_spend(b, 0, RETRY_ERR_NONE));
	for (i = 0; i < 50; i++)
		ck_assert(retry_budget_spend(b, SEC(5), RETRY_ERR_NONE));
	ck_assert(!retry_budget_check(b, SEC(10) - 1, RETRY_ERR_NONE));
	ck_assert_double_eq_tol(retry_budget_tokens(b, SEC(10)), 50.0, 1e-9);
	ck_assert_double_eq_tol(retry_budget_tokens(b, SEC(15)), 100.0, 1e-9);
	retry_budget_free(b);
}
END_TEST

START_TEST(budget_race_for_last_retry)
{
	struct retry_budget *b = ratio_budget(0);
	struct retry_policy p = policy("wasm");
	struct retry_input in = input("GET", 503);

	for (int i = 0; i < 99; i++)
		ck_assert(retry_budget_spend(b, 0, RETRY_ERR_NONE));
	/* Two requests pass the check for the last retry; only one spend wins. */
	ck_assert(retry_budget_check(b, 0, RETRY_ERR_NONE));
	ck_assert(retry_budget_check(b, 0, RETRY_ERR_NONE));
	ck_assert(retry_budget_spend(b, 0, RETRY_ERR_NONE));
	ck_assert(!retry_budget_spend(b, 0, RETRY_ERR_NONE));
	ck_assert_uint_eq(retry_budget_refused(b), 1);
	/* Checked before waiting: the engine gives up at once and counts the refusal. */
	in.budget = b;
	in.retry_after = "5";
	ck_assert_int_eq(decide(&p, &in).reason, RETRY_REASON_BUDGET);
	ck_assert_uint_eq(retry_budget_refused(b), 2);
	retry_budget_free(b);
}
END_TEST

struct spender {
	struct retry_budget *b;
	unsigned won;
};

static void *spend_many(void *arg)
{
	struct spender *sp = arg;

	for (int i = 0; i < 50; i++)
		if (retry_budget_spend(sp->b, MS(100), RETRY_ERR_NONE))
			sp->won++;
	return NULL;
}

START_TEST(budget_shared_by_threads)
{
	struct retry_budget *b = ratio_budget(0);
	struct spender sp[4];
	pthread_t th[4];
	unsigned won = 0;

	for (int i = 0; i < 4; i++) {
		sp[i].b = b;
		sp[i].won = 0;
		ck_assert_int_eq(pthread_create(&th[i], NULL, spend_many, &sp[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		won += sp[i].won;
	}
	ck_assert_uint_eq(won, 100);   /* 200 tries, an allowance of exactly 100 */
	ck_assert_uint_eq(retry_budget_refused(b), 100);
	retry_budget_free(b);
}
END_TEST

START_TEST(budget_aws_quota_and_refund)
{
	struct retry_policy p = policy("aws-standard");
	struct retry_budget *b = retry_budget_new(&p.budget, 0);
	struct retry_input in = input("GET", 503);

	ck_assert_double_eq(retry_budget_tokens(b, 0), 500);
	for (int i = 0; i < 100; i++)
		ck_assert(retry_budget_spend(b, 0, RETRY_ERR_NONE));
	ck_assert_double_eq(retry_budget_tokens(b, 0), 0);
	in.budget = b;
	ck_assert_int_eq(decide(&p, &in).reason, RETRY_REASON_BUDGET);
	retry_budget_on_result(b, true, true);      /* a successful retry refunds its 5 */
	ck_assert_double_eq(retry_budget_tokens(b, 0), 5);
	ck_assert(decide(&p, &in).retry);
	ck_assert(!retry_budget_check(b, 0, RETRY_ERR_TIMEOUT));  /* a timeout retry costs 10 */
	retry_budget_on_result(b, true, false);     /* a first-attempt success adds 1 */
	retry_budget_on_result(b, false, true);     /* a failure adds nothing */
	ck_assert_double_eq(retry_budget_tokens(b, 0), 6);
	retry_budget_set_tokens(b, 10);
	ck_assert(retry_budget_spend(b, 0, RETRY_ERR_TIMEOUT));
	ck_assert_double_eq(retry_budget_tokens(b, 0), 0);
	retry_budget_set_tokens(b, 500);
	retry_budget_on_result(b, true, true);      /* never above 500 */
	ck_assert_double_eq(retry_budget_tokens(b, 0), 500);
	retry_budget_free(b);
}
END_TEST

START_TEST(budget_grpc_threshold)
{
	struct retry_policy p = policy("grpc");
	struct retry_budget *b = retry_budget_new(&p.budget, 0);
	int i;

	for (i = 0; i < 4; i++)
		retry_budget_on_result(b, false, false);
	ck_assert_double_eq_tol(retry_budget_tokens(b, 0), 6, 1e-9);
	ck_assert(retry_budget_check(b, 0, RETRY_ERR_NONE));
	retry_budget_on_result(b, false, false);
	ck_assert(!retry_budget_check(b, 0, RETRY_ERR_NONE));   /* 5 is not above max/2 */
	retry_budget_on_result(b, true, false);                 /* + tokenRatio 0.1 */
	ck_assert(retry_budget_check(b, 0, RETRY_ERR_NONE));
	for (i = 0; i < 20; i++)
		retry_budget_on_result(b, false, false);
	ck_assert_double_eq(retry_budget_tokens(b, 0), 0);
	for (i = 0; i < 200; i++)
		retry_budget_on_result(b, true, false);
	ck_assert_double_eq(retry_budget_tokens(b, 0), 10);
	retry_budget_free(b);
	p = policy("lab");
	ck_assert_ptr_null(retry_budget_new(&p.budget, 0));
}
END_TEST

START_TEST(presets_and_names)
{
	static const char *const NAMES[] = { "none", "lab", "signaldb", "wasm", "saia", "aws-standard", "grpc",
	                                     "naive", "sre-adaptive" };
	struct retry_policy p;

	for (size_t i = 0; i < sizeof(NAMES) / sizeof(NAMES[0]); i++) {
		ck_assert_int_eq(retry_policy_preset(NAMES[i], &p), 0);
		ck_assert_str_eq(p.name, NAMES[i]);
		ck_assert_ptr_nonnull(strstr(retry_preset_names(), NAMES[i]));
	}
	ck_assert_int_eq(retry_policy_preset("nope", &p), -1);
	p = policy("lab");
	ck_assert_uint_eq(p.max_attempts, 5);
	ck_assert_uint_eq(p.base_ns, MS(100));
	ck_assert_uint_eq(p.cap_ns, SEC(2));
	ck_assert(p.retry_on[429] && p.retry_on[503] && !p.retry_on[500] && !p.retry_conn);
	p = policy("none");
	ck_assert_uint_eq(p.max_attempts, 1);
	ck_assert_str_eq(retry_reason_name(RETRY_REASON_OK), "ok");
	ck_assert_str_eq(retry_reason_name(RETRY_REASON_NOT_RETRYABLE), "not-retryable");
	ck_assert_str_eq(retry_reason_name(RETRY_REASON_THROTTLED), "throttled");
	ck_assert_str_eq(retry_reason_name(RETRY_REASON_COUNT), "?");
	ck_assert(retry_method_idempotent("get") && retry_method_idempotent("DELETE"));
	ck_assert(!retry_method_idempotent("POST") && !retry_method_idempotent("PATCH"));
}
END_TEST

START_TEST(knobs_set)
{
	struct retry_policy p = policy("signaldb");
	char err[160];

	ck_assert_int_eq(retry_policy_set(&p, "backoff", "decorrelated", err, sizeof(err)), 0);
	ck_assert_int_eq(p.backoff, BACKOFF_DECORRELATED);
	ck_assert_int_eq(retry_policy_set(&p, "backoff", "randomized", err, sizeof(err)), 0);
	ck_assert_int_eq(retry_policy_set(&p, "base", "50ms", err, sizeof(err)), 0);
	ck_assert_uint_eq(p.base_ns, MS(50));
	ck_assert_int_eq(retry_policy_set(&p, "cap", "1s", err, sizeof(err)), 0);
	ck_assert_int_eq(retry_policy_set(&p, "multiplier", "1.5", err, sizeof(err)), 0);
	ck_assert_double_eq(p.multiplier, 1.5);
	ck_assert_int_eq(retry_policy_set(&p, "max-attempts", "7", err, sizeof(err)), 0);
	ck_assert_uint_eq(p.max_attempts, 7);
	ck_assert_int_eq(retry_policy_set(&p, "deadline", "5s", err, sizeof(err)), 0);
	ck_assert_uint_eq(p.deadline_ns, SEC(5));
	ck_assert_int_eq(retry_policy_set(&p, "retry-on", "429,500,timeout", err, sizeof(err)), 0);
	ck_assert(p.retry_on[429] && p.retry_any_method[429] && p.retry_on[500] && !p.retry_on[503]);
	ck_assert(p.retry_timeout && !p.retry_conn);
	ck_assert_int_eq(retry_policy_set(&p, "retry-non-idempotent", NULL, err, sizeof(err)), 0);
	ck_assert(p.retry_non_idempotent);
	ck_assert_int_eq(retry_policy_set(&p, "retry-after", "ignore", err, sizeof(err)), 0);
	ck_assert(!p.honour_retry_after);
	ck_assert_int_eq(retry_policy_set(&p, "max-retry-after", "2m", err, sizeof(err)), 0);
	ck_assert_uint_eq(p.max_retry_after_ns, SEC(120));
	ck_assert_int_eq(retry_policy_set(&p, "budget", "ratio=0.5,window=2s", err, sizeof(err)), 0);
	ck_assert_int_eq(p.budget.kind, BUDGET_RATIO);
	ck_assert_double_eq(p.budget.ratio, 0.5);
	ck_assert_double_eq(p.budget.min_per_sec, 10);
	ck_assert_uint_eq(p.budget.window_ns, SEC(2));
	ck_assert_int_eq(retry_policy_set(&p, "budget", "none", err, sizeof(err)), 0);
	ck_assert_int_eq(p.budget.kind, BUDGET_NONE);
	p = policy("saia");
	ck_assert_int_eq(retry_policy_set(&p, "backoff", "full", err, sizeof(err)), 0);
	ck_assert_uint_eq(p.blind_wait_ns, 0);  /* an explicit backoff replaces the blind fallback */
}
END_TEST

START_TEST(knobs_bad_values)
{
	static const char *const BAD[][2] = {
		{ "backoff", "linear" }, { "base", "fast" }, { "cap", "-1s" }, { "multiplier", "0.5" },
		{ "max-attempts", "0" }, { "max-attempts", "x3" }, { "deadline", "5" },
		{ "retry-on", "429,abc" }, { "retry-on", "700" }, { "retry-on", "" },
		{ "retry-non-idempotent", "maybe" }, { "retry-after", "obey" },
		{ "max-retry-after", "1y" }, { "budget", "ratio=x" }, { "budget", "window=1ms" },
		{ "budget", "speed=3" }, { "jitter", "lots" },
	};
	struct retry_policy p = policy("signaldb"), orig = p;
	char err[200];

	for (size_t i = 0; i < sizeof(BAD) / sizeof(BAD[0]); i++) {
		err[0] = '\0';
		ck_assert_msg(retry_policy_set(&p, BAD[i][0], BAD[i][1], err, sizeof(err)) == -1,
		              "accepted --%s %s", BAD[i][0], BAD[i][1]);
		ck_assert_msg(strncmp(err, "--", 2) == 0 && strstr(err, BAD[i][0]) != NULL,
		              "error '%s' does not name --%s", err, BAD[i][0]);
		ck_assert_msg(strchr(err, '\n') == NULL, "error '%s' is not one line", err);
		if (BAD[i][1][0] != '\0' && strcmp(BAD[i][0], "budget") != 0)
			ck_assert_msg(strstr(err, BAD[i][1]) != NULL, "error '%s' does not name '%s'", err,
			              BAD[i][1]);
	}
	ck_assert_int_eq(memcmp(&p, &orig, sizeof(p)), 0);  /* a failed set changes nothing */
}
END_TEST

Suite *retry_suite(void)
{
	Suite *s = suite_create("retry");
	TCase *tc = tcase_create("engine");

	tcase_add_test(tc, backoff_formulas_exact);
	tcase_add_test(tc, backoff_full_and_equal_apart);
	tcase_add_test(tc, backoff_bounds);
	tcase_add_test(tc, backoff_huge_saturates);
	tcase_add_test(tc, reproducible_with_seed);
	tcase_add_test(tc, signaldb_matrix);
	tcase_add_test(tc, fail_fast_3600);
	tcase_add_test(tc, preset_caps_31_years);
	tcase_add_test(tc, preset_caps_per_wait);
	tcase_add_test(tc, preset_caps_total);
	tcase_add_test(tc, preset_caps_described);
	tcase_add_test(tc, caps_deadline_total);
	tcase_add_test(tc, lab_and_wasm_retry_after);
	tcase_add_test(tc, saia_rules);
	tcase_add_test(tc, naive_rules);
	tcase_add_test(tc, sre_adaptive_rules);
	tcase_add_test(tc, ratelimit_header_fallback);
	tcase_add_test(tc, budget_ratio_refusal_and_refill);
	tcase_add_test(tc, budget_ratio_slides_in_tenths);
	tcase_add_test(tc, budget_race_for_last_retry);
	tcase_add_test(tc, budget_shared_by_threads);
	tcase_add_test(tc, budget_aws_quota_and_refund);
	tcase_add_test(tc, budget_grpc_threshold);
	tcase_add_test(tc, presets_and_names);
	tcase_add_test(tc, knobs_set);
	tcase_add_test(tc, knobs_bad_values);
	suite_add_tcase(s, tc);
	return s;
}
