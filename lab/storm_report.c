/* ratelab storm's figures: the rows of a run, its phases, the table, and the report files. */
#include "lab/storm_report.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/parse.h"
#include "common/svg.h"
#include "common/timeline.h"
#include "hammer/report.h"
#include "lab/report_dir.h"

#define ROWS_PER_S ((uint32_t)(NS_PER_SEC / STORM_ROW_NS))
#define BEFORE_MAX_NS (5ULL * NS_PER_SEC)

/* ---- the rows and the phases ---- */

static void fill_rows(struct storm_result *out, const struct storm_run *run)
{
	const struct timeline *tl = run->hammer->timeline;

	for (uint32_t i = 0; i < out->nrows; i++) {
		struct storm_row *w = &out->rows[i];
		uint64_t t0 = (uint64_t)i * STORM_ROW_NS;

		w->offered = rate_schedule_count(run->schedule, t0 + STORM_ROW_NS) - rate_schedule_count(run->schedule, t0);
		w->attempts = (uint32_t)timeline_attempts(tl, i);
		w->retries = (uint32_t)timeline_retries(tl, i);
		w->goodput = (uint32_t)timeline_class(tl, i, 2);
		if (i < run->nseries) {
			w->queue = run->series[i].queue_max;
			w->workers = run->series[i].workers;
			w->wasted = run->series[i].served_gone;
		}
	}
}

int storm_result_from_run(struct storm_result *out, const char *policy, bool triggered, const struct storm_run *run,
                          const struct storm_window *w)
{
	const struct hammer_result *h = run->hammer;

	memset(out, 0, sizeof(*out));
	snprintf(out->policy, sizeof(out->policy), "%s", policy);
	out->triggered = triggered;
	out->requests = h->requests + h->unfinished;
	out->ok = h->ok;
	out->attempts = h->calls;
	out->retries = h->retries;
	out->throttled = h->throttled;
	out->unsent = h->unsent;
	out->amplification = out->requests ? (double)h->calls / (double)out->requests : 0;
	out->duration_ns = run->duration_ns;
	if (run->backend != NULL) {
		out->served = run->backend->served;
		out->served_gone = run->backend->served_gone;
		out->work_s = (double)run->backend->work_ns / 1e9;
		out->work_gone_s = (double)run->backend->work_gone_ns / 1e9;
		out->queue_peak = run->backend->queue_peak;
	}
	out->nrows = (uint32_t)((run->duration_ns + STORM_ROW_NS - 1) / STORM_ROW_NS);
	out->rows = calloc(out->nrows ? out->nrows : 1, sizeof(*out->rows));
	if (out->rows == NULL)
		return -1;
	fill_rows(out, run);
	storm_phases(out, w);
	return 0;
}

void storm_result_destroy(struct storm_result *r)
{
	free(r->rows);
	r->rows = NULL;
	r->nrows = 0;
}

/* Goodput per second over rows [from, to) (0 for an empty span). */
static double goodput(const struct storm_result *r, uint32_t from, uint32_t to)
{
	uint64_t sum = 0;

	if (to > r->nrows)
		to = r->nrows;
	if (from >= to)
		return 0;
	for (uint32_t i = from; i < to; i++)
		sum += r->rows[i].goodput;
	return (double)sum * (double)ROWS_PER_S / (double)(to - from);
}

static uint32_t row_of(uint64_t ns)
{
	return (uint32_t)(ns / STORM_ROW_NS);
}

void storm_phases(struct storm_result *r, const struct storm_window *w)
{
	uint32_t start = row_of(w->start_ns), end = row_of(w->end_ns + STORM_ROW_NS - 1), from = 0;

	if (w->start_ns > STORM_WARMUP_NS)
		from = row_of(w->start_ns > STORM_WARMUP_NS + BEFORE_MAX_NS ? w->start_ns - BEFORE_MAX_NS : STORM_WARMUP_NS);
	r->before = goodput(r, from, start);
	r->during = goodput(r, start, end);
	r->after = goodput(r, end, r->nrows);
	uint32_t back = end;   /* the first second from which no second is under the mark */

	r->best_after = 0;
	for (uint32_t i = end; i + ROWS_PER_S <= r->nrows; i++) {
		double g = goodput(r, i, i + ROWS_PER_S);

		if (g > r->best_after)
			r->best_after = g;
		if (!(r->before > 0 && g >= STORM_RECOVERED * r->before))
			back = i + 1;
	}
	/* back for good: a burst of late answers from a draining queue, then a fall, is not a recovery */
	r->recovered = back + ROWS_PER_S <= r->nrows;
	r->recovered_ns = r->recovered ? (uint64_t)(back - end) * STORM_ROW_NS : 0;
}

