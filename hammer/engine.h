#ifndef RATELAB_ENGINE_H
#define RATELAB_ENGINE_H

#include <curl/curl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/histogram.h"
#include "common/retry/retry.h"
#include "common/timeline.h"

/*
 * The hammer's run API.  hammer_run() fires the load a config describes over
 * `threads` worker threads, each one event loop (curl multi handle driven by
 * curl_multi_socket_action + epoll, and a timer heap of virtual clients
 * waiting to start or retry), and fills a result.  It is reusable in-process:
 * `ratelab herd` may call it once per policy with a fresh result each time.
 */

/* Transport-error kinds as reported: index = enum retry_error. */
#define HAMMER_ERR_KINDS (RETRY_ERR_OTHER + 1)
/* Servers one run can spread its requests over (`hammer URL1 URL2 ...`). */
#define HAMMER_MAX_URLS 16

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
	uint64_t requests;             /* requests to make; 0 = no limit (duration_ns then required) */
	uint32_t concurrency;          /* virtual clients */
	uint64_t duration_ns;          /* stop after this; 0 = none */
	double rate;                   /* open loop: new requests per second; 0 = closed loop */
	bool poisson;                  /* open-loop arrivals: exponential gaps instead of constant */
	uint32_t threads;              /* worker threads (capped at concurrency) */
	uint64_t timeout_ns;           /* per attempt */
	uint64_t connect_timeout_ns;   /* 0 = curl's default */
	bool herd;                     /* every client fires at one instant, once all are ready */
	uint64_t seed;
	enum hammer_transport transport;
	const struct retry_policy *policy;
	uint64_t interval_ns;          /* timeline interval */
	FILE *notes;                   /* one line per retry (--verbose), or NULL */
	FILE *progress;                /* a progress line while running (a terminal), or NULL */
	atomic_int *cancel;            /* set non-zero (e.g. from SIGINT) to stop; may be NULL */
};

/* One server's share of a run (request i of the run goes to server i % nurls). */
struct hammer_server {
	const char *url;                       /* borrowed from the config */
	uint64_t status[RETRY_STATUS_MAX];     /* final outcomes by status */
	uint64_t errors;                       /* final outcomes that were transport errors */
	uint64_t requests, ok, failed, calls, retries;
};

struct hammer_result {
	uint64_t status[RETRY_STATUS_MAX];           /* final outcome of each request, by status */
	uint64_t final_errors[HAMMER_ERR_KINDS];     /* final outcomes that were transport errors */
	uint64_t attempt_errors[HAMMER_ERR_KINDS];   /* every attempt's transport errors */
	uint64_t attempt_status[RETRY_STATUS_MAX];   /* every attempt's status */
	uint64_t gave_up[RETRY_REASON_COUNT];        /* non-2xx finals by the engine's reason */
	uint64_t requests;       /* requests finished (final outcome known) */
	uint64_t ok;             /* finished with 2xx */
	uint64_t failed;         /* finished otherwise */
	uint64_t calls;          /* attempts sent */
	uint64_t retries;        /* attempts that were retries */
	uint64_t answered;       /* attempts that got any HTTP answer */
	uint64_t unfinished;     /* requests cut off by the duration or a cancel */
	uint64_t dropped;        /* open-loop arrivals that found no room in the backlog */
	uint64_t budget_refused;  /* retries the budget allowed at decision time but refused at send time */
	uint64_t wall_ns;        /* from the start instant to the end */
	bool interrupted;        /* stopped by *cancel */
	bool wire;               /* sent over the own HTTP/1.1 path (else libcurl) */
	struct histogram *latency;   /* per request, from its intended start to its final outcome */
	struct histogram *lateness;  /* timer fire time minus due time */
	struct timeline *timeline;
	struct hammer_server *servers;   /* HAMMER_MAX_URLS entries, allocated by init */
	uint32_t nservers;               /* entries in use: the config's URLs (1 for one URL) */
};

/* Zero r and allocate its histograms and timeline.  Returns 0, or -1 (out of memory). */
int hammer_result_init(struct hammer_result *r, uint64_t interval_ns);
/* Free what init allocated; r may be partly initialised. */
void hammer_result_destroy(struct hammer_result *r);
/* Add src's counts, histograms and timeline into dst.  Returns 0 or -1. */
int hammer_result_merge(struct hammer_result *dst, const struct hammer_result *src);

/* "none", "refused", "reset", "timeout", "other". */
const char *hammer_error_name(enum retry_error e);

/* What a libcurl result means to the retry engine (CURLE_OK: none).  Shared by hammer and herd. */
enum retry_error hammer_curl_error(CURLcode rc);

/*
 * Raise the soft open-file limit so `clients` connections over `threads`
 * loops fit.  Returns 0, or -1 with a one-line reason in err when the hard
 * limit is too low.
 */
int hammer_raise_nofile(uint32_t clients, uint32_t threads, char *err, size_t errlen);

/*
 * Run the load described by cfg, filling res (initialised by the caller with
 * cfg->interval_ns).  Returns 0 when the run happened (whatever the answers),
 * or -1 with a one-line reason in err when it could not start (bad config,
 * too few file descriptors, curl or thread setup failure).  Calls
 * curl_global_init once per process; ignores SIGPIPE.  Not reentrant:
 * one run at a time per process.
 */
int hammer_run(const struct hammer_config *cfg, struct hammer_result *res, char *err, size_t errlen);

#endif
