/* The capacity model under an injected clock: queue order, workers, triggers, wasted work, the series. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "server/capacity.h"

#define MS(x) ((uint64_t)(x) * NS_PER_MS)
#define SEC(x) ((uint64_t)(x) * NS_PER_SEC)
#define EV 16

/* Jobs are small integers cast to pointers: 1 is "A", 2 "B", ... */
#define J(n) ((void *)(uintptr_t)(n))
#define ID(p) ((int)(uintptr_t)(p))

static struct capacity_params params(const char *spec)
{
	struct capacity_params p;
	char err[200] = "";

	memset(&p, 0, sizeof(p));
	ck_assert_msg(capacity_parse(spec, &p, err, sizeof(err)) == 0, "'%s': %s", spec, err);
	return p;
}

static struct capacity *model(const char *spec, uint64_t now)
{
	struct capacity_params p = params(spec);
	struct capacity *c = capacity_new(&p, now, 1);

	ck_assert_ptr_nonnull(c);
	return c;
}

/* The events as text: "+1@10ms" a start ending at 10 ms, "-5:full" a shed, "d@5ms" rejection work. */
static const char *text(const struct capacity_event *ev, size_t n)
{
	static char buf[512];
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		const struct capacity_event *e = &ev[i];

		if (e->kind == CAPACITY_START)
			used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s+%d@%llums", i ? " " : "", ID(e->job),
			                         (unsigned long long)(e->done_ns / NS_PER_MS));
		else if (e->kind == CAPACITY_SHED)
			used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s-%d:%s", i ? " " : "", ID(e->job),
			                         capacity_shed_name(e->why));
		else
			used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%sd@%llums", i ? " " : "",
			                         (unsigned long long)(e->done_ns / NS_PER_MS));
	}
	return buf;
}

static const char *arrive(struct capacity *c, uint64_t now, int job)
{
	struct capacity_event ev[EV];

	return text(ev, capacity_arrive(c, now, J(job), ev, EV));
}

static const char *done(struct capacity *c, uint64_t now, uint64_t service, enum capacity_client who)
{
	struct capacity_event ev[EV];

	return text(ev, capacity_done(c, now, service, who, ev, EV));
}

static const char *poll_(struct capacity *c, uint64_t now)
{
	struct capacity_event ev[EV];

	return text(ev, capacity_poll(c, now, ev, EV));
}

START_TEST(parse_specs)
{
	struct capacity_params p = params("workers=8,service=5ms\xc2\xb1" "1ms,queue=lifo:50,queue-timeout=2s,"
	                                  "reject-cost=0.25");
	char d[200];

	ck_assert_uint_eq(p.workers, 8);
	ck_assert_int_eq(p.service, CAPACITY_SERVICE_NORMAL);
	ck_assert_uint_eq(p.service_ns, MS(5));
	ck_assert_uint_eq(p.service_sd_ns, MS(1));
	ck_assert_int_eq(p.queue, CAPACITY_LIFO);
	ck_assert_uint_eq(p.queue_max, 50);
	ck_assert_uint_eq(p.queue_timeout_ns, SEC(2));
	ck_assert(p.reject_cost == 0.25);
	capacity_describe(&p, d, sizeof(d));
	ck_assert_str_eq(d, "8 workers, service 5ms\xc2\xb1" "1ms, lifo queue of 50, queue timeout 2s, "
	                    "a rejection costs 0.25 service times");
	p = params("workers=1");
	capacity_describe(&p, d, sizeof(d));
	ck_assert_str_eq(d, "1 worker, service 10ms, fifo queue of 1000");
	p = params("service=exp:20ms,queue=fifo:0");
	ck_assert_int_eq(p.service, CAPACITY_SERVICE_EXP);
	ck_assert_uint_eq(p.service_ns, MS(20));
	ck_assert_uint_eq(p.queue_max, 0);
	p = params("service=10ms+-3ms,queue=lifo");
	ck_assert_uint_eq(p.service_sd_ns, MS(3));
	ck_assert_uint_eq(p.queue_max, 1000);
}
END_TEST

