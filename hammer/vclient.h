#ifndef RATELAB_VCLIENT_H
#define RATELAB_VCLIENT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/heap.h"
#include "common/prng.h"
#include "common/retry/retry.h"
#include "hammer/engine.h"
#include "hammer/transport.h"
#include "hammer/workload.h"

/*
 * One virtual client's life (internal to the engine): a request starts, its
 * attempts go out as the workload's calls over the loop's transport, each
 * attempt's end goes through retry_decide, and a retry waits in the loop's
 * timer heap.  Where a client is needs no field of its own: waiting is an
 * entry in the heap, a call under way is the transport's, and idle is a
 * slot in the loop's free list.  Everything here runs on the thread of the
 * client's loop.
 */

struct vclient {
	struct prng rng;          /* its own stream, from the seed and its run-wide index */
	void *wstate;             /* the workload's state, or NULL */
	const char *method;       /* of the call under way */
	uint64_t intended_ns;     /* when the request should have started */
	uint64_t first_ns;        /* when its first attempt started */
	uint64_t call_ns;         /* when the call under way started */
	uint64_t waited_ns;       /* the waits of this request so far */
	uint64_t prev_wait_ns;
	uint32_t id;              /* index in its loop */
	uint32_t index;           /* run-wide index */
	uint32_t server;          /* index into the URLs: the current request's server */
	unsigned attempt;         /* attempts of this request so far, the one under way included */
	unsigned blind_waits;
	int last_status;          /* outcome of the last call (0: a transport error) */
	enum retry_error last_err;
	bool throttled;           /* in the failure queue because the throttle refused its attempt */
	bool held;                /* its request waits for the shared wait (intended_ns kept) */
	uint64_t requests;        /* requests it started: its Retry-Request's count */
	char said[2][80];         /* Retry-Attempt and Retry-Request lines of the attempt under way */
};

/* What the clients of one loop share: the loop's side of their lives. */
struct vclient_host {
	const struct hammer_config *cfg;
	const struct workload_ops *wl;
	const struct transport_ops *tops;
	struct transport_loop *tl;
	struct hammer_result *res;
	struct heap *heap;
	struct retry_budget *budget;   /* the run's, or NULL */
	struct retry_throttle *throttle;  /* the run's adaptive throttle, or NULL */
	_Atomic uint64_t *hold_until;  /* --shared-wait: the run's latest Retry-After ends then; NULL: off */
	struct vclient *clients;
	uint64_t start_ns;             /* the run's start instant */
	uint64_t start_wall_ns;        /* its wall time (ns since 1970): an HTTP-date Retry-After is read against it */
	uint32_t nurls;                /* the run's servers */
	uint32_t loop_index, nloops;   /* request k of loop i goes to server (i + k * nloops) % nurls */
	uint64_t seq;                  /* requests started by this loop */
	uint32_t *failq;               /* clients whose call failed as it began, or whose attempt the
	                                * throttle refused (a ring of nclients) */
	uint32_t fq_head, fq_n, nclients;
	/* The client's request is over: give it the next one or let it idle (ctx: done_ctx). */
	void (*request_done)(void *ctx, struct vclient *c, uint64_t now);
	void *done_ctx;
	_Atomic uint64_t prog_requests, prog_calls;
};

/* Set c up as client id of its loop and index of the run, with the workload state ws (or NULL). */
void vclient_init(struct vclient *c, uint32_t id, uint32_t index, uint64_t seed, void *ws);

/*
 * Start a request intended at `intended` (when it should have started) and
 * send its first call.  With a throttle, every attempt (this first one and
 * each retry) is first put to retry_throttle_admit with the client's PRNG; a
 * refused attempt is not sent and ends the request with reason "throttled"
 * when the failure queue is next drained (never from inside this call).
 */
void vclient_start(struct vclient_host *h, struct vclient *c, uint64_t intended, uint64_t now);

/* c's timer fell due: the request's first attempt (none sent yet) or a retry (the throttle's say,
 * then the budget's). */
void vclient_timer(struct vclient_host *h, struct vclient *c, uint64_t due, uint64_t now);

/* A call of c ended: the workload's next call, or the retry decision on the attempt. */
void vclient_ended(struct vclient_host *h, struct vclient *c, const struct workload_answer *a, uint64_t now);

/* The same for client id of host (a struct vclient_host): a transport's ended callback (transport_env). */
void vclient_call_ended(void *host, uint32_t id, const struct workload_answer *a, uint64_t now);

/* End the calls that failed as they began (queued by the send), and the requests the throttle refused. */
void vclient_drain_failed(struct vclient_host *h, uint64_t now);

/* Nanoseconds from the run's start instant to now (0 before it). */
uint64_t vclient_since_start(const struct vclient_host *h, uint64_t now);

#endif
