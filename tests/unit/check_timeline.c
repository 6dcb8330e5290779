#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/timeline.h"

START_TEST(rows_and_columns)
{
	struct timeline *t = timeline_new(100 * NS_PER_MS);

	timeline_sent(t, 0);
	timeline_sent(t, 99 * NS_PER_MS);
	timeline_sent(t, 250 * NS_PER_MS);
	timeline_outcome(t, 10 * NS_PER_MS, 429);
	timeline_outcome(t, 20 * NS_PER_MS, 200);
	timeline_outcome(t, 260 * NS_PER_MS, 429);
	timeline_outcome(t, 270 * NS_PER_MS, 0);
	ck_assert_uint_eq(timeline_rows(t), 3);
	ck_assert_uint_eq(timeline_attempts(t, 0), 2);
	ck_assert_uint_eq(timeline_attempts(t, 1), 0);
	ck_assert_uint_eq(timeline_attempts(t, 2), 1);
	ck_assert_uint_eq(timeline_ncodes(t), 2);
	ck_assert_int_eq(timeline_code(t, 0), 429);
	ck_assert_int_eq(timeline_code(t, 1), 200);
	ck_assert_uint_eq(timeline_count(t, 2, 0), 1);
	ck_assert_uint_eq(timeline_errors(t, 2), 1);
	ck_assert_uint_eq(timeline_class(t, 0, 4), 1);
	ck_assert_uint_eq(timeline_class(t, 0, 2), 1);
	ck_assert_uint_eq(timeline_peak_attempts(t), 2);
	ck_assert_uint_eq(timeline_attempts(t, 99), 0);
	timeline_free(t);
}
END_TEST

START_TEST(too_many_codes_go_to_other)
{
	struct timeline *t = timeline_new(NS_PER_SEC);

	for (int c = 200; c < 200 + TIMELINE_MAX_CODES + 3; c++)
		timeline_outcome(t, 0, c);
	ck_assert_uint_eq(timeline_ncodes(t), TIMELINE_MAX_CODES);
	ck_assert_uint_eq(timeline_other(t, 0), 3);
	timeline_free(t);
}
END_TEST

START_TEST(merge_maps_codes)
{
	struct timeline *a = timeline_new(NS_PER_SEC), *b = timeline_new(NS_PER_SEC), *c = timeline_new(2);

	timeline_outcome(a, 0, 200);
	timeline_outcome(b, 0, 503);
	timeline_outcome(b, 0, 200);
	timeline_sent(b, 5 * NS_PER_SEC);
	ck_assert_int_eq(timeline_merge(a, b), 0);
	ck_assert_uint_eq(timeline_rows(a), 6);
	ck_assert_uint_eq(timeline_count(a, 0, 0), 2);
	ck_assert_int_eq(timeline_code(a, 1), 503);
	ck_assert_uint_eq(timeline_count(a, 0, 1), 1);
	ck_assert_uint_eq(timeline_attempts(a, 5), 1);
	ck_assert_int_eq(timeline_merge(a, c), -1);
	timeline_free(a);
	timeline_free(b);
	timeline_free(c);
}
END_TEST

/* Retries are counted per row, merged, and kept out of the CSV's columns. */
START_TEST(retries_per_row)
{
	struct timeline *a = timeline_new(10 * NS_PER_MS), *b = timeline_new(10 * NS_PER_MS);

	timeline_sent(a, 0);
	timeline_sent(a, 15 * NS_PER_MS);
	timeline_retry(a, 15 * NS_PER_MS);
	timeline_retry(b, 19 * NS_PER_MS);
	timeline_retry(b, 30 * NS_PER_MS);
	ck_assert_uint_eq(timeline_retries(a, 0), 0);
	ck_assert_uint_eq(timeline_retries(a, 1), 1);
	ck_assert_int_eq(timeline_merge(a, b), 0);
	ck_assert_uint_eq(timeline_retries(a, 1), 2);
	ck_assert_uint_eq(timeline_retries(a, 3), 1);
	ck_assert_uint_eq(timeline_attempts(a, 1), 1);
	ck_assert_uint_eq(timeline_retries(a, 99), 0);
	timeline_free(a);
	timeline_free(b);
}
END_TEST

