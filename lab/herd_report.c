#include "lab/herd_report.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/parse.h"
#include "common/svg.h"
#include "common/timeline.h"
#include "hammer/report.h"
#include "lab/report_dir.h"

#define FINE_PER_ROW ((uint32_t)(HERD_PEAK_NS / HERD_BIN_NS))

/* The count of status `code` in row `row` of t (0 when it has no column). */
static uint64_t code_count(const struct timeline *t, uint32_t row, int code)
{
	for (unsigned i = 0; i < timeline_ncodes(t); i++)
		if (timeline_code(t, i) == code)
			return timeline_count(t, row, i);
	return 0;
}

static void bin_of_row(const struct timeline *t, uint32_t row, struct herd_bin *b)
{
	uint64_t calls = timeline_attempts(t, row);

	b->ok = (uint32_t)timeline_class(t, row, 2);
	b->rejected = (uint32_t)(code_count(t, row, 429) + code_count(t, row, 503));
	b->conflict = (uint32_t)code_count(t, row, 409);
	b->other = (uint32_t)(calls - b->ok - b->rejected - b->conflict);
	b->retries = (uint32_t)timeline_retries(t, row);
}

int herd_result_from_run(struct herd_result *out, const char *policy, uint32_t clients,
                         const struct hammer_result *r)
{
	uint32_t rows = r->by_start ? timeline_rows(r->by_start) : 0;

	memset(out, 0, sizeof(*out));
	snprintf(out->policy, sizeof(out->policy), "%s", policy);
	out->clients = clients;
	out->successes = r->ok;
	out->failures = clients > r->ok ? clients - r->ok : 0;
	out->calls = r->calls;
	out->retries = r->retries;
	out->completion_ns = r->last_ok_ns;
	out->wall_ns = r->wall_ns;
	out->bins = calloc(rows ? rows : 1, sizeof(*out->bins));
	if (out->bins == NULL)
		return -1;
	out->nbins = rows;
	for (uint32_t i = 0; i < rows; i++)
		bin_of_row(r->by_start, i, &out->bins[i]);
	herd_result_peaks(out);
	return 0;
}

void herd_result_destroy(struct herd_result *r)
{
	free(r->bins);
	r->bins = NULL;
	r->nbins = 0;
}

uint32_t herd_bin_attempts(const struct herd_bin *b)
{
	return b->ok + b->rejected + b->conflict + b->other;
}

void herd_result_peaks(struct herd_result *r)
{
	const uint32_t w = (uint32_t)(HERD_PEAK_NS / HERD_BIN_NS);
	uint64_t att = 0, ret = 0;

	r->peak_attempts = r->peak_retries = 0;
	for (uint32_t i = 0; i < r->nbins; i++) {
		att += herd_bin_attempts(&r->bins[i]);
		ret += r->bins[i].retries;
		if (i >= w) {
			att -= herd_bin_attempts(&r->bins[i - w]);
			ret -= r->bins[i - w].retries;
		}
		if (att > r->peak_attempts)
			r->peak_attempts = att;
		if (ret > r->peak_retries)
			r->peak_retries = ret;
	}
}

static double per_client(const struct herd_result *r)
{
	return r->clients ? (double)r->calls / (double)r->clients : 0.0;
}

void herd_report_row(FILE *f, const struct herd_result *r, bool header)
{
	char done[32];

	if (header)
		fprintf(f, "%-14s %7s %7s %7s %8s %9s %11s %14s\n", "policy", "ok", "failed", "calls",
		        "calls/cl", "done in", "peak/100ms", "retries/100ms");
	if (r->successes)
		parse_format_duration(r->completion_ns, done, sizeof(done));
	else
		snprintf(done, sizeof(done), "-");
	fprintf(f, "%-14s %7llu %7llu %7llu %8.2f %9s %11llu %14llu\n", r->policy,
	        (unsigned long long)r->successes, (unsigned long long)r->failures,
	        (unsigned long long)r->calls, per_client(r), done,
	        (unsigned long long)r->peak_attempts, (unsigned long long)r->peak_retries);
}

uint32_t herd_report_rows100(const struct herd_result *r)
{
	return (r->nbins + FINE_PER_ROW - 1) / FINE_PER_ROW;
}

