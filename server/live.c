/* The live figures as /stats JSON, /metrics text and /events events. */
#include "server/live.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/text.h"
#include "server/proxy/upstream.h"

#define LIVE_MAX_BUCKETS STATS_BUCKETS

void live_totals_at(const struct live_parts *p, uint64_t now_ns, struct live_totals *t)
{
	memset(t, 0, sizeof(*t));
	t->at_ns = now_ns;
	t->requests = stats_total(p->stats);
	t->ok = stats_status_range(p->stats, 200, 299);
	t->faults = stats_faults(p->stats);
	for (size_t i = 0; i < p->nroutes; i++) {
		t->admitted += stats_decisions(p->stats, (int)i, STATS_ADMITTED);
		t->rejected += stats_decisions(p->stats, (int)i, STATS_REJECTED);
	}
}

static double ms_of(uint64_t ns)
{
	return (double)ns / (double)NS_PER_MS;
}

static json_t *row_json(const struct clients_row *r, uint64_t now_ns, bool one)
{
	json_t *o = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:f}", "name", r->name,
	                      "clients", (json_int_t)r->clients, "requests", (json_int_t)r->requests,
	                      "admitted", (json_int_t)r->admitted, "rejected", (json_int_t)r->rejected,
	                      "retries", (json_int_t)r->retries, "early_retries", (json_int_t)r->early,
	                      "early_avg_ms", r->early ? ms_of(r->early_ns / r->early) : 0.0,
	                      "early_max_ms", ms_of(r->early_max_ns),
	                      "last_seen_s", r->last_ns && now_ns > r->last_ns ? (double)(now_ns - r->last_ns) / 1e9 : 0.0);

	if (!o)
		return NULL;
	json_object_set_new(o, "paired_retries", json_integer((json_int_t)r->paired));
	json_object_set_new(o, "new_while_waiting", json_integer((json_int_t)r->waiting_new));
	/* A verdict is about one client: the summed row has none. */
	if (one) {
		char says[160];

		clients_explain(r, says, sizeof(says));
		json_object_set_new(o, "verdict", json_string(clients_verdict_name(clients_verdict_of(r))));
		json_object_set_new(o, "says", json_string(says));
	}
	return o;
}

static json_t *clients_json(const struct clients_snapshot *snap, uint64_t now_ns)
{
	json_t *rows = json_array();

	for (size_t i = 0; i < snap->n; i++)
		json_array_append_new(rows, row_json(&snap->rows[i], now_ns, true));
	return json_pack("{s:I, s:o, s:o}", "shown", (json_int_t)snap->n, "rows", rows, "rest",
	                 row_json(&snap->rest, now_ns, false));
}

/* A route's live quota: the last decision's, for a route every client shares (--key global). */
static json_t *quota_json(const struct live_parts *p, size_t i, const struct clients_snapshot *snap, uint64_t now_ns)
{
	const struct clients_quota *q = i < CLIENTS_MAX_ROUTES ? &snap->quota[i] : NULL;

	if (!q || !q->known || !p->routes[i].key || strcmp(p->routes[i].key, "global") != 0)
		return json_null();
	return json_pack("{s:I, s:I, s:f}", "remaining", (json_int_t)q->remaining, "limit", (json_int_t)q->limit,
	                 "age_s", now_ns > q->at_ns ? (double)(now_ns - q->at_ns) / 1e9 : 0.0);
}

/* Policy, key and quota onto each route object of arr (one per p->routes, in order). */
static void routes_decorate(json_t *arr, const struct live_parts *p, const struct clients_snapshot *snap,
                            uint64_t now_ns)
{
	for (size_t i = 0; i < p->nroutes && i < json_array_size(arr); i++) {
		json_t *o = json_array_get(arr, i);

		json_object_set_new(o, "policy", json_string(p->routes[i].policy ? p->routes[i].policy : ""));
		json_object_set_new(o, "key", json_string(p->routes[i].key ? p->routes[i].key : ""));
		json_object_set_new(o, "quota", quota_json(p, i, snap, now_ns));
	}
}

/* The proxy's counters (/stats "upstream"): new reference, or NULL. */
static json_t *upstream_json(struct upstream *u)
{
	struct upstream_counts n;
	json_t *res = json_object();

	upstream_counts(u, &n);
	for (int r = 0; res && r < UPSTREAM_RESULTS; r++)
		json_object_set_new(res, upstream_result_name((enum upstream_result)r), json_integer((json_int_t)n.results[r]));
	return json_pack("{s:I, s:I, s:I, s:o*}", "calls", (json_int_t)n.calls, "in_flight", (json_int_t)n.in_flight,
	                 "buffered_bytes", (json_int_t)n.buffered, "results", res);
}

