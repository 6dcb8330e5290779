#ifndef RATELAB_TICKS_H
#define RATELAB_TICKS_H

#include <stddef.h>

/*
 * "Nice" axis ticks: steps of 1, 2 or 5 times a power of ten, so an axis
 * reads 0, 2, 4, 6 or 0, 0.5, 1, 1.5, never 0, 2, 4, 7, 9.  Pure.
 */

/* The smallest 1-2-5 step that puts at most `most` steps (most >= 1) over span (> 0). */
double ticks_step(double span, unsigned most);

/* The same, at least min_step (1 for counts: no fractional tick on a count axis). */
double ticks_step_at_least(double span, unsigned most, double min_step);

/* Decimals a tick label needs so that ticks `step` apart all read differently (0 for 1, 1 for 0.5, 2 for 0.05). */
int ticks_decimals(double step);

/* Tick `v` as text with `decimals` decimals and an optional unit ("2s", "0.5s", "40") into buf; returns buf. */
char *ticks_label(double v, int decimals, const char *unit, char *buf, size_t len);

#endif
