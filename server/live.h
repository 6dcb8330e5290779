#ifndef RATELAB_LIVE_H
#define RATELAB_LIVE_H

#include <stddef.h>
#include <stdint.h>

#include "server/clients.h"
#include "server/stats.h"

/*
 * What the live lab shows, as text: /stats (the statistics plus the routes'
 * policies and live quotas and the per-client figures), /metrics, and one
 * /events event.  Each is built from the server's parts at one instant; the
 * time comes in.  Thread-safe (the parts are).
 *
 * An event is one JSON object:
 *
 *   {"type":"figures", "uptime_s":12.3, "reject_status":429, "live_keys":4, "subscribers":1,
 *    "totals":{"requests":N, "ok":N, "admitted":N, "rejected":N, "faults":N},
 *    "rates":{ the same names, per second over the last second },
 *    "series":{"bucket_ms":100, "first":B, "admitted":[...], "rejected":[...]},
 *    "routes":[{"prefix", "limiter", "policy", "key", "quota":{"remaining","limit","age_s"},
 *               "backend":{...} with --capacity (stats_backend_json: queue, goodput_per_s, ...)}],
 *    "clients":{"shown":K, "rows":[ROW...], "rest":ROW}}
 *
 * where ROW is {"name", "clients", "requests", "admitted", "rejected",
 * "retries", "early_retries", "early_avg_ms", "early_max_ms", "last_seen_s",
 * "verdict"}.  "series" holds timeline buckets numbered from "first" (one
 * bucket, one number; the last is still filling), and a reader keeps each
 * bucket's latest value.  A reader takes what it knows and ignores the
 * rest: "totals", "rates" and "series" are open to more figures.
 */

struct upstream;

struct live_parts {
	struct stats *stats;
	struct clients *clients;
	size_t top;                              /* clients shown by name; the rest are summed */
	const struct stats_route_info *routes;   /* a quota is shown for the routes keyed "global" */
	size_t nroutes;
	int reject_status;
	unsigned subscribers;                    /* /events streams being fed */
	struct upstream *upstream;               /* --upstream: its counters are /stats "upstream", else NULL */
};

/* The counters an event's "totals" and "rates" show, at one instant. */
struct live_totals {
	uint64_t at_ns;
	uint64_t requests, ok, admitted, rejected, faults;
};

/* The totals of p at now_ns. */
void live_totals_at(const struct live_parts *p, uint64_t now_ns, struct live_totals *t);

/* /stats: stats_json_value plus "admitted", "rejected", "subscribers", "clients", each route's
 * "policy", "key" and "quota", and with --upstream "upstream": {"calls", "in_flight", "buffered_bytes",
 * "results":{"ok", "connect", "timeout", "too_big", "bad_answer", "busy"}} (malloc'd text),
 * or NULL when out of memory. */
char *live_stats_json(const struct live_parts *p, uint64_t now_ns);

/* /metrics: stats_metrics plus the per-client counters and with --upstream the proxy's (malloc'd text), or NULL. */
char *live_metrics(const struct live_parts *p, uint64_t now_ns);

/*
 * One event (the JSON above, malloc'd text without newlines), or NULL: the
 * figures at now->at_ns, the rates since then->at_ns (0 when they are the
 * same instant), and the last `buckets` timeline buckets.
 */
char *live_event_json(const struct live_parts *p, const struct live_totals *now, const struct live_totals *then,
                      size_t buckets);

#endif
