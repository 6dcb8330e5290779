#ifndef RATELAB_PLOT_H
#define RATELAB_PLOT_H

#include <stdint.h>
#include <stdio.h>

#include "common/timeline.h"

/*
 * SVG drawings of a timeline: answers per interval stacked by status code
 * (2xx green, 429 orange, other 4xx yellow, 5xx red, transport errors dark
 * grey), with a title, axes on 1-2-5 ticks (common/ticks.h) and a legend of
 * what the timeline holds.
 */

struct plot_box {
	double x, y, w, h;      /* the lane's whole rectangle, title and legend included */
	uint64_t y_max;         /* top of the y axis; 0 = the lane's own peak (herd passes a shared one) */
	uint64_t x_max_ns;      /* right end of the x axis; 0 = the lane's own length */
};

/*
 * Write one lane (a <g> element) into f, an SVG document the caller opened.
 * `title` is drawn above it, and `subtitle` (or NULL) under the title.  The
 * y axis tops at a whole tick over the peak.  Not thread-safe only in sharing f.
 */
void plot_lane(FILE *f, const struct timeline *t, const struct plot_box *box, const char *title,
               const char *subtitle);

/*
 * A whole SVG file (path, "-" = stdout) with one lane, sized by its viewBox
 * (it scales to where it is shown).  Returns 0, or -1 with err.
 */
int plot_write_svg(const char *path, const struct timeline *t, const char *title, const char *subtitle, char *err,
                   size_t errlen);

/* The largest stacked bar of t (answers plus errors in one interval). */
uint64_t plot_peak(const struct timeline *t);

#endif
