#ifndef RATELAB_DELAYQ_H
#define RATELAB_DELAYQ_H

#include <stddef.h>
#include <stdint.h>

/*
 * A timer thread that calls fn(arg) once each deadline (CLOCK_MONOTONIC ns)
 * passes: the server uses it to resume connections held by a delay fault
 * without blocking a server thread.  Bounded: at most `cap` pending entries.
 */

struct delayq;

/* Start the timer thread.  NULL on failure. */
struct delayq *delayq_new(size_t cap);

/* Queue fn(arg) at deadline_ns.  Returns 0, or -1 when full or stopping.  Thread-safe. */
int delayq_push(struct delayq *q, uint64_t deadline_ns, void (*fn)(void *), void *arg);

/* Stop the timer thread and run every pending entry now, in this thread; later pushes fail.
 * Idempotent; only one thread may call it. */
void delayq_stop(struct delayq *q);

/* delayq_stop, then free.  NULL is a no-op. */
void delayq_free(struct delayq *q);

#endif
