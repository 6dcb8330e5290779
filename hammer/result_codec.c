/* A hammer result as mergeable JSON (result_codec.h). */
#include "hammer/result_codec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "hammer/transport.h"

#define CODEC_VERSION 1

/* ---- writing ---- */

static json_t *counts_by_status(const uint64_t *counts)
{
	json_t *o = json_object();
	char key[16];

	for (int s = 0; o != NULL && s < RETRY_STATUS_MAX; s++)
		if (counts[s] != 0) {
			snprintf(key, sizeof(key), "%d", s);
			json_object_set_new(o, key, json_integer((json_int_t)counts[s]));
		}
	return o;
}

static json_t *counts_by_error(const uint64_t *counts)
{
	json_t *o = json_object();

	for (int e = RETRY_ERR_REFUSED; o != NULL && e < HAMMER_ERR_KINDS; e++)
		if (counts[e] != 0)
			json_object_set_new(o, hammer_error_name((enum retry_error)e), json_integer((json_int_t)counts[e]));
	return o;
}

static json_t *counts_by_reason(const uint64_t *counts)
{
	json_t *o = json_object();

	for (int i = RETRY_REASON_ATTEMPTS; o != NULL && i < RETRY_REASON_COUNT; i++)
		if (counts[i] != 0)
			json_object_set_new(o, retry_reason_name((enum retry_reason)i), json_integer((json_int_t)counts[i]));
	return o;
}

/* {"count", "min", "max", "sum", "buckets": [[index, count], ...]}: only the buckets in use. */
static json_t *histogram_json(const struct histogram *h)
{
	json_t *b = json_array();

	for (unsigned i = 0; b != NULL && i < HISTOGRAM_BUCKETS; i++)
		if (histogram_bucket_count(h, i) != 0)
			json_array_append_new(b, json_pack("[I,I]", (json_int_t)i, (json_int_t)histogram_bucket_count(h, i)));
	return json_pack("{s:I,s:I,s:I,s:f,s:o}", "count", (json_int_t)histogram_count(h),
	                 "min", (json_int_t)histogram_min(h), "max", (json_int_t)histogram_max(h),
	                 "sum", (double)histogram_sum(h), "buckets", b);
}

/* {"interval_ns", "codes": [...], "rows": [[attempts, retries, errors, other, count per code...], ...]}. */
static json_t *timeline_json(const struct timeline *t)
{
	json_t *codes = json_array(), *rows = json_array();
	unsigned nc = timeline_ncodes(t);

	for (unsigned c = 0; codes != NULL && c < nc; c++)
		json_array_append_new(codes, json_integer(timeline_code(t, c)));
	for (uint32_t r = 0; rows != NULL && r < timeline_rows(t); r++) {
		json_t *row = json_pack("[I,I,I,I]", (json_int_t)timeline_attempts(t, r),
		                        (json_int_t)timeline_retries(t, r), (json_int_t)timeline_errors(t, r),
		                        (json_int_t)timeline_other(t, r));

		for (unsigned c = 0; row != NULL && c < nc; c++)
			json_array_append_new(row, json_integer((json_int_t)timeline_count(t, r, c)));
		json_array_append_new(rows, row);
	}
	return json_pack("{s:I,s:o,s:o}", "interval_ns", (json_int_t)timeline_interval_ns(t), "codes", codes,
	                 "rows", rows);
}

static json_t *servers_json(const struct hammer_result *r)
{
	json_t *a = json_array();

	for (uint32_t i = 0; a != NULL && i < r->nservers; i++) {
		const struct hammer_server *sv = &r->servers[i];

		json_array_append_new(a, json_pack("{s:s,s:o,s:I,s:I,s:I,s:I,s:I,s:I}", "url", sv->url ? sv->url : "?",
		                      "statuses", counts_by_status(sv->status), "errors", (json_int_t)sv->errors,
		                      "requests", (json_int_t)sv->requests, "ok", (json_int_t)sv->ok,
		                      "failed", (json_int_t)sv->failed, "calls", (json_int_t)sv->calls,
		                      "retries", (json_int_t)sv->retries));
	}
	return a;
}

