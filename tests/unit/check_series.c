/* The time series under injected times: rows from a start, levels carried, a ring's recycling. */
#include <check.h>
#include <stdint.h>

#include "common/clock.h"
#include "common/series.h"

static struct series *from_start(uint64_t origin, uint64_t max_rows, uint64_t reserve, uint32_t levels)
{
	struct series_params p = { .shape = SERIES_FROM_START, .interval_ns = SERIES_100MS, .origin_ns = origin,
	                           .max_rows = max_rows, .reserve = reserve, .width = 4, .levels = levels };

	return series_new(&p);
}

static struct series *ring(uint64_t max_rows, bool shared)
{
	struct series_params p = { .shape = SERIES_RING, .interval_ns = SERIES_100MS, .max_rows = max_rows,
	                           .width = 2, .shared = shared };

	return series_new(&p);
}

START_TEST(row_of_a_time)
{
	struct series *s = from_start(5 * NS_PER_SEC, 10, 0, 0);

	ck_assert_uint_eq(series_row_of(s, 0), 0);
	ck_assert_uint_eq(series_row_of(s, 5 * NS_PER_SEC), 0);
	ck_assert_uint_eq(series_row_of(s, 5 * NS_PER_SEC + 99 * NS_PER_MS), 0);
	ck_assert_uint_eq(series_row_of(s, 5 * NS_PER_SEC + 100 * NS_PER_MS), 1);
	ck_assert_uint_eq(series_row_of(s, 7 * NS_PER_SEC + 250 * NS_PER_MS), 22);
	ck_assert_uint_eq(series_interval_ns(s), 100 * NS_PER_MS);
	series_clear(s, 6 * NS_PER_SEC);
	ck_assert_uint_eq(series_row_of(s, 7 * NS_PER_SEC + 250 * NS_PER_MS), 12);
	series_free(s);
}
END_TEST

START_TEST(counts_from_the_start)
{
	struct series *s = from_start(0, 10, 0, 0);

	ck_assert_uint_eq(series_rows(s), 0);
	ck_assert_int_eq(series_add(s, 0, 0, 2), 0);
	ck_assert_int_eq(series_add(s, 3, 1, 5), 0);
	ck_assert_int_eq(series_add(s, 3, 1, 1), 0);
	ck_assert_uint_eq(series_rows(s), 4);
	ck_assert_uint_eq(series_get(s, 0, 0), 2);
	ck_assert_uint_eq(series_get(s, 1, 0), 0);
	ck_assert_uint_eq(series_get(s, 3, 1), 6);
	ck_assert_uint_eq(series_get(s, 4, 1), 0);
	ck_assert_uint_eq(series_get(s, 3, 4), 0);     /* no such column */
	ck_assert_int_eq(series_add(s, 3, 4, 1), -1);
	/* Past the end: the last row. */
	ck_assert_int_eq(series_add(s, 1000, 2, 7), 0);
	ck_assert_uint_eq(series_rows(s), 10);
	ck_assert_uint_eq(series_get(s, 9, 2), 7);
	ck_assert_uint_eq(series_get(s, 1000, 2), 0);
	ck_assert_uint_eq(series_sum(s, 0, 9, 1), 6);
	ck_assert_uint_eq(series_sum(s, 4, 100, 2), 7);
	ck_assert_uint_eq(series_sum(s, 5, 4, 2), 0);
	series_clear(s, 0);
	ck_assert_uint_eq(series_rows(s), 0);
	ck_assert_uint_eq(series_get(s, 3, 1), 0);
	ck_assert_int_eq(series_add(s, 2, 0, 1), 0);
	ck_assert_uint_eq(series_get(s, 2, 0), 1);
	ck_assert_uint_eq(series_get(s, 9, 2), 0);
	series_free(s);
}
END_TEST

/* Rows reserved up front and rows grown into hold the same counts. */
START_TEST(grows_past_the_reserve)
{
	struct series *a = from_start(0, 5000, 1200, 0), *b = from_start(0, 5000, 0, 0);

	for (uint64_t r = 0; r < 5000; r += 7) {
		ck_assert_int_eq(series_add(a, r, 3, r), 0);
		ck_assert_int_eq(series_add(b, r, 3, r), 0);
	}
	ck_assert_uint_eq(series_rows(a), 4999);
	ck_assert_uint_eq(series_rows(b), 4999);
	for (uint64_t r = 0; r < 5000; r++)
		ck_assert_uint_eq(series_get(a, r, 3), series_get(b, r, 3));
	ck_assert_uint_eq(series_get(b, 4998, 3), 4998);
	ck_assert_uint_eq(series_get(b, 4997, 3), 0);
	series_free(a);
	series_free(b);
}
END_TEST

