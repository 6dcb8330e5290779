#ifndef RATELAB_LIFECYCLE_H
#define RATELAB_LIFECYCLE_H

#include <microhttpd.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <pthread.h>

#include "server/http/sched.h"

/*
 * A request's life in the server, and the one place a connection is
 * suspended and resumed.  A request is begun (counted in flight) and
 * ended; in between it may be *parked* with a reason, its connection
 * suspended, and is then *woken* once with an outcome, its connection
 * resumed, and MHD calls the access handler again, where the request's
 * phase (enum request_phase) says what is left.
 *
 * The drain stops new requests and new parks, wakes every parked request
 * as shed (except those parked on the store, whose store owns the request
 * until it answers, within its own timeout), and waits on a condition until
 * no request is in flight.  Thread-safe.
 */

/* Where a request is.  MHD calls the access handler again after every wake, and the phase says what is left. */
enum request_phase {
	REQUEST_LINE,          /* its request line is read, the rest of its head not yet */
	REQUEST_NEW,           /* headers in, maybe body chunks: nothing decided yet */
	REQUEST_TOO_BIG,       /* the body is over max_body: answer 413 (or close) */
	REQUEST_DECIDING,      /* parked while an asynchronous store decides */
	REQUEST_DECIDED,       /* the decision is in d; a delay fault may still hold the answer */
	REQUEST_STORE_FAILED,  /* the store could not decide and fails closed: answer 503 */
	REQUEST_HELD,          /* parked for a delay: answer when woken (a handler's in `kept`) */
	REQUEST_QUEUED,        /* parked in the route's backend, waiting for a virtual worker */
	REQUEST_SERVING,       /* parked while a virtual worker serves it */
	REQUEST_SERVED,        /* the backend served it: answer as admitted */
	REQUEST_SHED,          /* the backend shed it (queue full, dropped, stopping): answer 503 */
	REQUEST_UPSTREAM,      /* parked while the upstream answers (--upstream): answer with its answer */
};

/* Why a request is parked. */
enum lifecycle_reason {
	LIFECYCLE_STORE,       /* an asynchronous store decides (woken by the store only) */
	LIFECYCLE_DELAY,       /* a delay fault or a handler's delayed reply */
	LIFECYCLE_BACKEND,     /* the modelled backend queues or serves it */
	LIFECYCLE_STREAM,      /* an event stream waits for its next event */
	LIFECYCLE_UPSTREAM,    /* the upstream answers a proxied request (--upstream) */
};

/* How a parked request was woken. */
enum lifecycle_outcome {
	LIFECYCLE_DUE,         /* what it waited for came (its timer, the store, the backend, an event) */
	LIFECYCLE_SHED,        /* the server drains: answer now, with what there is */
};

enum lifecycle_park_state {
	LIFECYCLE_IDLE,
	LIFECYCLE_PARKED,
	LIFECYCLE_WOKEN,
};

struct lifecycle;

/* How a connection is suspended and resumed: libmicrohttpd's, or a test's. */
struct lifecycle_conn_ops {
	void (*suspend)(struct MHD_Connection *c);
	void (*resume)(struct MHD_Connection *c);
};

/* One parked request (owned by the caller: its request, or its stream). */
struct lifecycle_park {
	struct lifecycle_park *prev, *next;  /* the parked list, under the lifecycle's lock */
	struct lifecycle *lc;
	struct MHD_Connection *conn;
	struct sched_timer timer;            /* fires when a parked request's time is up */
	void (*on_due)(void *arg);           /* the timer's action (lifecycle_arm), NULL: wake as due */
	void *due_arg;
	enum lifecycle_reason reason;
	enum lifecycle_outcome outcome;      /* how it was woken: read it after the wake */
	_Atomic int state;                   /* enum lifecycle_park_state */
};

struct lifecycle {
	pthread_mutex_t lock;
	pthread_cond_t idle;                 /* signalled when the last request in flight ends while draining */
	struct lifecycle_park *parked;
	struct sched *sched;
	const struct lifecycle_conn_ops *ops;
	_Atomic long inflight;
	_Atomic bool draining;
};

/*
 * Set up lc on the scheduler s (which must outlive it); ops NULL:
 * MHD_suspend_connection and MHD_resume_connection.
 */
void lifecycle_init(struct lifecycle *lc, struct sched *s, const struct lifecycle_conn_ops *ops);
void lifecycle_destroy(struct lifecycle *lc);

/* A request is taken in: counted in flight.  False (not counted) once draining. */
bool lifecycle_begin(struct lifecycle *lc);

/* A request taken in by lifecycle_begin ended (answered or abandoned). */
void lifecycle_end(struct lifecycle *lc);

/* Whether the server drains (no new request, no new park). */
bool lifecycle_draining(struct lifecycle *lc);

/*
 * Park the request on connection c (call on the thread MHD runs it on):
 * suspend c until lifecycle_wake.  False (not parked, c not suspended) once
 * draining, except for the store (never shed): the caller answers now.
 */
bool lifecycle_park(struct lifecycle *lc, struct lifecycle_park *p, struct MHD_Connection *c,
                    enum lifecycle_reason why);

/* lifecycle_park, woken as due at due_ns (the scheduler's timer).  False as lifecycle_park. */
bool lifecycle_park_until(struct lifecycle *lc, struct lifecycle_park *p, struct MHD_Connection *c,
                          enum lifecycle_reason why, uint64_t due_ns);

/*
 * A parked request's timer: at due_ns, on the timer thread, fn(arg) (which
 * wakes p).  set(set_arg), when not NULL, is called first, only while p is
 * still parked and under the lock its wakers take: the request's state it
 * writes is seen by fn and by whoever wakes p, and is never written once p
 * was woken.  Returns 0, or -1 when p is no longer parked or the scheduler
 * is full or stopped (not armed).
 */
int lifecycle_arm(struct lifecycle_park *p, uint64_t due_ns, void (*fn)(void *), void *arg, void (*set)(void *),
                  void *set_arg);

/*
 * Wake p with outcome o: its timer cancelled, its connection resumed.
 * Once per park: true for the call that woke it, false when it was not
 * parked (woken already).  From any thread.
 */
bool lifecycle_wake(struct lifecycle_park *p, enum lifecycle_outcome o);

/*
 * The wake in two steps, for a waker that writes the request's state in
 * between: claim is true for the one caller that may (then it must call
 * resume), false when p was woken already and the request is no longer
 * the caller's to touch.
 */
bool lifecycle_claim(struct lifecycle_park *p);
void lifecycle_resume(struct lifecycle_park *p, enum lifecycle_outcome o);

/* The drain's start: no new request or park from now on.  Idempotent. */
void lifecycle_close(struct lifecycle *lc);

/*
 * The drain: no new request or park from now on; every parked request
 * but the store's is woken as shed; then wait (on a condition) until none
 * is in flight or deadline_ns passes.  Returns how many are still in
 * flight.  Once, from one thread.
 */
long lifecycle_drain(struct lifecycle *lc, uint64_t deadline_ns);

#endif
