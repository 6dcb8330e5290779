/* The room herd's state under injected wall times: arming, the pages' starts and their spread, reports summed per run. */
#include <check.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>

#include "server/handlers/room.h"

#define T0 1700000000000LL   /* any wall time, ms */

START_TEST(arm_and_count_starts)
{
	struct room *r = room_new();
	struct room_view v;

	ck_assert_int_eq(room_arm(r, T0, 5000, "at-once", 3, 1, NULL, 0), 0);
	room_view(r, &v);
	ck_assert_uint_eq(v.id, 1);
	ck_assert_int_eq(v.start_ms, T0 + 5000);
	ck_assert_str_eq(v.policy, "at-once");
	ck_assert(!room_started(r, 1, 0, T0 + 3000));          /* two seconds early: a clock too far off */
	ck_assert(room_started(r, 1, 0, T0 + 5012));
	ck_assert(room_started(r, 1, 0, T0 + 4995));
	ck_assert(room_started(r, 1, 0, T0 + 5040));
	ck_assert(!room_started(r, 2, 0, T0 + 5000));          /* no such herd */
	ck_assert(!room_started(r, 1, 0, T0 + 5000 + ROOM_LATE_MS + 1));
	room_view(r, &v);
	ck_assert_uint_eq(v.started, 3);
	ck_assert_int_eq(v.last_ms - v.first_ms, 45);
	room_free(r);
}
END_TEST

START_TEST(arm_refuses_bad_input)
{
	struct room *r = room_new();

	ck_assert_int_eq(room_arm(r, T0, ROOM_LEAD_MS_MAX + 1, "", 0, 0, NULL, 0), -1);
	ck_assert_int_eq(room_arm(r, T0, 1000, "Full\"", 0, 0, NULL, 0), -1);
	ck_assert_int_eq(room_arm(r, T0, 1000, "a-very-long-policy-name-x", 0, 0, NULL, 0), -1);
	/* a name /play does not have: every page would run its own policy under the herd's row for it */
	ck_assert_int_eq(room_arm(r, T0, 1000, "full-jitter", 0, 0, NULL, 0), -1);
	ck_assert_int_eq(room_arm(r, T0, 1000, "2", 0, 0, NULL, 0), -1);
	ck_assert_int_eq(room_arm(r, T0, 1000, "httpclient", 0, 0, NULL, 0), 0);
	ck_assert_int_eq(room_arm(r, T0, 1000, "", 0, 0, NULL, 0), 0);
	room_free(r);
}
END_TEST

/* Two pages report herd #1: one run, summed; attempts fall in 100 ms buckets; a new herd's run goes in front. */
START_TEST(reports_summed_per_run)
{
	static const uint32_t A[] = { 0, 5, 99, 100, 1500 }, B[] = { 1, 2, 250 };
	struct room *r = room_new();
	struct room_run *runs = malloc(ROOM_RUNS * sizeof(*runs));
	struct room_report a = { 1, 3, 0, 5, 2, 1600, A, 5, 0 }, b = { 1, 2, 1, 3, 0, 300, B, 3, 0 };

	ck_assert_int_eq(room_report(r, &a), -1);          /* nothing armed */
	room_arm(r, T0, 1000, "full", 0, 0, NULL, 0);
	ck_assert_int_eq(room_report(r, &a), 0);
	ck_assert_int_eq(room_report(r, &b), 0);
	ck_assert_uint_eq(room_runs(r, NULL, 0, runs), 1);
	ck_assert_uint_eq(runs[0].pages, 2);
	ck_assert_uint_eq(runs[0].calls, 8);
	ck_assert_uint_eq(runs[0].ok, 5);
	ck_assert_uint_eq(runs[0].failed, 1);
	ck_assert_uint_eq(runs[0].done_ms, 1600);
	ck_assert_str_eq(runs[0].policy, "full");
	ck_assert_uint_eq(runs[0].buckets[0], 5);
	ck_assert_uint_eq(room_run_peak(&runs[0]), 5);
	room_arm(r, T0 + 10000, 1000, "", 0, 0, NULL, 0);
	b.id = 2;
	ck_assert_int_eq(room_report(r, &b), 0);
	ck_assert_uint_eq(room_runs(r, NULL, 0, runs), 2);
	ck_assert_uint_eq(runs[0].id, 2);
	ck_assert_uint_eq(runs[1].id, 1);
	ck_assert_int_eq(room_report(r, &a), 0);           /* herd #1's late page still counts */
	room_reset(r);
	ck_assert_uint_eq(room_runs(r, NULL, 0, runs), 0);
	free(runs);
	room_free(r);
}
END_TEST