START_TEST(parse_errors)
{
	static const struct {
		const char *in, *why;
	} BAD[] = {
		{ "", "is empty" },
		{ "workers=0", "workers '0' is not a number from 1 to 10000" },
		{ "service=-5ms", "service time '-5ms' is negative" },
		{ "service=0ms", "service time '0ms' is not a duration above 0 such as 10ms" },
		{ "service=10ms\xc2\xb1-1ms", "service time spread '-1ms' is negative" },
		{ "service=exp:1ms\xc2\xb1" "1ms", "service time '1ms\xc2\xb1" "1ms' is not one such as 10ms, "
		  "10ms\xc2\xb1" "2ms or exp:10ms" },
		{ "queue=stack", "queue 'stack' is not fifo, lifo, fifo:N or lifo:N" },
		{ "queue=fifo:-1", "queue bound '-1' is not a number from 0 to 1000000" },
		{ "reject-cost=-1", "reject-cost '-1' is not a fraction of a service time from 0 to 100" },
		{ "speed=3", "unknown key 'speed' (workers, service, queue, queue-timeout, reject-cost)" },
		{ "workers", "'workers' is not key=value" },
	};
	struct capacity_params p;
	char err[200];

	for (size_t i = 0; i < sizeof(BAD) / sizeof(BAD[0]); i++) {
		err[0] = '\0';
		ck_assert_msg(capacity_parse(BAD[i].in, &p, err, sizeof(err)) == -1, "'%s' parsed", BAD[i].in);
		ck_assert_str_eq(err, BAD[i].why);
	}
}
END_TEST

