/* A virtual client's life on a scripted transport: sre-adaptive's throttle in the engine path, exact. */
#include <check.h>
#include <string.h>

#include "common/clock.h"
#include "common/heap.h"
#include "common/prng.h"
#include "common/retry/retry.h"
#include "common/retry/retry_throttle.h"
#include "hammer/engine.h"
#include "hammer/transport.h"
#include "hammer/vclient.h"
#include "hammer/workload.h"

#define MS(x) ((uint64_t)(x) * NS_PER_MS)
#define SEC(x) ((uint64_t)(x) * NS_PER_SEC)
#define NCLIENTS 8
#define SEED 5

/* The scripted transport: every call begins, and the test ends it by hand. */
static unsigned begun;
static uint64_t begun_at;

static int fake_begin(struct transport_loop *t, uint32_t id, uint32_t server, const struct workload_call *call,
                      uint64_t now, enum retry_error *err)
{
	(void)t;
	(void)id;
	(void)server;
	(void)call;
	(void)err;
	begun++;
	begun_at = now;
	return 0;
}

static const struct transport_ops FAKE = { .name = "fake", .begin = fake_begin };

struct rig {
	struct vclient_host h;
	struct hammer_config cfg;
	struct retry_policy pol;
	struct hammer_result res;
	struct vclient c[NCLIENTS];
	uint32_t failq[NCLIENTS];
	unsigned done;          /* requests over (request_done calls) */
};

static void on_done(void *ctx, struct vclient *c, uint64_t now)
{
	struct rig *r = ctx;

	(void)c;
	(void)now;
	r->done++;
}

/* A host of NCLIENTS clients under preset sre-adaptive with a K = 2, 10 s throttle made at time 0. */
static void rig_init(struct rig *r)
{
	memset(r, 0, sizeof(*r));
	begun = 0;
	ck_assert_int_eq(retry_policy_preset("sre-adaptive", &r->pol), 0);
	ck_assert_int_eq(retry_policy_set(&r->pol, "budget", "sre,k=2,window=10s", NULL, 0), 0);
	r->cfg.method = "GET";
	r->cfg.policy = &r->pol;
	ck_assert_int_eq(hammer_result_init(&r->res, MS(100)), 0);
	r->h.cfg = &r->cfg;
	r->h.wl = &WORKLOAD_PLAIN;
	r->h.tops = &FAKE;
	r->h.res = &r->res;
	r->h.heap = heap_new(NCLIENTS, false);
	r->h.throttle = retry_throttle_new(&r->pol.throttle, 0);
	ck_assert_ptr_nonnull(r->h.throttle);
	r->h.clients = r->c;
	r->h.nurls = 1;
	r->h.nloops = 1;
	r->h.failq = r->failq;
	r->h.nclients = NCLIENTS;
	r->h.request_done = on_done;
	r->h.done_ctx = r;
	for (uint32_t i = 0; i < NCLIENTS; i++)
		vclient_init(&r->c[i], i, i, SEED, NULL);
}

static void rig_destroy(struct rig *r)
{
	retry_throttle_free(r->h.throttle);
	heap_free(r->h.heap);
	hammer_result_destroy(&r->res);
}

static void answer(struct rig *r, uint32_t id, int status, uint64_t now)
{
	struct workload_answer a = { RETRY_ERR_NONE, status, NULL, NULL, NULL };

	vclient_ended(&r->h, &r->c[id], &a, now);
}

/* The draws client `index` makes, in order, from its own stream. */
static void mirror_of(struct prng *m, uint32_t index)
{
	prng_seed(m, prng_stream_seed(SEED, index));
}

/* Attempts the backend accepts count as accepts; every ended attempt as a request; nothing else. */
START_TEST(records_each_ended_attempt)
{
	struct rig r;
	uint64_t req, acc;

	rig_init(&r);
	vclient_start(&r.h, &r.c[0], MS(10), MS(10));
	ck_assert_uint_eq(begun, 1);
	retry_throttle_counts(r.h.throttle, MS(10), &req, &acc);
	ck_assert_uint_eq(req, 0);                  /* a sent attempt counts when it ends */
	answer(&r, 0, 200, MS(20));
	vclient_start(&r.h, &r.c[1], MS(20), MS(20));
	answer(&r, 1, 503, MS(30));                 /* 503 is no accept; a retry is now in the heap */
	retry_throttle_counts(r.h.throttle, MS(30), &req, &acc);
	ck_assert_uint_eq(req, 2);
	ck_assert_uint_eq(acc, 1);
	ck_assert_uint_eq(r.res.ok, 1);
	ck_assert_uint_eq(heap_size(r.h.heap), 1);
	ck_assert_uint_eq(r.res.throttled, 0);
	rig_destroy(&r);
}
END_TEST

/*
 * A backend that refused 10 attempts and accepted none: p = 10/11.  Each new
 * request is admitted exactly when its client's first draw is >= p; a refused
 * one sends nothing, stays open until the failure queue is drained, and then
 * ends as "unsent", gave up: throttled.
 */
