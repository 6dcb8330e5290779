#include "common/clock.h"

#include <time.h>

static uint64_t read_clock(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

uint64_t clock_monotonic_ns(void) { return read_clock(CLOCK_MONOTONIC); }
uint64_t clock_wall_ns(void) { return read_clock(CLOCK_REALTIME); }

static uint64_t monotonic_cb(void *ctx)
{
	(void)ctx;
	return clock_monotonic_ns();
}

const struct clock CLOCK_MONOTONIC_REAL = { monotonic_cb, 0 };

static uint64_t fake_cb(void *ctx) { return *(uint64_t *)ctx; }

struct clock clock_fake(uint64_t *now_ns)
{
	struct clock c = { fake_cb, now_ns };
	return c;
}
