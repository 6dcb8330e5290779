#ifndef RATELAB_RETRY_H
#define RATELAB_RETRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/prng.h"
#include "common/retry/retry_throttle.h"

/*
 * The retry-policy engine.  Deciding whether and how long to retry is one
 * pure function, retry_decide(): the hammer, `ratelab cases` and the tests
 * all call it.  Time and randomness come in as arguments.  Presets are data
 * (retry_policy_preset); every knob can be overridden (retry_policy_set).
 */

/* Transport outcome of one attempt. */
enum retry_error {
	RETRY_ERR_NONE = 0,   /* an HTTP answer arrived: see status */
	RETRY_ERR_REFUSED,    /* connection refused / could not connect */
	RETRY_ERR_RESET,      /* connection reset or closed without an answer */
	RETRY_ERR_TIMEOUT,    /* the per-attempt timeout fired */
	RETRY_ERR_OTHER,      /* malformed response and the like: never retried */
};

enum backoff_kind {
	BACKOFF_NONE,         /* wait 0 */
	BACKOFF_CONSTANT,     /* base */
	BACKOFF_EXPONENTIAL,  /* min(cap, base * mult^n), no jitter; n = retry number - 1, so the first retry waits base */
	BACKOFF_FULL,         /* rand * min(cap, base * mult^n) */
	BACKOFF_EQUAL,        /* e/2 + rand * e/2, e = min(cap, base * mult^n) */
	BACKOFF_DECORRELATED, /* min(cap, rand_between(base, prev * 3)) */
	BACKOFF_RANDOMIZED,   /* (0.5 + rand/2) * min(cap, base * mult^n): 50-100 % (seed 001) */
};

/* Client-wide retry limiters, shared by every request of a run. */
enum retry_budget_kind {
	BUDGET_NONE,
	BUDGET_RATIO,         /* seed 001: ratio of first attempts + min per second, sliding window in tenths */
	BUDGET_AWS_QUOTA,     /* AWS standard: 500 tokens, 5 per retry, 10 per timeout retry, refund on success */
	BUDGET_GRPC,          /* gRPC retry throttling: max_tokens, token_ratio; retry only while tokens > max/2 */
};

struct retry_budget_params {
	enum retry_budget_kind kind;
	double ratio;          /* RATIO: 0.2 */
	double min_per_sec;    /* RATIO: 10 */
	uint64_t window_ns;    /* RATIO: 10 s */
	double max_tokens;     /* AWS: 500; GRPC: 10 */
	double retry_cost;     /* AWS: 5 */
	double timeout_cost;   /* AWS: 10 */
	double token_ratio;    /* GRPC: 0.1 */
};

#define RETRY_STATUS_MAX 600

struct retry_policy {
	char name[32];
	unsigned max_attempts;        /* attempts in all, the first included; 1 = never retry */
	enum backoff_kind backoff;
	uint64_t base_ns;
	uint64_t cap_ns;              /* cap of any computed wait; 0 = none */
	double multiplier;            /* 2 unless said otherwise */
	uint64_t deadline_ns;         /* give up when the next wait would end past this, from the first start; 0 = none */
	uint64_t total_wait_cap_ns;   /* give up when the waits would add up past this; 0 = none */

	/* What is retried.  retry_on: statuses retried for idempotent methods (and for
	 * every method when retry_non_idempotent); retry_any_method: statuses retried
	 * whatever the method (signaldb's 429). */
	bool retry_on[RETRY_STATUS_MAX];
	bool retry_any_method[RETRY_STATUS_MAX];
	bool retry_conn;              /* refused and reset */
	bool retry_timeout;
	bool retry_non_idempotent;

	/* Retry-After (and RateLimit t= when Retry-After is absent). */
	bool honour_retry_after;
	uint64_t max_retry_after_ns;  /* fail fast (retry-after-too-long) past this; 0 = none */
	bool clamp_retry_after;       /* instead of failing fast, cap the wait at cap_ns (seed 001) */
	bool zero_retry_after_fails;  /* a zero wait is a fail-fast too (seed 004) */
	uint64_t retry_after_jitter_ns; /* add rand * this on top of a server-given wait (seed 002) */
	uint64_t blind_wait_ns;       /* when no wait is given: this constant instead of backoff (seed 004: 31 s) */
	unsigned blind_max;           /* ... at most this many times, then give up; 0 = no limit */