START_TEST(first_attempts_refused_by_draw)
{
	struct rig r;
	unsigned want_sent = 0, want_refused = 0;
	uint64_t req, acc;

	rig_init(&r);
	for (int i = 0; i < 10; i++)
		retry_throttle_record(r.h.throttle, MS(1), false);
	for (uint32_t i = 0; i < NCLIENTS; i++) {
		struct prng m;
		double req_now = 10.0 + want_refused;
		bool admit;

		mirror_of(&m, i);
		admit = !(prng_double(&m) < req_now / (req_now + 1));
		want_sent += admit;
		want_refused += !admit;
		vclient_start(&r.h, &r.c[i], MS(100), MS(100));
		ck_assert_uint_eq(begun, want_sent);
	}
	ck_assert_uint_gt(want_refused, 0);
	ck_assert_uint_eq(r.done, 0);               /* nothing ends inside vclient_start */
	ck_assert_uint_eq(r.h.fq_n, want_refused);
	vclient_drain_failed(&r.h, MS(100));
	ck_assert_uint_eq(r.done, want_refused);
	ck_assert_uint_eq(r.res.unsent, want_refused);
	ck_assert_uint_eq(r.res.throttled, want_refused);
	ck_assert_uint_eq(r.res.gave_up[RETRY_REASON_THROTTLED], want_refused);
	ck_assert_uint_eq(r.res.requests, want_refused);
	ck_assert_uint_eq(r.res.calls, want_sent);
	ck_assert_uint_eq(retry_throttle_rejected(r.h.throttle), want_refused);
	retry_throttle_counts(r.h.throttle, MS(100), &req, &acc);
	ck_assert_uint_eq(req, 10 + want_refused);  /* a refusal counts as a request not accepted */
	ck_assert_uint_eq(acc, 0);
	rig_destroy(&r);
}
END_TEST

/*
 * A retry asks the throttle too, after its backoff: client 0's draws are
 * admit, backoff, admit.  A refused retry ends the request with the status it
 * had (503), reason throttled, and no second call.
 */
START_TEST(retry_refused_keeps_last_status)
{
	struct rig r;
	struct heap_entry e;
	struct prng m;
	double u_first, u_back, u_retry, p;
	uint64_t wait;

	rig_init(&r);
	mirror_of(&m, 0);
	u_first = prng_double(&m);
	u_back = prng_double(&m);
	u_retry = prng_double(&m);
	vclient_start(&r.h, &r.c[0], 0, 0);
	ck_assert_uint_eq(begun, 1);                /* an empty window: p = 0 */
	answer(&r, 0, 503, MS(5));
	ck_assert(heap_pop(r.h.heap, &e));
	wait = (uint64_t)(u_back * (double)MS(100));  /* full jitter, first retry: u * base */
	ck_assert_uint_eq(e.due_ns, MS(5) + wait);
	/* 99 more refused attempts in the window before the retry falls due */
	for (int i = 0; i < 99; i++)
		retry_throttle_record(r.h.throttle, MS(6), false);
	p = 100.0 / 101.0;
	ck_assert(u_retry < p);                     /* seed 5's third draw for client 0 */
	vclient_timer(&r.h, &r.c[0], e.due_ns, e.due_ns + MS(1));
	ck_assert_uint_eq(r.res.requests, 0);       /* ended only when the queue is drained */
	vclient_drain_failed(&r.h, e.due_ns + MS(1));
	ck_assert_uint_eq(begun, 1);
	ck_assert_uint_eq(r.res.requests, 1);
	ck_assert_uint_eq(r.res.status[503], 1);
	ck_assert_uint_eq(r.res.gave_up[RETRY_REASON_THROTTLED], 1);
	ck_assert_uint_eq(r.res.unsent, 0);
	ck_assert_uint_eq(r.res.throttled, 1);
	ck_assert_uint_eq(r.res.retries, 0);
	ck_assert_uint_eq(r.done, 1);
	(void)u_first;
	rig_destroy(&r);
}
END_TEST

/* Refusals stop once the refused attempts leave the 10 s window: the next request is sent. */
START_TEST(window_passes_and_sends_again)
{
	struct rig r;

	rig_init(&r);
	for (int i = 0; i < 1000; i++)
		retry_throttle_record(r.h.throttle, MS(1), false);
	ck_assert(retry_throttle_probability(r.h.throttle, SEC(1)) > 0.99);
	ck_assert(retry_throttle_probability(r.h.throttle, SEC(11)) == 0);
	vclient_start(&r.h, &r.c[3], SEC(11), SEC(11));
	ck_assert_uint_eq(begun, 1);
	ck_assert_uint_eq(begun_at, SEC(11));
	ck_assert_uint_eq(r.h.fq_n, 0);
	rig_destroy(&r);
}
END_TEST

/* Without a throttle nothing draws for it: the first retry waits u1 * base, u1 the client's first draw. */
START_TEST(no_throttle_no_draw)
{
	struct rig r;
	struct heap_entry e;
	struct prng m;

	rig_init(&r);
	retry_throttle_free(r.h.throttle);
	r.h.throttle = NULL;
	mirror_of(&m, 2);
	vclient_start(&r.h, &r.c[2], 0, 0);
	answer(&r, 2, 503, MS(5));
	ck_assert(heap_pop(r.h.heap, &e));
	ck_assert_uint_eq(e.due_ns, MS(5) + (uint64_t)(prng_double(&m) * (double)MS(100)));
	rig_destroy(&r);
}
END_TEST

Suite *vclient_suite(void)
{
	Suite *s = suite_create("vclient");
	TCase *tc = tcase_create("throttle");

	tcase_add_test(tc, records_each_ended_attempt);
	tcase_add_test(tc, first_attempts_refused_by_draw);
	tcase_add_test(tc, retry_refused_keeps_last_status);
	tcase_add_test(tc, window_passes_and_sends_again);
	tcase_add_test(tc, no_throttle_no_draw);
	suite_add_tcase(s, tc);
	return s;
}
