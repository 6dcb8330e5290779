#include "server/stats.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/series.h"
#include "common/text.h"

#define STATS_SHARDS 16
#define STATS_NSTATUS 600

/* The timeline's columns; a bucket's number is its series row (now / 100 ms) + 1. */
enum { TL_ADMITTED, TL_REJECTED, TL_WIDTH };

struct stats_shard {
	_Alignas(64) _Atomic uint64_t status[STATS_NSTATUS];
	_Atomic uint64_t route[STATS_MAX_ROUTES][2];
	_Atomic uint64_t faults;
	_Atomic uint64_t refused[STATS_REFUSALS];
	struct series *timeline;  /* a ring of the last STATS_BUCKETS rows */
};

struct stats {
	size_t nroutes;
	uint64_t start_ns;
	_Atomic uint64_t reset_ns;
	struct stats_shard shards[STATS_SHARDS];
};

static _Atomic unsigned next_shard;
static _Thread_local int my_shard = -1;

static struct stats_shard *shard_of(struct stats *s)
{
	if (my_shard < 0)
		my_shard = (int)(atomic_fetch_add_explicit(&next_shard, 1, memory_order_relaxed) % STATS_SHARDS);
	return &s->shards[my_shard];
}

struct stats *stats_new(size_t nroutes, uint64_t now_ns)
{
	static const struct series_params ring = { .shape = SERIES_RING, .interval_ns = STATS_BUCKET_NS,
	                                           .max_rows = STATS_BUCKETS, .width = TL_WIDTH, .shared = true };
	struct stats *s;

	if (nroutes > STATS_MAX_ROUTES)
		return NULL;
	s = aligned_alloc(64, (sizeof(*s) + 63) / 64 * 64);
	if (!s)
		return NULL;
	memset(s, 0, sizeof(*s));
	for (size_t i = 0; i < STATS_SHARDS; i++)
		if ((s->shards[i].timeline = series_new(&ring)) == NULL) {
			stats_free(s);
			return NULL;
		}
	s->nroutes = nroutes;
	s->start_ns = now_ns;
	atomic_store(&s->reset_ns, now_ns);
	return s;
}

void stats_free(struct stats *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < STATS_SHARDS; i++)
		series_free(s->shards[i].timeline);
	free(s);
}

static void bump(_Atomic uint64_t *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

void stats_record(struct stats *s, int route, int status, enum stats_decision d, uint64_t now_ns)
{
	struct stats_shard *sh = shard_of(s);

	if (status < 0 || status >= STATS_NSTATUS)
		status = STATS_NSTATUS - 1;
	bump(&sh->status[status]);
	if (route < 0 || (size_t)route >= s->nroutes || d == STATS_NONE)
		return;
	bump(&sh->route[route][d == STATS_ADMITTED]);
	series_add(sh->timeline, series_row_of(sh->timeline, now_ns), d == STATS_ADMITTED ? TL_ADMITTED : TL_REJECTED, 1);
}

uint64_t stats_uptime_ns(const struct stats *s, uint64_t now_ns)
{
	return now_ns > s->start_ns ? now_ns - s->start_ns : 0;
}

void stats_record_fault(struct stats *s)
{
	bump(&shard_of(s)->faults);
}

uint64_t stats_faults(struct stats *s)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < STATS_SHARDS; i++)
		sum += atomic_load_explicit(&s->shards[i].faults, memory_order_relaxed);
	return sum;
}

void stats_reset(struct stats *s, uint64_t now_ns)
{
	for (size_t i = 0; i < STATS_SHARDS; i++) {
		struct stats_shard *sh = &s->shards[i];

		for (size_t k = 0; k < STATS_NSTATUS; k++)
			atomic_store_explicit(&sh->status[k], 0, memory_order_relaxed);
		for (size_t r = 0; r < STATS_MAX_ROUTES; r++) {
			atomic_store_explicit(&sh->route[r][0], 0, memory_order_relaxed);
			atomic_store_explicit(&sh->route[r][1], 0, memory_order_relaxed);
		}
		series_clear(sh->timeline, 0);
		atomic_store_explicit(&sh->faults, 0, memory_order_relaxed);
		for (size_t r = 0; r < STATS_REFUSALS; r++)
			atomic_store_explicit(&sh->refused[r], 0, memory_order_relaxed);
	}
	atomic_store(&s->reset_ns, now_ns);
}

