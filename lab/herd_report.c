#include "lab/herd_report.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/clock.h"
#include "common/parse.h"
#include "common/timeline.h"
#include "hammer/report.h"

#define LANE_W 900
#define LANE_H 110
#define LANE_LEFT 110
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

static FILE *open_in(const char *dir, const char *name, char *err, size_t errlen)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return report_open_out(path, err, errlen);
}

static int write_csv(const char *dir, const struct herd_result *r, char *err, size_t errlen)
{
	char name[64];
	struct herd_bin b;
	FILE *f;

	snprintf(name, sizeof(name), "%s.csv", r->policy);
	if (!(f = open_in(dir, name, err, errlen)))
		return -1;
	fprintf(f, "t_s,attempts,ok,rejected,conflict,other,retries\n");
	for (uint32_t row = 0; herd_report_row100(r, row, &b); row++)
		fprintf(f, "%.1f,%u,%u,%u,%u,%u,%u\n", row / 10.0, herd_bin_attempts(&b), b.ok, b.rejected,
		        b.conflict, b.other, b.retries);
	return report_close_out(f, name, err, errlen);
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
	"<title>ratelab herd</title>\n<style>\n"
	"body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1060px}\n"
	"table{border-collapse:collapse;margin:12px 0}td,th{padding:3px 10px;text-align:right;"
	"border-bottom:1px solid #ddd}td:first-child,th:first-child{text-align:left}\n"
	"svg.lane{display:block;margin:0 0 6px 0;background:#fafafa}\n"
	".key span{display:inline-block;width:12px;height:12px;margin:0 4px 0 14px;vertical-align:middle}\n"
	"#lane-sizes{color:#999;font-size:11px}\n</style></head><body>\n";

/* Outcome colours: admitted, rejected (429/503), conflict (409), other. */
static const char *const COLOUR[4] = { "#2e9d4f", "#d9412b", "#8e44ad", "#888888" };

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

/* The shared y scale: the tallest 100 ms bar after the first volley, at least `floor`. */
static uint32_t lanes_ymax(const struct herd_result *res, size_t n, uint32_t floor)
{
	struct herd_bin b;
	uint32_t ymax = floor ? floor : 1;

	for (size_t i = 0; i < n; i++)
		for (uint32_t row = 1; herd_report_row100(&res[i], row, &b); row++)
			if (herd_bin_attempts(&b) > ymax)
				ymax = herd_bin_attempts(&b);
	return ymax;
}

/* One stacked bar; taller than the lane is clipped and labelled with its count. */
static void lane_bar(FILE *f, const struct herd_bin *b, double x, double bw, uint32_t ymax)
{
	const uint32_t parts[4] = { b->ok, b->rejected, b->conflict, b->other };
	double plot_h = LANE_H - 22, y = LANE_H - 18, scale = plot_h / ymax;
	uint32_t total = herd_bin_attempts(b);

	if (total > ymax)
		scale = plot_h / total;
	for (int k = 0; k < 4; k++) {
		double h = parts[k] * scale;

		if (parts[k] == 0)
			continue;
		y -= h;
		fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"/>", x, y,
		        bw > 1.5 ? bw - 0.5 : bw, h, COLOUR[k]);
	}
	if (total > ymax)
		fprintf(f, "<text x=\"%.1f\" y=\"10\" font-size=\"10\">&#9650;%u</text>", x + bw + 2, total);
}

static void lane_axis(FILE *f, uint32_t rows, double bw)
{
	uint32_t step = rows > 300 ? 100 : rows > 100 ? 50 : 10;

	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#444\"/>", LANE_LEFT, LANE_H - 18,
	        LANE_LEFT + LANE_W, LANE_H - 18);
	for (uint32_t row = 0; row <= rows; row += step)
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"10\" fill=\"#444\">%.0fs</text>",
		        LANE_LEFT + row * bw, LANE_H - 5, row / 10.0);
}