/* ---- the table ---- */

static double wasted_share(const struct storm_result *r)
{
	return r->work_s > 0 ? 100.0 * r->work_gone_s / r->work_s : 0;
}

void storm_report_row(FILE *f, const struct storm_result *r, bool header)
{
	char rec[32];

	if (header)
		fprintf(f, "%-20s %8s %8s %8s %10s %10s %9s %14s\n", "goodput/s:", "before", "during", "after",
		        "best-after", "recovered", "attempts", "wasted work");
	if (!r->triggered)
		snprintf(rec, sizeof(rec), "-");
	else if (r->recovered)
		snprintf(rec, sizeof(rec), "%.1fs", (double)r->recovered_ns / 1e9);
	else
		snprintf(rec, sizeof(rec), "no");
	fprintf(f, "%-20s %8.1f %8.1f %8.1f %10.1f %10s %9.2f %7.1fs %4.0f%%\n", r->policy, r->before, r->during,
	        r->after, r->best_after, rec, r->amplification, r->work_gone_s, wasted_share(r));
}

/* ---- the files ---- */

/* A policy's label as a file name: anything but [A-Za-z0-9-] becomes '-'. */
static void file_name(const char *policy, const char *ext, char *out, size_t len)
{
	size_t i = 0;

	for (; policy[i] && i + strlen(ext) + 1 < len; i++) {
		char ch = policy[i];

		out[i] = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ? ch
		                                                                                                      : '-';
	}
	snprintf(out + i, len - i, "%s", ext);
}

static int write_csv(const char *dir, const struct storm_result *r, char *err, size_t errlen)
{
	char name[64];
	FILE *f;

	file_name(r->policy, ".csv", name, sizeof(name));
	if (!(f = report_dir_open(dir, name, err, errlen)))
		return -1;
	fprintf(f, "t_s,offered,attempts,retries,goodput,queue,workers,wasted\n");
	for (uint32_t i = 0; i < r->nrows; i++) {
		const struct storm_row *w = &r->rows[i];

		fprintf(f, "%.1f,%.1f,%u,%u,%u,%u,%u,%u\n", i / 10.0, w->offered, w->attempts, w->retries, w->goodput,
		        w->queue, w->workers, w->wasted);
	}
	return report_close_out(f, name, err, errlen);
}

static json_t *result_json(const struct storm_result *r)
{
	json_t *o = json_pack("{s:s, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:f, s:f}", "policy", r->policy,
	                      "triggered", r->triggered, "requests", (json_int_t)r->requests, "ok", (json_int_t)r->ok,
	                      "attempts", (json_int_t)r->attempts, "retries", (json_int_t)r->retries,
	                      "throttled", (json_int_t)r->throttled, "unsent", (json_int_t)r->unsent,
	                      "attempts_per_request", r->amplification, "goodput_before", r->before,
	                      "goodput_during", r->during, "goodput_after", r->after, "goodput_best_after", r->best_after);

	if (o == NULL)
		return NULL;
	json_object_set_new(o, "recovered", json_boolean(r->recovered));
	json_object_set_new(o, "recovered_after_s", r->recovered ? json_real((double)r->recovered_ns / 1e9) : json_null());
	json_object_set_new(o, "served", json_integer((json_int_t)r->served));
	json_object_set_new(o, "served_gone", json_integer((json_int_t)r->served_gone));
	json_object_set_new(o, "work_s", json_real(r->work_s));
	json_object_set_new(o, "work_gone_s", json_real(r->work_gone_s));
	json_object_set_new(o, "queue_peak", json_integer((json_int_t)r->queue_peak));
	return o;
}

static int write_json(const char *dir, const struct storm_report_info *in, const struct storm_result *res, size_t n,
                      char *err, size_t errlen)
{
	char path[1024];
	json_t *pol = json_array();
	json_t *doc = json_pack("{s:s, s:s, s:s, s:f, s:f, s:I, s:I, s:f, s:f, s:f, s:o}", "capacity", in->capacity,
	                        "trigger", in->trigger, "rate", in->rate, "timeout_s", (double)in->timeout_ns / 1e9,
	                        "duration_s", (double)in->duration_ns / 1e9, "clients", (json_int_t)in->clients,
	                        "seed", (json_int_t)in->seed, "trigger_start_s", (double)in->window.start_ns / 1e9,
	                        "trigger_end_s", (double)in->window.end_ns / 1e9, "recovered_at", STORM_RECOVERED,
	                        "policies", pol);
	int rc = -1;

	if (!doc)
		goto fail;
	for (size_t i = 0; i < n; i++)
		if (json_array_append_new(pol, result_json(&res[i])) != 0)
			goto fail;
	snprintf(path, sizeof(path), "%s/results.json", dir);
	rc = json_dump_file(doc, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER) == 0 ? 0 : -1;
fail:
	if (rc != 0)
		snprintf(err, errlen, "cannot write %s/results.json", dir);
	json_decref(doc);
	return rc;
}

