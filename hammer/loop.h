#ifndef RATELAB_LOOP_H
#define RATELAB_LOOP_H

#include <curl/curl.h>
#include <stdint.h>

#include "hammer/engine.h"
#include "hammer/wire.h"

/*
 * One worker's event loop (internal to the engine): epoll, a timerfd for the
 * timer heap, and a fixed set of virtual clients.  Each client owns either
 * a connection of the hammer's own HTTP/1.1 path (plain http://) or a curl
 * easy handle in a multi handle driven by curl_multi_socket_action.
 */

/* What every loop of a run shares, read-only once the threads start. */
struct loop_shared {
	const struct hammer_config *cfg;
	struct curl_slist *headers;
	const struct wire_target *targets;  /* one per URL: the own HTTP/1.1 path; NULL: libcurl */
	const char *const *urls;       /* the servers, round-robin per request */
	uint32_t nurls;                /* >= 1 */
	uint32_t nloops;               /* loops in the run: request k of loop i is i + k * nloops */
	uint32_t park_max;             /* wire: idle connections to other servers one loop may keep */
	struct retry_budget *budget;   /* NULL: none */
	uint64_t start_ns;             /* the start instant (herd: in the near future) */
	uint64_t end_ns;               /* duration end, or 0 */
};

/* This loop's share of the run. */
struct loop_part {
	uint32_t index;                /* thread number */
	uint32_t clients;
	uint64_t requests;             /* UINT64_MAX: no limit */
	double rate;                   /* per second; 0: closed loop */
	uint64_t phase_ns;             /* open loop: offset of the first arrival */
};

struct loop;

/*
 * File descriptors a run of `clients` clients over `threads` loops can hold
 * at once: a socket per client, libcurl's wake-up socketpair per multi
 * handle (one per 16 clients), and an epoll and a timerfd per loop.
 */
uint64_t loop_fds_needed(uint32_t clients, uint32_t threads);

/* A loop ready to run (clients, easy handles, epoll set up), or NULL with err. */
struct loop *loop_new(const struct loop_shared *sh, const struct loop_part *part, char *err, size_t errlen);
void loop_free(struct loop *l);

/* Run to the end; fills the loop's result.  Thread entry: one thread per loop. */
void loop_run(struct loop *l);

/* The loop's result (valid after loop_run returned). */
struct hammer_result *loop_result(struct loop *l);

/* Progress counters, safe to read from another thread while it runs. */
void loop_progress(struct loop *l, uint64_t *requests, uint64_t *calls, bool *finished);

#endif