uint64_t stats_status_count(struct stats *s, int status)
{
	uint64_t sum = 0;

	if (status < 0 || status >= STATS_NSTATUS)
		return 0;
	for (size_t i = 0; i < STATS_SHARDS; i++)
		sum += atomic_load_explicit(&s->shards[i].status[status], memory_order_relaxed);
	return sum;
}

uint64_t stats_total(struct stats *s)
{
	uint64_t sum = 0;

	for (int k = 0; k < STATS_NSTATUS; k++)
		sum += stats_status_count(s, k);
	return sum;
}

uint64_t stats_status_range(struct stats *s, int lo, int hi)
{
	uint64_t sum = 0;

	for (int k = lo; k <= hi; k++)
		sum += stats_status_count(s, k);
	return sum;
}

uint64_t stats_decisions(struct stats *s, int route, enum stats_decision d)
{
	uint64_t sum = 0;

	if (route < 0 || (size_t)route >= s->nroutes || d == STATS_NONE)
		return 0;
	for (size_t i = 0; i < STATS_SHARDS; i++)
		sum += atomic_load_explicit(&s->shards[i].route[route][d == STATS_ADMITTED], memory_order_relaxed);
	return sum;
}

static const char *const REFUSAL_NAMES[STATS_REFUSALS] = {
	"admin", "smuggling", "header_timeout", "per_ip", "connection_limit", "draining", "body_timeout",
};

void stats_refused(struct stats *s, enum stats_refusal r)
{
	if (r < STATS_REFUSALS)
		bump(&shard_of(s)->refused[r]);
}

uint64_t stats_refusals(struct stats *s, enum stats_refusal r)
{
	uint64_t sum = 0;

	for (size_t i = 0; r < STATS_REFUSALS && i < STATS_SHARDS; i++)
		sum += atomic_load_explicit(&s->shards[i].refused[r], memory_order_relaxed);
	return sum;
}

static json_t *refused_json(struct stats *s)
{
	json_t *o = json_object();

	for (int r = 0; r < STATS_REFUSALS; r++)
		json_object_set_new(o, REFUSAL_NAMES[r], json_integer((json_int_t)stats_refusals(s, (enum stats_refusal)r)));
	return o;
}

/* Sums of bucket `epoch` (series row epoch - 1) over the shards. */
static void timeline_at(struct stats *s, uint64_t epoch, uint64_t *adm, uint64_t *rej)
{
	*adm = *rej = 0;
	for (size_t i = 0; i < STATS_SHARDS; i++) {
		*adm += series_get(s->shards[i].timeline, epoch - 1, TL_ADMITTED);
		*rej += series_get(s->shards[i].timeline, epoch - 1, TL_REJECTED);
	}
}

void stats_buckets(struct stats *s, uint64_t now_ns, size_t n, uint64_t *adm, uint64_t *rej, uint64_t *first)
{
	uint64_t last = series_row_of(s->shards[0].timeline, now_ns) + 1;

	n = n < STATS_BUCKETS ? n : STATS_BUCKETS;
	for (uint64_t k = 0; k < n; k++)
		timeline_at(s, last + k + 1 - n, &adm[k], &rej[k]);
	*first = last + 1 - n;
}

static json_t *timeline_json(struct stats *s, uint64_t now_ns)
{
	json_t *t = json_object(), *adm = json_array(), *rej = json_array();
	uint64_t last = series_row_of(s->shards[0].timeline, now_ns) + 1;

	for (uint64_t k = 0; k < STATS_BUCKETS; k++) {
		uint64_t a, r, epoch = last + k + 1 - STATS_BUCKETS;

		timeline_at(s, epoch, &a, &r);
		json_array_append_new(adm, json_integer((json_int_t)a));
		json_array_append_new(rej, json_integer((json_int_t)r));
	}
	json_object_set_new(t, "bucket_ms", json_integer(STATS_BUCKET_NS / NS_PER_MS));
	json_object_set_new(t, "buckets", json_integer(STATS_BUCKETS));
	json_object_set_new(t, "first", json_integer((json_int_t)(last + 1 - STATS_BUCKETS)));
	json_object_set_new(t, "admitted", adm);
	json_object_set_new(t, "rejected", rej);
	return t;
}

static json_t *status_json(struct stats *s, uint64_t *total)
{
	json_t *o = json_object();
	char key[16];

	*total = 0;
	for (int k = 0; k < STATS_NSTATUS; k++) {
		uint64_t c = stats_status_count(s, k);

		if (c == 0)
			continue;
		*total += c;
		if (k == STATS_STATUS_RESET)
			snprintf(key, sizeof(key), "reset");
		else
			snprintf(key, sizeof(key), "%d", k);
		json_object_set_new(o, key, json_integer((json_int_t)c));
	}
	return o;
}