/* ---- report.html ---- */

#define W 1000           /* viewBox width */
#define LEFT 150         /* the lane's label column */
#define PLOT_W (W - LEFT - 20)
#define RATE_H 170       /* the rates' chart */
#define QUEUE_H 46       /* the queue's strip below it */
#define LANE_H (RATE_H + QUEUE_H + 64)

static const char HTML_HEAD[] =
	"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	"<title>ratelab storm</title>\n<style>\n"
	"body{font:clamp(16px,1.1vw,24px)/1.45 system-ui,sans-serif;margin:20px;color:#222}\n"
	".lanes{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,860px),1fr));gap:0 1em}\n"
	"h1{font-size:26px}table{border-collapse:collapse;margin:12px 0}td,th{padding:4px 10px;"
	"text-align:right;border-bottom:1px solid #ddd}td:first-child,th:first-child{text-align:left}\n"
	"svg.lane{display:block;width:100%;height:auto;margin:0 0 10px 0;background:#fafafa}\n"
	".key span{display:inline-block;width:22px;height:12px;margin:0 6px 0 18px;vertical-align:middle}\n"
	"</style></head><body>\n";

/* Colours: offered, attempts, goodput, queue, trigger band. */
static const char *const C_OFFERED = "#555555", *const C_ATTEMPTS = "#e67e22", *const C_GOOD = "#2e9d4f";
static const char *const C_QUEUE = "#2f6db5", *const C_TRIGGER = "#f4c7c0";

/* The rates' shared scale: three times the busiest of offered load and goodput (attempts above it are clipped). */
static double lanes_ymax(const struct storm_result *res, size_t n)
{
	double top = 1;

	for (size_t i = 0; i < n; i++)
		for (uint32_t k = 0; k < res[i].nrows; k++) {
			double o = res[i].rows[k].offered * ROWS_PER_S, g = (double)res[i].rows[k].goodput * ROWS_PER_S;

			top = o > top ? o : top;
			top = g > top ? g : top;
		}
	return top * 2;
}

/* A 500 ms running mean of one field, per second, at row k. */
static double smooth(const struct storm_result *r, uint32_t k, int field)
{
	double sum = 0;
	int n = 0;

	for (uint32_t i = k >= 2 ? k - 2 : 0; i <= k + 2 && i < r->nrows; i++, n++)
		sum += field == 0 ? r->rows[i].offered : field == 1 ? (double)r->rows[i].attempts
		                                                    : (double)r->rows[i].goodput;
	return n ? sum / n * ROWS_PER_S : 0;
}

static double x_of(const struct storm_result *r, uint32_t k)
{
	return LEFT + (double)PLOT_W * (k + 0.5) / (r->nrows ? r->nrows : 1);
}

static double y_of(double v, double ymax, double top)
{
	if (v > ymax)
		v = ymax;
	return top + RATE_H - v / ymax * (RATE_H - 10);
}

static void lane_series(FILE *f, const struct storm_result *r, int field, double ymax, const char *colour,
                        const char *extra)
{
	fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" %s points=\"", colour, extra);
	for (uint32_t k = 0; k < r->nrows; k++)
		fprintf(f, "%.1f,%.1f ", x_of(r, k), y_of(smooth(r, k, field), ymax, 30));
	fprintf(f, "\"/>");
}

/* When the attempts go over the shared scale: how far, at the lane's top right. */
static void lane_clipped(FILE *f, const struct storm_result *r, double ymax)
{
	double top = 0;

	for (uint32_t k = 0; k < r->nrows; k++)
		if (smooth(r, k, 1) > top)
			top = smooth(r, k, 1);
	if (top > ymax)
		fprintf(f, "<text x=\"%d\" y=\"20\" font-size=\"14\" text-anchor=\"end\" fill=\"%s\">attempts "
		        "peak at %.0f/s, cut off</text>", LEFT + PLOT_W, C_ATTEMPTS, top);
}