char *live_stats_json(const struct live_parts *p, uint64_t now_ns)
{
	json_t *root = stats_json_value(p->stats, now_ns, p->routes, p->nroutes);
	struct clients_snapshot snap;
	struct live_totals t;
	char *text = NULL;

	if (!root || clients_snapshot(p->clients, p->top, &snap) < 0)
		goto free_root;
	live_totals_at(p, now_ns, &t);
	json_object_set_new(root, "admitted", json_integer((json_int_t)t.admitted));
	json_object_set_new(root, "rejected", json_integer((json_int_t)t.rejected));
	json_object_set_new(root, "subscribers", json_integer((json_int_t)p->subscribers));
	routes_decorate(json_object_get(root, "routes"), p, &snap, now_ns);
	json_object_set_new(root, "clients", clients_json(&snap, now_ns));
	if (p->upstream)
		json_object_set_new(root, "upstream", upstream_json(p->upstream));
	text = json_dumps(root, JSON_COMPACT);
	clients_snapshot_destroy(&snap);
free_root:
	json_decref(root);
	return text;
}

/* One per-client counter: a field of struct clients_row, a count or nanoseconds shown as seconds. */
struct client_metric {
	const char *name, *help;
	size_t field;
	bool seconds;
};

static void metric_rows(FILE *f, const struct clients_snapshot *snap, const struct client_metric *m)
{
	const char *name = m->name;
	char label[2 * CLIENTS_NAME_LEN + 1];

	fprintf(f, "# HELP ratelab_client_%s %s\n# TYPE ratelab_client_%s counter\n", name, m->help, name);
	for (size_t i = 0; i <= snap->n; i++) {
		const struct clients_row *r = i < snap->n ? &snap->rows[i] : &snap->rest;
		uint64_t v;

		if (i == snap->n && r->clients == 0)
			continue;
		memcpy(&v, (const char *)r + m->field, sizeof(v));
		text_label_value(r->name, label, sizeof(label));
		fprintf(f, "ratelab_client_%s{client=\"%s", name, label);
		if (m->seconds)
			fprintf(f, "\"} %.6f\n", (double)v / 1e9);
		else
			fprintf(f, "\"} %llu\n", (unsigned long long)v);
	}
}

static void metrics_clients(FILE *f, const struct clients_snapshot *snap)
{
	static const struct client_metric M[] = {
		{ "requests_total", "Limited requests per client (the most active; client=\"others\" sums the rest).",
		  offsetof(struct clients_row, requests), false },
		{ "admitted_total", "Admitted requests per client.", offsetof(struct clients_row, admitted), false },
		{ "rejected_total", "Rejected requests per client.", offsetof(struct clients_row, rejected), false },
		{ "retries_total", "Requests after a rejection, before the next admission.",
		  offsetof(struct clients_row, retries), false },
		{ "early_retries_total", "Retries that came before the wait Retry-After announced.",
		  offsetof(struct clients_row, early), false },
		{ "early_seconds_total", "How early the early retries came, summed.",
		  offsetof(struct clients_row, early_ns), true },
		{ "paired_retries_total", "Retries judged against their own request's rejection (Retry-Request).",
		  offsetof(struct clients_row, paired), false },
		{ "new_while_waiting_total", "First attempts (Retry-Attempt: 0) sent while the client was told to wait.",
		  offsetof(struct clients_row, waiting_new), false },
	};

	for (size_t i = 0; i < sizeof(M) / sizeof(M[0]); i++)
		metric_rows(f, snap, &M[i]);
}

/* The proxy's counters (--upstream) as Prometheus text. */
static void metrics_upstream(FILE *f, struct upstream *u)
{
	struct upstream_counts n;

	upstream_counts(u, &n);
	fprintf(f, "# HELP ratelab_upstream_calls_total Requests sent to the upstream (--upstream), by result.\n"
	           "# TYPE ratelab_upstream_calls_total counter\n");
	for (int r = 0; r < UPSTREAM_RESULTS; r++)
		fprintf(f, "ratelab_upstream_calls_total{result=\"%s\"} %" PRIu64 "\n",
		        upstream_result_name((enum upstream_result)r), n.results[r]);
	fprintf(f, "# HELP ratelab_upstream_in_flight Requests waiting for the upstream now.\n"
	           "# TYPE ratelab_upstream_in_flight gauge\nratelab_upstream_in_flight %u\n"
	           "# HELP ratelab_upstream_buffered_bytes Bytes of upstream answers held now.\n"
	           "# TYPE ratelab_upstream_buffered_bytes gauge\nratelab_upstream_buffered_bytes %" PRIu64 "\n",
	        n.in_flight, n.buffered);
}

