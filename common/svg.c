/* SVG pieces: text, rectangles, lines, scales, axes and stacked bars. */
#include "common/svg.h"

#include <math.h>

#include "common/ticks.h"

struct svg_scale svg_scale_linear(double peak)
{
	struct svg_scale s = { SVG_LINEAR, 1, 1 };

	if (peak < 1)
		peak = 1;
	s.step = ticks_step_at_least(peak, 5, 1);
	s.top = ceil(peak / s.step) * s.step;
	return s;
}

struct svg_scale svg_scale_log(double peak)
{
	static const double M[3] = { 1, 2, 5 };
	struct svg_scale s = { SVG_LOG, 10, 10 };

	for (double p = 10; s.top < peak; p *= 10)
		for (int i = 0; i < 3 && s.top < peak; i++)
			s.top = M[i] * p;
	return s;
}

/* Where v sits between the bottom (0) and the top (1) of s; over the top is 1. */
static double fraction(const struct svg_scale *s, double v)
{
	double f;

	if (v <= 0)
		return 0;
	f = s->kind == SVG_LOG ? log10(1 + v) / log10(1 + s->top) : v / s->top;
	return f > 1 ? 1 : f;
}

double svg_y(const struct svg_area *a, const struct svg_scale *s, double v)
{
	return a->y + a->h - a->h * fraction(s, v);
}

void svg_text(FILE *f, double x, double y, const char *attrs, const char *text)
{
	fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" %s>", x, y, attrs);
	for (const char *p = text; p != NULL && *p; p++) {
		if (*p == '<')
			fputs("&lt;", f);
		else if (*p == '>')
			fputs("&gt;", f);
		else if (*p == '&')
			fputs("&amp;", f);
		else
			fputc(*p, f);
	}
	fputs("</text>\n", f);
}

void svg_rect(FILE *f, double x, double y, double w, double h, const char *fill, const char *attrs)
{
	fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\" %s/>\n", x, y, w, h, fill,
	        attrs);
}

void svg_line(FILE *f, double x1, double y1, double x2, double y2, const char *stroke, const char *attrs)
{
	fprintf(f, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"%s\" %s/>\n", x1, y1, x2, y2, stroke,
	        attrs);
}

bool svg_stack(FILE *f, const struct svg_area *a, const struct svg_scale *s, double x, double w,
               const uint64_t *parts, const char *const *fills, const char *const *names, size_t n)
{
	double total = 0, height, y = a->y + a->h;
	char attrs[64];

	for (size_t k = 0; k < n; k++)
		total += (double)parts[k];
	if (total <= 0)
		return false;
	height = a->h * fraction(s, total);
	for (size_t k = 0; k < n; k++) {
		double h = height * (double)parts[k] / total;

		if (parts[k] == 0)
			continue;
		y -= h;
		snprintf(attrs, sizeof(attrs), "data-part=\"%s\"", names[k]);
		svg_rect(f, x, y, w, h, fills[k], attrs);
	}
	return total > s->top;
}

/* One y tick: its grid line and (labelled) its label (class ytick) left of the area. */
static void y_tick(FILE *f, const struct svg_area *a, const struct svg_scale *s, double v, int dec, double font,
                   bool labelled)
{
	double y = svg_y(a, s, v);
	char label[32], attrs[80];

	svg_line(f, a->x, y, a->x + a->w, y, v > 0 ? "#e2e2e2" : "#444", "");
	if (!labelled)
		return;
	snprintf(attrs, sizeof(attrs), "class=\"ytick\" font-size=\"%g\" text-anchor=\"end\"", font);
	svg_text(f, a->x - 4, y + font * 0.35, attrs, ticks_label(v, dec, NULL, label, sizeof(label)));
}

void svg_axis_y(FILE *f, const struct svg_area *a, const struct svg_scale *s, double font)
{
	if (s->kind == SVG_LINEAR) {
		for (int i = 0; i * s->step <= s->top + 1e-9; i++)
			y_tick(f, a, s, i * s->step, ticks_decimals(s->step), font, true);
		return;
	}
	/* 0 is the base line: its label would sit on the 1's, a few units above it. */
	y_tick(f, a, s, 0, 0, font, false);
	for (double v = 1; v <= s->top + 1e-9; v *= 10)
		y_tick(f, a, s, v, 0, font, true);
	/* A top between powers of ten gets its label when it clears the power below by a line. */
	if (fabs(log10(s->top) - round(log10(s->top))) > 1e-9) {
		double below = svg_y(a, s, pow(10, floor(log10(s->top))));

		y_tick(f, a, s, s->top, 0, font, svg_y(a, s, s->top) < below - 1.4 * font);
	}
}

void svg_axis_time(FILE *f, const struct svg_area *a, double span_s, unsigned most, double font)
{
	double step = ticks_step(span_s > 0 ? span_s : 1, most), bottom = a->y + a->h;
	int dec = ticks_decimals(step);
	char label[32], attrs[80];

	svg_line(f, a->x, bottom, a->x + a->w, bottom, "#444", "");
	for (int k = 0; k * step <= span_s + 1e-9; k++) {
		double x = a->x + a->w * (k * step) / span_s;

		snprintf(attrs, sizeof(attrs), "font-size=\"%g\" fill=\"#333\" text-anchor=\"%s\"", font,
		         x > a->x + a->w - 20 ? "end" : k == 0 ? "start" : "middle");
		svg_text(f, x, bottom + font * 1.25, attrs, ticks_label(k * step, dec, "s", label, sizeof(label)));
	}
}
