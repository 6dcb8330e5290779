#ifndef RATELAB_SERIES_H
#define RATELAB_SERIES_H

#include <stdbool.h>
#include <stdint.h>

/*
 * A time series: one row of `width` uint64 counters per interval_ns.  The
 * row of a time t is (t - origin_ns) / interval_ns (0 for t before the
 * origin); callers name rows by that number.  Two shapes:
 *
 * SERIES_FROM_START  rows 0 .. max_rows - 1 from the origin; a write past
 *                    the end lands in the last row.  Storage grows as rows
 *                    are written (`reserve` rows are allocated up front, so
 *                    writes to them never fail).  series_rows() is one past
 *                    the last row written.
 * SERIES_RING        the max_rows most recent rows: a row's slot is reused
 *                    by the row max_rows later, and a row no longer held
 *                    reads as zeros.  Nothing grows after series_new.
 *
 * A column is a count (series_add), or a level: a bit set in `levels`
 * makes columns c and c + 1 one level, c its value at the row's last
 * series_level and c + 1 its peak in the row.  In a FROM_START series a row
 * first written after row k starts every level at row k's value (rows
 * skipped in between get it too), so a level carries over quiet rows.
 *
 * Memory is max_rows x width x 8 bytes at most.  Thread-safety: with
 * `shared`, series_add and series_get on a RING may race with each other
 * (relaxed atomics; the first writer of a recycled row clears it, and a
 * write racing that clear may be lost); otherwise one thread at a time.
 */
#define SERIES_MAX_WIDTH 32
#define SERIES_100MS (100ULL * 1000 * 1000)

enum series_shape { SERIES_FROM_START, SERIES_RING };

struct series_params {
	enum series_shape shape;
	uint64_t interval_ns;     /* > 0 */
	uint64_t origin_ns;
	uint64_t max_rows;        /* > 0 */
	uint64_t reserve;         /* FROM_START: rows allocated up front (<= max_rows) */
	unsigned width;           /* columns, 1 .. SERIES_MAX_WIDTH */
	uint32_t levels;          /* bit c: columns c, c + 1 are a level (FROM_START only) */
	bool shared;              /* RING: writers on several threads */
};

struct series;

/* A new zeroed series, or NULL (bad params, out of memory). */
struct series *series_new(const struct series_params *p);
void series_free(struct series *s);

/*
 * FROM_START: room for the first `rows` rows (at most max_rows) in one
 * allocation, so filling them reallocates nothing.  0, or -1 when out of
 * memory.  A ring has all its rows already: 0.
 */
int series_reserve(struct series *s, uint64_t rows);

/* The row time now_ns falls in (0 before the origin).  Pure. */
uint64_t series_row_of(const struct series *s, uint64_t now_ns);

/*
 * Add n to column col of row.  Returns 0, or -1 (nothing counted) when a
 * FROM_START series cannot grow, col is past the width or a ring is given
 * row UINT64_MAX.
 */
int series_add(struct series *s, uint64_t row, unsigned col, uint64_t n);

/* Set level col of row to v (and its peak, col + 1, to v if higher).  Returns 0 or -1 as series_add. */
int series_level(struct series *s, uint64_t row, unsigned col, uint64_t v);

/* Column col of row: 0 for a row never written, past series_rows, or no longer held by a ring. */
uint64_t series_get(const struct series *s, uint64_t row, unsigned col);

/* FROM_START: one past the last row written (0 when none).  RING: 0. */
uint64_t series_rows(const struct series *s);

/* The sum of column col over rows [from, to] (inclusive, as series_get reads them; at most the last max_rows). */
uint64_t series_sum(const struct series *s, uint64_t from, uint64_t to, unsigned col);

uint64_t series_interval_ns(const struct series *s);

/*
 * Zero every row and move the origin to origin_ns.  A shared RING may be
 * cleared while others write, if its origin stays the same; a racing
 * series_add may then survive into the cleared rows.
 */
void series_clear(struct series *s, uint64_t origin_ns);

#endif
