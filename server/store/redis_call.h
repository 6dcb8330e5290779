#ifndef RATELAB_REDIS_CALL_H
#define RATELAB_REDIS_CALL_H

#include <stdbool.h>
#include <stdint.h>

#include "server/store/store_redis_impl.h"

/*
 * One call of the store's script: its arguments (KEYS[1] and ARGV as
 * redis_scripts.h lays them out), EVALSHA with the EVAL fallback, the reply
 * read back as a decision, and the decision of fail-open mode.
 */

/* A script call's arguments; argv[0..1] (the command and the sha or script) are set when it runs. */
struct redis_call {
	const char *argv[4 + 1 + 5 + STORE_REDIS_NPARAM_MAX];
	size_t argl[4 + 1 + 5 + STORE_REDIS_NPARAM_MAX];
	int argc;
	char key[STORE_REDIS_KEY_MAX];
	char now[24], cost[24], token[64];
};

/*
 * Arguments for op ("d" decide, "r" release) of `cost` on key at `now` (sent
 * only with caller_clock) into k; a fresh token names the call's leases.
 * Returns 0, or -1 when the escaped key is over STORE_REDIS_KEY_MAX.
 */
int redis_call_build(struct store_redis *s, struct redis_call *k, const char *key, size_t keylen,
                     uint64_t now, uint64_t cost, const char *op);

/* Run k on c: EVALSHA, or EVAL when the sha is unknown or Redis forgot it.  The reply, or NULL (connection lost). */
redisReply *redis_call_run(struct store_redis *s, struct redis_conn *c, struct redis_call *k);

/*
 * The script's reply into *d, and into *was_corrupt whether the script found
 * the key corrupt and reset it (its 8th element).  0, or -1 when r is not
 * the 7 or 8 non-negative integers a script returns (any other type or
 * shape, checked before use).
 */
int redis_call_decision(const redisReply *r, struct limiter_decision *d, bool *was_corrupt);

/*
 * One script call on this thread's connection: 0 with *d filled (d may be
 * NULL), or -1 after counting the failure.  Bounded by the command timeout.
 */
int redis_call_script(struct store_redis *s, const char *key, size_t keylen, uint64_t now, uint64_t cost,
                      const char *op, struct limiter_decision *d);

/* The answer of fail-open mode: admitted, with the whole limit remaining. */
void redis_call_fail_open(const struct store_redis *s, struct limiter_decision *d);

#endif
