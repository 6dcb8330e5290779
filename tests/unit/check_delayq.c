/*
 * The delay queue: bounded, refuses once stopped, and stopping runs what is
 * pending in deadline order.  Deadlines are an hour away, so the timer thread
 * never fires one: every entry runs in delayq_stop, on the test's thread.
 */
#include <check.h>
#include <stdint.h>

#include "common/clock.h"
#include "server/http/delayq.h"

#define HOUR (3600ULL * NS_PER_SEC)

struct ran {
	int order[16];
	int n;
};

struct entry {
	struct ran *log;
	int id;
};

static void record(void *arg)
{
	struct entry *e = arg;

	if (e->log->n < 16)
		e->log->order[e->log->n++] = e->id;
}

START_TEST(stop_runs_pending_in_deadline_order)
{
	static const uint64_t due[] = { 50, 10, 40, 30, 20, 10 };
	static const int want[] = { 1, 5, 4, 3, 2, 0 };  /* ties (10, 10) in push order */
	struct ran log = { { 0 }, 0 };
	struct entry e[6];
	struct delayq *q = delayq_new(8);
	uint64_t base = clock_monotonic_ns() + HOUR;

	ck_assert_ptr_nonnull(q);
	for (int i = 0; i < 6; i++) {
		e[i] = (struct entry){ &log, i };
		ck_assert_int_eq(delayq_push(q, base + due[i], record, &e[i]), 0);
	}
	ck_assert_int_eq(log.n, 0);
	delayq_stop(q);
	ck_assert_int_eq(log.n, 6);
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(log.order[i], want[i]);
	delayq_free(q);
	ck_assert_int_eq(log.n, 6);  /* nothing runs twice */
}
END_TEST

START_TEST(full_queue_refuses)
{
	struct ran log = { { 0 }, 0 };
	struct entry e[4];
	struct delayq *q = delayq_new(3);
	uint64_t base = clock_monotonic_ns() + HOUR;

	ck_assert_ptr_nonnull(q);
	for (int i = 0; i < 4; i++)
		e[i] = (struct entry){ &log, i };
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(delayq_push(q, base + (uint64_t)i, record, &e[i]), 0);
	ck_assert_int_eq(delayq_push(q, base, record, &e[3]), -1);
	delayq_stop(q);
	ck_assert_int_eq(log.n, 3);
	ck_assert_int_eq(log.order[0], 0);
	ck_assert_int_eq(log.order[2], 2);
	delayq_free(q);
}
END_TEST

START_TEST(stopped_queue_refuses)
{
	struct ran log = { { 0 }, 0 };
	struct entry e = { &log, 7 };
	struct delayq *q = delayq_new(4);

	ck_assert_ptr_nonnull(q);
	delayq_stop(q);
	ck_assert_int_eq(delayq_push(q, clock_monotonic_ns() + HOUR, record, &e), -1);
	delayq_stop(q);  /* idempotent */
	delayq_free(q);
	ck_assert_int_eq(log.n, 0);
}
END_TEST

/* free stops first: what is pending still runs, once. */
START_TEST(free_runs_pending)
{
	struct ran log = { { 0 }, 0 };
	struct entry e[2] = { { &log, 0 }, { &log, 1 } };
	struct delayq *q = delayq_new(2);
	uint64_t base = clock_monotonic_ns() + HOUR;

	ck_assert_ptr_nonnull(q);
	ck_assert_int_eq(delayq_push(q, base + 2, record, &e[0]), 0);
	ck_assert_int_eq(delayq_push(q, base + 1, record, &e[1]), 0);
	delayq_free(q);
	ck_assert_int_eq(log.n, 2);
	ck_assert_int_eq(log.order[0], 1);
	ck_assert_int_eq(log.order[1], 0);
	delayq_free(NULL);
}
END_TEST

Suite *delayq_suite(void)
{
	Suite *s = suite_create("delayq");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, stop_runs_pending_in_deadline_order);
	tcase_add_test(tc, full_queue_refuses);
	tcase_add_test(tc, stopped_queue_refuses);
	tcase_add_test(tc, free_runs_pending);
	suite_add_tcase(s, tc);
	return s;
}