/* A level (columns 1, 2: value at the row's end, its peak) carries over quiet rows. */
START_TEST(levels_carry_over)
{
	struct series *s = from_start(0, 100, 100, 1u << 1);

	ck_assert_int_eq(series_level(s, 0, 1, 3), 0);
	ck_assert_int_eq(series_level(s, 0, 1, 9), 0);
	ck_assert_int_eq(series_level(s, 0, 1, 4), 0);
	ck_assert_uint_eq(series_get(s, 0, 1), 4);
	ck_assert_uint_eq(series_get(s, 0, 2), 9);
	/* Row 3 opens at row 0's level; rows 1 and 2 hold it too. */
	ck_assert_int_eq(series_add(s, 3, 0, 1), 0);
	for (uint64_t r = 1; r <= 3; r++) {
		ck_assert_uint_eq(series_get(s, r, 1), 4);
		ck_assert_uint_eq(series_get(s, r, 2), 4);
		ck_assert_uint_eq(series_get(s, r, 0), r == 3);
	}
	ck_assert_int_eq(series_level(s, 3, 1, 1), 0);
	ck_assert_uint_eq(series_get(s, 3, 1), 1);
	ck_assert_uint_eq(series_get(s, 3, 2), 4);
	ck_assert_int_eq(series_level(s, 5, 1, 2), 0);
	ck_assert_uint_eq(series_get(s, 4, 1), 1);
	ck_assert_uint_eq(series_get(s, 5, 1), 2);
	ck_assert_uint_eq(series_get(s, 5, 2), 2);
	/* Column 0 is a count, not a level. */
	ck_assert_int_eq(series_level(s, 5, 0, 1), -1);
	series_free(s);
}
END_TEST

START_TEST(ring_recycles_rows)
{
	struct series *s = ring(4, false);

	ck_assert_int_eq(series_add(s, 10, 0, 1), 0);
	ck_assert_int_eq(series_add(s, 11, 1, 2), 0);
	ck_assert_int_eq(series_add(s, 13, 0, 3), 0);
	ck_assert_uint_eq(series_get(s, 10, 0), 1);
	ck_assert_uint_eq(series_get(s, 11, 1), 2);
	ck_assert_uint_eq(series_get(s, 12, 0), 0);
	ck_assert_uint_eq(series_sum(s, 10, 13, 0), 4);
	ck_assert_uint_eq(series_rows(s), 0);
	/* Row 14 takes row 10's slot: row 10 reads as zero, row 14 starts at zero. */
	ck_assert_int_eq(series_add(s, 14, 1, 5), 0);
	ck_assert_uint_eq(series_get(s, 10, 0), 0);
	ck_assert_uint_eq(series_get(s, 14, 0), 0);
	ck_assert_uint_eq(series_get(s, 14, 1), 5);
	ck_assert_uint_eq(series_get(s, 6, 0), 0);      /* never written, same slot */
	ck_assert_uint_eq(series_sum(s, 0, 14, 0), 3);  /* only the last four rows */
	series_clear(s, 0);
	/* A cleared slot holds no row, not even the one whose number would wrap to its empty tag. */
	ck_assert_uint_eq(series_get(s, UINT64_MAX, 1), 0);
	ck_assert_int_eq(series_add(s, UINT64_MAX, 1, 1), -1);
	ck_assert_uint_eq(series_get(s, 14, 1), 0);
	ck_assert_uint_eq(series_get(s, 13, 0), 0);
	ck_assert_int_eq(series_add(s, 13, 0, 1), 0);
	ck_assert_uint_eq(series_get(s, 13, 0), 1);
	series_free(s);
}
END_TEST

START_TEST(shared_ring_counts_the_same)
{
	struct series *s = ring(600, true);

	for (uint64_t i = 0; i < 1000; i++)
		ck_assert_int_eq(series_add(s, i / 10, (unsigned)(i % 2), 1), 0);
	ck_assert_uint_eq(series_get(s, 99, 0), 5);
	ck_assert_uint_eq(series_get(s, 99, 1), 5);
	ck_assert_uint_eq(series_sum(s, 0, 99, 1), 500);
	series_free(s);
}
END_TEST

START_TEST(bad_params)
{
	struct series_params p = { .shape = SERIES_FROM_START, .interval_ns = SERIES_100MS, .max_rows = 10,
	                           .width = 4 };

	p.interval_ns = 0;
	ck_assert_ptr_null(series_new(&p));
	p.interval_ns = SERIES_100MS;
	p.width = SERIES_MAX_WIDTH + 1;
	ck_assert_ptr_null(series_new(&p));
	p.width = 4;
	p.levels = 1u << 3;            /* its peak would be column 4 */
	ck_assert_ptr_null(series_new(&p));
	p.levels = 0;
	p.reserve = 11;
	ck_assert_ptr_null(series_new(&p));
	p.reserve = 0;
	p.max_rows = 0;
	ck_assert_ptr_null(series_new(&p));
	p.max_rows = 10;
	p.shape = SERIES_RING;
	p.levels = 1;                  /* a ring carries no levels */
	ck_assert_ptr_null(series_new(&p));
	p.levels = 0;
	series_free(series_new(&p));
	series_free(NULL);
}
END_TEST

Suite *series_suite(void)
{
	Suite *s = suite_create("series");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, row_of_a_time);
	tcase_add_test(tc, counts_from_the_start);
	tcase_add_test(tc, grows_past_the_reserve);
	tcase_add_test(tc, levels_carry_over);
	tcase_add_test(tc, ring_recycles_rows);
	tcase_add_test(tc, shared_ring_counts_the_same);
	tcase_add_test(tc, bad_params);
	suite_add_tcase(s, tc);
	return s;
}