START_TEST(csv)
{
	struct timeline *t = timeline_new(100 * NS_PER_MS);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	timeline_sent(t, 0);
	timeline_outcome(t, 0, 200);
	timeline_sent(t, 150 * NS_PER_MS);
	timeline_outcome(t, 150 * NS_PER_MS, 429);
	ck_assert_int_eq(timeline_write_csv(t, f), 0);
	fclose(f);
	ck_assert_str_eq(buf, "t_s,attempts,2xx,3xx,4xx,5xx,errors,200,429,other\n"
	                      "0.000,1,1,0,0,0,0,1,0,0\n"
	                      "0.100,1,0,0,1,0,0,0,1,0\n");
	free(buf);
	timeline_free(t);
}
END_TEST

/* Every row and column of t equals u's. */
static void assert_same_timeline(const struct timeline *t, const struct timeline *u)
{
	ck_assert_uint_eq(timeline_rows(t), timeline_rows(u));
	ck_assert_uint_eq(timeline_ncodes(t), timeline_ncodes(u));
	for (uint32_t r = 0; r < timeline_rows(t); r++) {
		ck_assert_uint_eq(timeline_attempts(t, r), timeline_attempts(u, r));
		ck_assert_uint_eq(timeline_retries(t, r), timeline_retries(u, r));
		ck_assert_uint_eq(timeline_errors(t, r), timeline_errors(u, r));
		ck_assert_uint_eq(timeline_other(t, r), timeline_other(u, r));
		for (int c = 2; c <= 5; c++)
			ck_assert_uint_eq(timeline_class(t, r, c), timeline_class(u, r, c));
		for (unsigned i = 0; i < timeline_ncodes(u); i++) {
			unsigned j = 0;

			while (j < timeline_ncodes(t) && timeline_code(t, j) != timeline_code(u, i))
				j++;
			ck_assert_uint_lt(j, timeline_ncodes(t));
			ck_assert_uint_eq(timeline_count(t, r, j), timeline_count(u, r, i));
		}
	}
}

/* Four timelines of one run's events, merged, equal the timeline of all of them. */
START_TEST(merge_is_exact)
{
	static const int codes[] = { 200, 429, 503, 0, 200, 409 };
	struct timeline *parts[4], *all = timeline_new(10 * NS_PER_MS), *merged = timeline_new(10 * NS_PER_MS);

	for (int p = 0; p < 4; p++)
		parts[p] = timeline_new(10 * NS_PER_MS);
	for (uint64_t i = 0; i < 5000; i++) {
		uint64_t at = (i * 7919) % (3 * NS_PER_SEC / 1000) * 1000;
		int code = codes[i % 6];
		struct timeline *p = parts[(i * 31) % 4];

		timeline_sent(p, at);
		timeline_sent(all, at);
		if (i % 3 == 0) {
			timeline_retry(p, at);
			timeline_retry(all, at);
		}
		timeline_outcome(p, at + i, code);
		timeline_outcome(all, at + i, code);
	}
	for (int p = 0; p < 4; p++)
		ck_assert_int_eq(timeline_merge(merged, parts[p]), 0);
	assert_same_timeline(merged, all);
	for (int p = 0; p < 4; p++)
		timeline_free(parts[p]);
	timeline_free(all);
	timeline_free(merged);
}
END_TEST

/* A run that began three intervals later lands three rows down; rows put back one by one rebuild it. */
START_TEST(merge_shifted_and_rows_added)
{
	struct timeline *a = timeline_new(100 * NS_PER_MS), *b = timeline_new(100 * NS_PER_MS);
	struct timeline *back = timeline_new(100 * NS_PER_MS);

	timeline_sent(b, 0);
	timeline_outcome(b, 0, 429);
	timeline_sent(b, 150 * NS_PER_MS);
	timeline_retry(b, 150 * NS_PER_MS);
	timeline_outcome(b, 150 * NS_PER_MS, 0);
	ck_assert_int_eq(timeline_merge_shifted(a, b, 3), 0);
	ck_assert_uint_eq(timeline_rows(a), 5);
	ck_assert_uint_eq(timeline_attempts(a, 0), 0);
	ck_assert_uint_eq(timeline_attempts(a, 3), 1);
	ck_assert_uint_eq(timeline_class(a, 3, 4), 1);
	ck_assert_uint_eq(timeline_retries(a, 4), 1);
	ck_assert_uint_eq(timeline_errors(a, 4), 1);
	for (uint32_t r = 0; r < timeline_rows(a); r++) {
		ck_assert_int_eq(timeline_add_row(back, r, timeline_attempts(a, r), timeline_retries(a, r),
		                                  timeline_errors(a, r), timeline_other(a, r)), 0);
		for (unsigned c = 0; c < timeline_ncodes(a); c++)
			ck_assert_int_eq(timeline_add_code(back, r, timeline_code(a, c), timeline_count(a, r, c)), 0);
	}
	assert_same_timeline(back, a);
	timeline_free(a);
	timeline_free(b);
	timeline_free(back);
}
END_TEST

