#ifndef RATELAB_LOOP_H
#define RATELAB_LOOP_H

#include <stdbool.h>
#include <stdint.h>

#include "hammer/engine.h"
#include "hammer/loopclock.h"
#include "hammer/result.h"
#include "hammer/transport.h"
#include "hammer/workload.h"

/*
 * One worker's event loop (internal to the engine): a timer heap, a fixed
 * set of virtual clients (hammer/vclient.h), the run's transport behind its
 * op table (hammer/transport.h) and its clock behind another
 * (hammer/loopclock.h: real time with epoll and a timerfd, or virtual time).
 */

/* What every loop of a run shares, read-only once the threads start. */
struct loop_shared {
	const struct hammer_config *cfg;
	const struct loopclock_ops *clock;
	const struct transport_ops *tops;
	const struct transport_run *trun;
	const struct workload_ops *wl;
	const char *const *urls;       /* the servers, round-robin per request */
	uint32_t nurls;                /* >= 1 */
	uint32_t nloops;               /* loops in this process */
	uint32_t stride;               /* loops in the whole run, every node's: request k of the loop
	                                * in slot s is the run's request s + k * stride */
	uint32_t node, nodes;          /* this process's part of the run (nodes >= 1) */
	uint32_t park_max;             /* idle connections to other servers one loop may keep */
	struct retry_budget *budget;   /* NULL: none */
	struct retry_throttle *throttle;  /* the policy's adaptive throttle; NULL: none */
	_Atomic uint64_t *hold_until;  /* --shared-wait: no attempt starts before it; NULL: off */
	uint64_t start_ns;             /* the start instant (herd: in the near future), on the clock */
	uint64_t start_wall_ns;        /* its wall time, ns since 1970 */
	uint64_t end_ns;               /* duration end, or 0 */
};

/* This loop's share of the run. */
struct loop_part {
	uint32_t index;                /* thread number */
	uint32_t slot;                 /* place among every node's loops: node + nodes * index */
	uint32_t clients;
	uint32_t first_client;         /* this process's index of its first client; run-wide, client
	                                * k of the process is node + nodes * k */
	uint64_t requests;             /* UINT64_MAX: no limit */
	double rate;                   /* per second; 0: closed loop */
	uint64_t phase_ns;             /* open loop: offset of the first arrival */
};

struct loop;

/* A loop ready to run (clients and transport set up), or NULL with err. */
struct loop *loop_new(const struct loop_shared *sh, const struct loop_part *part, char *err, size_t errlen);
void loop_free(struct loop *l);

/* Run to the end; fills the loop's result.  Thread entry: one thread per loop. */
void loop_run(struct loop *l);

/* The loop's result (valid after loop_run returned). */
struct hammer_result *loop_result(struct loop *l);

/* When its first timer fired minus when it was due; UINT64_MAX when none fired (valid after loop_run). */
uint64_t loop_first_late_ns(const struct loop *l);

/* Progress counters, safe to read from another thread while it runs. */
void loop_progress(struct loop *l, uint64_t *requests, uint64_t *calls, bool *finished);

#endif
