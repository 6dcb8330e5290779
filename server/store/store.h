#ifndef RATELAB_STORE_H
#define RATELAB_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "common/siphash.h"
#include "server/limit/limiter.h"

/*
 * Where per-key limiter state lives.  The HTTP layer only calls these; the
 * in-process store (store_memory.c: a sharded hash table with idle expiry and
 * an LRU-evicted hard cap) is the default, and a Redis-backed store can replace
 * it so several replicas share one limit.  All operations are thread-safe.
 */

struct store;

struct store_stats {
	uint64_t live_keys;
	uint64_t evictions;   /* keys dropped by the cap (LRU) */
	uint64_t expirations; /* keys dropped because idle */
	uint64_t errors;      /* backend errors (Redis); 0 for memory */
	uint64_t corrupt;     /* keys whose state was corrupt and reset (Redis); 0 for memory */
};

/*
 * A decision made without the backend (Redis down, fail-open mode): admitted,
 * but nothing is held there, so a concurrency slot must not be released.
 */
#define STORE_UNHELD 1

/*
 * The end of an asynchronous decision (store_ops.submit): rc is 0 with the
 * decision filled in, STORE_UNHELD (filled in, fail open), or -1 when the
 * backend failed and the request must fail closed (503).  Called exactly
 * once, from the store's own thread.
 */
typedef void (*store_done_fn)(void *arg, int rc);

struct store_ops {
	const char *name;
	/* Decide for `key` at `now`; returns 0, STORE_UNHELD (fail open), or -1 when the backend failed (d untouched). */
	int (*decide)(struct store *s, const char *key, size_t keylen, uint64_t now, uint64_t cost,
	              struct limiter_decision *d);
	/* Release a slot taken by an admitted request (concurrency limiter); no-op otherwise. */
	void (*release)(struct store *s, const char *key, size_t keylen, uint64_t now);
	/* Forget every key. */
	void (*reset)(struct store *s);
	void (*stats)(struct store *s, struct store_stats *out);
	void (*free)(struct store *s);
	/*
	 * Optional (NULL: the store only decides synchronously).  Queue a decision
	 * like decide; *d (owned by the caller, kept alive until done) is filled and
	 * then done(arg, rc) runs on the store's thread, possibly before submit
	 * returns.  Returns 0 when queued, -1 when not (stopping, out of memory):
	 * the caller then uses decide.  Thread-safe.
	 */
	int (*submit)(struct store *s, const char *key, size_t keylen, uint64_t now, uint64_t cost,
	              struct limiter_decision *d, store_done_fn done, void *arg);
	/*
	 * Optional: finish every queued decision (their done callbacks have run when
	 * this returns) and refuse later submits.  Bounded by the backend's timeouts.
	 */
	void (*quiesce)(struct store *s);
};

struct store {
	const struct store_ops *ops;
};

/*
 * The in-process store: `max_keys` is the hard cap (LRU eviction past it),
 * split over `shards` locks (0 picks a default).  Memory grows with the keys
 * held, not with the cap: at most max_keys * store_memory_key_bytes(ops, p)
 * for the keys, plus a fixed few KB per shard.  Keys are hashed with
 * SipHash-1-3 under a key drawn from getrandom(2) for this table.  Returns
 * NULL on allocation failure or when the kernel gives no random bytes.  The
 * limiter ops and params are copied; free with s->ops->free(s).
 */
struct store *store_memory_new(const struct limiter_ops *ops, const struct limiter_params *p,
                               size_t max_keys, size_t shards);

/* store_memory_new with the hash key given (copied), so a test can replay a table's layout. */
struct store *store_memory_new_keyed(const struct limiter_ops *ops, const struct limiter_params *p,
                                     size_t max_keys, size_t shards, const struct siphash_key *key);

/* The most memory one key can take in a full in-process table for ops and p, in bytes. */
size_t store_memory_key_bytes(const struct limiter_ops *ops, const struct limiter_params *p);

/*
 * An unkeyed 64-bit hash of len bytes of key (wyhash-like, not cryptographic):
 * the same seed, the same value, on every run, so anyone can compute
 * collisions.  The key table does not use it; client keys do (client_key.c).
 */
uint64_t store_memory_hash(const void *key, size_t len, uint64_t seed);

#endif