json_t *stats_backend_json(const struct capacity_stats *b)
{
	json_t *shed = json_object();

	for (int k = 0; shed != NULL && k < CAPACITY_SHED_REASONS; k++)
		json_object_set_new(shed, capacity_shed_name((enum capacity_shed_reason)k), json_integer((json_int_t)b->shed[k]));
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:o, s:I, s:I}",
	                 "workers", (json_int_t)b->workers, "busy", (json_int_t)b->busy,
	                 "queue", (json_int_t)b->queue, "queue_peak", (json_int_t)b->queue_peak,
	                 "arrived", (json_int_t)b->arrived, "served", (json_int_t)b->served,
	                 "served_gone", (json_int_t)b->served_gone, "work_s", (double)b->work_ns / 1e9,
	                 "work_gone_s", (double)b->work_gone_ns / 1e9, "rejection_work_s", (double)b->debt_work_ns / 1e9,
	                 "shed", shed, "goodput_per_s", (json_int_t)(b->served_1s - b->served_gone_1s),
	                 "wasted_per_s", (json_int_t)b->served_gone_1s);
}

static json_t *routes_json(struct stats *s, const struct stats_route_info *ri, size_t n, json_t *by_limiter)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < n; i++) {
		uint64_t a = stats_decisions(s, (int)i, STATS_ADMITTED), r = stats_decisions(s, (int)i, STATS_REJECTED);
		json_t *lim = json_object_get(by_limiter, ri[i].limiter);

		json_array_append_new(arr, json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I}", "prefix", ri[i].prefix,
		                                     "limiter", ri[i].limiter, "admitted", (json_int_t)a, "rejected",
		                                     (json_int_t)r, "live_keys", (json_int_t)ri[i].store.live_keys,
		                                     "evictions", (json_int_t)ri[i].store.evictions, "expirations",
		                                     (json_int_t)ri[i].store.expirations));
		if (ri[i].has_backend)
			json_object_set_new(json_array_get(arr, json_array_size(arr) - 1), "backend",
			                    stats_backend_json(&ri[i].backend));
		if (!lim) {
			lim = json_pack("{s:I, s:I}", "admitted", (json_int_t)0, "rejected", (json_int_t)0);
			json_object_set_new(by_limiter, ri[i].limiter, lim);
		}
		json_object_set_new(lim, "admitted", json_integer(json_integer_value(json_object_get(lim, "admitted")) + (json_int_t)a));
		json_object_set_new(lim, "rejected", json_integer(json_integer_value(json_object_get(lim, "rejected")) + (json_int_t)r));
	}
	return arr;
}

json_t *stats_json_value(struct stats *s, uint64_t now_ns, const struct stats_route_info *ri, size_t n)
{
	json_t *root = json_object(), *by_limiter = json_object();
	uint64_t total, live = 0, evicted = 0;

	for (size_t i = 0; i < n; i++) {
		live += ri[i].store.live_keys;
		evicted += ri[i].store.evictions;
	}
	json_object_set_new(root, "uptime_s", json_real((double)(now_ns - s->start_ns) / 1e9));
	json_object_set_new(root, "since_reset_s", json_real((double)(now_ns - atomic_load(&s->reset_ns)) / 1e9));
	json_object_set_new(root, "status", status_json(s, &total));
	json_object_set_new(root, "requests", json_integer((json_int_t)total));
	json_object_set_new(root, "refused", refused_json(s));
	json_object_set_new(root, "routes", routes_json(s, ri, n, by_limiter));
	json_object_set_new(root, "decisions", by_limiter);
	json_object_set_new(root, "live_keys", json_integer((json_int_t)live));
	json_object_set_new(root, "evictions", json_integer((json_int_t)evicted));
	json_object_set_new(root, "faults", json_integer((json_int_t)stats_faults(s)));
	json_object_set_new(root, "timeline", timeline_json(s, now_ns));
	return root;
}

char *stats_json(struct stats *s, uint64_t now_ns, const struct stats_route_info *ri, size_t n)
{
	json_t *root = stats_json_value(s, now_ns, ri, n);
	char *text = root ? json_dumps(root, JSON_COMPACT) : NULL;

	json_decref(root);
	return text;
}

struct strbuf {
	char *p;
	size_t n, cap;
	int failed;
};

