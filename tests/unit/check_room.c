/* The room herd's state under injected wall times: arming, the pages' starts and their spread, reports summed per run. */
#include <check.h>
#include <stdlib.h>

#include "server/handlers/room.h"

#define T0 1700000000000LL   /* any wall time, ms */

START_TEST(arm_and_count_starts)
{
	struct room *r = room_new();
	struct room_view v;

	ck_assert_int_eq(room_arm(r, T0, 5000, "at-once", 3, 1), 0);
	room_view(r, &v);
	ck_assert_uint_eq(v.id, 1);
	ck_assert_int_eq(v.start_ms, T0 + 5000);
	ck_assert_str_eq(v.policy, "at-once");
	ck_assert(!room_started(r, 1, T0 + 3000));          /* two seconds early: a clock too far off */
	ck_assert(room_started(r, 1, T0 + 5012));
	ck_assert(room_started(r, 1, T0 + 4995));
	ck_assert(room_started(r, 1, T0 + 5040));
	ck_assert(!room_started(r, 2, T0 + 5000));          /* no such herd */
	ck_assert(!room_started(r, 1, T0 + 5000 + ROOM_LATE_MS + 1));
	room_view(r, &v);
	ck_assert_uint_eq(v.started, 3);
	ck_assert_int_eq(v.last_ms - v.first_ms, 45);
	room_free(r);
}
END_TEST

START_TEST(arm_refuses_bad_input)
{
	struct room *r = room_new();

	ck_assert_int_eq(room_arm(r, T0, ROOM_LEAD_MS_MAX + 1, "", 0, 0), -1);
	ck_assert_int_eq(room_arm(r, T0, 1000, "Full\"", 0, 0), -1);
	ck_assert_int_eq(room_arm(r, T0, 1000, "a-very-long-policy-name-x", 0, 0), -1);
	ck_assert_int_eq(room_arm(r, T0, 1000, "", 0, 0), 0);
	room_free(r);
}
END_TEST

/* Two pages report herd #1: one run, summed; attempts fall in 100 ms buckets; a new herd's run goes in front. */
START_TEST(reports_summed_per_run)
{
	static const uint32_t A[] = { 0, 5, 99, 100, 1500 }, B[] = { 1, 2, 250 };
	struct room *r = room_new();
	struct room_run runs[ROOM_RUNS];
	struct room_report a = { 1, 3, 0, 5, 2, 1600, A, 5 }, b = { 1, 2, 1, 3, 0, 300, B, 3 };

	ck_assert_int_eq(room_report(r, &a), -1);          /* nothing armed */
	room_arm(r, T0, 1000, "full", 0, 0);
	ck_assert_int_eq(room_report(r, &a), 0);
	ck_assert_int_eq(room_report(r, &b), 0);
	ck_assert_uint_eq(room_runs(r, runs), 1);
	ck_assert_uint_eq(runs[0].pages, 2);
	ck_assert_uint_eq(runs[0].calls, 8);
	ck_assert_uint_eq(runs[0].ok, 5);
	ck_assert_uint_eq(runs[0].failed, 1);
	ck_assert_uint_eq(runs[0].done_ms, 1600);
	ck_assert_str_eq(runs[0].policy, "full");
	ck_assert_uint_eq(runs[0].buckets[0], 5);
	ck_assert_uint_eq(room_run_peak(&runs[0]), 5);
	room_arm(r, T0 + 10000, 1000, "", 0, 0);
	b.id = 2;
	ck_assert_int_eq(room_report(r, &b), 0);
	ck_assert_uint_eq(room_runs(r, runs), 2);
	ck_assert_uint_eq(runs[0].id, 2);
	ck_assert_uint_eq(runs[1].id, 1);
	ck_assert_int_eq(room_report(r, &a), 0);           /* herd #1's late page still counts */
	room_reset(r);
	ck_assert_uint_eq(room_runs(r, runs), 0);
	room_free(r);
}
END_TEST

Suite *room_suite(void)
{
	Suite *s = suite_create("room");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, arm_and_count_starts);
	tcase_add_test(tc, arm_refuses_bad_input);
	tcase_add_test(tc, reports_summed_per_run);
	suite_add_tcase(s, tc);
	return s;
}