/*
 * A page counts once: a second start or report from it (the same name, or
 * with none the same address) is not counted, another page's is; pages are
 * told apart by a keyed hash, never 0, and one with nothing to go by is not
 * deduplicated.
 */
START_TEST(each_page_counts_once)
{
	static const uint32_t A[] = { 0, 150 };
	struct room *r = room_new();
	struct room_run *runs = malloc(ROOM_RUNS * sizeof(*runs));
	struct sockaddr_in a1 = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001) };
	struct sockaddr_in a2 = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000002) };
	uint64_t ada = room_page_of(r, "ada", NULL), bob = room_page_of(r, "bob", (struct sockaddr *)&a1);
	uint64_t at1 = room_page_of(r, NULL, (struct sockaddr *)&a1), at2 = room_page_of(r, "", (struct sockaddr *)&a2);
	struct room_report rep = { 1, 1, 0, 2, 1, 200, A, 2, ada };
	struct room_view v;

	ck_assert(ada != 0 && bob != 0 && at1 != 0 && at2 != 0);
	ck_assert(ada != bob && at1 != at2 && ada != at1);
	ck_assert_uint_eq(room_page_of(r, "ada", (struct sockaddr *)&a2), ada);   /* the name, wherever from */
	ck_assert_uint_eq(room_page_of(r, NULL, NULL), 0);
	/* trailing spaces and tabs are no part of a header's value: "ada \t" is ada, "  " is no name */
	ck_assert_uint_eq(room_page_of(r, "ada \t", NULL), ada);
	ck_assert_uint_eq(room_page_of(r, "  ", (struct sockaddr *)&a1), at1);
	ck_assert_int_eq(room_arm(r, T0, 1000, "", 0, 0, NULL, 0), 0);
	ck_assert(room_started(r, 1, ada, T0 + 1000));
	ck_assert(!room_started(r, 1, ada, T0 + 1001));
	ck_assert(room_started(r, 1, at1, T0 + 1002));
	ck_assert(room_started(r, 1, 0, T0 + 1003));
	ck_assert(room_started(r, 1, 0, T0 + 1004));
	room_view(r, &v);
	ck_assert_uint_eq(v.started, 4);
	ck_assert_int_eq(room_report(r, &rep), 0);
	ck_assert_int_eq(room_report(r, &rep), -1);
	rep.page = bob;
	ck_assert_int_eq(room_report(r, &rep), 0);
	ck_assert_uint_eq(room_runs(r, NULL, 0, runs), 1);
	ck_assert_uint_eq(runs[0].pages, 2);
	ck_assert_uint_eq(runs[0].calls, 4);
	/* the next herd: each page starts and reports it once again */
	ck_assert_int_eq(room_arm(r, T0 + 10000, 1000, "", 0, 0, NULL, 0), 0);
	ck_assert(room_started(r, 2, ada, T0 + 11000));
	rep.id = 2;
	rep.page = ada;
	ck_assert_int_eq(room_report(r, &rep), 0);
	free(runs);
	room_free(r);
}
END_TEST