	struct retry_budget_params budget;
	/* Client-side adaptive throttling of every attempt (sre-adaptive): see
	 * retry_throttle.h for the calls the engine makes.  A policy has a budget
	 * or a throttle, not both: the "budget" knob sets one and clears the other. */
	struct retry_throttle_params throttle;

	/* Added: the per-attempt timeout the preset asks for (signaldb: 30 s);
	 * 0 = leave it to the hammer's --timeout. */
	uint64_t attempt_timeout_ns;
};

/* Added: a Retry-After or RateLimit wait too large to represent saturates here
 * (about 292 years), so now_ns + wait never overflows a uint64_t. */
#define RETRY_WAIT_MAX_NS ((uint64_t)INT64_MAX)

enum retry_reason {
	RETRY_REASON_OK,                   /* success: nothing to retry */
	RETRY_REASON_RETRY,                /* retry after wait_ns */
	RETRY_REASON_ATTEMPTS,             /* give up: attempts used */
	RETRY_REASON_DEADLINE,             /* give up: deadline or total wait cap */
	RETRY_REASON_BUDGET,               /* give up: retry budget refused */
	RETRY_REASON_RETRY_AFTER_TOO_LONG, /* give up: server asked for more than the cap */
	RETRY_REASON_NOT_RETRYABLE,        /* give up: this outcome/method is not retried */
	RETRY_REASON_THROTTLED,            /* give up: the client's adaptive throttle rejected an attempt
	                                    * locally (never from retry_decide: see retry_throttle.h) */
	RETRY_REASON_COUNT
};

/* "ok", "retry", "attempts", "deadline", "budget", "retry-after-too-long", "not-retryable",
 * "throttled"; "?" out of range. */
const char *retry_reason_name(enum retry_reason r);

struct retry_budget;

struct retry_input {
	int status;                   /* HTTP status; 0 when error != RETRY_ERR_NONE */
	enum retry_error error;
	const char *method;           /* "GET", "POST", ... */
	int idempotent;               /* -1: by method (GET HEAD PUT DELETE OPTIONS TRACE); 0/1: declared */
	const char *retry_after;      /* Retry-After header value, or NULL */
	const char *ratelimit;        /* RateLimit header value, or NULL */
	int64_t now_wall_s;           /* wall clock, for HTTP-date Retry-After */
	unsigned attempt;             /* the attempt that just finished: 1 for the first */
	uint64_t elapsed_ns;          /* from the first attempt's start to now */
	uint64_t waited_ns;           /* sum of the waits before this decision */
	uint64_t prev_wait_ns;        /* the previous wait (decorrelated jitter); 0 at first */
	unsigned blind_waits;         /* blind fallback waits used so far */
	struct retry_budget *budget;  /* NULL: no budget */
	uint64_t now_ns;              /* monotonic now, for the budget's window */
};

struct retry_decision {
	bool retry;
	uint64_t wait_ns;             /* when retry; on retry-after-too-long, the wait the server asked for */
	enum retry_reason reason;
	bool server_wait;             /* the wait came from Retry-After / RateLimit */
	bool blind;                   /* the wait was the blind fallback */
};

/*
 * Decide what to do after one attempt.  Pure apart from drawing from rng:
 * it reads the budget but never spends from it (see retry_budget_*); when
 * the budget refuses, it counts the refusal in retry_budget_refused().
 * The checks run in this order: success, not-retryable, attempts, server
 * wait (fail fast: retry-after-too-long), the wait itself, deadline and
 * total wait cap, budget.  A malformed Retry-After counts as no wait.
 * Thread-safe when each thread passes its own rng.
 */
void retry_decide(const struct retry_policy *p, const struct retry_input *in, struct prng *rng,
                  struct retry_decision *out);

/* The backoff wait before retry number n (n = 1 for the first retry), capped.  Pure but for rng. */
uint64_t retry_backoff(const struct retry_policy *p, unsigned n, uint64_t prev_wait_ns, struct prng *rng);

/*
 * Fill *out with preset `name`; returns 0, or -1 when unknown.  Names: none,
 * lab, signaldb, wasm, saia, aws-standard, grpc, naive, sre-adaptive.  Every
 * preset caps a server-given wait (max_retry_after_ns: fail fast past it, or
 * clamp_retry_after) and the whole request (deadline_ns or total_wait_cap_ns);
 * retry_policy_describe says which.
 */
