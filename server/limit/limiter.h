#ifndef RATELAB_LIMITER_H
#define RATELAB_LIMITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * One interface for every limiter.  A limiter is a table of functions over
 * an opaque, fixed-size, per-key state blob; it never reads the clock or
 * allocates: `now` (monotonic ns) comes in as an argument, so tests replay
 * scripted arrivals exactly.  The key table (store.h) owns the state and its
 * locking; limiter functions are not thread-safe on one state.
 */

#define LIMITER_MAX_LAYERS 8

struct limiter_layer {
	uint64_t limit;      /* requests per window */
	uint64_t window_ns;
};

struct limiter_params {
	uint64_t limit;      /* requests per window (quota, q) */
	uint64_t window_ns;  /* w */
	uint64_t burst;      /* bucket capacity / allowed excess; defaults to limit */
	size_t nlayers;      /* layered only */
	struct limiter_layer layers[LIMITER_MAX_LAYERS];
};

struct limiter_decision {
	bool admitted;
	uint64_t wait_ns;    /* rejected: exact time until the same request would be admitted (> 0) */
	uint64_t remaining;  /* quota left after this decision */
	uint64_t limit;      /* quota of the binding policy (layer) */
	uint64_t window_ns;  /* window of the binding policy (layer) */
	uint64_t reset_ns;   /* time until the quota is whole again */
	int layer;           /* binding layer index (layered), else 0 */
	uint64_t next_ns;    /* time until remaining grows (more quota is available); 0 when it is whole */
};

struct limiter_ops {
	const char *name;
	/* Admits everything without per-key state: the server decides without a key or a store. */
	bool stateless;
	/* A policy of several layers (one RateLimit-Policy item per layer, binding layer in d->layer). */
	bool layered;
	/* Takes a burst (a bucket's capacity, GCRA's tolerance); serve and --config refuse one for the others. */
	bool burst;
	/* Check p (window_ns already defaulted) and fill this limiter's defaults; 0, or -1 with a
	 * one-line reason in err.  limiter_params_check calls it. */
	int (*check_params)(const struct limiter_ops *ops, struct limiter_params *p, char *err, size_t errlen);
	/* Bytes of per-key state for these params (sliding-log depends on limit). */
	size_t (*state_size)(const struct limiter_params *p);
	/* Initialise a fresh key's state as of `now`. */
	void (*init)(const struct limiter_params *p, void *state, uint64_t now);
	/* Decide one request of `cost` units at `now`; fills *d.  Updates state only on admission
	 * (a rejected request takes nothing), except where the algorithm says otherwise. */
	void (*decide)(const struct limiter_params *p, void *state, uint64_t now, uint64_t cost,
	               struct limiter_decision *d);
	/* Give back a slot when an admitted request finishes (concurrency); NULL for the rest. */
	void (*release)(const struct limiter_params *p, void *state);
	/* True when the state is indistinguishable from a fresh one at `now` (safe to expire). */
	bool (*idle)(const struct limiter_params *p, const void *state, uint64_t now);
	/* The body of the Redis store's Lua script, the same decision as `decide` over the
	 * names of the prelude in server/store/redis_scripts.h; NULL when there is none. */
	const char *redis_script;
};

/* The limiter named `name`, or NULL.  Names: token-bucket, leaky-bucket, fixed-window,
 * sliding-log, sliding-window, gcra, concurrency, layered, none. */
const struct limiter_ops *limiter_find(const char *name);

/* The i-th limiter in registry order (the order above), or NULL past the last: for "all of them" loops. */
const struct limiter_ops *limiter_at(size_t i);

/* Comma-separated list of the names, for --help and errors. */
const char *limiter_names(void);

/*
 * Check params for this limiter; fills defaults (burst = limit when 0).
 * Returns 0, or -1 with a one-line reason in err.
 */
int limiter_params_check(const struct limiter_ops *ops, struct limiter_params *p, char *err, size_t errlen);

#endif