json_t *result_codec_json(const struct hammer_result *r)
{
	json_t *j = json_pack("{s:i,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:b,s:s}",
	                      "version", CODEC_VERSION, "start_unix_ns", (json_int_t)r->start_wall_ns,
	                      "start_late_ns", (json_int_t)r->start_late_ns,
	                      "requests", (json_int_t)r->requests, "ok", (json_int_t)r->ok,
	                      "failed", (json_int_t)r->failed, "calls", (json_int_t)r->calls,
	                      "retries", (json_int_t)r->retries, "answered", (json_int_t)r->answered,
	                      "unfinished", (json_int_t)r->unfinished, "dropped", (json_int_t)r->dropped,
	                      "budget_refused", (json_int_t)r->budget_refused, "throttled", (json_int_t)r->throttled,
	                      "unsent", (json_int_t)r->unsent, "wall_ns", (json_int_t)r->wall_ns,
	                      "last_ok_ns", (json_int_t)r->last_ok_ns, "interrupted", r->interrupted,
	                      "transport", r->transport ? r->transport : "none");

	if (j == NULL)
		return NULL;
	json_object_set_new(j, "statuses", counts_by_status(r->status));
	json_object_set_new(j, "attempt_statuses", counts_by_status(r->attempt_status));
	json_object_set_new(j, "errors", counts_by_error(r->final_errors));
	json_object_set_new(j, "attempt_errors", counts_by_error(r->attempt_errors));
	json_object_set_new(j, "gave_up", counts_by_reason(r->gave_up));
	json_object_set_new(j, "latency", histogram_json(r->latency));
	json_object_set_new(j, "lateness", histogram_json(r->lateness));
	json_object_set_new(j, "timeline", timeline_json(r->timeline));
	json_object_set_new(j, "by_start", r->by_start ? timeline_json(r->by_start) : json_null());
	json_object_set_new(j, "servers", servers_json(r));
	/* every member is there, or memory ran out on the way */
	if (json_object_size(j) != 28) {
		json_decref(j);
		return NULL;
	}
	return j;
}

/* ---- reading ---- */

struct reader {
	char *err;
	size_t errlen;
	int bad;          /* a field was missing or malformed; err names the first */
};

static void bad(struct reader *rd, const char *what)
{
	if (!rd->bad)
		snprintf(rd->err, rd->errlen, "raw result: %s", what);
	rd->bad = 1;
}

/* An integer from 0 to max, or 0 (and the reader marked bad, naming what). */
static uint64_t bounded(struct reader *rd, const json_t *v, uint64_t max, const char *what)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) > max) {
		bad(rd, what);
		return 0;
	}
	return (uint64_t)json_integer_value(v);
}

/* A count member (0 to RESULT_CODEC_MAX_COUNT), or 0 (and the reader marked bad). */
static uint64_t get_u64(struct reader *rd, const json_t *o, const char *key)
{
	return bounded(rd, json_object_get(o, key), RESULT_CODEC_MAX_COUNT, key);
}

/* A duration or offset member in ns (0 to RESULT_CODEC_MAX_NS). */
static uint64_t get_ns(struct reader *rd, const json_t *o, const char *key)
{
	return bounded(rd, json_object_get(o, key), RESULT_CODEC_MAX_NS, key);
}

static uint64_t count_of(struct reader *rd, const json_t *v, const char *what)
{
	return bounded(rd, v, RESULT_CODEC_MAX_COUNT, what);
}

static void read_statuses(struct reader *rd, const json_t *o, uint64_t *counts, const char *what)
{
	const char *key;
	json_t *v;

	if (!json_is_object(o)) {
		bad(rd, what);
		return;
	}
	json_object_foreach((json_t *)o, key, v) {
		char *end;
		long s = strtol(key, &end, 10);

		if (*end != '\0' || s < 0 || s >= RETRY_STATUS_MAX) {
			bad(rd, what);
			return;
		}
		counts[s] += count_of(rd, v, what);
	}
}