bool herd_report_row100(const struct herd_result *r, uint32_t row, struct herd_bin *out)
{
	memset(out, 0, sizeof(*out));
	if (row >= herd_report_rows100(r))
		return false;
	for (uint32_t i = row * FINE_PER_ROW; i < (row + 1) * FINE_PER_ROW && i < r->nbins; i++) {
		out->ok += r->bins[i].ok;
		out->rejected += r->bins[i].rejected;
		out->conflict += r->bins[i].conflict;
		out->other += r->bins[i].other;
		out->retries += r->bins[i].retries;
	}
	return true;
}

static int write_csv(const char *dir, const struct herd_result *r, char *err, size_t errlen)
{
	char name[64];
	struct herd_bin b;
	FILE *f;

	snprintf(name, sizeof(name), "%s.csv", r->policy);
	if (!(f = report_dir_open(dir, name, err, errlen)))
		return -1;
	fprintf(f, "t_s,attempts,ok,rejected,conflict,other,retries\n");
	for (uint32_t row = 0; herd_report_row100(r, row, &b); row++)
		fprintf(f, "%.1f,%u,%u,%u,%u,%u,%u\n", row / 10.0, herd_bin_attempts(&b), b.ok, b.rejected,
		        b.conflict, b.other, b.retries);
	return report_close_out(f, name, err, errlen);
}

/* Text into HTML: the markup characters escaped. */
static void html_text(FILE *f, const char *s)
{
	for (; *s; s++)
		fputs(*s == '<' ? "&lt;" : *s == '>' ? "&gt;" : *s == '&' ? "&amp;" : *s == '"' ? "&quot;"
		                                                           : (char[2]){ *s, 0 }, f);
}

static json_t *result_json(const struct herd_result *r)
{
	return json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:I, s:I, s:f}",
	                 "policy", r->policy, "clients", (json_int_t)r->clients,
	                 "successes", (json_int_t)r->successes, "failures", (json_int_t)r->failures,
	                 "calls", (json_int_t)r->calls, "retries", (json_int_t)r->retries,
	                 "calls_per_client", per_client(r),
	                 "completion_s", (double)r->completion_ns / NS_PER_SEC,
	                 "peak_attempts_per_100ms", (json_int_t)r->peak_attempts,
	                 "peak_retries_per_100ms", (json_int_t)r->peak_retries,
	                 "wall_s", (double)r->wall_ns / NS_PER_SEC);
}

static int write_json(const char *dir, const struct herd_report_info *in, const struct herd_result *res,
                      size_t n, char *err, size_t errlen)
{
	char path[1024];
	json_t *pol = json_array();
	json_t *doc = json_pack("{s:s, s:I, s:I, s:s?, s:I, s:I, s:f, s:f, s:I, s:o}",
	                        "workload", in->workload, "clients", (json_int_t)in->clients,
	                        "seed", (json_int_t)in->seed, "limiter", in->limiter,
	                        "limit", (json_int_t)in->limit, "burst", (json_int_t)in->burst,
	                        "base_s", (double)in->base_ns / NS_PER_SEC, "cap_s", (double)in->cap_ns / NS_PER_SEC,
	                        "max_attempts", (json_int_t)in->max_attempts, "policies", pol);
	int rc = -1;

	if (!doc)
		goto fail;
	json_object_set_new(doc, "interrupted", json_boolean(in->interrupted));
	json_object_set_new(doc, "policies_planned", json_integer((json_int_t)(in->planned ? in->planned : n)));
	json_object_set_new(doc, "server", json_pack("{s:b, s:s?, s:s?}", "external", in->url != NULL, "url", in->url,
	                                             "ratelimit_policy", in->server_policy));
	for (size_t i = 0; i < n; i++)
		if (json_array_append_new(pol, result_json(&res[i])) != 0)
			goto fail;
	snprintf(path, sizeof(path), "%s/results.json", dir);
	rc = json_dump_file(doc, path, JSON_INDENT(2)) == 0 ? 0 : -1;
fail:
	if (rc != 0)
		snprintf(err, errlen, "cannot write %s/results.json", dir);
	json_decref(doc);
	return rc;
}