static void lane_goodput(FILE *f, const struct storm_result *r, double ymax)
{
	fprintf(f, "<polygon fill=\"%s\" fill-opacity=\"0.35\" stroke=\"%s\" stroke-width=\"2\" points=\"%.1f,%d ",
	        C_GOOD, C_GOOD, x_of(r, 0), 30 + RATE_H);
	for (uint32_t k = 0; k < r->nrows; k++)
		fprintf(f, "%.1f,%.1f ", x_of(r, k), y_of(smooth(r, k, 2), ymax, 30));
	fprintf(f, "%.1f,%d\"/>", x_of(r, r->nrows ? r->nrows - 1 : 0), 30 + RATE_H);
}

static void lane_queue(FILE *f, const struct storm_result *r, uint32_t qmax)
{
	double top = 30 + RATE_H + 8;

	fprintf(f, "<rect x=\"%d\" y=\"%.0f\" width=\"%d\" height=\"%d\" fill=\"#eef3fa\"/>", LEFT, top, PLOT_W, QUEUE_H);
	fprintf(f, "<polygon fill=\"%s\" fill-opacity=\"0.6\" points=\"%d,%.0f ", C_QUEUE, LEFT, top + QUEUE_H);
	for (uint32_t k = 0; k < r->nrows; k++)
		fprintf(f, "%.1f,%.1f ", x_of(r, k), top + QUEUE_H - (double)r->rows[k].queue / (qmax ? qmax : 1) * QUEUE_H);
	fprintf(f, "%d,%.0f\"/>", LEFT + PLOT_W, top + QUEUE_H);
	fprintf(f, "<text x=\"%d\" y=\"%.0f\" font-size=\"14\" text-anchor=\"end\" fill=\"%s\">queue (of %u)</text>",
	        LEFT - 8, top + 30, C_QUEUE, qmax);
}

static void lane_frame(FILE *f, const struct storm_result *r, const struct storm_report_info *in, double ymax)
{
	double x0 = LEFT + (double)PLOT_W * in->window.start_ns / in->duration_ns;
	double x1 = LEFT + (double)PLOT_W * in->window.end_ns / in->duration_ns;
	const struct svg_area time = { LEFT, 30, PLOT_W, LANE_H - 6 - 14 * 1.25 - 30 };

	if (r->triggered)
		fprintf(f, "<rect x=\"%.1f\" y=\"24\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>"
		        "<text x=\"%.1f\" y=\"18\" font-size=\"14\" fill=\"#a33\">trigger</text>", x0, x1 - x0,
		        RATE_H + QUEUE_H + 14, C_TRIGGER, x0 + 2);
	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#444\"/>", LEFT, 30 + RATE_H, LEFT + PLOT_W,
	        30 + RATE_H);
	fprintf(f, "<line x1=\"%d\" y1=\"40\" x2=\"%d\" y2=\"40\" stroke=\"#ddd\"/><line x1=\"%d\" y1=\"%.0f\" "
	        "x2=\"%d\" y2=\"%.0f\" stroke=\"#ddd\"/>", LEFT, LEFT + PLOT_W, LEFT, 40 + (RATE_H - 10) / 2.0,
	        LEFT + PLOT_W, 40 + (RATE_H - 10) / 2.0);
	fprintf(f, "<text x=\"%d\" y=\"37\" font-size=\"13\" fill=\"#666\">%.0f/s</text>"
	        "<text x=\"%d\" y=\"%.0f\" font-size=\"13\" fill=\"#666\">%.0f/s</text>",
	        LEFT + 4, ymax, LEFT + 4, 37 + (RATE_H - 10) / 2.0, ymax / 2);
	svg_axis_time(f, &time, (double)in->duration_ns / NS_PER_SEC, 10, 14);
}

static void lane_title(FILE *f, const struct storm_result *r)
{
	char verdict[48];

	if (!r->triggered)
		snprintf(verdict, sizeof(verdict), "no trigger");
	else if (r->recovered)
		snprintf(verdict, sizeof(verdict), "recovered in %.1fs", (double)r->recovered_ns / 1e9);
	else
		snprintf(verdict, sizeof(verdict), "stayed down");
	char line[64];

	svg_text(f, 6, 70, "font-size=\"19\" font-weight=\"bold\"", r->policy);
	snprintf(line, sizeof(line), "font-size=\"15\" fill=\"%s\"", r->recovered || !r->triggered ? C_GOOD : "#c0392b");
	svg_text(f, 6, 94, line, verdict);
	snprintf(line, sizeof(line), "%.2f attempts/req", r->amplification);
	svg_text(f, 6, 116, "font-size=\"14\"", line);
	snprintf(line, sizeof(line), "%.0f%% work wasted", wasted_share(r));
	svg_text(f, 6, 136, "font-size=\"14\"", line);
}

