/*
 * The hammer's engine in virtual time against a scripted server model: the
 * same loop and clients as a real run, the clock a number.  Every figure is
 * the arithmetic of the stated network and the model, to the nanosecond.
 */
#include <check.h>
#include <string.h>

#include "common/clock.h"
#include "common/retry/retry.h"
#include "hammer/engine.h"
#include "hammer/loopclock.h"
#include "hammer/sim.h"

#define MS(x) ((uint64_t)(x) * NS_PER_MS)

/* The scripted server: every request answered `hold` after it arrives, 429 for the first `reject`. */
struct script {
	sim_reply_fn reply;
	void *ctx;
	uint64_t hold;
	unsigned reject;
	unsigned arrived;
	uint64_t last_arrival;
};

static void s_open(void *model, sim_reply_fn reply, void *ctx, uint64_t t0, uint64_t wall0_ns)
{
	struct script *s = model;

	(void)t0;
	(void)wall0_ns;
	s->reply = reply;
	s->ctx = ctx;
	s->arrived = 0;
}

static void s_arrive(void *model, uint64_t token, const struct sim_request *rq, uint64_t now)
{
	struct script *s = model;
	struct sim_reply r = { 0 };

	(void)rq;
	r.status = s->arrived++ < s->reject ? 429 : 200;
	s->last_arrival = now;
	s->reply(s->ctx, token, &r, now + s->hold);
}

static uint64_t s_next_due(void *model)
{
	(void)model;
	return UINT64_MAX;
}

static void s_expire(void *model, uint64_t now)
{
	(void)model;
	(void)now;
}

static const struct sim_model_ops SCRIPT = { "script", s_open, s_arrive, s_next_due, s_expire };

static void run(struct script *s, const struct sim_net *net, const struct retry_policy *pol, uint32_t clients,
                uint64_t requests, uint32_t threads, struct hammer_result *r)
{
	struct sim_config sim = { *net, &SCRIPT, s };
	struct hammer_config c = {
		.url = "http://model/", .method = "GET", .requests = requests, .concurrency = clients,
		.threads = threads, .timeout_ns = MS(1000), .seed = 1, .policy = pol, .interval_ns = MS(100),
		.sim = &sim,
	};
	char err[256];

	ck_assert_int_eq(hammer_result_init(r, c.interval_ns), 0);
	ck_assert_msg(hammer_run(&c, r, err, sizeof(err)) == 0, "%s", err);
}

/* Closed loop: 3 clients, 9 requests, 1 ms each way and 5 ms at the server: 3 rounds of 7 ms. */
START_TEST(closed_loop_takes_the_stated_time)
{
	struct script s = { .hold = MS(5) };
	struct sim_net net = { .delay_ns = MS(1) };
	struct retry_policy pol;
	struct hammer_result r;

	ck_assert_int_eq(retry_policy_preset("none", &pol), 0);
	run(&s, &net, &pol, 3, 9, 4, &r);
	ck_assert_str_eq(r.transport, "sim");
	ck_assert_uint_eq(r.requests, 9);
	ck_assert_uint_eq(r.status[200], 9);
	ck_assert_uint_eq(r.wall_ns, MS(21));
	ck_assert_uint_eq(histogram_max(r.latency), MS(7));
	ck_assert_uint_eq(s.last_arrival - LOOPCLOCK_VIRTUAL_T0, MS(15));
	hammer_result_destroy(&r);
}
END_TEST

/* A connection's set-up is paid once per client; a lost message ends its call at the timeout. */
START_TEST(connect_and_loss)
{
	struct script s = { .hold = 0 };
	struct sim_net net = { .delay_ns = MS(1), .connect_ns = MS(3) };
	struct retry_policy pol;
	struct hammer_result r;

	ck_assert_int_eq(retry_policy_preset("none", &pol), 0);
	run(&s, &net, &pol, 1, 2, 1, &r);
	ck_assert_uint_eq(r.wall_ns, MS(3 + 2 + 2));
	hammer_result_destroy(&r);
	net.loss = 1;
	run(&s, &net, &pol, 2, 4, 1, &r);
	ck_assert_uint_eq(r.attempt_errors[RETRY_ERR_TIMEOUT], 4);
	ck_assert_uint_eq(r.wall_ns, MS(2000));
	ck_assert_uint_eq(s.arrived, 0);
	hammer_result_destroy(&r);
}
END_TEST

/* The retry engine in virtual time: the lab preset waits out Retry-After-less 429s by its backoff, exactly. */
START_TEST(retries_wait_their_backoff)
{
	struct script s = { .hold = 0, .reject = 1 };
	struct sim_net net = { .delay_ns = 0 };
	struct retry_policy pol;
	struct hammer_result r;

	ck_assert_int_eq(retry_policy_preset("none", &pol), 0);
	ck_assert_int_eq(retry_policy_set(&pol, "backoff", "constant", NULL, 0), 0);
	ck_assert_int_eq(retry_policy_set(&pol, "base", "250ms", NULL, 0), 0);
	ck_assert_int_eq(retry_policy_set(&pol, "max-attempts", "3", NULL, 0), 0);
	ck_assert_int_eq(retry_policy_set(&pol, "retry-on", "429", NULL, 0), 0);
	run(&s, &net, &pol, 1, 1, 1, &r);
	ck_assert_uint_eq(r.calls, 2);
	ck_assert_uint_eq(r.retries, 1);
	ck_assert_uint_eq(r.status[200], 1);
	ck_assert_uint_eq(r.wall_ns, MS(250));
	hammer_result_destroy(&r);
}
END_TEST

Suite *virtual_time_suite(void)
{
	Suite *s = suite_create("virtual_time");
	TCase *tc = tcase_create("engine");

	tcase_add_test(tc, closed_loop_takes_the_stated_time);
	tcase_add_test(tc, connect_and_loss);
	tcase_add_test(tc, retries_wait_their_backoff);
	suite_add_tcase(s, tc);
	return s;
}
