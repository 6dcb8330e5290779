#ifndef RATELAB_LIMITERS_H
#define RATELAB_LIMITERS_H

#include <stdbool.h>
#include <stdint.h>

#include "server/limit/limiter.h"

/*
 * Private to the limiter files: the operation tables (one per file) and the
 * exact-arithmetic helpers they share.  Callers outside server/limit/ use
 * limiter_find() instead.
 *
 * Exactness: rates are limit/window requests per ns, which is rarely a whole
 * number of ns per request, so the bucket limiters keep their state in
 * "scaled" units where one request costs window_ns units and time refills
 * limit units per ns.  Nothing is rounded, so a reported wait is exact to the
 * ns.  limiter_params_check() bounds burst * window_ns and limit * window_ns
 * by LIMITER_SCALED_MAX so that this never overflows.
 */

#define LIMITER_SCALED_MAX (1ULL << 62)
#define LIMITER_SLIDING_LOG_MAX 1000ULL     /* timestamps kept per key */
#define LIMITER_CONCURRENCY_WAIT_NS 1000000000ULL

extern const struct limiter_ops limiter_token_bucket_ops;
extern const struct limiter_ops limiter_leaky_bucket_ops;
extern const struct limiter_ops limiter_fixed_window_ops;
extern const struct limiter_ops limiter_sliding_log_ops;
extern const struct limiter_ops limiter_sliding_window_ops;
extern const struct limiter_ops limiter_gcra_ops;
extern const struct limiter_ops limiter_concurrency_ops;
extern const struct limiter_ops limiter_layered_ops;
extern const struct limiter_ops limiter_none_ops;

/*
 * check_params of a rate limiter: limit >= 1, burst defaults to limit, and
 * limit * window_ns and burst * window_ns fit LIMITER_SCALED_MAX.  0, or -1
 * with a one-line reason (naming ops->name) in err.
 */
int limiter_check_rate(const struct limiter_ops *ops, struct limiter_params *p, char *err, size_t errlen);

/* ceil(a / b) for b > 0, without overflow. */
static inline uint64_t limiter_ceil_div(uint64_t a, uint64_t b)
{
	return a / b + (a % b != 0);
}

/* *out = a * b; true when that overflowed 64 bits. */
static inline bool limiter_mul_overflows(uint64_t a, uint64_t b, uint64_t *out)
{
	return __builtin_mul_overflow(a, b, out);
}

/* now - last, or 0 when threads handed in slightly out-of-order clocks. */
static inline uint64_t limiter_elapsed(uint64_t now, uint64_t last)
{
	return now > last ? now - last : 0;
}

/*
 * The start of the fixed window holding `now` (windows aligned to multiples of
 * window_ns).  The server hands limiters the time since it started, so its
 * windows start with it.
 */
static inline uint64_t limiter_window_start(uint64_t now, uint64_t window_ns)
{
	return now - now % window_ns;
}

#endif
