/*
 * leaky-bucket: nginx limit_req as a meter, `burst=N nodelay`.  nginx keeps
 * excess e, computes e' = max(0, e - drained + 1) per request and rejects when
 * e' > burst; rejected requests add nothing, and a new key starts at e = 0
 * without paying, so burst + 1 requests pass at once.  Here the level
 * s = e + 1 (floored at 0, i.e. drained) is kept in scaled units (one request
 * = window_ns units, draining `limit` units per ns): a request is admitted
 * when s + cost <= burst + 1.  For cost 1 that is exactly nginx; it is exact
 * to the ns, so the reported wait is exact.
 */
#include "server/limit/limiters.h"

struct leaky_bucket {
	uint64_t level;  /* scaled units, <= (burst + 1) * window_ns */
	uint64_t last;
};

static size_t lb_state_size(const struct limiter_params *p)
{
	(void)p;
	return sizeof(struct leaky_bucket);
}

static void lb_init(const struct limiter_params *p, void *state, uint64_t now)
{
	struct leaky_bucket *lb = state;

	(void)p;
	lb->level = 0;
	lb->last = now;
}

/* Drain the level up to `now`. */
static void lb_drain(const struct limiter_params *p, struct leaky_bucket *lb, uint64_t now)
{
	uint64_t elapsed = limiter_elapsed(now, lb->last);

	if (elapsed >= limiter_ceil_div(lb->level, p->limit))
		lb->level = 0;
	else
		lb->level -= elapsed * p->limit;
	if (now > lb->last)
		lb->last = now;
}

static void lb_decide(const struct limiter_params *p, void *state, uint64_t now, uint64_t cost,
                      struct limiter_decision *d)
{
	struct leaky_bucket *lb = state;
	uint64_t unit = p->window_ns, max = (p->burst + 1) * unit;

	lb_drain(p, lb, now);
	d->limit = p->limit;
	d->window_ns = p->window_ns;
	d->layer = 0;
	d->wait_ns = 0;
	if (cost > p->burst + 1) {
		/* Can never be admitted; report a whole window so clients back off. */
		d->admitted = false;
		d->wait_ns = p->window_ns;
	} else if (lb->level + cost * unit <= max) {
		d->admitted = true;
		lb->level += cost * unit;
	} else {
		d->admitted = false;
		d->wait_ns = limiter_ceil_div(lb->level + cost * unit - max, p->limit);
	}
	d->remaining = (max - lb->level) / unit;
	d->reset_ns = limiter_ceil_div(lb->level, p->limit);
	/* remaining grows when the level drains to the next whole unit below it. */
	d->next_ns = lb->level > 0 ? limiter_ceil_div(lb->level % unit ? lb->level % unit : unit, p->limit) : 0;
}

static bool lb_idle(const struct limiter_params *p, const void *state, uint64_t now)
{
	const struct leaky_bucket *lb = state;

	return limiter_elapsed(now, lb->last) >= limiter_ceil_div(lb->level, p->limit);
}

/*
 * The Redis store's script: the same decision in Lua, over the names of the
 * prelude in server/store/redis_scripts.h.
 */
static const char REDIS_SCRIPT[] =
	"local max = (burst + 1) * win\n"
	"local st = redis.call('HMGET', key, 'v', 'l')\n"
	"local level, last = 0, now\n"
	"if st[1] then level, last = tonumber(st[1]), tonumber(st[2]) end\n"
	"local el = now > last and now - last or 0\n"
	"if el >= cdiv(level, limit) then level = 0 else level = level - el * limit end\n"
	"if now > last then last = now end\n"
	"local adm, wait = 0, 0\n"
	"if cost > burst + 1 then wait = win\n"
	"elseif level + cost * win <= max then adm = 1; level = level + cost * win\n"
	"else wait = cdiv(level + cost * win - max, limit) end\n"
	"local reset = cdiv(level, limit)\n"
	"local nxt, part = 0, level - fdiv(level, win) * win\n"
	"if part == 0 then part = win end\n"
	"if level > 0 then nxt = cdiv(part, limit) end\n"
	"keep(reset, 'v', num(level), 'l', num(last))\n"
	"return {adm, wait, fdiv(max - level, win), limit, win, reset, 0, nxt}\n";

const struct limiter_ops limiter_leaky_bucket_ops = {
	.name = "leaky-bucket",
	.burst = true,
	.check_params = limiter_check_rate,
	.state_size = lb_state_size,
	.init = lb_init,
	.decide = lb_decide,
	.release = NULL,
	.idle = lb_idle,
	.redis_script = REDIS_SCRIPT,
};
