#ifndef RATELAB_TRANSPORT_H
#define RATELAB_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/retry/retry.h"
#include "hammer/engine.h"
#include "hammer/loopclock.h"
#include "hammer/workload.h"

/*
 * How calls travel.  A transport is one table; the engine picks it (the own
 * HTTP/1.1 client, TRANSPORT_WIRE, or libcurl, TRANSPORT_CURL) and the loop
 * never asks which one it holds.  State comes at three levels: the run's,
 * set up before the worker threads start and read-only after; one per loop,
 * owned by that loop's thread; and, inside the loop's, one part per client.
 * Nothing in a transport is thread-safe beyond that.
 */

struct transport_run;    /* a transport's run-wide state */
struct transport_loop;   /* a transport's state in one loop */

/* The epoll tag the loop's clock keeps for its timerfd (hammer/loopclock.h); a transport registers its
 * sockets under any other. */
#define TRANSPORT_TAG_LOOP LOOPCLOCK_TAG

/* What a transport gets from its loop. */
struct transport_env {
	int epfd;                 /* the loop's epoll set */
	uint32_t clients;         /* client ids are 0 .. clients-1 */
	uint32_t index0, stride;  /* client id's run-wide index is index0 + id * stride */
	uint32_t park_max;        /* idle connections to other servers this loop may hold */
	/* A call of client id ended (never for a begin that returned -1). */
	void (*ended)(void *ctx, uint32_t id, const struct workload_answer *a, uint64_t now);
	void *ctx;
	/* Fire the loop's due timers: a long batch of transport work calls it between pieces. */
	void (*timers)(void *timers_ctx);
	void *timers_ctx;
};

struct transport_ops {
	const char *name;         /* "wire", "curl": as reported */
	/* True when this transport can send to url. */
	bool (*supports)(const char *url);
	/* Descriptors a run of `clients` over `loops` holds at most, the loops' own two each aside. */
	uint64_t (*fds_needed)(uint32_t clients, uint32_t loops);
	/* Descriptors it would use on top when the limit allows (idle connections to other servers). */
	uint64_t (*fds_wanted)(const struct hammer_config *cfg);
	/* Once per process, before any worker thread starts: 0, or -1 with a reason in err. */
	int (*process_init)(char *err, size_t errlen);
	/* The run's state for cfg's URLs and the workload's shapes, or NULL with a reason in err. */
	struct transport_run *(*run_new)(const struct hammer_config *cfg, const struct workload_ops *wl,
	                                 char *err, size_t errlen);
	void (*run_free)(struct transport_run *r);
	/* One loop's state (env is copied), or NULL (out of memory, descriptors). */
	struct transport_loop *(*loop_new)(const struct transport_run *r, const struct transport_env *env);
	void (*loop_free)(struct transport_loop *t);
	/*
	 * Send client id's call to server (an index into the run's URLs).  0: it
	 * will end through env->ended; -1: it ended at once with *err, and the
	 * caller reports that later (ending it here could begin the next call,
	 * and against a dead server that would recurse once per request).
	 */
	int (*begin)(struct transport_loop *t, uint32_t id, uint32_t server, const struct workload_call *call,
	             uint64_t now, enum retry_error *err);
	/* Epoll reported `events` on a socket registered with tag. */
	void (*event)(struct transport_loop *t, uint64_t tag, uint32_t events, uint64_t now);
	/* Do what fell due by now: timeouts, libcurl's own timer. */
	void (*expire)(struct transport_loop *t, uint64_t now);
	/* When expire has work next; UINT64_MAX: none planned. */
	uint64_t (*next_due)(const struct transport_loop *t);
};

extern const struct transport_ops TRANSPORT_WIRE;
extern const struct transport_ops TRANSPORT_CURL;
/* Virtual time: calls cross a stated network to an in-process model (cfg->sim, hammer/sim.h). */
extern const struct transport_ops TRANSPORT_SIM;

#endif