static const char HTML_HEAD[] =
	"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	"<title>ratelab herd</title>\n<style>\n"
	"body{font:clamp(15px,1.1vw,24px)/1.4 system-ui,sans-serif;margin:1em;color:#111}\n"
	".lanes{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,860px),1fr));gap:0 1em}\n"
	"h1{font-size:1.5em;margin:.2em 0}\n"
	"table{border-collapse:collapse;margin:.8em 0;font-variant-numeric:tabular-nums}"
	"td,th{padding:.15em .6em;text-align:right;border-bottom:1px solid #ccc}"
	"td:first-child,th:first-child{text-align:left}\n"
	"svg.lane{display:block;width:100%;height:auto;margin:0 0 .3em 0;background:#f7f7f7}\n"
	".key span{display:inline-block;width:.9em;height:.9em;margin:0 .3em 0 1em;vertical-align:-.1em}\n"
	".note{font-weight:600}\n</style></head><body>\n";

/* Outcome colours (Okabe-Ito, the same under the common colour-vision deficiencies):
 * admitted, rejected (429/503), conflict (409), other. */
static const char *const COLOUR[4] = { "#0072b2", "#e69f00", "#cc79a7", "#8c8c8c" };

/* A lane's geometry in its viewBox units: the lane scales with the window. */
#define VB_W 1000.0
#define VB_H 150.0
#define PLOT_X 190.0                 /* the policy's name and figures go left of it */
#define PLOT_W (VB_W - PLOT_X - 16)
#define PLOT_Y 14.0
#define PLOT_H (VB_H - PLOT_Y - 30)  /* below: the time axis */

static void html_table(FILE *f, const struct herd_result *res, size_t n)
{
	char done[32];

	fprintf(f, "<table id=\"results\"><tr><th>policy</th><th>ok</th><th>failed</th><th>calls</th>"
	        "<th>calls/client</th><th>done in</th><th>peak/100ms</th><th>retries/100ms</th></tr>\n");
	for (size_t i = 0; i < n; i++) {
		const struct herd_result *r = &res[i];

		if (r->successes)
			parse_format_duration(r->completion_ns, done, sizeof(done));
		else
			snprintf(done, sizeof(done), "-");
		fprintf(f, "<tr><td>%s</td><td>%llu</td><td>%llu</td><td>%llu</td><td>%.2f</td><td>%s</td>"
		        "<td>%llu</td><td>%llu</td></tr>\n", r->policy, (unsigned long long)r->successes,
		        (unsigned long long)r->failures, (unsigned long long)r->calls, per_client(r), done,
		        (unsigned long long)r->peak_attempts, (unsigned long long)r->peak_retries);
	}
	fprintf(f, "</table>\n");
}

/* The lanes' one scale: log, its top a power of ten over the tallest 100 ms bar of any lane. */
static struct svg_scale lanes_scale(const struct herd_result *res, size_t n)
{
	struct herd_bin b;
	uint32_t top = 1;

	for (size_t i = 0; i < n; i++)
		for (uint32_t row = 0; herd_report_row100(&res[i], row, &b); row++)
			if (herd_bin_attempts(&b) > top)
				top = herd_bin_attempts(&b);
	return svg_scale_log(top);
}

/* One 100 ms bar, every outcome stacked (the first volley's rejections too). */
static void lane_bar(FILE *f, const struct svg_area *a, const struct svg_scale *s, const struct herd_bin *b,
                     uint32_t row, double bw)
{
	static const char *const NAMES[4] = { "admitted", "rejected", "conflict", "other" };
	const uint64_t parts[4] = { b->ok, b->rejected, b->conflict, b->other };

	fprintf(f, "<g data-row=\"%u\">", row);
	svg_stack(f, a, s, a->x + row * bw, bw > 1.5 ? bw - 0.5 : bw, parts, COLOUR, NAMES, 4);
	fprintf(f, "</g>");
}

