#ifndef RATELAB_REDIS_PIPE_H
#define RATELAB_REDIS_PIPE_H

#include <stdint.h>

#include "server/store/store_redis_impl.h"

/*
 * The Redis store's pipeline.  HTTP threads queue decisions (submit) and
 * slot releases (release) and go on serving other connections; one thread
 * per store sends everything queued as one batch (one write) on its own
 * connection, reads the replies in order (FIFO: a release runs after every
 * decision queued before it) and hands each decision back.  Many requests in
 * flight then share few Redis round trips, and no HTTP thread blocks on Redis.
 */

/* Start s's pipeline thread (s->pipe); 0 or -1. */
int redis_pipe_start(struct store_redis *s);

/* Answer what is queued, stop the thread and free the pipeline.  s->pipe NULL is a no-op. */
void redis_pipe_stop(struct store_redis *s);

/*
 * Queue a script call of op ("d" decide, "r" release) behind everything
 * queued before it, formatted on this thread; done(arg, rc) runs on the
 * pipeline's thread once *d is filled (d, done and arg are NULL for a
 * release).  Returns 0 when queued, -1 (nothing queued) when the pipeline is
 * closed, the key is too long or memory is short.  Thread-safe.
 */
int redis_pipe_queue(struct store_redis *s, const char *key, size_t keylen, uint64_t now, uint64_t cost,
                     const char *op, struct limiter_decision *d, store_done_fn done, void *arg);

/*
 * Wait until every release queued so far has been answered, so that a
 * synchronous decide on this thread comes after the releases it queued.
 * Bounded: each batch ends within the timeouts.
 */
void redis_pipe_barrier(struct redis_pipe *p);

/* Refuse later queueing and wait until everything queued is answered.  Bounded by the timeouts. */
void redis_pipe_quiesce(struct redis_pipe *p);

#endif