int retry_policy_preset(const char *name, struct retry_policy *out);

/* "none, lab, signaldb, wasm, saia, aws-standard, grpc, naive, sre-adaptive". */
const char *retry_preset_names(void);

/*
 * One line (no newline) on p's attempts and caps, for `--help` and reports, e.g.
 * "5 attempts; server wait up to 10s, longer fails fast (+100ms jitter); deadline 30s".
 * Truncated to fit buf (len bytes, NUL included).  Pure.
 */
void retry_policy_describe(const struct retry_policy *p, char *buf, size_t len);

/* The flag name of a backoff kind ("full", "decorrelated", ...), or "?". */
const char *retry_backoff_name(enum backoff_kind k);

/*
 * Override one knob by its hammer flag name without the dashes ("backoff",
 * "base", "cap", "multiplier", "max-attempts", "deadline", "retry-on",
 * "retry-non-idempotent", "retry-after", "max-retry-after", "budget"; added:
 * "total-wait-cap").  "budget" takes "ratio=R,min=N,window=DUR" (missing keys
 * default to 0.2, 10, 10s), "on" (those defaults), "sre" or "sre,k=K,window=DUR"
 * (adaptive throttling; K 1-100, default 2; window default 2m) or "none"/"off"
 * (neither).  A ratio budget clears the throttle and "sre" clears the budget.  An explicit
 * "backoff" turns off saia's blind fallback.  "retry-on" replaces the list; a
 * status the preset retried on any method (signaldb's 429) keeps that.
 * Returns 0, or -1 with a one-line reason naming the flag and value ("--knob: ..."),
 * leaving *p unchanged.
 */
int retry_policy_set(struct retry_policy *p, const char *knob, const char *value, char *err, size_t errlen);

/* True for methods safe to repeat. */
bool retry_method_idempotent(const char *method);

/*
 * The budget shared by all requests of a run: thread-safe (internal lock).
 * retry_budget_new returns NULL for BUDGET_NONE or on allocation failure.
 */
struct retry_budget *retry_budget_new(const struct retry_budget_params *bp, uint64_t now_ns);
void retry_budget_free(struct retry_budget *b);
/* A first attempt was sent (RATIO deposits). */
void retry_budget_on_first(struct retry_budget *b, uint64_t now_ns);
/* Would a retry be allowed now?  Read-only. */
bool retry_budget_check(struct retry_budget *b, uint64_t now_ns, enum retry_error err);
/* Take a retry at send time; false when it was lost to a race (refused). */
bool retry_budget_spend(struct retry_budget *b, uint64_t now_ns, enum retry_error err);
/* An attempt ended: success refunds (AWS) or adds tokens (gRPC), failure takes (gRPC). */
void retry_budget_on_result(struct retry_budget *b, bool success, bool was_retry);
/* Retries refused so far: decisions refused by the check (retry_decide
 * counts those, the one thing it writes) plus spends lost to a race. */
uint64_t retry_budget_refused(struct retry_budget *b);
/* Added: count one refusal (retry_decide calls it when the check fails). */
void retry_budget_note_refused(struct retry_budget *b);
/* Added, for tests and `ratelab cases`: the tokens left (AWS quota, gRPC
 * throttling), or the retries still allowed now (RATIO). */
double retry_budget_tokens(struct retry_budget *b, uint64_t now_ns);
/* Added, for tests and `ratelab cases`: set the tokens of an AWS or gRPC
 * budget (clamped to 0..max_tokens); no effect on RATIO. */
void retry_budget_set_tokens(struct retry_budget *b, double tokens);

/*
 * Parse a Retry-After value: delta-seconds or any HTTP-date.  A past date or
 * negative number gives 0; huge values saturate without overflow.  Returns 0
 * and *wait_ns, or -1 when malformed.
 */
int retry_after_parse(const char *value, int64_t now_wall_s, uint64_t *wait_ns);

/* Parse the t= (or legacy reset=) parameter of an IETF RateLimit header
 * ("\"default\";r=0;t=3").  Returns 0 and *wait_ns, or -1 when absent or malformed. */
int ratelimit_parse_t(const char *value, uint64_t *wait_ns);

#endif
