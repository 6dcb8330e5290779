#ifndef RATELAB_HISTOGRAM_H
#define RATELAB_HISTOGRAM_H

#include <stdint.h>

/*
 * A latency histogram in fixed memory: log-linear buckets (64 per power of
 * two, so a reported value is within 1.6 % of the true one) over the whole
 * uint64 range of nanoseconds.  Mergeable, so each thread keeps its own and
 * they are added after join.  Not thread-safe: one writer at a time.
 */
struct histogram;

/* A new empty histogram, or NULL when out of memory.  Free with histogram_free. */
struct histogram *histogram_new(void);
void histogram_free(struct histogram *h);

/* Empty it again. */
void histogram_reset(struct histogram *h);

/* Count one value (ns). */
void histogram_record(struct histogram *h, uint64_t v);

/* Add every count of src into dst. */
void histogram_merge(struct histogram *dst, const struct histogram *src);

/* Number of values, exact minimum, exact maximum (0 when empty), mean. */
uint64_t histogram_count(const struct histogram *h);
uint64_t histogram_min(const struct histogram *h);
uint64_t histogram_max(const struct histogram *h);
double histogram_mean(const struct histogram *h);

/*
 * The value at percentile p (0..100): the midpoint of the bucket holding the
 * ceil(p% * count)-th smallest value, clamped to [min, max].  0 when empty.
 */
uint64_t histogram_percentile(const struct histogram *h, double p);

/* Bucket index of v and the lowest value of a bucket (for tests). */
unsigned histogram_bucket_of(uint64_t v);
uint64_t histogram_bucket_low(unsigned idx);

/*
 * The histogram in parts, for writing it out and reading it back exactly
 * (another process's histogram, merged): HISTOGRAM_BUCKETS bucket counts,
 * and the exact min, max and sum of the values.
 */
#define HISTOGRAM_BUCKETS ((64 - 6 + 1) * 64)

/* Values counted in bucket idx (0 past the last bucket). */
uint64_t histogram_bucket_count(const struct histogram *h, unsigned idx);

/* The sum of every value recorded (ns). */
long double histogram_sum(const struct histogram *h);

/*
 * Add n values to bucket idx without knowing them one by one: the count
 * grows, min, max and sum are left to histogram_add_extremes.  Returns 0, or
 * -1 when idx is past the last bucket.
 */
int histogram_add_bucket(struct histogram *h, unsigned idx, uint64_t n);

/* Fold in the exact min, max and sum of values added by histogram_add_bucket. */
void histogram_add_extremes(struct histogram *h, uint64_t min, uint64_t max, long double sum);

#endif
