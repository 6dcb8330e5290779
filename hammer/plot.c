#include "hammer/plot.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/svg.h"
#include "hammer/report.h"

#define MAX_BARS 600
#define PAD_L 56.0
#define PAD_R 150.0
#define PAD_T 28.0
#define PAD_T_SUB 46.0    /* with a subtitle line under the title */
#define PAD_B 36.0

static const char *colour_of(int code)
{
	if (code == 0)
		return "#455a64";
	if (code == 429)
		return "#f57c00";
	switch (code / 100) {
	case 2: return "#2e7d32";
	case 3: return "#1565c0";
	case 4: return "#fbc02d";
	case 5: return "#c62828";
	default: return "#9e9e9e";
	}
}

static uint64_t row_total(const struct timeline *t, uint32_t r)
{
	uint64_t n = timeline_errors(t, r) + timeline_other(t, r);

	for (unsigned c = 0; c < timeline_ncodes(t); c++)
		n += timeline_count(t, r, c);
	return n;
}

/* Rows per bar so at most MAX_BARS bars are drawn. */
static uint32_t group_of(const struct timeline *t)
{
	return timeline_rows(t) / MAX_BARS + 1;
}

uint64_t plot_peak(const struct timeline *t)
{
	uint32_t g = group_of(t);
	uint64_t peak = 0;

	for (uint32_t r = 0; r < timeline_rows(t); r += g) {
		uint64_t sum = 0;

		for (uint32_t k = r; k < r + g; k++)
			sum += row_total(t, k);
		if (sum > peak)
			peak = sum;
	}
	return peak;
}

/* Column order: codes ascending. */
static unsigned sorted_columns(const struct timeline *t, unsigned *cols)
{
	unsigned n = timeline_ncodes(t);

	for (unsigned i = 0; i < n; i++)
		cols[i] = i;
	for (unsigned i = 1; i < n; i++)
		for (unsigned j = i; j > 0 && timeline_code(t, cols[j]) < timeline_code(t, cols[j - 1]); j--) {
			unsigned tmp = cols[j];

			cols[j] = cols[j - 1];
			cols[j - 1] = tmp;
		}
	return n;
}

/* Each bar: its statuses in ascending order, then transport errors, then other statuses, stacked. */
static void draw_bars(FILE *f, const struct timeline *t, const struct svg_area *a, const struct svg_scale *s,
                      double ns_w)
{
	unsigned cols[TIMELINE_MAX_CODES], n = sorted_columns(t, cols);
	const char *fills[TIMELINE_MAX_CODES + 2], *names[TIMELINE_MAX_CODES + 2];
	char codes[TIMELINE_MAX_CODES][8];
	uint64_t parts[TIMELINE_MAX_CODES + 2];
	uint32_t g = group_of(t);
	double bw = ns_w * (double)timeline_interval_ns(t) * g;

	for (unsigned i = 0; i <= n + 1; i++) {
		int code = i < n ? timeline_code(t, cols[i]) : i == n ? 0 : 999;

		if (i < n)
			snprintf(codes[i], sizeof(codes[i]), "%d", code);
		fills[i] = colour_of(code);
		names[i] = i < n ? codes[i] : i == n ? "error" : "other";
	}
	for (uint32_t r = 0; r < timeline_rows(t); r += g) {
		for (unsigned i = 0; i <= n + 1; i++) {
			parts[i] = 0;
			for (uint32_t k = r; k < r + g; k++)
				parts[i] += i < n ? timeline_count(t, k, cols[i]) : i == n ? timeline_errors(t, k)
				                                                           : timeline_other(t, k);
		}
		svg_stack(f, a, s, a->x + ns_w * (double)r * (double)timeline_interval_ns(t), bw > 0.6 ? bw - 0.3 : bw,
		          parts, fills, names, n + 2);
	}
}

