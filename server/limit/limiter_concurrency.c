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
	d->next_ns = d->reset_ns;  /* a slot frees when a request ends: unknown, so the retry hint */
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

/*
 * The Redis store's script: the same decision in Lua, over the names of the
 * prelude in server/store/redis_scripts.h.
 *
 * Slots are leases in a sorted set scored by expiry (now + lease), so the
 * slots of a replica that died without releasing come back after the lease.
 * A release drops the oldest lease of the releasing replica (OWNER of the token).
 */
static const char REDIS_SCRIPT[] =
	"local owner = string.match(token, '^[^:]*') .. ':'\n"
	"redis.call('ZREMRANGEBYSCORE', key, '-inf', num(now))\n"
	"local adm, wait = 0, 0\n"
	"if op == 'r' then\n"
	"  local all = redis.call('ZRANGE', key, 0, -1)\n"
	"  for i = 1, #all do\n"
	"    if string.sub(all[i], 1, #owner) == owner then redis.call('ZREM', key, all[i]); break end\n"
	"  end\n"
	"  adm = 1\n"
	"end\n"
	"local n = redis.call('ZCARD', key)\n"
	"if op ~= 'r' then\n"
	"  if cost <= limit - n then\n"
	"    adm = 1\n"
	"    for i = 1, cost do redis.call('ZADD', key, num(now + lease), token .. ':' .. i) end\n"
	"    n = n + cost\n"
	"  else wait = 1000000000 end\n"
	"end\n"
	"local last = 0\n"
	"if n > 0 then last = tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]) - now end\n"
	"expire(last)\n"
	"local reset = 0\n"
	"if n > 0 then reset = 1000000000 end\n"
	"return {adm, wait, limit - n, limit, win, reset, 0, reset}\n";

const struct limiter_ops limiter_concurrency_ops = {
	.name = "concurrency",
	.check_params = limiter_check_rate,
	.state_size = cc_state_size,
	.init = cc_init,
	.decide = cc_decide,
	.release = cc_release,
	.idle = cc_idle,
	.redis_script = REDIS_SCRIPT,
};
