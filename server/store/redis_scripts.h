#ifndef RATELAB_REDIS_SCRIPTS_H
#define RATELAB_REDIS_SCRIPTS_H

#include "server/limit/limiter.h"

/*
 * The atomic Lua scripts of the Redis store.  A script is this prelude (the
 * calling convention below as local names, exact integer division, TTL
 * helpers) followed by the limiter's own body, limiter_ops.redis_script, which
 * sits next to its C decide in server/limit/limiter_<name>.c and keeps the
 * same state, integer arithmetic and decision, so that a Redis store and a
 * memory store fed the same arrivals answer the same.
 *
 * Calling convention (store_redis.c builds it):
 *   KEYS[1]  the key (prefix .. limiter name .. ":" .. request key)
 *   ARGV[1]  now in ns, or "" to use Redis TIME (ns since 2025-06-15, so that
 *            times stay exact in Lua's doubles); TIME keeps replicas with
 *            skewed clocks in agreement, the explicit now is for tests/replays
 *   ARGV[2]  cost            ARGV[3]  "d" decide, "r" release (concurrency)
 *   ARGV[4]  a unique token "OWNER:SEQ" (names sorted-set members/leases)
 *   ARGV[5]  limit   ARGV[6] window_ns   ARGV[7] burst   ARGV[8] lease_ns
 *   ARGV[9]  nlayers, then limit and window_ns of each layer
 * Reply: {admitted, wait_ns, remaining, limit, window_ns, reset_ns, layer},
 * and an 8th element, 1, when the key held a state no script writes (another
 * type, junk, a time far ahead, numbers that break the arithmetic): it was
 * then deleted and the decision made on a fresh state.
 * Every script leaves its key with a TTL (the time until the state is as good
 * as fresh; a fresh-equivalent state is deleted), plus 10 s of slack when the
 * caller gives `now`, since that clock need not run at Redis's pace.
 * Arithmetic is exact while the numbers stay below 2^53 (any realistic test,
 * and windows up to hours in production).
 */

#define REDIS_SCRIPTS_FIXED_ARGS 5  /* limit, window, burst, lease, nlayers */
#define REDIS_SCRIPTS_TIME_BASE  1750000000  /* Unix seconds subtracted from Redis TIME */

/*
 * The full Lua source of ops's script: the prelude, then ops->redis_script.
 * malloc'd (the caller frees it); NULL when the limiter has no script or on
 * allocation failure.  Thread-safe.
 */
char *redis_scripts_source(const struct limiter_ops *ops);

#endif
