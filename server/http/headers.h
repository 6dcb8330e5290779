#ifndef RATELAB_HEADERS_H
#define RATELAB_HEADERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/limit/limiter.h"

/*
 * What a limited response says, as text: Retry-After, the IETF draft
 * RateLimit-Policy / RateLimit fields, the legacy X-RateLimit-* trio and the
 * application/problem+json body.  Pure functions over a limiter decision:
 * no clock reads (the wall time for an HTTP-date comes in), no allocation,
 * thread-safe.
 */

enum headers_mode {
	HEADERS_NONE = 0,
	HEADERS_IETF = 1,
	HEADERS_LEGACY = 2,
	HEADERS_BOTH = 3,
};

enum headers_retry_after {
	HEADERS_RA_SECONDS,
	HEADERS_RA_HTTPDATE,
	HEADERS_RA_NONE,
};

#define HEADERS_POLICY_LEN 512
#define HEADERS_FIELD_LEN 128
#define HEADERS_BODY_LEN 1024

/* v in decimal (a faster snprintf "%llu"); truncated to "" when buf is too small. */
void headers_format_u64(uint64_t v, char *buf, size_t len);

/* ns rounded up to whole seconds (0 stays 0). */
uint64_t headers_ceil_secs(uint64_t ns);

/* Retry-After delta-seconds for a rejection's wait: rounded up, never 0. */
uint64_t headers_retry_after_secs(uint64_t wait_ns);

/* Name of policy `layer` of a limiter: "default" for single-policy limiters, "l0", "l1"... for layered. */
void headers_policy_name(const struct limiter_params *p, bool layered, int layer, char *buf, size_t len);

/*
 * The RateLimit-Policy value: `"default";q=5;w=1`, or one item per layer
 * (`"l0";q=30;w=60, "l1";q=500;w=3600`).  w is the window in seconds,
 * rounded up.  Returns 0, or -1 when buf is too small.
 */
int headers_policy(const struct limiter_params *p, bool layered, char *buf, size_t len);

/*
 * The RateLimit value for a decision: `"NAME";r=REMAINING;t=SECS`, where t is
 * the Retry-After seconds on a rejection and the reset rounded up on an
 * admission.  Returns 0, or -1 when buf is too small.
 */
int headers_ratelimit(const struct limiter_params *p, bool layered, const struct limiter_decision *d,
                      char *buf, size_t len);

/* t as headers_ratelimit computes it (also X-RateLimit-Reset). */
uint64_t headers_reset_secs(const struct limiter_decision *d);

/*
 * The Retry-After value for a rejection: delta-seconds, or the HTTP-date of
 * now_wall_s + those seconds.  Returns false for HEADERS_RA_NONE (no header).
 */
bool headers_retry_after(enum headers_retry_after mode, uint64_t wait_ns, int64_t now_wall_s,
                         char *buf, size_t len);

/*
 * The application/problem+json body of a rejection: type, title, status,
 * limiter, policy {name, quota, window_s}, remaining, layer, retry_after_s
 * (the rounded header value), wait_ms (exact) and detail.  `limiter` must be
 * plain ASCII without quotes.  Returns the length, or -1 when buf is too small.
 */
int headers_problem_body(int status, const char *limiter, const struct limiter_params *p, bool layered,
                         const struct limiter_decision *d, char *buf, size_t len);

/*
 * The same body in two parts, head then tail.  The head depends only on the
 * status, limiter, policy, remaining and layer; the tail holds what the wait
 * changes.  A connection rejected again under the same head rewrites only
 * the tail.  Each returns its length, or -1 when buf is too small.
 */
int headers_problem_head(int status, const char *limiter, const struct limiter_params *p, bool layered,
                         const struct limiter_decision *d, char *buf, size_t len);
int headers_problem_tail(const struct limiter_decision *d, char *buf, size_t len);

#endif
