#include <check.h>
#include <math.h>
#include <stdint.h>

#include "common/clock.h"
#include "common/histogram.h"

START_TEST(empty)
{
	struct histogram *h = histogram_new();

	ck_assert_ptr_nonnull(h);
	ck_assert_uint_eq(histogram_count(h), 0);
	ck_assert_uint_eq(histogram_percentile(h, 50), 0);
	ck_assert_uint_eq(histogram_max(h), 0);
	ck_assert_uint_eq(histogram_min(h), 0);
	histogram_free(h);
}
END_TEST

START_TEST(small_values_exact)
{
	struct histogram *h = histogram_new();

	for (uint64_t v = 1; v <= 50; v++)
		histogram_record(h, v);
	ck_assert_uint_eq(histogram_count(h), 50);
	ck_assert_uint_eq(histogram_percentile(h, 50), 25);
	ck_assert_uint_eq(histogram_percentile(h, 90), 45);
	ck_assert_uint_eq(histogram_percentile(h, 100), 50);
	ck_assert_uint_eq(histogram_min(h), 1);
	ck_assert_uint_eq(histogram_max(h), 50);
	ck_assert(histogram_mean(h) > 25.49 && histogram_mean(h) < 25.51);
	histogram_free(h);
}
END_TEST

START_TEST(buckets_are_log_linear)
{
	/* every bucket's low bound maps back to it, and bucket width stays under 1/64 of the value */
	for (unsigned i = 0; i < 3700; i++) {
		uint64_t low = histogram_bucket_low(i), next = histogram_bucket_low(i + 1);

		ck_assert_uint_eq(histogram_bucket_of(low), i);
		ck_assert_uint_eq(histogram_bucket_of(next - 1), i);
		if (low >= 64)
			ck_assert_uint_le((next - low) * 64, low);
	}
	ck_assert_uint_lt(histogram_bucket_of(UINT64_MAX), 64 * 59);
}
END_TEST

START_TEST(percentiles_within_two_percent)
{
	struct histogram *h = histogram_new();
	uint64_t p;

	/* 1 ms .. 1000 ms, one each */
	for (uint64_t v = 1; v <= 1000; v++)
		histogram_record(h, v * NS_PER_MS);
	p = histogram_percentile(h, 50);
	ck_assert_msg(p >= 490 * NS_PER_MS && p <= 510 * NS_PER_MS, "p50 %llu", (unsigned long long)p);
	p = histogram_percentile(h, 99);
	ck_assert_msg(p >= 970 * NS_PER_MS && p <= 1000 * NS_PER_MS, "p99 %llu", (unsigned long long)p);
	ck_assert_uint_eq(histogram_max(h), 1000 * NS_PER_MS);
	histogram_free(h);
}
END_TEST

START_TEST(merge_adds)
{
	struct histogram *a = histogram_new(), *b = histogram_new();

	for (int i = 0; i < 100; i++)
		histogram_record(a, 10);
	for (int i = 0; i < 100; i++)
		histogram_record(b, 1000000);
	histogram_merge(a, b);
	ck_assert_uint_eq(histogram_count(a), 200);
	ck_assert_uint_eq(histogram_min(a), 10);
	ck_assert_uint_eq(histogram_max(a), 1000000);
	ck_assert_uint_eq(histogram_percentile(a, 50), 10);
	/* 1000000 lies in a bucket 16384 wide; the midpoint is clamped to the max */
	ck_assert_uint_ge(histogram_percentile(a, 51), 1000000 - 16384);
	ck_assert_uint_le(histogram_percentile(a, 51), 1000000);
	histogram_reset(a);
	ck_assert_uint_eq(histogram_count(a), 0);
	histogram_free(a);
	histogram_free(b);
}
END_TEST

START_TEST(huge_values)
{
	struct histogram *h = histogram_new();

	histogram_record(h, UINT64_MAX);
	histogram_record(h, 0);
	ck_assert_uint_eq(histogram_max(h), UINT64_MAX);
	ck_assert_uint_eq(histogram_percentile(h, 100), UINT64_MAX);
	ck_assert_uint_eq(histogram_percentile(h, 50), 0);
	histogram_free(h);
}
END_TEST

/* Histograms recorded apart and merged equal one recorded from every value: buckets, count, min, max. */
START_TEST(merge_is_exact)
{
	struct histogram *parts[4], *all = histogram_new(), *merged = histogram_new();
	uint64_t x = 88172645463325252ULL;

	for (int p = 0; p < 4; p++)
		parts[p] = histogram_new();
	for (int i = 0; i < 20000; i++) {
		uint64_t v;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		v = x >> (x & 63);
		histogram_record(parts[i % 4], v);
		histogram_record(all, v);
	}
	for (int p = 0; p < 4; p++)
		histogram_merge(merged, parts[p]);
	ck_assert_uint_eq(histogram_count(merged), 20000);
	ck_assert_uint_eq(histogram_min(merged), histogram_min(all));
	ck_assert_uint_eq(histogram_max(merged), histogram_max(all));
	/* the sum is floating point: added in another order it may differ in its last bits */
	ck_assert(fabsl(histogram_sum(merged) - histogram_sum(all)) <= histogram_sum(all) * 1e-15L);
	for (unsigned b = 0; b < HISTOGRAM_BUCKETS; b++)
		ck_assert_uint_eq(histogram_bucket_count(merged, b), histogram_bucket_count(all, b));
	ck_assert_uint_eq(histogram_percentile(merged, 99), histogram_percentile(all, 99));
	for (int p = 0; p < 4; p++)
		histogram_free(parts[p]);
	histogram_free(all);
	histogram_free(merged);
}
END_TEST

/* A histogram taken apart (buckets, extremes) and put back together is the same histogram. */
START_TEST(parts_rebuild_it)
{
	struct histogram *h = histogram_new(), *back = histogram_new();

	for (uint64_t v = 1; v < 5000000000ULL; v = v * 3 + 7)
		histogram_record(h, v);
	histogram_record(h, 0);
	for (unsigned b = 0; b < HISTOGRAM_BUCKETS; b++)
		if (histogram_bucket_count(h, b) != 0)
			ck_assert_int_eq(histogram_add_bucket(back, b, histogram_bucket_count(h, b)), 0);
	histogram_add_extremes(back, histogram_min(h), histogram_max(h), histogram_sum(h));
	ck_assert_uint_eq(histogram_count(back), histogram_count(h));
	ck_assert_uint_eq(histogram_min(back), 0);
	ck_assert_uint_eq(histogram_max(back), histogram_max(h));
	ck_assert(histogram_mean(back) == histogram_mean(h));
	for (double p = 1; p < 100; p += 7)
		ck_assert_uint_eq(histogram_percentile(back, p), histogram_percentile(h, p));
	ck_assert_int_eq(histogram_add_bucket(back, HISTOGRAM_BUCKETS, 1), -1);
	ck_assert_uint_eq(histogram_bucket_count(back, HISTOGRAM_BUCKETS), 0);
	histogram_free(h);
	histogram_free(back);
}
END_TEST

Suite *histogram_suite(void)
{
	Suite *s = suite_create("histogram");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, empty);
	tcase_add_test(tc, small_values_exact);
	tcase_add_test(tc, buckets_are_log_linear);
	tcase_add_test(tc, percentiles_within_two_percent);
	tcase_add_test(tc, merge_adds);
	tcase_add_test(tc, huge_values);
	tcase_add_test(tc, merge_is_exact);
	tcase_add_test(tc, parts_rebuild_it);
	suite_add_tcase(s, tc);
	return s;
}
