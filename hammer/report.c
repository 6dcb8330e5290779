#include "hammer/report.h"

#include <errno.h>
#include <string.h>

#include "common/clock.h"
#include "common/parse.h"
#include "hammer/result_codec.h"

static void text_outcomes(FILE *f, const struct hammer_result *r)
{
	for (int s = 0; s < RETRY_STATUS_MAX; s++)
		if (r->status[s] != 0)
			fprintf(f, "%d  x%llu\n", s, (unsigned long long)r->status[s]);
	for (int e = RETRY_ERR_REFUSED; e < HAMMER_ERR_KINDS; e++)
		if (r->final_errors[e] != 0)
			fprintf(f, "error:%s x%llu\n", hammer_error_name((enum retry_error)e),
			        (unsigned long long)r->final_errors[e]);
	if (r->unsent != 0)
		fprintf(f, "unsent  x%llu (throttled before any call)\n", (unsigned long long)r->unsent);
	fprintf(f, "%llu requests in %.2fs\n", (unsigned long long)r->requests,
	        (double)r->wall_ns / (double)NS_PER_SEC);
}

static void text_counts(FILE *f, const struct hammer_result *r)
{
	const char *sep = "";

	fprintf(f, "%llu calls, %llu retries", (unsigned long long)r->calls,
	        (unsigned long long)r->retries);
	if (r->wall_ns > 0)
		fprintf(f, ", %.1f calls/s", (double)r->calls * 1e9 / (double)r->wall_ns);
	fprintf(f, "\n");
	for (int i = 0; i < RETRY_REASON_COUNT; i++)
		if (r->gave_up[i] != 0) {
			fprintf(f, "%s%s x%llu", *sep ? sep : "gave up: ", retry_reason_name((enum retry_reason)i),
			        (unsigned long long)r->gave_up[i]);
			sep = ", ";
		}
	if (*sep)
		fprintf(f, "\n");
	sep = "";
	for (int e = RETRY_ERR_REFUSED; e < HAMMER_ERR_KINDS; e++)
		if (r->attempt_errors[e] != 0) {
			fprintf(f, "%s%s x%llu", *sep ? sep : "transport errors: ",
			        hammer_error_name((enum retry_error)e), (unsigned long long)r->attempt_errors[e]);
			sep = ", ";
		}
	if (*sep)
		fprintf(f, "\n");
}

/* "per server:" then one line per server; only for a run over several URLs. */
static void text_servers(FILE *f, const struct hammer_result *r)
{
	if (r->nservers < 2)
		return;
	fprintf(f, "per server:\n");
	for (uint32_t i = 0; i < r->nservers; i++) {
		const struct hammer_server *sv = &r->servers[i];
		const char *sep = " ";

		fprintf(f, "  %s ", sv->url ? sv->url : "?");
		for (int s = 0; s < RETRY_STATUS_MAX; s++)
			if (sv->status[s] != 0) {
				fprintf(f, "%s%d x%llu", sep, s, (unsigned long long)sv->status[s]);
				sep = ", ";
			}
		if (sv->errors != 0)
			fprintf(f, "%serrors x%llu", sep, (unsigned long long)sv->errors);
		fprintf(f, "; %llu requests, %llu calls, %llu retries\n", (unsigned long long)sv->requests,
		        (unsigned long long)sv->calls, (unsigned long long)sv->retries);
	}
}

void report_text(FILE *f, const struct hammer_result *r)
{
	static const double pct[] = { 50, 90, 99 };
	char buf[32], iv[32];

	text_outcomes(f, r);
	text_counts(f, r);
	text_servers(f, r);
	if (histogram_count(r->latency) > 0) {
		fprintf(f, "latency");
		for (size_t i = 0; i < sizeof(pct) / sizeof(pct[0]); i++) {
			parse_format_duration(histogram_percentile(r->latency, pct[i]), buf, sizeof(buf));
			fprintf(f, " p%.0f %s ", pct[i], buf);
		}
		parse_format_duration(histogram_max(r->latency), buf, sizeof(buf));
		fprintf(f, " max %s\n", buf);
	}
	parse_format_duration(timeline_interval_ns(r->timeline), iv, sizeof(iv));
	fprintf(f, "peak %llu attempts per %s\n", (unsigned long long)timeline_peak_attempts(r->timeline), iv);
	if (timeline_clipped(r->timeline))
		fprintf(f, "timeline: the run outlasted its %u rows of %s; its last row counts everything later "
		        "(a longer --interval keeps them apart)\n", TIMELINE_MAX_ROWS, iv);
	if (r->interrupted)
		fprintf(f, "interrupted: %llu requests unfinished\n", (unsigned long long)(r->unfinished + r->dropped));
	else if (r->unfinished || r->dropped)
		fprintf(f, "at the end: %llu requests still in flight or waiting, %llu arrivals dropped\n",
		        (unsigned long long)r->unfinished, (unsigned long long)r->dropped);
}

