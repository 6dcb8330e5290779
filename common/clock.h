#ifndef RATELAB_CLOCK_H
#define RATELAB_CLOCK_H

#include <stdint.h>

#define NS_PER_US  1000ULL
#define NS_PER_MS  1000000ULL
#define NS_PER_SEC 1000000000ULL

/*
 * A clock is a function and its context, so code that decides by time can be
 * handed a fake one in tests.  Limiters take `now` as a plain argument; the
 * struct is for code that reads the time itself (the hammer's loops).
 */
struct clock {
	uint64_t (*now_ns)(void *ctx);
	void *ctx;
};

/* CLOCK_MONOTONIC in nanoseconds.  Thread-safe. */
uint64_t clock_monotonic_ns(void);

/* CLOCK_REALTIME in nanoseconds since the epoch.  Thread-safe. */
uint64_t clock_wall_ns(void);

/* The real monotonic clock as a struct clock. */
extern const struct clock CLOCK_MONOTONIC_REAL;

/* A fake clock for tests: reads *(uint64_t *)ctx. */
struct clock clock_fake(uint64_t *now_ns);

/* Read a struct clock. */
static inline uint64_t clock_now(const struct clock *c) { return c->now_ns(c->ctx); }

#endif
