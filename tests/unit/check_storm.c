/* ratelab storm's pure parts: the phases of a run's rows, recovery, the table row, the built-in policies. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/retry/retry.h"
#include "lab/storm.h"
#include "lab/storm_report.h"

#define SEC(x) ((uint64_t)(x) * NS_PER_SEC)
#define MS(x) ((uint64_t)(x) * NS_PER_MS)

/* 10 s of rows: 20 answers a row (200/s) but `during` from 3 s to 5 s and `after` from 5 s to `back`. */
static void scripted(struct storm_result *r, struct storm_row *rows, uint32_t during, uint32_t after, uint64_t back)
{
	memset(r, 0, sizeof(*r));
	memset(rows, 0, 100 * sizeof(*rows));
	r->rows = rows;
	r->nrows = 100;
	r->triggered = true;
	for (uint32_t i = 0; i < 100; i++) {
		uint64_t t = (uint64_t)i * STORM_ROW_NS;

		rows[i].goodput = t < SEC(3) ? 20 : t < SEC(5) ? during : t < back ? after : 20;
	}
}

static const struct storm_window WINDOW = { SEC(3), SEC(5) };

START_TEST(phases_and_recovery)
{
	struct storm_row rows[100];
	struct storm_result r;

	scripted(&r, rows, 5, 0, SEC(7));
	rows[0].goodput = 3;                  /* the ramp: not in "before" */
	storm_phases(&r, &WINDOW);
	ck_assert(r.before == 200);
	ck_assert(r.during == 50);
	ck_assert(r.after == 200.0 * 3 / 5);  /* 2 s of 0, then 3 s of 200 */
	ck_assert(r.best_after == 200);
	ck_assert(r.recovered);
	ck_assert_uint_eq(r.recovered_ns, SEC(2) - MS(100));   /* the first second reaching 180/s starts at 6.9 s */
}
END_TEST

/* Below 90 % the whole time after: not recovered, and the best second after says how far it got. */
START_TEST(stays_down)
{
	struct storm_row rows[100];
	struct storm_result r;

	scripted(&r, rows, 5, 2, SEC(100));
	storm_phases(&r, &WINDOW);
	ck_assert(r.after == 20);
	ck_assert(r.best_after == 20);
	ck_assert(!r.recovered);
	/* exactly 90 %: recovered at once */
	scripted(&r, rows, 5, 18, SEC(100));
	storm_phases(&r, &WINDOW);
	ck_assert(r.recovered);
	ck_assert_uint_eq(r.recovered_ns, 0);
	/* nothing before: nothing to recover to */
	scripted(&r, rows, 0, 0, 0);
	for (int i = 0; i < 30; i++)
		rows[i].goodput = 0;
	storm_phases(&r, &WINDOW);
	ck_assert(r.before == 0);
	ck_assert(!r.recovered);
}
END_TEST

/* A burst of late answers from a draining queue, then a fall: not recovered; a late dip moves recovery on. */
START_TEST(recovered_for_good)
{
	struct storm_row rows[100];
	struct storm_result r;

	scripted(&r, rows, 5, 10, SEC(100));   /* 100/s after the trigger ... */
	for (int i = 60; i < 70; i++)
		rows[i].goodput = 30;              /* ... but a second of 300/s at 6 s */
	storm_phases(&r, &WINDOW);
	ck_assert(r.best_after == 300);
	ck_assert(!r.recovered);
	scripted(&r, rows, 5, 0, SEC(6));      /* back at 6 s, a dip to 0 at 8 s for 200 ms */
	rows[80].goodput = rows[81].goodput = 0;
	storm_phases(&r, &WINDOW);
	ck_assert(r.recovered);
	ck_assert_uint_eq(r.recovered_ns, SEC(3) + MS(100));   /* 8.1 s: no second from then on holds both short rows */
	for (int i = 90; i < 100; i++)         /* the last second of the run falls short: never back for good */
		rows[i].goodput = 10;
	storm_phases(&r, &WINDOW);
	ck_assert(!r.recovered);
}
END_TEST

/* "before" starts after the first second, and looks back at most 5 s. */
START_TEST(before_window)
{
	struct storm_row rows[100];
	struct storm_result r;
	struct storm_window late = { SEC(8), SEC(9) };

	scripted(&r, rows, 20, 20, 0);
	for (int i = 0; i < 30; i++)
		rows[i].goodput = 0;              /* 0 to 3 s: out of "before" when the trigger is at 8 s */
	storm_phases(&r, &late);
	ck_assert(r.before == 200);
	late.start_ns = MS(500);              /* a trigger inside the first second: "before" from 0 */
	late.end_ns = SEC(1);
	scripted(&r, rows, 20, 20, 0);
	rows[0].goodput = 10;
	storm_phases(&r, &late);
	ck_assert(r.before == 180);
}
END_TEST

