/*
 * A request's lifecycle: parked once and woken once, the drain sheds every
 * park but the store's and refuses new ones, and waits on a condition for
 * the requests in flight.  Connections are fakes whose suspends and resumes
 * are counted; the scheduler's thread is never started, so no timer fires.
 */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>

#include "common/clock.h"
#include "server/http/lifecycle.h"

#define HOUR (3600ULL * NS_PER_SEC)

static int suspended[4], resumed[4];
static char fake[4];

static int idx(struct MHD_Connection *c)
{
	return (int)((char *)c - fake);
}

static void fake_suspend(struct MHD_Connection *c)
{
	suspended[idx(c)]++;
}

static void fake_resume(struct MHD_Connection *c)
{
	resumed[idx(c)]++;
}

static const struct lifecycle_conn_ops ops = { fake_suspend, fake_resume };

static struct MHD_Connection *conn(int i)
{
	return (struct MHD_Connection *)(void *)&fake[i];
}

static struct sched *setup(struct lifecycle *lc)
{
	struct sched *s = sched_new(8, 4);

	ck_assert_ptr_nonnull(s);
	memset(suspended, 0, sizeof(suspended));
	memset(resumed, 0, sizeof(resumed));
	lifecycle_init(lc, s, &ops);
	return s;
}

/* A park suspends once; the first wake resumes it with its outcome, a second does nothing. */
START_TEST(woken_once)
{
	struct lifecycle lc;
	struct lifecycle_park p = { 0 };
	struct sched *s = setup(&lc);

	ck_assert(!lifecycle_wake(&p, LIFECYCLE_DUE));   /* never parked */
	ck_assert(lifecycle_park_until(&lc, &p, conn(0), LIFECYCLE_DELAY, clock_monotonic_ns() + HOUR));
	ck_assert_int_eq(suspended[0], 1);
	ck_assert_uint_ne(p.timer.pos, 0);
	ck_assert(lifecycle_wake(&p, LIFECYCLE_DUE));
	ck_assert(!lifecycle_wake(&p, LIFECYCLE_SHED));
	ck_assert_int_eq(resumed[0], 1);
	ck_assert_int_eq(p.outcome, LIFECYCLE_DUE);
	ck_assert_uint_eq(p.timer.pos, 0);               /* its timer went with the wake */
	ck_assert_ptr_null(lc.parked);
	sched_free(s);
	lifecycle_destroy(&lc);
}
END_TEST

/* The drain sheds the delay's and the stream's parks, leaves the store's, and refuses new parks but the store's. */
START_TEST(drain_sheds_all_but_the_store)
{
	struct lifecycle lc;
	struct lifecycle_park store = { 0 }, delay = { 0 }, stream = { 0 }, late = { 0 };
	struct sched *s = setup(&lc);

	ck_assert(lifecycle_begin(&lc));
	ck_assert(lifecycle_park(&lc, &store, conn(0), LIFECYCLE_STORE));
	ck_assert(lifecycle_park_until(&lc, &delay, conn(1), LIFECYCLE_DELAY, clock_monotonic_ns() + HOUR));
	ck_assert(lifecycle_park(&lc, &stream, conn(2), LIFECYCLE_STREAM));
	/* the deadline is past: one request is still in flight */
	ck_assert_int_eq(lifecycle_drain(&lc, clock_monotonic_ns()), 1);
	ck_assert_int_eq(resumed[0], 0);
	ck_assert_int_eq(resumed[1], 1);
	ck_assert_int_eq(resumed[2], 1);
	ck_assert_int_eq(delay.outcome, LIFECYCLE_SHED);
	ck_assert_int_eq(stream.outcome, LIFECYCLE_SHED);
	ck_assert_uint_eq(delay.timer.pos, 0);
	ck_assert(!lifecycle_begin(&lc));
	ck_assert(!lifecycle_park(&lc, &late, conn(3), LIFECYCLE_DELAY));
	ck_assert(!lifecycle_park(&lc, &late, conn(3), LIFECYCLE_BACKEND));
	ck_assert_int_eq(suspended[3], 0);
	/* the store answers later, as ever */
	ck_assert(lifecycle_wake(&store, LIFECYCLE_DUE));
	ck_assert_int_eq(resumed[0], 1);
	ck_assert(lifecycle_park(&lc, &late, conn(3), LIFECYCLE_STORE));
	ck_assert(lifecycle_wake(&late, LIFECYCLE_DUE));
	lifecycle_end(&lc);
	ck_assert_int_eq(lifecycle_drain(&lc, clock_monotonic_ns()), 0);
	sched_free(s);
	lifecycle_destroy(&lc);
}
END_TEST

