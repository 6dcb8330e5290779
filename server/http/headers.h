#ifndef RATELAB_HEADERS_H
#define RATELAB_HEADERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/limit/limiter.h"

/*
 * What a limited response says, as text: Retry-After, the rate-limit fields
 * of each dialect and the application/problem+json body.  Pure functions
 * over a limiter decision: no clock reads (the wall time for an HTTP-date or
 * an epoch reset comes in), no allocation, thread-safe.
 *
 * Dialects (--headers, a comma list of them; a mode is their bits):
 *   ietf              RateLimit-Policy: "default";q=5;w=1 and RateLimit: "default";r=0;t=1
 *                     (draft-ietf-httpapi-ratelimit-headers-10/-11: t is the seconds until
 *                     more quota is available)
 *   draft-03          RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset (delta seconds)
 *   x-ratelimit       x-ratelimit-limit, x-ratelimit-remaining, x-ratelimit-reset (Envoy)
 *   github            X-RateLimit-Limit, -Remaining, -Used, -Reset (epoch seconds), -Resource
 *   legacy            X-RateLimit-Limit, -Remaining, -Reset (delta seconds): x-ratelimit in
 *                     title case, as ratelab always sent it
 *   both              ietf,legacy
 *   retry-after-only  no rate-limit fields; Retry-After as --retry-after says
 *   none              nothing at all: no rate-limit fields and no Retry-After
 */

enum headers_mode {
	HEADERS_NONE = 0,            /* retry-after-only */
	HEADERS_IETF = 1,
	HEADERS_LEGACY = 2,
	HEADERS_BOTH = 3,
	HEADERS_DRAFT03 = 4,
	HEADERS_XRATELIMIT = 8,
	HEADERS_GITHUB = 16,
	HEADERS_SILENT = 32,         /* none: Retry-After left out too */
};

#define HEADERS_MAX_FIELDS 16
#define HEADERS_POLICY_LEN 512
#define HEADERS_FIELD_LEN 128
#define HEADERS_BODY_LEN 1024

/* One response header field: value points at buf, or at a caller's string (the policy). */
struct headers_field {
	const char *name;
	const char *value;
	char buf[HEADERS_FIELD_LEN];
};

/* "ietf, draft-03, x-ratelimit, github, legacy, both, retry-after-only, none" (for --help and errors). */
const char *headers_dialect_names(void);

/*
 * Parse a comma list of dialects into *mode.  Returns 0, or -1 with a reason
 * in why (an unknown word; none or retry-after-only beside another; two
 * dialects that send the same field name).
 */
int headers_parse_dialects(const char *list, enum headers_mode *mode, char *why, size_t wl);

/*
 * The rate-limit fields of `mode` for decision d into out[0..HEADERS_MAX_FIELDS):
 * `policy` is the route's RateLimit-Policy text, `resource` the policy name
 * GitHub's X-RateLimit-Resource gives, now_wall_ns the wall clock (only github
 * reads it).  Returns how many were filled.
 */
size_t headers_fields(enum headers_mode mode, const struct limiter_params *p, bool layered, const char *policy,
                      const struct limiter_decision *d, uint64_t now_wall_ns, struct headers_field *out);

/*
 * The Unix second at which after_ns from now_wall_ns has passed: the first
 * whole second at or after that instant, so that a client that waits until
 * it is never early.
 */
uint64_t headers_wall_second_after(uint64_t now_wall_ns, uint64_t after_ns);

/* GitHub's X-RateLimit-Reset for d at now_wall_ns: when the quota is back (a rejection: when its wait ends). */
uint64_t headers_github_reset(const struct limiter_decision *d, uint64_t now_wall_ns);

enum headers_retry_after {
	HEADERS_RA_SECONDS,
	HEADERS_RA_HTTPDATE,
	HEADERS_RA_NONE,
};


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
 * the Retry-After seconds on a rejection and, on an admission, the seconds
 * until more quota is available (next_ns rounded up; 0 while the quota is
 * whole).  Returns 0, or -1 when buf is too small.
 */
int headers_ratelimit(const struct limiter_params *p, bool layered, const struct limiter_decision *d,
                      char *buf, size_t len);

/* The seconds until the quota is whole again (the Retry-After seconds on a rejection): the -Reset fields. */
uint64_t headers_reset_secs(const struct limiter_decision *d);

/* t as headers_ratelimit computes it. */
uint64_t headers_next_secs(const struct limiter_decision *d);

/*
 * The Retry-After value for a rejection: delta-seconds, or the HTTP-date of
 * the first whole second at or after the wait's end (now_wall_ns + wait_ns,
 * and at least the next second).  Returns false for HEADERS_RA_NONE (no
 * header).
 */
bool headers_retry_after(enum headers_retry_after mode, uint64_t wait_ns, uint64_t now_wall_ns, char *buf,
                         size_t len);

/* The HTTP-date form's second, as headers_retry_after writes it. */
uint64_t headers_retry_after_date(uint64_t wait_ns, uint64_t now_wall_ns);

/*
 * The application/problem+json body of a rejection: type, title, status,
 * violated-policies, limiter, policy {name, quota, window_s}, remaining,
 * layer, retry_after_s (the rounded header value), wait_ms (exact) and
 * detail.  The type is the draft's problem type: quota-exceeded for a 429
 * (this client spent its quota), temporary-reduced-capacity for a 503 (the
 * server sheds load whatever the client did).  violated-policies names the
 * policy that rejected (the binding layer of a layered limit).  `limiter`
 * must be plain ASCII without quotes.  Returns the length, or -1 when buf is
 * too small.
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