static double ms(uint64_t ns)
{
	return (double)ns / (double)NS_PER_MS;
}

static json_t *json_hist_ms(const struct histogram *h)
{
	return json_pack("{s:I,s:f,s:f,s:f,s:f,s:f,s:f}", "count", (json_int_t)histogram_count(h),
	                 "p50", ms(histogram_percentile(h, 50)), "p90", ms(histogram_percentile(h, 90)),
	                 "p99", ms(histogram_percentile(h, 99)), "max", ms(histogram_max(h)),
	                 "min", ms(histogram_min(h)), "mean", histogram_mean(h) / (double)NS_PER_MS);
}

static json_t *json_statuses(const uint64_t *counts)
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

static json_t *json_errors(const uint64_t *counts)
{
	json_t *o = json_object();

	for (int e = RETRY_ERR_REFUSED; o != NULL && e < HAMMER_ERR_KINDS; e++)
		json_object_set_new(o, hammer_error_name((enum retry_error)e), json_integer((json_int_t)counts[e]));
	return o;
}

static json_t *json_reasons(const uint64_t *counts)
{
	json_t *o = json_object();

	for (int i = RETRY_REASON_ATTEMPTS; o != NULL && i < RETRY_REASON_COUNT; i++)
		json_object_set_new(o, retry_reason_name((enum retry_reason)i), json_integer((json_int_t)counts[i]));
	return o;
}

json_t *report_config_json(const struct report_info *info, const struct hammer_result *r)
{
	char sched[512];

	if (info->schedule != NULL)
		rate_schedule_describe(info->schedule, sched, sizeof(sched));
	return json_pack("{s:s,s:s,s:s,s:I,s:I,s:I,s:f,s:s?,s:s,s:s}", "url", info->url, "method", info->method,
	                 "policy", info->policy, "concurrency", (json_int_t)info->concurrency,
	                 "threads", (json_int_t)info->threads, "seed", (json_int_t)info->seed,
	                 "rate", info->rate, "rate_schedule", info->schedule ? sched : NULL,
	                 "start", info->herd ? "herd" : "now", "transport", r->transport ? r->transport : "none");
}

static const char *jstr(const json_t *o, const char *k)
{
	const char *v = json_string_value(json_object_get(o, k));

	return v ? v : "?";
}

void report_info_from_json(struct report_info *info, const json_t *config)
{
	memset(info, 0, sizeof(*info));
	info->url = jstr(config, "url");
	info->method = jstr(config, "method");
	info->policy = jstr(config, "policy");
	info->concurrency = (uint32_t)json_integer_value(json_object_get(config, "concurrency"));
	info->threads = (uint32_t)json_integer_value(json_object_get(config, "threads"));
	info->seed = (uint64_t)json_integer_value(json_object_get(config, "seed"));
	info->rate = json_number_value(json_object_get(config, "rate"));
	info->herd = strcmp(jstr(config, "start"), "herd") == 0;
}

json_t *report_config_kept(const json_t *config)
{
	static const char *const read[] = { "url", "method", "policy", "concurrency", "threads", "seed", "rate", "start" };
	json_t *kept = json_is_object(config) ? json_object() : NULL;

	for (size_t i = 0; kept != NULL && i < sizeof(read) / sizeof(read[0]); i++) {
		json_t *v = json_object_get(config, read[i]);

		if ((json_is_string(v) || json_is_number(v)) && json_object_set(kept, read[i], v) != 0) {
			json_decref(kept);
			return NULL;
		}
	}
	return kept;
}

