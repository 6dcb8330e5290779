#include <check.h>
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
	suite_add_tcase(s, tc);
	return s;
}