/* Counts keyed by name; names(i) for i in [lo, hi) are the known keys. */
static void read_named(struct reader *rd, const json_t *o, uint64_t *counts, int lo, int hi,
                       const char *(*name)(int), const char *what)
{
	const char *key;
	json_t *v;

	if (!json_is_object(o)) {
		bad(rd, what);
		return;
	}
	json_object_foreach((json_t *)o, key, v) {
		int i = lo;

		while (i < hi && strcmp(name(i), key) != 0)
			i++;
		if (i == hi) {
			bad(rd, what);
			return;
		}
		counts[i] += count_of(rd, v, what);
	}
}

static const char *error_name(int i) { return hammer_error_name((enum retry_error)i); }
static const char *reason_name(int i) { return retry_reason_name((enum retry_reason)i); }

static void read_histogram(struct reader *rd, const json_t *o, struct histogram *h, const char *what)
{
	const json_t *b = json_object_get(o, "buckets"), *pair, *sum = json_object_get(o, "sum");
	uint64_t count = get_u64(rd, o, "count"), seen = 0;
	size_t i;

	if (!json_is_array(b) || !json_is_number(sum)) {
		bad(rd, what);
		return;
	}
	json_array_foreach(b, i, pair) {
		uint64_t idx = count_of(rd, json_array_get(pair, 0), what), n = count_of(rd, json_array_get(pair, 1), what);

		if (json_array_size(pair) != 2 || idx >= HISTOGRAM_BUCKETS || histogram_add_bucket(h, (unsigned)idx, n) != 0) {
			bad(rd, what);
			return;
		}
		seen += n;
	}
	/* each bucket is at most RESULT_CODEC_MAX_COUNT: seen cannot wrap */
	if (seen != count || !isfinite(json_number_value(sum)) || json_number_value(sum) < 0) {
		bad(rd, what);
		return;
	}
	if (count > 0) {
		uint64_t min = get_ns(rd, o, "min"), max = get_ns(rd, o, "max");

		if (min > max)
			bad(rd, what);
		histogram_add_extremes(h, min, max, (long double)json_number_value(sum));
	}
}

/* One row of a written timeline: [attempts, retries, errors, other, count per code...], checked, and added to t as row r unless t is NULL. */
static void read_row(struct reader *rd, const json_t *row, const json_t *codes, struct timeline *t, uint32_t r)
{
	uint64_t v[4];
	size_t nc = json_array_size(codes);

	if (!json_is_array(row) || json_array_size(row) != 4 + nc) {
		bad(rd, "timeline row");
		return;
	}
	for (int k = 0; k < 4; k++)
		v[k] = count_of(rd, json_array_get(row, (size_t)k), "timeline row");
	if (t != NULL && timeline_add_row(t, r, v[0], v[1], v[2], v[3]) != 0) {
		bad(rd, "timeline (out of memory)");
		return;
	}
	for (size_t c = 0; c < nc; c++) {
		const json_t *code = json_array_get(codes, c);
		uint64_t n = count_of(rd, json_array_get(row, 4 + c), "timeline row");

		if (!json_is_integer(code) || json_integer_value(code) <= 0 || json_integer_value(code) >= RETRY_STATUS_MAX ||
		    (t != NULL && timeline_add_code(t, r, (int)json_integer_value(code), n) != 0)) {
			bad(rd, "timeline code");
			return;
		}
	}
}

/*
 * The timeline o checked (t NULL), or added into t `shift` rows down (once
 * checked: only memory can fail then).  Its interval (1 ms at least, as
 * --interval), or 0 with the reader marked bad.
 */
static uint64_t read_timeline(struct reader *rd, const json_t *o, struct timeline *t, uint32_t shift)
{
	const json_t *codes = json_object_get(o, "codes"), *rows = json_object_get(o, "rows"), *row;
	uint64_t interval = get_ns(rd, o, "interval_ns"), want;
	size_t r;

	if (interval < NS_PER_MS || !json_is_array(codes) || json_array_size(codes) > TIMELINE_MAX_CODES ||
	    !json_is_array(rows) || json_array_size(rows) > TIMELINE_MAX_ROWS) {
		bad(rd, "timeline");
		return 0;
	}
	want = (uint64_t)json_array_size(rows) + shift;
	if (t != NULL && timeline_reserve(t, want < TIMELINE_MAX_ROWS ? (uint32_t)want : TIMELINE_MAX_ROWS) != 0) {
		bad(rd, "timeline (out of memory)");
		return 0;
	}
	json_array_foreach(rows, r, row)
		read_row(rd, row, codes, t, (uint32_t)r + shift);
	return rd->bad ? 0 : interval;
}