/* One object per server, in URL order: url, requests, ok, failed, calls, retries, statuses, errors. */
static json_t *json_servers(const struct hammer_result *r)
{
	json_t *a = json_array();

	for (uint32_t i = 0; a != NULL && i < r->nservers; i++) {
		const struct hammer_server *sv = &r->servers[i];

		json_array_append_new(a, json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:o,s:I}",
		                      "url", sv->url ? sv->url : "?", "requests", (json_int_t)sv->requests,
		                      "ok", (json_int_t)sv->ok, "failed", (json_int_t)sv->failed,
		                      "calls", (json_int_t)sv->calls, "retries", (json_int_t)sv->retries,
		                      "statuses", json_statuses(sv->status), "errors", (json_int_t)sv->errors));
	}
	return a;
}

static json_t *report_figures(const struct hammer_result *r, const struct report_info *info)
{
	double wall_s = (double)r->wall_ns / (double)NS_PER_SEC;

	return json_pack("{s:o,s:I,s:I,s:I,s:I,s:I,s:I,s:f,s:f,s:o,s:o,s:o,s:o,s:o,s:o,s:o,"
	                 "s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:b,s:o}",
	                 "config", report_config_json(info, r),
	                 "requests", (json_int_t)r->requests, "ok", (json_int_t)r->ok,
	                 "failed", (json_int_t)r->failed, "calls", (json_int_t)r->calls,
	                 "retries", (json_int_t)r->retries, "answered", (json_int_t)r->answered,
	                 "wall_s", wall_s, "calls_per_s", wall_s > 0 ? (double)r->calls / wall_s : 0.0,
	                 "statuses", json_statuses(r->status), "errors", json_errors(r->final_errors),
	                 "attempt_statuses", json_statuses(r->attempt_status),
	                 "transport_errors", json_errors(r->attempt_errors),
	                 "gave_up", json_reasons(r->gave_up),
	                 "latency_ms", json_hist_ms(r->latency),
	                 "timer_lateness_ms", json_hist_ms(r->lateness),
	                 "peak_attempts", (json_int_t)timeline_peak_attempts(r->timeline),
	                 "interval_ms", (json_int_t)(timeline_interval_ns(r->timeline) / NS_PER_MS),
	                 "budget_lost_at_send", (json_int_t)r->budget_refused,
	                 "throttled", (json_int_t)r->throttled, "unsent", (json_int_t)r->unsent,
	                 "unfinished", (json_int_t)r->unfinished, "dropped", (json_int_t)r->dropped,
	                 "interrupted", r->interrupted, "servers", json_servers(r));
}

json_t *report_json(const struct hammer_result *r, const struct report_info *info)
{
	json_t *j = report_figures(r, info), *raw = result_codec_json(r);

	if (j == NULL || raw == NULL) {
		json_decref(j);
		json_decref(raw);
		return NULL;
	}
	/* json_object_set_new takes raw over, also when it fails */
	if ((info->join != NULL && json_object_set(j, "join", info->join) != 0) ||
	    json_object_set_new(j, "raw", raw) != 0) {
		json_decref(j);
		return NULL;
	}
	return j;
}

FILE *report_open_out(const char *path, char *err, size_t errlen)
{
	FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");

	if (f == NULL)
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
	return f;
}

int report_close_out(FILE *f, const char *path, char *err, size_t errlen)
{
	int bad = ferror(f) != 0, e = 0;

	if ((f == stdout ? fflush(f) : fclose(f)) != 0) {
		bad = 1;
		e = errno;
	}
	if (bad && e != 0)
		snprintf(err, errlen, "cannot write %s: %s", f == stdout ? "standard output" : path, strerror(e));
	else if (bad)
		snprintf(err, errlen, "cannot write %s", f == stdout ? "standard output" : path);
	return bad ? -1 : 0;
}

int report_write_json(const char *path, const struct hammer_result *r, const struct report_info *info,
                      char *err, size_t errlen)
{
	json_t *j = report_json(r, info);
	FILE *f;
	int rc = -1;

	if (j == NULL) {
		snprintf(err, errlen, "cannot build the JSON report");
		return -1;
	}
	f = report_open_out(path, err, errlen);
	if (f == NULL)
		goto put_json;
	json_dumpf(j, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	fputc('\n', f);
	rc = report_close_out(f, path, err, errlen);
put_json:
	json_decref(j);
	return rc;
}

int report_write_timeline(const char *path, const struct timeline *t, char *err, size_t errlen)
{
	FILE *f = report_open_out(path, err, errlen);

	if (f == NULL)
		return -1;
	timeline_write_csv(t, f);
	return report_close_out(f, path, err, errlen);
}