static void draw_axes(FILE *f, const struct svg_area *a, const struct svg_scale *s, uint64_t x_ns)
{
	char rot[96];

	svg_axis_y(f, a, s, 11);
	svg_axis_time(f, a, (double)x_ns / 1e9, 8, 11);
	svg_text(f, a->x + a->w / 2, a->y + a->h + 29, "font-size=\"11\" text-anchor=\"middle\"", "time since start");
	snprintf(rot, sizeof(rot), "font-size=\"11\" text-anchor=\"middle\" transform=\"rotate(-90 %.2f %.2f)\"",
	         a->x - 40, a->y + a->h / 2);
	svg_text(f, a->x - 40, a->y + a->h / 2, rot, "answers per interval");
}

/* True when t has a transport error (code 0) or an uncounted status (999, "other") anywhere. */
static bool has_extra(const struct timeline *t, bool errors)
{
	for (uint32_t r = 0; r < timeline_rows(t); r++)
		if ((errors ? timeline_errors(t, r) : timeline_other(t, r)) > 0)
			return true;
	return false;
}

static void legend_entry(FILE *f, double x, double y, int code, const char *text)
{
	svg_rect(f, x, y, 10, 10, colour_of(code), "");
	svg_text(f, x + 14, y + 9, "font-size=\"11\"", text);
}

/* One entry per status present, then transport errors and other statuses only when there were some. */
static void draw_legend(FILE *f, const struct timeline *t, double x, double y)
{
	unsigned cols[TIMELINE_MAX_CODES], n = sorted_columns(t, cols), k = 0;
	char code[16];

	for (unsigned i = 0; i < n; i++, k++) {
		snprintf(code, sizeof(code), "%d", timeline_code(t, cols[i]));
		legend_entry(f, x, y + 14.0 * k, timeline_code(t, cols[i]), code);
	}
	if (has_extra(t, true))
		legend_entry(f, x, y + 14.0 * k++, 0, "transport error");
	if (has_extra(t, false))
		legend_entry(f, x, y + 14.0 * k++, 999, "other");
}

void plot_lane(FILE *f, const struct timeline *t, const struct plot_box *box, const char *title,
               const char *subtitle)
{
	double pad_t = subtitle ? PAD_T_SUB : PAD_T;
	struct svg_area a = { box->x + PAD_L, box->y + pad_t, box->w - PAD_L - PAD_R, box->h - pad_t - PAD_B };
	/* The y axis tops at a whole tick above the peak. */
	struct svg_scale s = svg_scale_linear((double)(box->y_max ? box->y_max : plot_peak(t)));
	uint64_t x_ns = box->x_max_ns ? box->x_max_ns : (uint64_t)timeline_rows(t) * timeline_interval_ns(t);

	if (x_ns == 0)
		x_ns = timeline_interval_ns(t);
	fprintf(f, "<g>\n");
	svg_text(f, a.x, box->y + 18, "font-size=\"14\" font-weight=\"bold\"", title);
	if (subtitle)
		svg_text(f, a.x, box->y + 36, "font-size=\"12\"", subtitle);
	draw_bars(f, t, &a, &s, a.w / (double)x_ns);
	draw_axes(f, &a, &s, x_ns);
	draw_legend(f, t, a.x + a.w + 16, a.y);
	fprintf(f, "</g>\n");
}

int plot_write_svg(const char *path, const struct timeline *t, const char *title, const char *subtitle, char *err,
                   size_t errlen)
{
	struct plot_box box = { 0, 0, 900, 380, 0, 0 };
	FILE *f = report_open_out(path, err, errlen);

	if (f == NULL)
		return -1;
	/* A viewBox and no fixed size: the drawing scales to the window or the slide it is put in. */
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 900 380\" width=\"100%%\" "
	        "font-family=\"sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n");
	plot_lane(f, t, &box, title, subtitle);
	fprintf(f, "</svg>\n");
	return report_close_out(f, path, err, errlen);
}