START_TEST(table_row)
{
	struct storm_row rows[100];
	struct storm_result r;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	scripted(&r, rows, 5, 0, SEC(7));
	snprintf(r.policy, sizeof(r.policy), "budget");
	storm_phases(&r, &WINDOW);
	r.amplification = 1.19;
	r.work_s = 20;
	r.work_gone_s = 8.2;
	storm_report_row(f, &r, true);
	r.recovered = false;
	snprintf(r.policy, sizeof(r.policy), "naive");
	storm_report_row(f, &r, false);
	r.triggered = false;
	snprintf(r.policy, sizeof(r.policy), "naive:no-trigger");
	storm_report_row(f, &r, false);
	fclose(f);
	ck_assert_str_eq(buf,
	                 "goodput/s:             before   during    after best-after  recovered  attempts    wasted work\n"
	                 "budget                  200.0     50.0    120.0      200.0       1.9s      1.19     8.2s   41%\n"
	                 "naive                   200.0     50.0    120.0      200.0         no      1.19     8.2s   41%\n"
	                 "naive:no-trigger        200.0     50.0    120.0      200.0          -      1.19     8.2s   41%\n");
	free(buf);
}
END_TEST

START_TEST(built_in_policies)
{
	struct storm_knobs k = { MS(1500), 3 };
	struct retry_policy p;
	char err[300];

	ck_assert_int_eq(storm_policy("naive", &k, &p, err, sizeof(err)), 0);
	ck_assert_uint_eq(p.max_attempts, 5);
	ck_assert_int_eq(p.backoff, BACKOFF_NONE);
	ck_assert(p.retry_timeout && p.retry_on[503]);
	ck_assert_int_eq(p.budget.kind, BUDGET_NONE);
	ck_assert_int_eq(storm_policy("backoff", &k, &p, err, sizeof(err)), 0);
	ck_assert_int_eq(p.backoff, BACKOFF_FULL);
	ck_assert_uint_eq(p.base_ns, MS(100));
	ck_assert_uint_eq(p.cap_ns, SEC(2));
	ck_assert_uint_eq(p.max_attempts, 5);
	ck_assert_str_eq(p.name, "backoff");
	ck_assert_int_eq(storm_policy("budget", &k, &p, err, sizeof(err)), 0);
	ck_assert_int_eq(p.backoff, BACKOFF_NONE);
	ck_assert_int_eq(p.budget.kind, BUDGET_RATIO);
	ck_assert(p.budget.ratio == 0.2 && p.budget.min_per_sec == 10);
	ck_assert_uint_eq(p.budget.window_ns, SEC(10));
	ck_assert_int_eq(storm_policy("adaptive", &k, &p, err, sizeof(err)), 0);
	ck_assert_int_eq(p.throttle.kind, RETRY_THROTTLE_SRE);
	ck_assert(p.throttle.k == 3);
	ck_assert_uint_eq(p.throttle.window_ns, MS(1500));
	ck_assert_int_eq(p.backoff, BACKOFF_FULL);
	ck_assert_int_eq(storm_policy("sre-adaptive", &k, &p, err, sizeof(err)), 0);
	ck_assert_uint_eq(p.throttle.window_ns, SEC(120));
	ck_assert_int_eq(storm_policy("grpc", &k, &p, err, sizeof(err)), 0);
	ck_assert_int_eq(p.budget.kind, BUDGET_GRPC);
	ck_assert_int_eq(storm_policy("patient", &k, &p, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "--policies: unknown policy 'patient' (naive,backoff,budget,adaptive, or a preset: none, "
	                      "lab, signaldb, wasm, saia, aws-standard, grpc, naive, sre-adaptive)");
}
END_TEST

Suite *storm_suite(void)
{
	Suite *s = suite_create("storm");
	TCase *tc = tcase_create("figures");

	tcase_add_test(tc, phases_and_recovery);
	tcase_add_test(tc, stays_down);
	tcase_add_test(tc, recovered_for_good);
	tcase_add_test(tc, before_window);
	tcase_add_test(tc, table_row);
	tcase_add_test(tc, built_in_policies);
	suite_add_tcase(s, tc);
	return s;
}
