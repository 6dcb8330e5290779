#ifndef RATELAB_RESULT_H
#define RATELAB_RESULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/histogram.h"
#include "common/retry/retry.h"
#include "common/timeline.h"

/*
 * What a hammer run found: counts, histograms and timelines, per loop and
 * merged.  The engine fills one per loop and merges them; a joined run
 * merges every node's.  Not thread-safe: one owner at a time.
 */

/* Transport-error kinds as reported: index = enum retry_error. */
#define HAMMER_ERR_KINDS (RETRY_ERR_OTHER + 1)
/* Servers one run can spread its requests over (`hammer URL1 URL2 ...`). */
#define HAMMER_MAX_URLS 16

/* One server's share of a run (request i of the run goes to server i % nurls). */
struct hammer_server {
	const char *url;                       /* borrowed from the config */
	uint64_t status[RETRY_STATUS_MAX];     /* final outcomes by status */
	uint64_t errors;                       /* final outcomes that were transport errors */
	uint64_t requests, ok, failed, calls, retries;
};

struct hammer_result {
	uint64_t status[RETRY_STATUS_MAX];           /* final outcome of each request, by status
	                                              * (with final_errors and unsent: every request) */
	uint64_t final_errors[HAMMER_ERR_KINDS];     /* final outcomes that were transport errors */
	uint64_t attempt_errors[HAMMER_ERR_KINDS];   /* every call's transport errors */
	uint64_t attempt_status[RETRY_STATUS_MAX];   /* every call's status */
	uint64_t gave_up[RETRY_REASON_COUNT];        /* non-2xx finals by the engine's reason */
	uint64_t requests;       /* requests finished (final outcome known) */
	uint64_t ok;             /* finished with 2xx */
	uint64_t failed;         /* finished otherwise */
	uint64_t calls;          /* calls sent */
	uint64_t retries;        /* calls sent by attempts after the first */
	uint64_t answered;       /* calls that got any HTTP answer */
	uint64_t unfinished;     /* requests cut off by the duration or a cancel */
	uint64_t dropped;        /* open-loop arrivals that found no room in the backlog */
	uint64_t budget_refused;  /* retries the budget allowed at decision time but refused at send time */
	uint64_t throttled;      /* attempts the adaptive throttle refused locally (each ended its request) */
	uint64_t unsent;         /* requests ended with no call at all: their first attempt was throttled */
	uint64_t wall_ns;        /* from the start instant to the end */
	uint64_t start_wall_ns;  /* the start instant on this machine's CLOCK_REALTIME (ns since 1970) */
	uint64_t start_late_ns;  /* how long after the start instant the first timer fired */
	uint64_t last_ok_ns;     /* the last 2xx request's end, from the start instant; 0: none */
	bool interrupted;        /* stopped by *cancel */
	const char *transport;   /* the transport's name: "wire" or "curl" */
	struct histogram *latency;   /* per request, from its intended start to its final outcome */
	struct histogram *lateness;  /* timer fire time minus due time */
	struct timeline *timeline;   /* calls (and retries) by the time they were sent, outcomes by the time they came */
	struct timeline *by_start;   /* with cfg->by_start_ns: each ended call, outcome and retry
	                              * included, in the row of its start; else NULL */
	struct hammer_server *servers;   /* HAMMER_MAX_URLS entries, allocated by init */
	uint32_t nservers;               /* entries in use: the config's URLs (1 for one URL) */
};

/* Zero r and allocate its histograms and timeline.  Returns 0, or -1 (out of memory). */
int hammer_result_init(struct hammer_result *r, uint64_t interval_ns);
/* Free what init allocated; r may be partly initialised. */
void hammer_result_destroy(struct hammer_result *r);
/* Add src's counts, histograms and timelines into dst.  Returns as hammer_result_merge_at. */
int hammer_result_merge(struct hammer_result *dst, const struct hammer_result *src);

/*
 * The same for a run that started `shift` timeline intervals after dst's:
 * src's rows land that much later.  Servers pair by URL.  Returns 0,
 * HAMMER_MERGE_TOO_MANY_URLS (more than HAMMER_MAX_URLS servers in all), or
 * -1 (the intervals differ, out of memory).
 */
#define HAMMER_MERGE_TOO_MANY_URLS (-2)
int hammer_result_merge_at(struct hammer_result *dst, const struct hammer_result *src, uint32_t shift);

/* "none", "refused", "reset", "timeout", "other". */
const char *hammer_error_name(enum retry_error e);

#endif