/* Room reserved is no rows yet; rows filled into it and past it are kept, zero between. */
/*
 * A run that outlasts TIMELINE_MAX_ROWS rows is counted in the last one, and
 * the timeline says so: its peak leaves that row out (a 1 req/s run at 1ms
 * rows showed "peak 751 attempts per 1ms"), and a merge carries it over.
 */
START_TEST(past_the_last_row_is_clipped)
{
	struct timeline *t = timeline_new_rows(NS_PER_MS, 10), *sum = timeline_new_rows(NS_PER_MS, 10);
	struct timeline *late = timeline_new_rows(NS_PER_MS, 10);

	timeline_sent(t, 5 * NS_PER_MS);
	timeline_sent(t, 5 * NS_PER_MS);
	timeline_sent(t, 9 * NS_PER_MS);
	ck_assert(!timeline_clipped(t));
	for (uint64_t i = 0; i < 3; i++)
		timeline_sent(t, (10 + i * 1000) * NS_PER_MS);
	ck_assert(timeline_clipped(t));
	ck_assert_uint_eq(timeline_rows(t), 10);
	ck_assert_uint_eq(timeline_attempts(t, 9), 4);
	ck_assert_uint_eq(timeline_peak_attempts(t), 2);
	ck_assert_int_eq(timeline_merge(sum, t), 0);
	ck_assert(timeline_clipped(sum));
	ck_assert_uint_eq(timeline_peak_attempts(sum), 2);
	/* a run merged in later than the last row clips it too */
	timeline_sent(late, 0);
	ck_assert(!timeline_clipped(late));
	ck_assert_int_eq(timeline_merge_shifted(late, late, 0), 0);
	ck_assert(!timeline_clipped(late));
	timeline_free(sum);
	sum = timeline_new_rows(NS_PER_MS, 10);
	ck_assert_int_eq(timeline_merge_shifted(sum, late, 12), 0);
	ck_assert(timeline_clipped(sum));
	ck_assert_uint_eq(timeline_attempts(sum, 9), 2);
	ck_assert(timeline_new_rows(NS_PER_MS, 0) == NULL);
	ck_assert(timeline_new_rows(NS_PER_MS, TIMELINE_MAX_ROWS + 1) == NULL);
	timeline_free(t);
	timeline_free(sum);
	timeline_free(late);
}
END_TEST

START_TEST(reserve_adds_no_rows)
{
	struct timeline *t = timeline_new(100 * NS_PER_MS), *far = timeline_new(100 * NS_PER_MS);

	ck_assert_int_eq(timeline_reserve(t, 1000), 0);
	ck_assert_uint_eq(timeline_rows(t), 0);
	ck_assert_int_eq(timeline_add_row(t, 999, 7, 0, 0, 0), 0);
	ck_assert_int_eq(timeline_add_row(t, 1000, 8, 0, 0, 0), 0);
	ck_assert_uint_eq(timeline_rows(t), 1001);
	ck_assert_uint_eq(timeline_attempts(t, 998), 0);
	ck_assert_uint_eq(timeline_attempts(t, 999), 7);
	ck_assert_uint_eq(timeline_attempts(t, 1000), 8);
	/* past the last row is clamped, as rows are */
	ck_assert_int_eq(timeline_reserve(far, UINT32_MAX), 0);
	ck_assert_int_eq(timeline_merge_shifted(far, t, TIMELINE_MAX_ROWS - 1000), 0);
	ck_assert_uint_eq(timeline_rows(far), TIMELINE_MAX_ROWS);
	ck_assert_uint_eq(timeline_attempts(far, TIMELINE_MAX_ROWS - 1), 15);
	timeline_free(t);
	timeline_free(far);
}
END_TEST

Suite *timeline_suite(void)
{
	Suite *s = suite_create("timeline");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, rows_and_columns);
	tcase_add_test(tc, too_many_codes_go_to_other);
	tcase_add_test(tc, merge_maps_codes);
	tcase_add_test(tc, retries_per_row);
	tcase_add_test(tc, merge_is_exact);
	tcase_add_test(tc, merge_shifted_and_rows_added);
	tcase_add_test(tc, reserve_adds_no_rows);
	tcase_add_test(tc, past_the_last_row_is_clipped);
	tcase_add_test(tc, csv);
	suite_add_tcase(s, tc);
	return s;
}