static void html_lane(FILE *f, const struct herd_result *r, uint32_t rows, uint32_t ymax)
{
	double bw = (double)LANE_W / rows;
	struct herd_bin b;

	fprintf(f, "<svg class=\"lane\" data-policy=\"%s\" width=\"%d\" height=\"%d\" "
	        "viewBox=\"0 0 %d %d\" xmlns=\"http://www.w3.org/2000/svg\">", r->policy,
	        LANE_LEFT + LANE_W + 40, LANE_H, LANE_LEFT + LANE_W + 40, LANE_H);
	fprintf(f, "<text x=\"4\" y=\"40\" font-size=\"14\" font-weight=\"bold\">%s</text>"
	        "<text x=\"4\" y=\"58\" font-size=\"11\">%llu calls</text>", r->policy,
	        (unsigned long long)r->calls);
	for (uint32_t row = 0; herd_report_row100(r, row, &b); row++)
		if (herd_bin_attempts(&b))
			lane_bar(f, &b, LANE_LEFT + row * bw, bw, ymax);
	lane_axis(f, rows, bw);
	fprintf(f, "</svg>\n");
}

static const char HTML_SCRIPT[] =
	"<pre id=\"lane-sizes\"></pre>\n<script>\n"
	"(function(){var out=[];document.querySelectorAll('svg.lane').forEach(function(s){"
	"var r=s.getBoundingClientRect();out.push('lane '+s.getAttribute('data-policy')+' '+"
	"Math.round(r.width)+'x'+Math.round(r.height)+' bars '+s.querySelectorAll('rect').length);});"
	"document.getElementById('lane-sizes').textContent=out.join('\\n');})();\n</script>\n";

static void html_body(FILE *f, const struct herd_report_info *in, const struct herd_result *res, size_t n)
{
	uint32_t rows = 10, ymax = lanes_ymax(res, n, in->clients);

	for (size_t i = 0; i < n; i++)
		if (herd_report_rows100(&res[i]) > rows)
			rows = herd_report_rows100(&res[i]);
	fprintf(f, "<h1>Thundering herd: %u clients, %s workload</h1>\n<p>Every client fires at t=0 and "
	        "retries under its policy. Each lane shows attempts per 100&nbsp;ms on one shared time axis "
	        "and one shared scale (a bar taller than the lane is squeezed and marked &#9650; with its "
	        "count). Without jitter the retries come back in synchronized waves; with jitter they "
	        "spread out.</p>\n", in->clients, in->workload);
	fprintf(f, "<p class=\"key\"><span style=\"background:%s\"></span>admitted (2xx)<span style=\"background:"
	        "%s\"></span>rejected (429/503)<span style=\"background:%s\"></span>conflict (409)<span "
	        "style=\"background:%s\"></span>other</p>\n", COLOUR[0], COLOUR[1], COLOUR[2], COLOUR[3]);
	for (size_t i = 0; i < n; i++)
		html_lane(f, &res[i], rows, ymax);
	html_table(f, res, n);
	fprintf(f, "<p>seed %llu; backoff base %.3gs, cap %.3gs, %u attempts; server: %s %llu/s burst %llu.</p>\n",
	        (unsigned long long)in->seed, (double)in->base_ns / NS_PER_SEC, (double)in->cap_ns / NS_PER_SEC,
	        in->max_attempts, in->limiter ? in->limiter : "(--url)", (unsigned long long)in->limit,
	        (unsigned long long)in->burst);
}

int herd_report_write(const char *dir, const struct herd_report_info *info, const struct herd_result *res,
                      size_t n, char *err, size_t errlen)
{
	FILE *f;

	if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (write_csv(dir, &res[i], err, errlen) != 0)
			return -1;
	if (write_json(dir, info, res, n, err, errlen) != 0)
		return -1;
	if (!(f = open_in(dir, "report.html", err, errlen)))
		return -1;
	fputs(HTML_HEAD, f);
	html_body(f, info, res, n);
	fputs(HTML_SCRIPT, f);
	fputs("</body></html>\n", f);
	return report_close_out(f, "report.html", err, errlen);
}