static void html_lane(FILE *f, const struct herd_result *r, uint32_t rows, const struct svg_scale *s)
{
	const struct svg_area a = { PLOT_X, PLOT_Y, PLOT_W, PLOT_H };
	char calls[48];
	struct herd_bin b;

	fprintf(f, "<svg class=\"lane\" data-policy=\"%s\" data-top=\"%g\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" "
	        "aria-label=\"%s: attempts per 100 ms\" xmlns=\"http://www.w3.org/2000/svg\">", r->policy, s->top, VB_W,
	        VB_H, r->policy);
	svg_text(f, 6, PLOT_Y + 30, "font-size=\"18\" font-weight=\"bold\"", r->policy);
	snprintf(calls, sizeof(calls), "%llu calls", (unsigned long long)r->calls);
	svg_text(f, 6, PLOT_Y + 52, "font-size=\"14\"", calls);
	svg_text(f, 6, PLOT_Y + 72, "font-size=\"13\" fill=\"#555\"", "per 100 ms, log scale");
	svg_axis_y(f, &a, s, 13);
	for (uint32_t row = 0; herd_report_row100(r, row, &b); row++)
		if (herd_bin_attempts(&b))
			lane_bar(f, &a, s, &b, row, PLOT_W / rows);
	svg_axis_time(f, &a, rows / 10.0, 10, 14);
	fprintf(f, "</svg>\n");
}

/* What ran on the other end: the in-process server's limiter, or the external one as it described itself. */
static void html_server(FILE *f, const struct herd_report_info *in)
{
	if (!in->url) {
		fprintf(f, "server: in process, %s %llu/s burst %llu, one key for every client", in->limiter,
		        (unsigned long long)in->limit, (unsigned long long)in->burst);
		return;
	}
	fprintf(f, "server: external, ");
	html_text(f, in->url);
	if (in->server_policy) {
		fprintf(f, ", RateLimit-Policy <code>");
		html_text(f, in->server_policy);
		fprintf(f, "</code>");
	} else {
		fprintf(f, " (it sent no RateLimit-Policy)");
	}
}

static void html_body(FILE *f, const struct herd_report_info *in, const struct herd_result *res, size_t n)
{
	struct svg_scale scale;
	uint32_t rows = 10;

	for (size_t i = 0; i < n; i++)
		if (herd_report_rows100(&res[i]) > rows)
			rows = herd_report_rows100(&res[i]);
	fprintf(f, "<h1>Thundering herd: %u clients, %s workload</h1>\n", in->clients, in->workload);
	if (in->interrupted)
		fprintf(f, "<p class=\"note\">Interrupted (Ctrl-C) after %zu of %zu policies: the lanes and rows below "
		        "are the policies that finished.</p>\n", n, in->planned);
	fprintf(f, "<p>Every client fires at t=0 and retries under its policy. Each lane shows attempts per "
	        "100&nbsp;ms, every lane on the same time axis and the same <b>log scale</b> (0, 1, 10, 100, ...: "
	        "each step up is ten times more), so heights compare from lane to lane; a bar's colours split it "
	        "by outcome, in proportion. The first bar is the first volley, rejections and all. Without jitter "
	        "the retries come back in synchronized waves; with jitter they spread out.</p>\n");
	fprintf(f, "<p class=\"key\"><span style=\"background:%s\"></span>admitted (2xx)<span style=\"background:"
	        "%s\"></span>rejected (429/503)<span style=\"background:%s\"></span>conflict (409)<span "
	        "style=\"background:%s\"></span>other</p>\n", COLOUR[0], COLOUR[1], COLOUR[2], COLOUR[3]);
	scale = lanes_scale(res, n);
	fprintf(f, "<div class=\"lanes\">\n");
	for (size_t i = 0; i < n; i++)
		html_lane(f, &res[i], rows, &scale);
	fprintf(f, "</div>\n");
	html_table(f, res, n);
	fprintf(f, "<p>seed %llu; backoff base %.3gs, cap %.3gs, %u attempts; ", (unsigned long long)in->seed,
	        (double)in->base_ns / NS_PER_SEC, (double)in->cap_ns / NS_PER_SEC, in->max_attempts);
	html_server(f, in);
	fprintf(f, ".</p>\n");
}

int herd_report_write(const char *dir, const struct herd_report_info *info, const struct herd_result *res,
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
