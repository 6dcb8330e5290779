#include "hammer/plot.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/ticks.h"
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

static void draw_rect(FILE *f, double x, double y, double w, double h, const char *fill)
{
	fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"/>\n", x, y, w, h, fill);
}

static void draw_bars(FILE *f, const struct timeline *t, double x0, double y0, double ph,
                      double ns_w, uint64_t y_max)
{
	unsigned cols[TIMELINE_MAX_CODES], n = sorted_columns(t, cols);
	uint32_t g = group_of(t);
	double bw = ns_w * (double)timeline_interval_ns(t) * g;

	for (uint32_t r = 0; r < timeline_rows(t); r += g) {
		double x = x0 + ns_w * (double)r * (double)timeline_interval_ns(t), y = y0 + ph;

		for (unsigned i = 0; i <= n + 1; i++) {
			uint64_t v = 0;
			int code = i < n ? timeline_code(t, cols[i]) : i == n ? 0 : 999;

			for (uint32_t k = r; k < r + g; k++)
				v += i < n ? timeline_count(t, k, cols[i]) : i == n ? timeline_errors(t, k)
				                                                    : timeline_other(t, k);
			if (v == 0)
				continue;
			y -= ph * (double)v / (double)y_max;
			draw_rect(f, x, y, bw > 0.6 ? bw - 0.3 : bw, ph * (double)v / (double)y_max, colour_of(code));
		}
	}
}

/* The top of the y axis: y_max rounded up to a whole 1-2-5 step (a count: steps of at least 1). */
static double axis_top(uint64_t y_max, double *step)
{
	*step = ticks_step_at_least((double)y_max, 5, 1);
	return ceil((double)y_max / *step) * *step;
}

static void draw_axes(FILE *f, double x0, double y0, double pw, double ph, uint64_t y_max, uint64_t x_ns)
{
	double ystep, top = axis_top(y_max, &ystep), span = (double)x_ns / 1e9, xstep = ticks_step(span, 8);
	int dec = ticks_decimals(xstep);
	char label[32];

	fprintf(f, "<path d=\"M%.2f %.2f V%.2f H%.2f\" stroke=\"#000\" fill=\"none\"/>\n", x0, y0, y0 + ph, x0 + pw);
	for (int i = 0; i * ystep <= top + 1e-9; i++)
		fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"11\" text-anchor=\"end\">%s</text>\n", x0 - 4,
		        y0 + ph - ph * (i * ystep) / top + 3, ticks_label(i * ystep, 0, NULL, label, sizeof(label)));
	for (int i = 0; i * xstep <= span + 1e-9; i++)
		fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"11\" text-anchor=\"middle\">%s</text>\n",
		        x0 + pw * (i * xstep) / span, y0 + ph + 14, ticks_label(i * xstep, dec, "s", label, sizeof(label)));
	fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"11\" text-anchor=\"middle\">time since start</text>\n",
	        x0 + pw / 2, y0 + ph + 29);
	fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"11\" transform=\"rotate(-90 %.2f %.2f)\" "
	        "text-anchor=\"middle\">answers per interval</text>\n", x0 - 40, y0 + ph / 2, x0 - 40, y0 + ph / 2);
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
	draw_rect(f, x, y, 10, 10, colour_of(code));
	fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"11\">%s</text>\n", x + 14, y + 9, text);
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

static void draw_text(FILE *f, double x, double y, const char *attrs, const char *text)
{
	fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" %s>", x, y, attrs);
	for (const char *p = text; p != NULL && *p; p++)
		fputs(*p == '<' ? "&lt;" : *p == '&' ? "&amp;" : *p == '>' ? "&gt;" : (char[2]){ *p, 0 }, f);
	fprintf(f, "</text>\n");
}

void plot_lane(FILE *f, const struct timeline *t, const struct plot_box *box, const char *title,
               const char *subtitle)
{
	double pad_t = subtitle ? PAD_T_SUB : PAD_T, x0 = box->x + PAD_L, y0 = box->y + pad_t, ystep;
	double pw = box->w - PAD_L - PAD_R, ph = box->h - pad_t - PAD_B;
	uint64_t y_max = box->y_max ? box->y_max : plot_peak(t);
	uint64_t x_ns = box->x_max_ns ? box->x_max_ns : (uint64_t)timeline_rows(t) * timeline_interval_ns(t);

	if (y_max == 0)
		y_max = 1;
	if (x_ns == 0)
		x_ns = timeline_interval_ns(t);
	fprintf(f, "<g>\n");
	draw_text(f, x0, box->y + 18, "font-size=\"14\" font-weight=\"bold\"", title);
	if (subtitle)
		draw_text(f, x0, box->y + 36, "font-size=\"12\"", subtitle);
	/* Bars are scaled to the axis' top, a whole tick above the peak. */
	draw_bars(f, t, x0, y0, ph, pw / (double)x_ns, (uint64_t)axis_top(y_max, &ystep));
	draw_axes(f, x0, y0, pw, ph, y_max, x_ns);
	draw_legend(f, t, x0 + pw + 16, y0);
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
