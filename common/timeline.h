#ifndef RATELAB_TIMELINE_H
#define RATELAB_TIMELINE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/*
 * Per-interval counts of a run: attempts sent, retries among them, answers
 * by status code and transport errors, in rows of interval_ns from the
 * run's start.  Memory
 * grows with the run's length, never with its number of requests (at most
 * TIMELINE_MAX_ROWS rows; later events land in the last row).  Status codes
 * get a column each, in order of first sight, up to TIMELINE_MAX_CODES;
 * further codes count as "other".  Not thread-safe: one per thread, merged.
 */
#define TIMELINE_MAX_CODES 16
#define TIMELINE_MAX_ROWS (1u << 20)

struct timeline;

/* A new empty timeline, or NULL (also when interval_ns is 0). */
struct timeline *timeline_new(uint64_t interval_ns);
/* The same with max_rows rows (1 .. TIMELINE_MAX_ROWS) in place of TIMELINE_MAX_ROWS: for tests of the last row. */
struct timeline *timeline_new_rows(uint64_t interval_ns, uint32_t max_rows);
void timeline_free(struct timeline *t);

/*
 * Room for the first `rows` rows (at most TIMELINE_MAX_ROWS) in one
 * allocation, so that filling them reallocates nothing: for reading a
 * written timeline back, or merging one in.  Return 0, or -1 when out of
 * memory.
 */
int timeline_reserve(struct timeline *t, uint32_t rows);

/* An attempt was sent at offset_ns from the start. */
void timeline_sent(struct timeline *t, uint64_t offset_ns);

/* A retry was sent at offset_ns (counted besides timeline_sent's attempt; not in the CSV). */
void timeline_retry(struct timeline *t, uint64_t offset_ns);

/* An attempt ended at offset_ns: status > 0 is an HTTP answer, 0 a transport error. */
void timeline_outcome(struct timeline *t, uint64_t offset_ns, int status);

/* Add src's counts into dst (same interval).  Returns 0, or -1 (interval differs, out of memory). */
int timeline_merge(struct timeline *dst, const struct timeline *src);

/*
 * The same with src's row r landing in dst's row r + shift: a run that
 * started `shift` intervals after dst's.  Returns 0, or -1 as timeline_merge.
 */
int timeline_merge_shifted(struct timeline *dst, const struct timeline *src, uint32_t shift);

/*
 * Add counts to one row directly, for reading a written timeline back:
 * attempts, retries, transport errors and "other" answers, then answers with
 * one status code (its column is added when new).  Return 0, or -1 when out
 * of memory.
 */
int timeline_add_row(struct timeline *t, uint32_t row, uint64_t attempts, uint64_t retries,
                     uint64_t errors, uint64_t other);
int timeline_add_code(struct timeline *t, uint32_t row, int code, uint64_t n);

uint64_t timeline_interval_ns(const struct timeline *t);
/* Rows (intervals) up to the last one with an event. */
uint32_t timeline_rows(const struct timeline *t);
/* Status-code columns, and the code of column i. */
unsigned timeline_ncodes(const struct timeline *t);
int timeline_code(const struct timeline *t, unsigned i);

/* Counts of one row (0 past the end). */
uint64_t timeline_attempts(const struct timeline *t, uint32_t row);
uint64_t timeline_retries(const struct timeline *t, uint32_t row);
uint64_t timeline_errors(const struct timeline *t, uint32_t row);
uint64_t timeline_count(const struct timeline *t, uint32_t row, unsigned col);
uint64_t timeline_other(const struct timeline *t, uint32_t row);
/* Answers of status class c (2 for 2xx, ...) in a row. */
uint64_t timeline_class(const struct timeline *t, uint32_t row, int c);

/*
 * Whether the run went past the last row (TIMELINE_MAX_ROWS intervals), so
 * that row counts everything later too.
 */
bool timeline_clipped(const struct timeline *t);

/* The largest per-row attempt count (of a clipped timeline, not counting its last row). */
uint64_t timeline_peak_attempts(const struct timeline *t);

/*
 * Write the CSV: a header "t_s,attempts,2xx,3xx,4xx,5xx,errors,<code>...,other"
 * then one line per row.  Returns 0, or -1 on a write error.
 */
int timeline_write_csv(const struct timeline *t, FILE *f);

#endif