/* A run's tally is the server's counters since its arming: open until the next herd is armed, then kept as it was. */
START_TEST(tally_counts_from_arming_to_the_next)
{
	static const struct room_report rep1 = { 1, 1, 0, 1, 0, 10, NULL, 0, 0 }, rep2 = { 2, 1, 0, 1, 0, 10, NULL, 0, 0 };
	struct room_tally at1[2] = { { "ada", 10, 2, 2, 1, 0, 0 }, { "bob", 4, 0, 0, 0, 0, 0 } };
	struct room_tally now1[3] = { { "ada", 16, 4, 5, 1, 0, 2 }, { "bob", 4, 0, 0, 0, 0, 0 }, { "cy", 3, 1, 1, 1, 0, 0 } };
	struct room_tally now2[3] = { { "ada", 20, 4, 9, 5, 0, 2 }, { "bob", 5, 0, 0, 0, 0, 0 }, { "cy", 3, 1, 1, 1, 0, 0 } };
	struct room *r = room_new();
	struct room_run *runs = malloc(ROOM_RUNS * sizeof(*runs));
	uint64_t early, waiting;
	uint32_t polite;

	ck_assert_int_eq(room_arm(r, T0, 1000, "", 0, 0, at1, 2), 0);
	ck_assert_int_eq(room_report(r, &rep1), 0);
	ck_assert_uint_eq(room_runs(r, now1, 3, runs), 1);
	/* ada: 6 requests, 3 retries, 0 new early ones; bob did nothing (left out); cy is new: all its counts */
	ck_assert_uint_eq(runs[0].nseen, 2);
	ck_assert_str_eq(runs[0].seen[0].name, "ada");
	ck_assert_uint_eq(runs[0].seen[0].requests, 6);
	ck_assert_uint_eq(runs[0].seen[0].retries, 3);
	ck_assert_uint_eq(runs[0].seen[0].early, 0);
	ck_assert_uint_eq(runs[0].seen[0].waiting_new, 2);
	ck_assert_str_eq(runs[0].seen[1].name, "cy");
	ck_assert(!runs[0].closed);
	room_run_early(&runs[0], &early, &waiting, &polite);
	ck_assert_uint_eq(early, 1);
	ck_assert_uint_eq(waiting, 2);
	ck_assert_uint_eq(polite, 1);
	/* herd #2 armed at now1: #1 is closed with its tally up to now1, #2 counts from there */
	ck_assert_int_eq(room_arm(r, T0 + 10000, 1000, "", 0, 0, now1, 3), 0);
	ck_assert_int_eq(room_report(r, &rep2), 0);
	ck_assert_uint_eq(room_runs(r, now2, 3, runs), 2);
	ck_assert_uint_eq(runs[1].id, 1);
	ck_assert(runs[1].closed);
	ck_assert_uint_eq(runs[1].nseen, 2);
	ck_assert_uint_eq(runs[1].seen[0].requests, 6);
	ck_assert_uint_eq(runs[0].nseen, 2);
	ck_assert_str_eq(runs[0].seen[0].name, "ada");
	ck_assert_uint_eq(runs[0].seen[0].requests, 4);
	ck_assert_uint_eq(runs[0].seen[0].early, 4);
	ck_assert_uint_eq(runs[0].seen[0].waiting_new, 0);
	ck_assert_str_eq(runs[0].seen[1].name, "bob");
	room_run_early(&runs[0], &early, &waiting, &polite);
	ck_assert_uint_eq(early, 4);
	ck_assert_uint_eq(polite, 1);
	/* counters below their base (the server was reset): all of them are new */
	now2[0].requests = 2;
	now2[0].early = 1;
	ck_assert_uint_eq(room_runs(r, now2, 1, runs), 2);
	ck_assert_uint_eq(runs[0].seen[0].requests, 2);
	ck_assert_uint_eq(runs[0].seen[0].early, 1);
	free(runs);
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
	tcase_add_test(tc, each_page_counts_once);
	tcase_add_test(tc, tally_counts_from_arming_to_the_next);
	suite_add_tcase(s, tc);
	return s;
}
