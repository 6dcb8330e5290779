/*
 * The scheduler: its one-shots are bounded, refused once stopped, and
 * stopping runs what is pending in deadline order; caller-owned timers are
 * re-armed and cancelled in place, and dropped (not run) at the stop.
 * Deadlines are an hour away, so the timer thread never fires one: every
 * entry runs in sched_stop, on the test's thread.
 */
#include <check.h>
#include <stdint.h>

#include "common/clock.h"
#include "server/http/sched.h"

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
	struct sched *q = sched_new(0, 8);
	uint64_t base = clock_monotonic_ns() + HOUR;

	ck_assert_ptr_nonnull(q);
	ck_assert_int_eq(sched_start(q), 0);
	for (int i = 0; i < 6; i++) {
		e[i] = (struct entry){ &log, i };
		ck_assert_int_eq(sched_at(q, base + due[i], record, &e[i]), 0);
	}
	ck_assert_int_eq(log.n, 0);
	sched_stop(q);
	ck_assert_int_eq(log.n, 6);
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(log.order[i], want[i]);
	sched_free(q);
	ck_assert_int_eq(log.n, 6);  /* nothing runs twice */
}
END_TEST

START_TEST(full_queue_refuses)
{
	struct ran log = { { 0 }, 0 };
	struct entry e[4];
	struct sched *q = sched_new(0, 3);
	uint64_t base = clock_monotonic_ns() + HOUR;

	ck_assert_ptr_nonnull(q);
	ck_assert_int_eq(sched_start(q), 0);
	for (int i = 0; i < 4; i++)
		e[i] = (struct entry){ &log, i };
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(sched_at(q, base + (uint64_t)i, record, &e[i]), 0);
	ck_assert_int_eq(sched_at(q, base, record, &e[3]), -1);
	sched_stop(q);
	ck_assert_int_eq(log.n, 3);
	ck_assert_int_eq(log.order[0], 0);
	ck_assert_int_eq(log.order[2], 2);
	sched_free(q);
}
END_TEST

START_TEST(stopped_queue_refuses)
{
	struct ran log = { { 0 }, 0 };
	struct entry e = { &log, 7 };
	struct sched *q = sched_new(0, 4);

	ck_assert_ptr_nonnull(q);
	ck_assert_int_eq(sched_start(q), 0);
	sched_stop(q);
	ck_assert_int_eq(sched_at(q, clock_monotonic_ns() + HOUR, record, &e), -1);
	sched_stop(q);  /* idempotent */
	sched_free(q);
	ck_assert_int_eq(log.n, 0);
}
END_TEST

/* free stops first: what is pending still runs, once. */
START_TEST(free_runs_pending)
{
	struct ran log = { { 0 }, 0 };
	struct entry e[2] = { { &log, 0 }, { &log, 1 } };
	struct sched *q = sched_new(0, 2);
	uint64_t base = clock_monotonic_ns() + HOUR;

	ck_assert_ptr_nonnull(q);
	ck_assert_int_eq(sched_start(q), 0);
	ck_assert_int_eq(sched_at(q, base + 2, record, &e[0]), 0);
	ck_assert_int_eq(sched_at(q, base + 1, record, &e[1]), 0);
	sched_free(q);
	ck_assert_int_eq(log.n, 2);
	ck_assert_int_eq(log.order[0], 1);
	ck_assert_int_eq(log.order[1], 0);
	sched_free(NULL);
}
END_TEST

/* A caller's timer moves when armed again, is gone once cancelled, and is dropped at the stop. */
START_TEST(own_timers_move_cancel_and_drop)
{
	struct ran log = { { 0 }, 0 };
	struct entry e[3] = { { &log, 0 }, { &log, 1 }, { &log, 2 } };
	struct sched_timer t[3];
	struct sched *q = sched_new(3, 2);
	uint64_t base = clock_monotonic_ns() + HOUR;

	ck_assert_ptr_nonnull(q);
	ck_assert_int_eq(sched_start(q), 0);
	for (int i = 0; i < 3; i++) {
		sched_timer_init(&t[i], record, &e[i]);
		ck_assert_int_eq(sched_arm(q, &t[i], base + (uint64_t)i), 0);
	}
	/* a re-arm takes no more room */
	ck_assert_int_eq(sched_arm(q, &t[0], base + 10), 0);
	sched_cancel(q, &t[1]);
	sched_cancel(q, &t[1]);  /* a second cancel is a no-op */
	ck_assert_uint_eq(t[1].pos, 0);
	ck_assert_uint_ne(t[0].pos, 0);
	ck_assert_int_eq(sched_at(q, base + 5, record, &e[1]), 0);
	sched_stop(q);
	/* only the one-shot ran; the caller's timers were dropped, disarmed */
	ck_assert_int_eq(log.n, 1);
	ck_assert_int_eq(log.order[0], 1);
	ck_assert_uint_eq(t[0].pos, 0);
	ck_assert_uint_eq(t[2].pos, 0);
	ck_assert_int_eq(sched_arm(q, &t[0], base), -1);
	sched_free(q);
}
END_TEST

#define MANY 200

/* Many timers armed out of order, some moved, some cancelled: every one is due no earlier than its heap parent. */
START_TEST(heap_order_survives_moves)
{
	static struct entry e[MANY];
	static struct sched_timer t[MANY];
	struct ran log = { { 0 }, 0 };
	struct sched *q = sched_new(MANY, 16);
	uint64_t base = clock_monotonic_ns() + HOUR, armed = 0;

	ck_assert_ptr_nonnull(q);
	for (int i = 0; i < MANY; i++) {
		e[i] = (struct entry){ &log, i };
		sched_timer_init(&t[i], record, &e[i]);
		ck_assert_int_eq(sched_arm(q, &t[i], base + (uint64_t)((i * 7919) % MANY)), 0);
	}
	for (int i = 0; i < MANY; i += 3)
		ck_assert_int_eq(sched_arm(q, &t[i], base + (uint64_t)((i * 104729) % (2 * MANY))), 0);
	for (int i = 1; i < MANY; i += 5)
		sched_cancel(q, &t[i]);
	for (int i = 0; i < MANY; i++) {
		if (t[i].pos == 0)
			continue;
		armed++;
		for (int j = 0; j < MANY && t[i].pos > 1; j++)
			if (t[j].pos == (t[i].pos - 2) / 2 + 1)
				ck_assert_uint_le(t[j].due_ns, t[i].due_ns);
	}
	/* cancelled: 1, 6, 11, ..., 196 */
	ck_assert_uint_eq(armed, 160);
	sched_free(q);
	ck_assert_int_eq(log.n, 0);
}
END_TEST

Suite *sched_suite(void)
{
	Suite *s = suite_create("sched");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, stop_runs_pending_in_deadline_order);
	tcase_add_test(tc, full_queue_refuses);
	tcase_add_test(tc, stopped_queue_refuses);
	tcase_add_test(tc, free_runs_pending);
	tcase_add_test(tc, own_timers_move_cancel_and_drop);
	tcase_add_test(tc, heap_order_survives_moves);
	suite_add_tcase(s, tc);
	return s;
}