char *live_metrics(const struct live_parts *p, uint64_t now_ns)
{
	char *base = stats_metrics(p->stats, now_ns, p->routes, p->nroutes), *text = NULL;
	struct clients_snapshot snap;
	size_t len = 0;
	FILE *f;

	if (!base || clients_snapshot(p->clients, p->top, &snap) < 0)
		goto free_base;
	f = open_memstream(&text, &len);
	if (f) {
		fputs(base, f);
		metrics_clients(f, &snap);
		if (p->upstream)
			metrics_upstream(f, p->upstream);
		if (fclose(f) != 0) {
			free(text);
			text = NULL;
		}
	}
	clients_snapshot_destroy(&snap);
free_base:
	free(base);
	return text;
}

static json_t *totals_json(const struct live_totals *t)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I}", "requests", (json_int_t)t->requests, "ok", (json_int_t)t->ok,
	                 "admitted", (json_int_t)t->admitted, "rejected", (json_int_t)t->rejected, "faults",
	                 (json_int_t)t->faults);
}

static double per_sec(uint64_t now, uint64_t then, double secs)
{
	return secs > 0 && now >= then ? (double)(now - then) / secs : 0.0;
}

static json_t *rates_json(const struct live_totals *a, const struct live_totals *b)
{
	double secs = a->at_ns > b->at_ns ? (double)(a->at_ns - b->at_ns) / 1e9 : 0.0;

	return json_pack("{s:f, s:f, s:f, s:f, s:f}", "requests", per_sec(a->requests, b->requests, secs), "ok",
	                 per_sec(a->ok, b->ok, secs), "admitted", per_sec(a->admitted, b->admitted, secs),
	                 "rejected", per_sec(a->rejected, b->rejected, secs), "faults",
	                 per_sec(a->faults, b->faults, secs));
}

static json_t *series_json(struct stats *s, uint64_t now_ns, size_t n)
{
	uint64_t adm[LIVE_MAX_BUCKETS], rej[LIVE_MAX_BUCKETS], first;
	json_t *a = json_array(), *r = json_array();

	n = n < LIVE_MAX_BUCKETS ? n : LIVE_MAX_BUCKETS;
	stats_buckets(s, now_ns, n, adm, rej, &first);
	for (size_t i = 0; i < n; i++) {
		json_array_append_new(a, json_integer((json_int_t)adm[i]));
		json_array_append_new(r, json_integer((json_int_t)rej[i]));
	}
	return json_pack("{s:I, s:I, s:o, s:o}", "bucket_ms", (json_int_t)(STATS_BUCKET_NS / NS_PER_MS), "first",
	                 (json_int_t)first, "admitted", a, "rejected", r);
}

static json_t *event_routes(const struct live_parts *p, const struct clients_snapshot *snap, uint64_t now_ns)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < p->nroutes; i++) {
		json_t *o = json_pack("{s:s, s:s}", "prefix", p->routes[i].prefix, "limiter", p->routes[i].limiter);

		if (o && p->routes[i].has_backend)
			json_object_set_new(o, "backend", stats_backend_json(&p->routes[i].backend));
		json_array_append_new(arr, o);
	}
	routes_decorate(arr, p, snap, now_ns);
	return arr;
}

char *live_event_json(const struct live_parts *p, const struct live_totals *now, const struct live_totals *then,
                      size_t buckets)
{
	struct clients_snapshot snap;
	json_t *root;
	uint64_t live = 0;
	char *text;

	if (clients_snapshot(p->clients, p->top, &snap) < 0)
		return NULL;
	for (size_t i = 0; i < p->nroutes; i++)
		live += p->routes[i].store.live_keys;
	root = json_pack("{s:s, s:f, s:i, s:I, s:I, s:o, s:o, s:o, s:o, s:o}", "type", "figures", "uptime_s",
	                 (double)stats_uptime_ns(p->stats, now->at_ns) / 1e9, "reject_status", p->reject_status,
	                 "live_keys", (json_int_t)live, "subscribers", (json_int_t)p->subscribers, "totals", totals_json(now), "rates", rates_json(now, then),
	                 "series", series_json(p->stats, now->at_ns, buckets), "routes",
	                 event_routes(p, &snap, now->at_ns), "clients", clients_json(&snap, now->at_ns));
	text = root ? json_dumps(root, JSON_COMPACT | JSON_REAL_PRECISION(6)) : NULL;
	json_decref(root);
	clients_snapshot_destroy(&snap);
	return text;
}