static void read_servers(struct reader *rd, const json_t *a, struct hammer_result *r)
{
	const json_t *o;
	size_t i;

	if (!json_is_array(a) || json_array_size(a) > HAMMER_MAX_URLS) {
		bad(rd, "servers");
		return;
	}
	r->nservers = json_array_size(a) > 0 ? (uint32_t)json_array_size(a) : 1;
	json_array_foreach(a, i, o) {
		struct hammer_server *sv = &r->servers[i];

		sv->url = json_string_value(json_object_get(o, "url"));
		read_statuses(rd, json_object_get(o, "statuses"), sv->status, "servers");
		sv->errors = get_u64(rd, o, "errors");
		sv->requests = get_u64(rd, o, "requests");
		sv->ok = get_u64(rd, o, "ok");
		sv->failed = get_u64(rd, o, "failed");
		sv->calls = get_u64(rd, o, "calls");
		sv->retries = get_u64(rd, o, "retries");
	}
}

static void read_counts(struct reader *rd, const json_t *raw, struct hammer_result *r)
{
	r->requests = get_u64(rd, raw, "requests");
	r->ok = get_u64(rd, raw, "ok");
	r->failed = get_u64(rd, raw, "failed");
	r->calls = get_u64(rd, raw, "calls");
	r->retries = get_u64(rd, raw, "retries");
	r->answered = get_u64(rd, raw, "answered");
	r->unfinished = get_u64(rd, raw, "unfinished");
	r->dropped = get_u64(rd, raw, "dropped");
	r->budget_refused = get_u64(rd, raw, "budget_refused");
	r->throttled = get_u64(rd, raw, "throttled");
	r->unsent = get_u64(rd, raw, "unsent");
	r->wall_ns = get_ns(rd, raw, "wall_ns");
	r->last_ok_ns = get_ns(rd, raw, "last_ok_ns");
	r->start_wall_ns = bounded(rd, json_object_get(raw, "start_unix_ns"), INT64_MAX, "start_unix_ns");
	r->start_late_ns = get_ns(rd, raw, "start_late_ns");
	r->interrupted = json_is_true(json_object_get(raw, "interrupted"));
	read_statuses(rd, json_object_get(raw, "statuses"), r->status, "statuses");
	read_statuses(rd, json_object_get(raw, "attempt_statuses"), r->attempt_status, "attempt_statuses");
	read_named(rd, json_object_get(raw, "errors"), r->final_errors, RETRY_ERR_REFUSED, HAMMER_ERR_KINDS,
	           error_name, "errors");
	read_named(rd, json_object_get(raw, "attempt_errors"), r->attempt_errors, RETRY_ERR_REFUSED,
	           HAMMER_ERR_KINDS, error_name, "attempt_errors");
	read_named(rd, json_object_get(raw, "gave_up"), r->gave_up, RETRY_REASON_ATTEMPTS, RETRY_REASON_COUNT,
	           reason_name, "gave_up");
	read_histogram(rd, json_object_get(raw, "latency"), r->latency, "latency");
	read_histogram(rd, json_object_get(raw, "lateness"), r->lateness, "lateness");
	read_servers(rd, json_object_get(raw, "servers"), r);
}

/* The transport's own name for the one raw names, so it outlives raw; NULL when none. */
static const char *transport_name(const json_t *raw)
{
	static const struct transport_ops *const all[] = { &TRANSPORT_WIRE, &TRANSPORT_CURL };
	const char *t = json_string_value(json_object_get(raw, "transport"));

	for (size_t i = 0; t != NULL && i < sizeof(all) / sizeof(all[0]); i++)
		if (strcmp(t, all[i]->name) == 0)
			return all[i]->name;
	return NULL;
}

