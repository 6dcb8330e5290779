#ifndef RATELAB_RATE_SCHEDULE_H
#define RATELAB_RATE_SCHEDULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * An open-loop arrival rate that follows a schedule: piecewise-constant
 * segments on the run's clock, written "100/s,300/s@10s+3s,100/s" (100 per
 * second, then 300 per second from 10 s for 3 s, then 100 per second).
 *
 * Each comma-separated item is RATE[@START[+LEN]].  RATE is what --rate takes
 * (50, 2.5, 30/1m, 100/s) or 0 for a pause.  START and LEN are durations from
 * the run's start.  An item without @START starts where the item before it
 * ends (the first at 0); an item without +LEN lasts until the next item's
 * START, or for ever when it is the last.  Items may leave gaps (no
 * arrivals) but never overlap.  Pure; the struct is plain data.
 */

#define RATE_SCHEDULE_MAX 16
#define RATE_SCHEDULE_OPEN UINT64_MAX    /* a segment that never ends */

struct rate_segment {
	double rate;            /* arrivals per second */
	uint64_t start_ns;
	uint64_t end_ns;        /* RATE_SCHEDULE_OPEN: until the end of the run */
};

struct rate_schedule {
	struct rate_segment seg[RATE_SCHEDULE_MAX];
	unsigned n;
};

/*
 * Parse s into *out (rates from 0 to max_rate per second; some segment must
 * be above 0).  Returns 0, or -1 with a one-line reason in err ("item 2
 * '300/s@x': '@x' is not a start such as @10s"), *out then unspecified.
 */
int rate_schedule_parse(const char *s, double max_rate, struct rate_schedule *out, char *err, size_t errlen);

/* One segment at `rate` from 0 for ever. */
void rate_schedule_constant(struct rate_schedule *out, double rate);

/* True when s is one segment from 0 for ever (a plain --rate). */
bool rate_schedule_is_constant(const struct rate_schedule *s);

/* The rate at t_ns (0 in a gap and past the end). */
double rate_schedule_rate(const struct rate_schedule *s, uint64_t t_ns);

/* The highest rate of any segment. */
double rate_schedule_peak(const struct rate_schedule *s);

/* Arrivals the schedule makes in [0, t_ns): the integral of the rate. */
double rate_schedule_count(const struct rate_schedule *s, uint64_t t_ns);

/*
 * The first instant at which rate_schedule_count reaches `count` (count >= 0),
 * so arrival j of a constant process falls at rate_schedule_time(s, j);
 * UINT64_MAX when the schedule never makes that many.
 */
uint64_t rate_schedule_time(const struct rate_schedule *s, double count);

/* "100/s, then 300/s from 10s for 3s, then 100/s", truncated to len. */
void rate_schedule_describe(const struct rate_schedule *s, char *buf, size_t len);

#endif
