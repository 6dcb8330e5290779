#ifndef RATELAB_SVG_H
#define RATELAB_SVG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * The SVG pieces every ratelab picture is drawn with (hammer --plot, the
 * herd and storm reports): escaped text, rectangles and lines, a y scale
 * (linear on 1-2-5 ticks, or log on powers of ten, labelled as such), the
 * y and time axes, and stacked bars drawn to a scale.  A picture that draws
 * several lanes on one scale passes the same struct svg_scale to each, so
 * heights compare.  Everything writes to a FILE the caller owns; pure but
 * for that; thread-safe in not sharing f.
 */

/* A plot's rectangle in the SVG's user units: (x, y) its top left. */
struct svg_area {
	double x, y, w, h;
};

enum svg_scale_kind {
	SVG_LINEAR,   /* 0 at the bottom, top at the top */
	SVG_LOG,      /* log10(1 + v): 0 at the bottom, each power of ten one step up */
};

struct svg_scale {
	enum svg_scale_kind kind;
	double top;       /* the value at the area's top (> 0) */
	double step;      /* linear: the tick step; log: 10 */
};

/* A linear scale whose top is a whole 1-2-5 step (at least 1) over peak. */
struct svg_scale svg_scale_linear(double peak);

/* A log scale whose top is the first 1, 2 or 5 times a power of ten at or over peak (at least 10). */
struct svg_scale svg_scale_log(double peak);

/* The y of value v in a (v over the top is drawn at the top). */
double svg_y(const struct svg_area *a, const struct svg_scale *s, double v);

/* <text> at (x, y) with attrs (e.g. "font-size=\"12\"", or "") and text escaped. */
void svg_text(FILE *f, double x, double y, const char *attrs, const char *text);

/* <rect> with fill and extra attrs ("" for none). */
void svg_rect(FILE *f, double x, double y, double w, double h, const char *fill, const char *attrs);

/* <line> with stroke and extra attrs ("" for none). */
void svg_line(FILE *f, double x1, double y1, double x2, double y2, const char *stroke, const char *attrs);

/*
 * One bar at x, w wide, of n parts stacked from the bottom (parts[0] first),
 * its height the scale's height of their sum, each part its share of it:
 * on a linear scale that is each part's own height, on a log scale the
 * colours split one log-high bar by share.  A bar over the top is cut there.
 * Each drawn part is a <rect fill="fills[k]" data-part="names[k]">.  Returns
 * true when the bar was cut.
 */
bool svg_stack(FILE *f, const struct svg_area *a, const struct svg_scale *s, double x, double w,
               const uint64_t *parts, const char *const *fills, const char *const *names, size_t n);

/*
 * The y axis: a label at each tick left of the area (class "ytick", font
 * size font) and a light grid line across it.  A log scale labels its
 * powers of ten (and its top, when there is room), not 0: the caller says
 * "log scale" where it names the axis.
 */
void svg_axis_y(FILE *f, const struct svg_area *a, const struct svg_scale *s, double font);

/* The time axis under a: a base line and labels on 1-2-5 steps of seconds over span_s (at most `most`). */
void svg_axis_time(FILE *f, const struct svg_area *a, double span_s, unsigned most, double font);

#endif