/* src from raw but its timelines, which are only checked: their intervals in *interval and *by_start (0: none). */
static int read_result(struct reader *rd, const json_t *raw, struct hammer_result *src, uint64_t *interval,
                       uint64_t *by_start)
{
	const json_t *bs = json_object_get(raw, "by_start");

	if (!json_is_object(raw) || get_u64(rd, raw, "version") != CODEC_VERSION) {
		bad(rd, "not a raw result of this ratelab (version 1)");
		return -1;
	}
	read_counts(rd, raw, src);
	*interval = read_timeline(rd, json_object_get(raw, "timeline"), NULL, 0);
	*by_start = json_is_object(bs) ? read_timeline(rd, bs, NULL, 0) : 0;
	src->transport = transport_name(raw);
	return rd->bad ? -1 : 0;
}

/*
 * raw's timelines into dst's, `shift` rows down, straight from the JSON
 * (no copy of them in between: at the bound that copy was 4.8 MB).  raw
 * was checked: -1 only when out of memory.
 */
static int add_timelines(struct reader *rd, struct hammer_result *dst, const json_t *raw, uint64_t by_start,
                         uint32_t shift)
{
	if (read_timeline(rd, json_object_get(raw, "timeline"), dst->timeline, shift) == 0)
		return -1;
	if (by_start == 0)
		return 0;
	if (dst->by_start == NULL && (dst->by_start = timeline_new(by_start)) == NULL)
		return -1;
	return read_timeline(rd, json_object_get(raw, "by_start"), dst->by_start, shift) == 0 ? -1 : 0;
}

int result_codec_add(struct hammer_result *dst, const json_t *raw, uint32_t shift, char *err, size_t errlen)
{
	struct reader rd = { err, errlen, 0 };
	struct hammer_result src;
	uint64_t interval, by_start;
	int rc = -1;

	/* src takes raw's counts; its timelines stay empty, of dst's interval */
	if (hammer_result_init(&src, timeline_interval_ns(dst->timeline)) != 0) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (read_result(&rd, raw, &src, &interval, &by_start) != 0)
		goto destroy;
	if (interval != timeline_interval_ns(dst->timeline)) {
		snprintf(err, errlen, "raw result: its interval (%llu ms) is not the others' (%llu ms)",
		         (unsigned long long)(interval / NS_PER_MS),
		         (unsigned long long)(timeline_interval_ns(dst->timeline) / NS_PER_MS));
		goto destroy;
	}
	if (by_start != 0 && dst->by_start != NULL && by_start != timeline_interval_ns(dst->by_start)) {
		snprintf(err, errlen, "raw result: its by_start interval is not the others'");
		goto destroy;
	}
	rc = hammer_result_merge_at(dst, &src, shift);
	if (rc == HAMMER_MERGE_TOO_MANY_URLS)
		snprintf(err, errlen, "the results name more than %d servers in all", HAMMER_MAX_URLS);
	else if (rc != 0 || add_timelines(&rd, dst, raw, by_start, shift) != 0)
		snprintf(err, errlen, "out of memory merging results");
	else
		goto destroy;
	rc = -1;
destroy:
	hammer_result_destroy(&src);
	return rc;
}

json_t *result_codec_kept(const json_t *raw, const struct hammer_result *dst)
{
	const json_t *servers = json_object_get(raw, "servers"), *sv;
	json_t *kept = json_array();
	size_t i;

	json_array_foreach(servers, i, sv) {
		json_t *url = json_object_get(sv, "url");

		for (uint32_t k = 0; kept != NULL && url != NULL && k < dst->nservers; k++) {
			if (json_string_value(url) == dst->servers[k].url) {
				json_array_append(kept, url);
				break;
			}
		}
	}
	return kept;
}

uint64_t result_codec_start_ns(const json_t *raw)
{
	json_int_t v = json_integer_value(json_object_get(raw, "start_unix_ns"));

	return v > 0 ? (uint64_t)v : 0;
}

uint64_t result_codec_interval_ns(const json_t *raw)
{
	json_int_t v = json_integer_value(json_object_get(json_object_get(raw, "timeline"), "interval_ns"));

	return v > 0 ? (uint64_t)v : 0;
}
