#ifndef RATELAB_LOOPCLOCK_H
#define RATELAB_LOOPCLOCK_H

#include <stdbool.h>
#include <stdint.h>

/*
 * How time passes for one worker loop (internal to the engine): the clock
 * seam.  The real clock is CLOCK_MONOTONIC, and waiting is epoll over the
 * loop's sockets and a timerfd; the virtual clock (`--sim`) is a number that
 * waiting sets to the next thing due, so a run takes as long as its events
 * take to compute.  The loop never asks which one it holds.  One instance
 * per loop, used by that loop's thread only.
 */

struct loopclock;

/* An I/O event of the loop's epoll set (never for the clock's own timer). */
typedef void (*loopclock_io_fn)(void *ctx, uint64_t tag, uint32_t events);

struct loopclock_ops {
	const char *name;
	/* Every client of a run must share one loop: events of several loops have no one order in
	 * virtual time, so the engine runs one. */
	bool one_loop;
	/* Now on this clock before any loop exists (the run's budget, throttle and start instant). */
	uint64_t (*origin)(void);
	/* The wall time (ns since 1970) of instant `t` on this clock. */
	uint64_t (*wall_of)(uint64_t t);
	/* A clock for one loop, or NULL (descriptors, memory). */
	struct loopclock *(*create)(void);
	void (*destroy)(struct loopclock *c);
	/* The epoll set a transport registers its sockets with; -1 when there is none. */
	int (*epfd)(const struct loopclock *c);
	uint64_t (*now)(struct loopclock *c);
	/*
	 * Let time pass until `until` (UINT64_MAX: no bound) or the first timer
	 * at `timer_ns` (UINT64_MAX: none), handing each I/O event meanwhile to
	 * io(ctx, ...).  The real clock also returns after a short poll interval
	 * (a cancel must be seen); the virtual one jumps to the earlier of the
	 * two, and returns false when both are UINT64_MAX: nothing can happen
	 * any more.
	 */
	bool (*wait)(struct loopclock *c, uint64_t until, uint64_t timer_ns, loopclock_io_fn io, void *ctx);
};

/* The tag of the clock's own timer in its epoll set; a transport registers under any other. */
#define LOOPCLOCK_TAG UINT64_MAX

extern const struct loopclock_ops LOOPCLOCK_REAL;
extern const struct loopclock_ops LOOPCLOCK_VIRTUAL;

/* Where the virtual clock starts, and the wall time (2026-01-01T00:00:00Z) that instant has. */
#define LOOPCLOCK_VIRTUAL_T0 UINT64_C(1000000000)
#define LOOPCLOCK_VIRTUAL_WALL0 (UINT64_C(1767225600) * UINT64_C(1000000000))

#endif
