#ifndef RATELAB_STATS_H
#define RATELAB_STATS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/capacity.h"
#include "server/store/store.h"

/*
 * Server statistics: counts per status, decisions per route, and a timeline
 * of the last 60 s in 100 ms buckets.  Counters are sharded per thread
 * (relaxed atomics on a thread's own cache lines), so recording never
 * contends; readers sum the shards.  Time comes in as an argument.
 */

#define STATS_MAX_ROUTES 16
#define STATS_BUCKET_NS 100000000ULL
#define STATS_BUCKETS 600
#define STATS_STATUS_RESET 0  /* "status" of a connection closed without an answer */

enum stats_decision { STATS_NONE = -1, STATS_REJECTED = 0, STATS_ADMITTED = 1 };

/* What the server refused or closed before any limiter saw it, by reason (/stats "refused"). */
enum stats_refusal {
	STATS_REFUSED_ADMIN,            /* an admin endpoint refused the client: 403 */
	STATS_REFUSED_SMUGGLING,        /* Transfer-Encoding with Content-Length, or conflicting lengths: 400 */
	STATS_REFUSED_HEADER_TIMEOUT,   /* a request head not in within --header-timeout: closed */
	STATS_REFUSED_PER_IP,           /* a connection past --max-connections-per-ip: closed at accept */
	STATS_REFUSED_CONNECTION_LIMIT, /* a connection past --max-connections: closed at accept */
	STATS_REFUSED_DRAINING,         /* a body still arriving when the drain began: 503, closed */
	STATS_REFUSED_BODY_TIMEOUT,     /* a request body not in within --body-timeout of its head: 408, closed */
	STATS_REFUSALS
};

struct stats;

/* What /stats and /metrics say about one route besides the counters. */
struct stats_route_info {
	const char *prefix;
	const char *limiter;
	struct store_stats store;
	const char *policy;      /* its RateLimit-Policy value, or NULL */
	const char *key;         /* what it keys on: "global", "ip" or "header:NAME", or NULL */
	bool has_backend;                /* --capacity: the modelled backend's figures follow */
	struct capacity_stats backend;
};

/*
 * A route's modelled backend (--capacity) as a JSON object (new reference, or
 * NULL when out of memory): workers, busy, queue, queue_peak, arrived,
 * served, served_gone, work_s, work_gone_s, rejection_work_s, shed (by
 * reason), goodput_per_s and wasted_per_s (services for present and for gone
 * clients over the last second).  /stats and /events carry it.
 */
json_t *stats_backend_json(const struct capacity_stats *b);

/* A stats table for nroutes routes (<= STATS_MAX_ROUTES), started at now_ns.  NULL on failure. */
struct stats *stats_new(size_t nroutes, uint64_t now_ns);
void stats_free(struct stats *s);

/* Count one answered request.  status 0 means reset; route -1 means not limited.  Thread-safe, lock-free. */
void stats_record(struct stats *s, int route, int status, enum stats_decision d, uint64_t now_ns);

/* Time since the stats started (they start with the server). */
uint64_t stats_uptime_ns(const struct stats *s, uint64_t now_ns);

/* Count one answer an injected fault changed (a fault status, a reset).  Thread-safe, lock-free. */
void stats_record_fault(struct stats *s);

/* Answers changed by injected faults so far. */
uint64_t stats_faults(struct stats *s);

/* Answers with a status from lo to hi (inclusive), e.g. 200..299. */
uint64_t stats_status_range(struct stats *s, int lo, int hi);

/*
 * The last n (<= STATS_BUCKETS) timeline buckets up to the one now_ns falls
 * in (still filling), oldest first, into adm[] and rej[]; *first gets the
 * oldest one's number (monotonic time / STATS_BUCKET_NS + 1: consecutive
 * buckets have consecutive numbers).
 */
void stats_buckets(struct stats *s, uint64_t now_ns, size_t n, uint64_t *adm, uint64_t *rej, uint64_t *first);

/* Count one refusal r.  Thread-safe, lock-free. */
void stats_refused(struct stats *s, enum stats_refusal r);

/* Refusals r so far (summed over shards). */
uint64_t stats_refusals(struct stats *s, enum stats_refusal r);

/* Zero every counter and the timeline; uptime keeps counting.  Thread-safe (racing records may survive). */
void stats_reset(struct stats *s, uint64_t now_ns);

/* Requests answered with `status` so far (summed over shards). */
uint64_t stats_status_count(struct stats *s, int status);

/* Total requests counted (every status and resets). */
uint64_t stats_total(struct stats *s);

/* Admitted (d = STATS_ADMITTED) or rejected decisions of one route. */
uint64_t stats_decisions(struct stats *s, int route, enum stats_decision d);

/* /stats as a JSON object (the caller decrefs it), or NULL on allocation failure. */
json_t *stats_json_value(struct stats *s, uint64_t now_ns, const struct stats_route_info *routes, size_t n);

/* /stats as JSON text (malloc'd, caller frees), or NULL on allocation failure. */
char *stats_json(struct stats *s, uint64_t now_ns, const struct stats_route_info *routes, size_t n);

/* /metrics in the Prometheus text format (malloc'd, caller frees), or NULL. */
char *stats_metrics(struct stats *s, uint64_t now_ns, const struct stats_route_info *routes, size_t n);

#endif