static void sb_printf(struct strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(struct strbuf *b, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (b->failed)
		return;
	if (b->cap - b->n < 512) {
		char *np = realloc(b->p, b->cap * 2 + 1024);

		if (!np) {
			b->failed = 1;
			return;
		}
		b->p = np;
		b->cap = b->cap * 2 + 1024;
	}
	va_start(ap, fmt);
	w = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
	va_end(ap);
	if (w < 0 || (size_t)w >= b->cap - b->n)
		b->failed = 1;
	else
		b->n += (size_t)w;
}

static void metrics_status(struct strbuf *b, struct stats *s)
{
	sb_printf(b, "# HELP ratelab_requests_total Requests answered, by status (reset: closed without an answer).\n"
	             "# TYPE ratelab_requests_total counter\n");
	for (int k = 0; k < STATS_NSTATUS; k++) {
		uint64_t c = stats_status_count(s, k);

		if (c == 0)
			continue;
		if (k == STATS_STATUS_RESET)
			sb_printf(b, "ratelab_requests_total{status=\"reset\"} %" PRIu64 "\n", c);
		else
			sb_printf(b, "ratelab_requests_total{status=\"%d\"} %" PRIu64 "\n", k, c);
	}
}

static void metrics_refused(struct strbuf *b, struct stats *s)
{
	sb_printf(b, "# HELP ratelab_refused_total Connections and requests refused before a limiter saw them, by reason.\n"
	             "# TYPE ratelab_refused_total counter\n");
	for (int r = 0; r < STATS_REFUSALS; r++)
		sb_printf(b, "ratelab_refused_total{reason=\"%s\"} %" PRIu64 "\n", REFUSAL_NAMES[r],
		          stats_refusals(s, (enum stats_refusal)r));
}

static void metrics_routes(struct strbuf *b, struct stats *s, const struct stats_route_info *ri, size_t n)
{
	sb_printf(b, "# HELP ratelab_decisions_total Limiter decisions, by route.\n"
	             "# TYPE ratelab_decisions_total counter\n");
	for (size_t i = 0; i < n; i++)
		for (int d = STATS_ADMITTED; d >= STATS_REJECTED; d--)
			sb_printf(b, "ratelab_decisions_total{route=\"%s\",limiter=\"%s\",decision=\"%s\"} %" PRIu64 "\n",
			          ri[i].prefix, ri[i].limiter, d ? "admitted" : "rejected",
			          stats_decisions(s, (int)i, (enum stats_decision)d));
	sb_printf(b, "# HELP ratelab_live_keys Keys held in the limiter state table.\n# TYPE ratelab_live_keys gauge\n");
	for (size_t i = 0; i < n; i++)
		sb_printf(b, "ratelab_live_keys{route=\"%s\"} %" PRIu64 "\n", ri[i].prefix, ri[i].store.live_keys);
	sb_printf(b, "# HELP ratelab_evictions_total Keys evicted by the key cap.\n# TYPE ratelab_evictions_total counter\n");
	for (size_t i = 0; i < n; i++)
		sb_printf(b, "ratelab_evictions_total{route=\"%s\"} %" PRIu64 "\n", ri[i].prefix, ri[i].store.evictions);
	sb_printf(b, "# HELP ratelab_expirations_total Keys expired when idle.\n# TYPE ratelab_expirations_total counter\n");
	for (size_t i = 0; i < n; i++)
		sb_printf(b, "ratelab_expirations_total{route=\"%s\"} %" PRIu64 "\n", ri[i].prefix, ri[i].store.expirations);
	sb_printf(b, "# HELP ratelab_store_errors_total Limiter store (Redis) failures.\n# TYPE ratelab_store_errors_total counter\n");
	for (size_t i = 0; i < n; i++)
		sb_printf(b, "ratelab_store_errors_total{route=\"%s\"} %" PRIu64 "\n", ri[i].prefix, ri[i].store.errors);
	sb_printf(b, "# HELP ratelab_store_corrupt_total Limiter store (Redis) keys found corrupt and reset.\n"
	          "# TYPE ratelab_store_corrupt_total counter\n");
	for (size_t i = 0; i < n; i++)
		sb_printf(b, "ratelab_store_corrupt_total{route=\"%s\"} %" PRIu64 "\n", ri[i].prefix, ri[i].store.corrupt);
}

/* One gauge per route with a backend: help, type, then name{route} value (a uint32_t field of the stats). */
static void metrics_backend_gauge(struct strbuf *b, const struct stats_route_info *ri, size_t n, const char *name,
                                  const char *help, size_t field)
{
	sb_printf(b, "# HELP ratelab_backend_%s %s\n# TYPE ratelab_backend_%s gauge\n", name, help, name);
	for (size_t i = 0; i < n; i++)
		if (ri[i].has_backend)
			sb_printf(b, "ratelab_backend_%s{route=\"%s\"} %" PRIu32 "\n", name, ri[i].prefix,
			          *(const uint32_t *)((const char *)&ri[i].backend + field));
}

/* The modelled backends' figures; nothing when no route has one. */
static void metrics_backends(struct strbuf *b, const struct stats_route_info *ri, size_t n)
{
	bool any = false;

	for (size_t i = 0; i < n; i++)
		any = any || ri[i].has_backend;
	if (!any)
		return;
	metrics_backend_gauge(b, ri, n, "queue", "Requests waiting for a virtual worker.",
	                      offsetof(struct capacity_stats, queue));
	metrics_backend_gauge(b, ri, n, "busy_workers", "Virtual workers serving a request.",
	                      offsetof(struct capacity_stats, busy));
	metrics_backend_gauge(b, ri, n, "workers", "Virtual workers the triggers leave now.",
	                      offsetof(struct capacity_stats, workers));
	sb_printf(b, "# HELP ratelab_backend_served_total Services ended, by whether the client was still there.\n"
	             "# TYPE ratelab_backend_served_total counter\n");
	for (size_t i = 0; i < n; i++)
		if (ri[i].has_backend)
			sb_printf(b, "ratelab_backend_served_total{route=\"%s\",client=\"present\"} %" PRIu64 "\n"
			             "ratelab_backend_served_total{route=\"%s\",client=\"gone\"} %" PRIu64 "\n",
			          ri[i].prefix, ri[i].backend.served - ri[i].backend.served_gone, ri[i].prefix,
			          ri[i].backend.served_gone);
	sb_printf(b, "# HELP ratelab_backend_work_seconds_total Service time done, by whether the client was still "
	             "there.\n# TYPE ratelab_backend_work_seconds_total counter\n");
	for (size_t i = 0; i < n; i++)
		if (ri[i].has_backend)
			sb_printf(b, "ratelab_backend_work_seconds_total{route=\"%s\",client=\"present\"} %.6f\n"
			             "ratelab_backend_work_seconds_total{route=\"%s\",client=\"gone\"} %.6f\n",
			          ri[i].prefix, (double)(ri[i].backend.work_ns - ri[i].backend.work_gone_ns) / 1e9,
			          ri[i].prefix, (double)ri[i].backend.work_gone_ns / 1e9);
	sb_printf(b, "# HELP ratelab_backend_shed_total Requests answered 503 unserved, by reason.\n"
	             "# TYPE ratelab_backend_shed_total counter\n");
	for (size_t i = 0; i < n; i++)
		for (int k = 0; ri[i].has_backend && k < CAPACITY_SHED_REASONS; k++)
			sb_printf(b, "ratelab_backend_shed_total{route=\"%s\",reason=\"%s\"} %" PRIu64 "\n", ri[i].prefix,
			          capacity_shed_name((enum capacity_shed_reason)k), ri[i].backend.shed[k]);
}

char *stats_metrics(struct stats *s, uint64_t now_ns, const struct stats_route_info *ri, size_t n)
{
	struct strbuf b = { NULL, 0, 0, 0 };
	/* the routes with their prefixes as label values (a prefix may hold '"' or '\\') */
	struct stats_route_info *lr = calloc(n ? n : 1, sizeof(*lr));
	size_t room = 0, at = 0;
	char *labels;

	for (size_t i = 0; i < n; i++)
		room += 2 * strlen(ri[i].prefix) + 1;
	labels = malloc(room ? room : 1);
	if (lr == NULL || labels == NULL) {
		free(lr);
		free(labels);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		lr[i] = ri[i];
		lr[i].prefix = labels + at;
		text_label_value(ri[i].prefix, labels + at, 2 * strlen(ri[i].prefix) + 1);
		at += 2 * strlen(ri[i].prefix) + 1;
	}
	sb_printf(&b, "# HELP ratelab_uptime_seconds Seconds since the server started.\n"
	              "# TYPE ratelab_uptime_seconds gauge\nratelab_uptime_seconds %.3f\n",
	          (double)(now_ns - s->start_ns) / 1e9);
	metrics_status(&b, s);
	metrics_refused(&b, s);
	metrics_routes(&b, s, lr, n);
	metrics_backends(&b, lr, n);
	free(lr);
	free(labels);
	if (b.failed) {
		free(b.p);
		return NULL;
	}
	return b.p;
}
