#ifndef RATELAB_ENGINE_H
#define RATELAB_ENGINE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/histogram.h"
#include "common/rate_schedule.h"
#include "common/retry/retry.h"
#include "common/timeline.h"
#include "hammer/result.h"
#include "hammer/sim.h"
#include "hammer/workload.h"

/*
 * The hammer's run API.  hammer_run() fires the load a config describes over
 * `threads` worker threads, each one event loop (a timer heap of virtual
 * clients waiting to start or retry, one transport behind an op table:
 * hammer/transport.h, and a clock behind another: hammer/loopclock.h), and
 * fills a result.  With cfg->sim the same loop runs in virtual time.  It is
 * reusable in-process: `ratelab herd` calls it once per policy.
 *
 * The words: a request is what the retry policy retries; each try at it is
 * an attempt (what --max-attempts counts); an attempt is one or more calls,
 * HTTP requests, as the workload says (hammer/workload.h): one for the plain
 * request.  Calls are counted as they are sent; a retry is a call made by an
 * attempt after the first.
 */

/* How requests travel: the own HTTP/1.1 path for plain http:// (auto picks it when every URL allows), or libcurl. */
enum hammer_transport { HAMMER_TRANSPORT_AUTO, HAMMER_TRANSPORT_WIRE, HAMMER_TRANSPORT_CURL };

struct hammer_config {
	const char *url;               /* the server when nurls is 0 */
	const char *const *urls;       /* several servers, requests round-robin over them; or NULL */
	uint32_t nurls;                /* entries in urls (<= HAMMER_MAX_URLS); 0 = just url */
	const char *method;            /* "GET", "POST", ... */
	const char *const *headers;    /* "Name: value" lines */
	size_t nheaders;
	const char *data;              /* request body, or NULL */
	const struct workload_ops *workload;  /* what each client sends; NULL: the plain request */
	uint64_t requests;             /* requests to make; 0 = no limit (duration_ns then required) */
	uint32_t concurrency;          /* virtual clients */
	uint64_t duration_ns;          /* stop after this; 0 = none */
	double rate;                   /* open loop: new requests per second; 0 = closed loop */
	const struct rate_schedule *schedule;  /* open loop: the rate over time instead (rate then
	                                        * its peak, above 0); NULL: rate throughout */
	bool poisson;                  /* open-loop arrivals: exponential gaps instead of constant */
	uint32_t threads;              /* worker threads (capped at concurrency) */
	uint64_t timeout_ns;           /* per attempt */
	uint64_t connect_timeout_ns;   /* 0 = curl's default */
	bool herd;                     /* every client fires at one instant, once all are ready */
	uint64_t seed;                 /* client k draws from its own stream of seed and k */
	enum hammer_transport transport;
	const struct retry_policy *policy;
	uint64_t interval_ns;          /* timeline interval */
	uint64_t by_start_ns;          /* also count each call in rows of this width by its start; 0 = no */
	uint32_t sources;              /* loopback source addresses to spread the connections over
	                                * (wire transport, 127.0.0.0/8 targets); 0: as the port range needs */
	uint32_t node;                 /* this process's part of a run over `nodes` processes: */
	uint32_t nodes;                /* clients, requests and arrivals k with k % nodes == node;
	                                * 0 or 1: the whole run (concurrency, requests, rate are totals) */
	/*
	 * Called once every loop is set up, before any worker starts: waits
	 * (bounded) until the run may begin and sets *start_ns, the start
	 * instant on CLOCK_MONOTONIC; or returns -1 with a one-line reason in
	 * err, and the run does not happen.  NULL: start now (herd: in 20 ms).
	 */
	int (*ready)(void *ctx, uint64_t *start_ns, char *err, size_t errlen);
	void *ready_ctx;
	bool shared_wait;              /* every client holds its next attempts until the run's latest
	                                * Retry-After is over (--shared-wait) */
	FILE *notes;                   /* one line per retry, naming the client (--verbose), or NULL */
	FILE *progress;                /* a progress line while running (a terminal), or NULL */
	const char *progress_label;    /* the progress line starts "LABEL: " (herd: the policy), or NULL */
	const char *progress_unit;     /* what finished requests are called there; NULL: "requests" */
	atomic_int *cancel;            /* set non-zero (e.g. from SIGINT) to stop; may be NULL */
	const struct sim_config *sim;  /* run in virtual time against this model (hammer/sim.h): one
	                                * loop whatever `threads`, no sockets; NULL: a real run */
};

/* Several URLs, or the one: cfg's servers in order; *n gets their number (>= 1). */
const char *const *hammer_config_urls(const struct hammer_config *cfg, uint32_t *n);

/*
 * Raise the open-file limit so `clients` connections over `threads` loops
 * fit: the soft limit, and the hard one when the process may.  Returns 0,
 * or -1 with a one-line reason naming the number needed when it stays too
 * low.
 */
int hammer_raise_nofile(uint32_t clients, uint32_t threads, char *err, size_t errlen);

/*
 * Run the load described by cfg, filling res (initialised by the caller with
 * cfg->interval_ns).  Returns 0 when the run happened (whatever the answers),
 * or -1 with a one-line reason in err when it could not start (bad config,
 * too few file descriptors, transport or thread setup failure).  Calls
 * curl_global_init once per process; ignores SIGPIPE.  Not reentrant:
 * one run at a time per process.
 */
int hammer_run(const struct hammer_config *cfg, struct hammer_result *res, char *err, size_t errlen);

#endif