static void count_set(void *arg)
{
	(*(int *)arg)++;
}

/*
 * A backend's timer is armed only while parked, and the request's state
 * (set) written only then; a woken park refuses both.
 */
START_TEST(arm_only_while_parked)
{
	struct lifecycle lc;
	struct lifecycle_park p = { 0 };
	struct sched *s = setup(&lc);
	int sets = 0;

	ck_assert_int_eq(lifecycle_arm(&p, clock_monotonic_ns() + HOUR, NULL, NULL, count_set, &sets), -1);
	ck_assert_int_eq(sets, 0);
	ck_assert(lifecycle_park(&lc, &p, conn(0), LIFECYCLE_BACKEND));
	ck_assert_int_eq(lifecycle_arm(&p, clock_monotonic_ns() + HOUR, NULL, NULL, count_set, &sets), 0);
	ck_assert_int_eq(sets, 1);
	ck_assert_uint_ne(p.timer.pos, 0);
	ck_assert(lifecycle_claim(&p));
	ck_assert(!lifecycle_claim(&p));
	/* Claimed (the drain's first step), not yet resumed: the arm is refused already. */
	ck_assert_int_eq(lifecycle_arm(&p, clock_monotonic_ns() + HOUR, NULL, NULL, count_set, &sets), -1);
	ck_assert_int_eq(sets, 1);
	lifecycle_resume(&p, LIFECYCLE_DUE);
	ck_assert_uint_eq(p.timer.pos, 0);
	ck_assert_int_eq(lifecycle_arm(&p, clock_monotonic_ns() + HOUR, NULL, NULL, count_set, &sets), -1);
	ck_assert_int_eq(sets, 1);
	ck_assert_int_eq(resumed[0], 1);
	sched_free(s);
	lifecycle_destroy(&lc);
}
END_TEST

struct ender {
	struct lifecycle *lc;
};

/* Ends the last request once the drain has begun (an event, not a clock: bounded spins). */
static void *end_when_draining(void *arg)
{
	struct ender *e = arg;

	for (long i = 0; i < 100000000L && !lifecycle_draining(e->lc); i++)
		sched_yield();
	lifecycle_end(e->lc);
	return NULL;
}

/* The drain waits on a condition: it returns as soon as the last request ends, long before its deadline. */
START_TEST(drain_waits_for_the_last)
{
	struct lifecycle lc;
	struct sched *s = setup(&lc);
	struct ender e = { &lc };
	pthread_t t;

	ck_assert(lifecycle_begin(&lc));
	ck_assert_int_eq(pthread_create(&t, NULL, end_when_draining, &e), 0);
	ck_assert_int_eq(lifecycle_drain(&lc, clock_monotonic_ns() + HOUR), 0);
	pthread_join(t, NULL);
	sched_free(s);
	lifecycle_destroy(&lc);
}
END_TEST

Suite *lifecycle_suite(void)
{
	Suite *s = suite_create("lifecycle");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, woken_once);
	tcase_add_test(tc, drain_sheds_all_but_the_store);
	tcase_add_test(tc, arm_only_while_parked);
	tcase_add_test(tc, drain_waits_for_the_last);
	suite_add_tcase(s, tc);
	return s;
}
