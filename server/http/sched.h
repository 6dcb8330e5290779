#ifndef RATELAB_SCHED_H
#define RATELAB_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The server's one timer thread: one deadline heap serves every delay and
 * deadline (held answers, the modelled backend's services and triggers,
 * each connection's head deadline, the /events tick).  A timer is a struct
 * the caller owns (sched_timer_init, sched_arm, sched_cancel: O(log n)
 * each); sched_at is a one-shot from a pool of its own.  The thread calls
 * a timer's fn with no lock held, so fn may arm, cancel or wake anything.
 * Bounded: at most `cap` timers armed at once.  Thread-safe.
 */

struct sched_timer {
	void (*fn)(void *arg);
	void *arg;
	uint64_t due_ns;
	uint64_t seq;        /* arming order: equal due times fire in it */
	uint32_t pos;        /* its index in the heap plus one; 0: not armed */
	bool pooled;         /* one of sched_at's: back to the pool once fired */
};

struct sched;

/*
 * A scheduler with room for cap armed timers, pool of them for sched_at
 * (its thread not started); NULL when out of memory.
 */
struct sched *sched_new(size_t cap, size_t pool);

/* Start the timer thread.  Returns 0, or -1 when it cannot start. */
int sched_start(struct sched *s);

/*
 * Stop the thread (joined) and refuse every later arm.  Pending sched_at
 * one-shots run now, on this thread; armed caller timers are disarmed
 * without running.  Idempotent; one thread may call it.
 */
void sched_stop(struct sched *s);

/* sched_stop, then free.  NULL is a no-op. */
void sched_free(struct sched *s);

/* Make t a disarmed timer that calls fn(arg). */
void sched_timer_init(struct sched_timer *t, void (*fn)(void *), void *arg);

/* (Re)arm t to fire at due_ns (monotonic).  Returns 0, or -1 when full or stopped. */
int sched_arm(struct sched *s, struct sched_timer *t, uint64_t due_ns);

/*
 * Disarm t.  On return t's fn is not running (it waits for a call in
 * progress, except when called from that call itself) and will not run
 * until t is armed again.
 */
void sched_cancel(struct sched *s, struct sched_timer *t);

/* Call fn(arg) once at due_ns, from the pool.  Returns 0, or -1 when full or stopped. */
int sched_at(struct sched *s, uint64_t due_ns, void (*fn)(void *), void *arg);

#endif