START_TEST(triggers_parse_and_apply)
{
	struct capacity_params p = params("workers=4");
	struct capacity_trigger *t = &p.triggers[0];
	char err[200], d[100];

	ck_assert_int_eq(capacity_trigger_parse("25%@1s+1s", t, err, sizeof(err)), 0);
	ck_assert(t->fraction == 0.25);
	ck_assert_uint_eq(t->start_ns, SEC(1));
	ck_assert_uint_eq(t->len_ns, SEC(1));
	capacity_trigger_describe(t, d, sizeof(d));
	ck_assert_str_eq(d, "25% of the workers from 1s for 1s");
	ck_assert_int_eq(capacity_trigger_parse("0@3s+500ms", &p.triggers[1], err, sizeof(err)), 0);
	p.ntriggers = 2;
	ck_assert_uint_eq(capacity_workers_at(&p, MS(999)), 4);
	ck_assert_uint_eq(capacity_workers_at(&p, SEC(1)), 1);
	ck_assert_uint_eq(capacity_workers_at(&p, MS(1999)), 1);
	ck_assert_uint_eq(capacity_workers_at(&p, SEC(2)), 4);
	ck_assert_uint_eq(capacity_workers_at(&p, SEC(3)), 0);
	ck_assert_uint_eq(capacity_workers_at(&p, MS(3500)), 4);
	ck_assert_int_eq(capacity_trigger_parse("0.5@0s+1m", t, err, sizeof(err)), 0);
	ck_assert(t->fraction == 0.5);
	ck_assert_int_eq(capacity_trigger_parse("25%", t, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "it has no F@START+LEN: the capacity left, when, how long");
	ck_assert_int_eq(capacity_trigger_parse("150%@1s+1s", t, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "capacity '150' is not a fraction from 0 to 1 or 0% to 100%");
	ck_assert_int_eq(capacity_trigger_parse("25%@x+1s", t, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "start 'x' is not a duration such as 5s");
	ck_assert_int_eq(capacity_trigger_parse("25%@1s+0s", t, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "length '0s' is not a duration above 0 such as 3s");
}
END_TEST

/* One worker, a FIFO queue of 3: first come, first served; the fifth is refused. */
START_TEST(fifo_order)
{
	struct capacity *c = model("workers=1,service=10ms,queue=fifo:3", 0);
	struct capacity_stats st;

	ck_assert_str_eq(arrive(c, 0, 1), "+1@10ms");
	ck_assert_str_eq(arrive(c, MS(1), 2), "");
	ck_assert_str_eq(arrive(c, MS(2), 3), "");
	ck_assert_str_eq(arrive(c, MS(3), 4), "");
	ck_assert_str_eq(arrive(c, MS(4), 5), "-5:full");
	capacity_stats(c, MS(4), &st);
	ck_assert_uint_eq(st.queue, 3);
	ck_assert_uint_eq(st.busy, 1);
	ck_assert_str_eq(done(c, MS(10), MS(10), CAPACITY_PRESENT), "+2@20ms");
	ck_assert_str_eq(done(c, MS(20), MS(10), CAPACITY_PRESENT), "+3@30ms");
	ck_assert_str_eq(done(c, MS(30), MS(10), CAPACITY_PRESENT), "+4@40ms");
	ck_assert_str_eq(done(c, MS(40), MS(10), CAPACITY_PRESENT), "");
	capacity_stats(c, MS(40), &st);
	ck_assert_uint_eq(st.arrived, 5);
	ck_assert_uint_eq(st.started, 4);
	ck_assert_uint_eq(st.served, 4);
	ck_assert_uint_eq(st.shed[CAPACITY_SHED_FULL], 1);
	ck_assert_uint_eq(st.work_ns, MS(40));
	ck_assert_uint_eq(st.queue, 0);
	ck_assert_uint_eq(st.busy, 0);
	ck_assert_uint_eq(st.queue_peak, 3);
	capacity_free(c);
}
END_TEST

/* LIFO: newest first, and a full queue drops its oldest for the newcomer. */
START_TEST(lifo_order)
{
	struct capacity *c = model("workers=1,service=10ms,queue=lifo:3", 0);

	ck_assert_str_eq(arrive(c, 0, 1), "+1@10ms");
	ck_assert_str_eq(arrive(c, MS(1), 2), "");
	ck_assert_str_eq(arrive(c, MS(2), 3), "");
	ck_assert_str_eq(arrive(c, MS(3), 4), "");
	ck_assert_str_eq(arrive(c, MS(4), 5), "-2:evicted");
	ck_assert_str_eq(done(c, MS(10), MS(10), CAPACITY_PRESENT), "+5@20ms");
	ck_assert_str_eq(arrive(c, MS(11), 6), "");
	ck_assert_str_eq(done(c, MS(20), MS(10), CAPACITY_PRESENT), "+6@30ms");
	ck_assert_str_eq(done(c, MS(30), MS(10), CAPACITY_PRESENT), "+4@40ms");
	ck_assert_str_eq(done(c, MS(40), MS(10), CAPACITY_PRESENT), "+3@50ms");
	capacity_free(c);
}
END_TEST

/* No queue: free workers take requests at once, the rest are refused. */
START_TEST(no_queue)
{
	struct capacity *c = model("workers=2,service=5ms,queue=fifo:0", 0);

	ck_assert_str_eq(arrive(c, 0, 1), "+1@5ms");
	ck_assert_str_eq(arrive(c, 0, 2), "+2@5ms");
	ck_assert_str_eq(arrive(c, MS(1), 3), "-3:full");
	ck_assert_str_eq(done(c, MS(5), MS(5), CAPACITY_PRESENT), "");
	ck_assert_str_eq(arrive(c, MS(6), 4), "+4@11ms");
	capacity_free(c);
}
END_TEST

/* Work for clients that had gone away is done all the same, and counted apart. */
START_TEST(abandoned_work)
{
	struct capacity *c = model("workers=2,service=10ms", 0);
	struct capacity_stats st;

	arrive(c, 0, 1);
	arrive(c, 0, 2);
	arrive(c, 0, 3);
	ck_assert_str_eq(done(c, MS(10), MS(10), CAPACITY_GONE), "+3@20ms");
	ck_assert_str_eq(done(c, MS(10), MS(10), CAPACITY_PRESENT), "");
	ck_assert_str_eq(done(c, MS(20), MS(10), CAPACITY_GONE), "");
	capacity_stats(c, MS(20), &st);
	ck_assert_uint_eq(st.served, 3);
	ck_assert_uint_eq(st.served_gone, 2);
	ck_assert_uint_eq(st.work_ns, MS(30));
	ck_assert_uint_eq(st.work_gone_ns, MS(20));
	ck_assert_uint_eq(st.served_1s, 3);
	ck_assert_uint_eq(st.served_gone_1s, 2);
	capacity_stats(c, MS(1099), &st);             /* rows 1-10: the served row 0 has left */
	ck_assert_uint_eq(st.served_1s, 0);
	capacity_free(c);
}
END_TEST

/*
 * 4 workers, 25% from 1 s for 1 s: busy workers finish, but while 1 is all
 * the trigger leaves, the queue moves one at a time; at 2 s every worker
 * takes a request again (capacity_poll at the boundary capacity_next_change gives).
 */
START_TEST(trigger_takes_workers_away)
{
	struct capacity_params p = params("workers=4,service=100ms");
	struct capacity *c;
	struct capacity_stats st;
	char err[100];

	ck_assert_int_eq(capacity_trigger_parse("25%@1s+1s", &p.triggers[0], err, sizeof(err)), 0);
	p.ntriggers = 1;
	c = capacity_new(&p, SEC(10), 1);
	ck_assert_uint_eq(capacity_next_change(c, SEC(10)), SEC(11));
	ck_assert_uint_eq(capacity_next_change(c, SEC(11)), SEC(12));
	ck_assert_uint_eq(capacity_next_change(c, SEC(12)), UINT64_MAX);
	for (int j = 1; j <= 4; j++) {
		char want[32];

		snprintf(want, sizeof(want), "+%d@11050ms", j);
		ck_assert_str_eq(arrive(c, MS(10950), j), want);
	}
	capacity_stats(c, MS(10950), &st);
	ck_assert_uint_eq(st.busy, 4);
	ck_assert_uint_eq(st.queue, 0);
	for (int j = 5; j <= 8; j++)
		ck_assert_str_eq(arrive(c, MS(10960), j), "");
	capacity_stats(c, SEC(11), &st);
	ck_assert_uint_eq(st.workers, 1);
	ck_assert_uint_eq(st.queue, 4);
	/* at 11.05 s the four finish; only the first free one may take a request */
	ck_assert_str_eq(done(c, MS(11050), MS(100), CAPACITY_PRESENT), "");
	ck_assert_str_eq(done(c, MS(11050), MS(100), CAPACITY_PRESENT), "");
	ck_assert_str_eq(done(c, MS(11050), MS(100), CAPACITY_PRESENT), "");
	ck_assert_str_eq(done(c, MS(11050), MS(100), CAPACITY_PRESENT), "+5@11150ms");
	ck_assert_str_eq(done(c, MS(11150), MS(100), CAPACITY_PRESENT), "+6@11250ms");
	ck_assert_str_eq(poll_(c, MS(11999)), "");
	ck_assert_str_eq(poll_(c, SEC(12)), "+7@12100ms +8@12100ms");
	capacity_free(c);
}
END_TEST

/* A request that waited past queue-timeout is dropped unserved at the next event. */
START_TEST(queue_timeout_drops)
{
	struct capacity *c = model("workers=1,service=100ms,queue-timeout=150ms", 0);
	struct capacity_stats st;

	arrive(c, 0, 1);
	ck_assert_str_eq(arrive(c, MS(10), 2), "");
	ck_assert_str_eq(arrive(c, MS(20), 3), "");
	ck_assert_str_eq(done(c, MS(100), MS(100), CAPACITY_PRESENT), "+2@200ms");
	ck_assert_str_eq(arrive(c, MS(180), 4), "-3:expired");
	ck_assert_str_eq(done(c, MS(200), MS(100), CAPACITY_PRESENT), "+4@300ms");
	capacity_stats(c, MS(200), &st);
	ck_assert_uint_eq(st.shed[CAPACITY_SHED_EXPIRED], 1);
	ck_assert_uint_eq(st.work_ns, MS(200));
	capacity_free(c);
}
END_TEST

/* reject-cost 0.5: two refusals are one service time of work, done before the next request. */
START_TEST(rejections_cost_work)
{
	struct capacity *c = model("workers=1,service=10ms,queue=fifo:1,reject-cost=0.5", 0);
	struct capacity_stats st;

	arrive(c, 0, 1);
	arrive(c, 0, 2);
	ck_assert_str_eq(arrive(c, MS(1), 3), "-3:full");
	ck_assert_str_eq(arrive(c, MS(2), 4), "-4:full");
	ck_assert_str_eq(arrive(c, MS(3), 5), "-5:full");
	/* 15 ms of debt: one service time (10 ms), then the rest (5 ms), then request 2 */
	ck_assert_str_eq(done(c, MS(10), MS(10), CAPACITY_PRESENT), "d@20ms");
	capacity_stats(c, MS(10), &st);
	ck_assert_uint_eq(st.debt_work_ns, MS(10));
	ck_assert_str_eq(done(c, MS(20), 0, CAPACITY_NOBODY), "d@25ms");
	ck_assert_str_eq(done(c, MS(25), 0, CAPACITY_NOBODY), "+2@35ms");
	capacity_stats(c, MS(25), &st);
	ck_assert_uint_eq(st.debt_work_ns, MS(15));
	ck_assert_uint_eq(st.served, 1);
	capacity_free(c);
}
END_TEST

/* Closing sheds every waiting request and every later one; nothing starts again. */
START_TEST(flush_closes)
{
	struct capacity *c = model("workers=1,service=10ms", 0);
	struct capacity_event ev[2];

	arrive(c, 0, 1);
	arrive(c, 0, 2);
	arrive(c, 0, 3);
	arrive(c, 0, 4);
	ck_assert_uint_eq(capacity_flush(c, MS(1), ev, 2), 2);
	ck_assert_str_eq(text(ev, 2), "-2:flushed -3:flushed");
	ck_assert_uint_eq(capacity_flush(c, MS(1), ev, 2), 1);
	ck_assert_str_eq(text(ev, 1), "-4:flushed");
	ck_assert_uint_eq(capacity_flush(c, MS(1), ev, 2), 0);
	ck_assert_str_eq(arrive(c, MS(2), 5), "-5:flushed");
	ck_assert_str_eq(done(c, MS(10), MS(10), CAPACITY_PRESENT), "");
	capacity_free(c);
}
END_TEST

/* Reset zeroes the counts and restarts the triggers' clock; the waiting requests stay. */
START_TEST(reset_restarts_the_clock)
{
	struct capacity_params p = params("workers=2,service=10ms");
	struct capacity *c;
	struct capacity_stats st;
	char err[100];

	ck_assert_int_eq(capacity_trigger_parse("0%@1s+1s", &p.triggers[0], err, sizeof(err)), 0);
	p.ntriggers = 1;
	c = capacity_new(&p, 0, 1);
	arrive(c, 0, 1);
	arrive(c, 0, 2);
	arrive(c, 0, 3);
	capacity_reset(c, MS(500));
	capacity_stats(c, MS(500), &st);
	ck_assert_uint_eq(st.arrived, 0);
	ck_assert_uint_eq(st.queue, 1);
	ck_assert_uint_eq(st.busy, 2);
	ck_assert_uint_eq(capacity_next_change(c, MS(500)), MS(1500));
	ck_assert_str_eq(done(c, MS(1600), MS(10), CAPACITY_PRESENT), "");   /* no workers from 1.5 s */
	ck_assert_str_eq(poll_(c, MS(2500)), "+3@2510ms");
	capacity_free(c);
}
END_TEST

/* The series: 100 ms rows from the epoch, the queue carried over rows without events. */
START_TEST(series_rows)
{
	struct capacity *c = model("workers=1,service=250ms", SEC(1));
	struct capacity_bucket b[CAPACITY_BUCKETS];
	size_t n;

	arrive(c, SEC(1), 1);
	arrive(c, SEC(1) + MS(10), 2);
	arrive(c, SEC(1) + MS(20), 3);
	done(c, SEC(1) + MS(250), MS(250), CAPACITY_GONE);
	n = capacity_series(c, b, CAPACITY_BUCKETS);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(b[0].arrived, 3);
	ck_assert_uint_eq(b[0].queue_max, 2);
	ck_assert_uint_eq(b[0].queue_end, 2);
	ck_assert_uint_eq(b[1].queue_max, 2);             /* nothing happened: carried */
	ck_assert_uint_eq(b[1].arrived, 0);
	ck_assert_uint_eq(b[2].served, 1);
	ck_assert_uint_eq(b[2].served_gone, 1);
	ck_assert_uint_eq(b[2].work_gone_ns, MS(250));
	ck_assert_uint_eq(b[2].queue_max, 2);
	ck_assert_uint_eq(b[2].queue_end, 1);
	ck_assert_uint_eq(b[2].workers, 1);
	ck_assert_uint_eq(capacity_series(c, b, 2), 2);
	capacity_free(c);
}
END_TEST

/* Service times: the same seed draws the same; normal stays in [0, mean + 4 sd]; the means are right. */
START_TEST(service_draws)
{
	struct capacity_params pn = params("workers=1,service=10ms\xc2\xb1" "2ms,queue=fifo:0");
	struct capacity_params pe = params("workers=1,service=exp:10ms,queue=fifo:0");
	struct capacity *a = capacity_new(&pn, 0, 9), *b = capacity_new(&pn, 0, 9), *e = capacity_new(&pe, 0, 9);
	struct capacity_event ev[2];
	double sum_n = 0, sum_e = 0;
	const int N = 20000;

	for (int i = 0; i < N; i++) {
		uint64_t x, y;

		ck_assert_uint_eq(capacity_arrive(a, 0, J(1), ev, 2), 1);
		x = ev[0].service_ns;
		capacity_arrive(b, 0, J(1), ev, 2);
		y = ev[0].service_ns;
		ck_assert_uint_eq(x, y);
		ck_assert_uint_le(x, MS(18));
		sum_n += (double)x;
		capacity_done(a, x, x, CAPACITY_PRESENT, ev, 2);
		capacity_done(b, y, y, CAPACITY_PRESENT, ev, 2);
		capacity_arrive(e, 0, J(1), ev, 2);
		ck_assert_uint_le(ev[0].service_ns, MS(500));
		sum_e += (double)ev[0].service_ns;
		capacity_done(e, 0, ev[0].service_ns, CAPACITY_PRESENT, ev, 2);
	}
	ck_assert(fabs(sum_n / N - 1e7) < 1e5);
	ck_assert(fabs(sum_e / N - 1e7) < 3e5);
	capacity_free(a);
	capacity_free(b);
	capacity_free(e);
}
END_TEST

Suite *capacity_suite(void)
{
	Suite *s = suite_create("capacity");
	TCase *tc = tcase_create("model");

	tcase_add_test(tc, parse_specs);
	tcase_add_test(tc, parse_errors);
	tcase_add_test(tc, triggers_parse_and_apply);
	tcase_add_test(tc, fifo_order);
	tcase_add_test(tc, lifo_order);
	tcase_add_test(tc, no_queue);
	tcase_add_test(tc, abandoned_work);
	tcase_add_test(tc, trigger_takes_workers_away);
	tcase_add_test(tc, queue_timeout_drops);
	tcase_add_test(tc, rejections_cost_work);
	tcase_add_test(tc, flush_closes);
	tcase_add_test(tc, reset_restarts_the_clock);
	tcase_add_test(tc, series_rows);
	tcase_add_test(tc, service_draws);
	suite_add_tcase(s, tc);
	return s;
}
