/*
 * concurrency: at most `limit` admitted requests in flight per key; release()
 * gives a slot back.  When a slot frees up is unknowable, so a rejection
 * reports a wait of LIMITER_CONCURRENCY_WAIT_NS (1 s, hence Retry-After: 1),
 * and reset is 1 s while anything is in flight.
 */
#include "server/limit/limiters.h"

struct concurrency {
	uint64_t in_flight;
};

static size_t cc_state_size(const struct limiter_params *p)
{
	(void)p;
	return sizeof(struct concurrency);
}

static void cc_init(const struct limiter_params *p, void *state, uint64_t now)
{
	struct concurrency *c = state;

	(void)p;
	(void)now;
	c->in_flight = 0;
}

static void cc_decide(const struct limiter_params *p, void *state, uint64_t now, uint64_t cost,
                      struct limiter_decision *d)
{
	struct concurrency *c = state;

	(void)now;
	d->limit = p->limit;
	d->window_ns = p->window_ns;
	d->layer = 0;
	d->admitted = cost <= p->limit - c->in_flight;
	if (d->admitted)
		c->in_flight += cost;
	d->wait_ns = d->admitted ? 0 : LIMITER_CONCURRENCY_WAIT_NS;
	d->remaining = p->limit - c->in_flight;
	d->reset_ns = c->in_flight > 0 ? LIMITER_CONCURRENCY_WAIT_NS : 0;
}

static void cc_release(const struct limiter_params *p, void *state)
{
	struct concurrency *c = state;

	(void)p;
	/* A key evicted or reset while in flight comes back fresh: never underflow. */
	if (c->in_flight > 0)
		c->in_flight--;
}

static bool cc_idle(const struct limiter_params *p, const void *state, uint64_t now)
{
	const struct concurrency *c = state;

	(void)p;
	(void)now;
	return c->in_flight == 0;
}

const struct limiter_ops limiter_concurrency_ops = {
	.name = "concurrency",
	.state_size = cc_state_size,
	.init = cc_init,
	.decide = cc_decide,
	.release = cc_release,
	.idle = cc_idle,
};
