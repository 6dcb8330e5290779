#include "common/histogram.h"

#include <stdlib.h>
#include <string.h>

#define SUB_BITS 6
#define SUB_COUNT (1u << SUB_BITS)
/* shifts 0..(63 - SUB_BITS), plus the linear range below SUB_COUNT */
#define BUCKETS ((64 - SUB_BITS + 1) * SUB_COUNT)

_Static_assert(BUCKETS == HISTOGRAM_BUCKETS, "histogram.h's HISTOGRAM_BUCKETS follows SUB_BITS");

struct histogram {
	uint64_t count;
	uint64_t min;
	uint64_t max;
	long double sum;
	uint64_t buckets[BUCKETS];
};

struct histogram *histogram_new(void)
{
	struct histogram *h = malloc(sizeof(*h));

	if (h != NULL)
		histogram_reset(h);
	return h;
}

void histogram_free(struct histogram *h)
{
	free(h);
}

void histogram_reset(struct histogram *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

unsigned histogram_bucket_of(uint64_t v)
{
	unsigned msb, shift;

	if (v < SUB_COUNT)
		return (unsigned)v;
	msb = 63u - (unsigned)__builtin_clzll(v);
	shift = msb - SUB_BITS;
	return (shift + 1) * SUB_COUNT + (unsigned)((v >> shift) & (SUB_COUNT - 1));
}

uint64_t histogram_bucket_low(unsigned idx)
{
	unsigned shift;

	if (idx < SUB_COUNT)
		return idx;
	shift = idx / SUB_COUNT - 1;
	return ((uint64_t)SUB_COUNT + idx % SUB_COUNT) << shift;
}

static uint64_t bucket_mid(unsigned idx)
{
	uint64_t low = histogram_bucket_low(idx);

	if (idx < SUB_COUNT)
		return low;
	return low + ((1ULL << (idx / SUB_COUNT - 1)) >> 1);
}

void histogram_record(struct histogram *h, uint64_t v)
{
	h->buckets[histogram_bucket_of(v)]++;
	h->count++;
	h->sum += (long double)v;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
}

void histogram_merge(struct histogram *dst, const struct histogram *src)
{
	if (src->count == 0)
		return;
	for (unsigned i = 0; i < BUCKETS; i++)
		dst->buckets[i] += src->buckets[i];
	dst->count += src->count;
	dst->sum += src->sum;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
}

uint64_t histogram_count(const struct histogram *h) { return h->count; }
uint64_t histogram_min(const struct histogram *h) { return h->count ? h->min : 0; }
uint64_t histogram_max(const struct histogram *h) { return h->max; }

double histogram_mean(const struct histogram *h)
{
	return h->count ? (double)(h->sum / (long double)h->count) : 0.0;
}

uint64_t histogram_percentile(const struct histogram *h, double p)
{
	uint64_t rank, seen = 0, v;

	if (h->count == 0)
		return 0;
	if (p <= 0)
		return h->min;
	if (p >= 100)
		return h->max;
	rank = (uint64_t)((p / 100.0) * (double)h->count + 0.999999999);
	if (rank == 0)
		rank = 1;
	for (unsigned i = 0; i < BUCKETS; i++) {
		seen += h->buckets[i];
		if (seen >= rank) {
			v = bucket_mid(i);
			if (v < h->min)
				v = h->min;
			if (v > h->max)
				v = h->max;
			return v;
		}
	}
	return h->max;
}

uint64_t histogram_bucket_count(const struct histogram *h, unsigned idx)
{
	return idx < BUCKETS ? h->buckets[idx] : 0;
}

long double histogram_sum(const struct histogram *h)
{
	return h->sum;
}

int histogram_add_bucket(struct histogram *h, unsigned idx, uint64_t n)
{
	if (idx >= BUCKETS)
		return -1;
	h->buckets[idx] += n;
	h->count += n;
	return 0;
}

void histogram_add_extremes(struct histogram *h, uint64_t min, uint64_t max, long double sum)
{
	if (min < h->min)
		h->min = min;
	if (max > h->max)
		h->max = max;
	h->sum += sum;
}