static void html_lane(FILE *f, const struct storm_result *r, const struct storm_report_info *in, double ymax)
{
	fprintf(f, "<svg class=\"lane\" data-policy=\"%s\" viewBox=\"0 0 %d %d\" xmlns=\"http://www.w3.org/2000/svg\">",
	        r->policy, W, LANE_H);
	lane_frame(f, r, in, ymax);
	lane_title(f, r);
	lane_goodput(f, r, ymax);
	lane_series(f, r, 0, ymax, C_OFFERED, "stroke-width=\"2\" stroke-dasharray=\"6 4\"");
	lane_series(f, r, 1, ymax, C_ATTEMPTS, "stroke-width=\"2.5\"");
	lane_queue(f, r, in->queue_max);
	lane_clipped(f, r, ymax);
	fprintf(f, "</svg>\n");
}

static void html_table(FILE *f, const struct storm_result *res, size_t n)
{
	fprintf(f, "<table id=\"results\"><tr><th>policy</th><th>goodput before</th><th>during</th><th>after</th>"
	        "<th>best second after</th><th>recovered in</th><th>attempts / request</th><th>work for gone clients</th>"
	        "</tr>\n");
	for (size_t i = 0; i < n; i++) {
		const struct storm_result *r = &res[i];
		char rec[32];

		if (!r->triggered)
			snprintf(rec, sizeof(rec), "(no trigger)");
		else if (r->recovered)
			snprintf(rec, sizeof(rec), "%.1f s", (double)r->recovered_ns / 1e9);
		else
			snprintf(rec, sizeof(rec), "never");
		fprintf(f, "<tr><td>%s</td><td>%.1f/s</td><td>%.1f/s</td><td>%.1f/s</td><td>%.1f/s</td><td>%s</td>"
		        "<td>%.2f</td><td>%.1f s (%.0f%%)</td></tr>\n", r->policy, r->before, r->during, r->after,
		        r->best_after, rec, r->amplification, r->work_gone_s, wasted_share(r));
	}
	fprintf(f, "</table>\n");
}

static void html_body(FILE *f, const struct storm_report_info *in, const struct storm_result *res, size_t n)
{
	double ymax = lanes_ymax(res, n);
	char tmo[32];

	parse_format_duration(in->timeout_ns, tmo, sizeof(tmo));
	fprintf(f, "<h1>The retry storm that would not stop</h1>\n<p>Every lane is one client policy against the same "
	        "backend (%s) under the same offered load (%s). The shaded band is the trigger: %s. "
	        "Goodput (green) is answers the clients got within their %s deadline; the orange line is every attempt "
	        "they sent, retries included; the dashed line is the offered load; the blue strip is the server's "
	        "queue. A policy <b>recovered</b> when goodput after the trigger is back to %.0f%% of its level "
	        "before, every second, for the rest of the run.</p>\n", in->capacity, in->rate, in->trigger, tmo, STORM_RECOVERED * 100);
	fprintf(f, "<p class=\"key\"><span style=\"background:%s\"></span>goodput<span style=\"background:%s\"></span>"
	        "attempts<span style=\"background:%s\"></span>offered load<span style=\"background:%s\"></span>queue"
	        "<span style=\"background:%s\"></span>trigger</p>\n", C_GOOD, C_ATTEMPTS, C_OFFERED, C_QUEUE, C_TRIGGER);
	fprintf(f, "<div class=\"lanes\">\n");
	for (size_t i = 0; i < n; i++)
		html_lane(f, &res[i], in, ymax);
	fprintf(f, "</div>\n");
	html_table(f, res, n);
	fprintf(f, "<p>%u virtual clients, seed %llu. Rates are 500&nbsp;ms running means of 100&nbsp;ms rows; the "
	        "scale is shared, and attempts above it are cut off (the CSV files have every row).</p>\n", in->clients,
	        (unsigned long long)in->seed);
}

int storm_report_write(const char *dir, const struct storm_report_info *info, const struct storm_result *res,
                       size_t n, char *err, size_t errlen)
{
	FILE *f;

	if (report_dir_make(dir, err, errlen) != 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (write_csv(dir, &res[i], err, errlen) != 0)
			return -1;
	if (write_json(dir, info, res, n, err, errlen) != 0)
		return -1;
	if (!(f = report_dir_open(dir, "report.html", err, errlen)))
		return -1;
	fputs(HTML_HEAD, f);
	html_body(f, info, res, n);
	fputs("</body></html>\n", f);
	return report_close_out(f, "report.html", err, errlen);
}
