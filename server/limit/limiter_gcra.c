/*
 * gcra: the generic cell rate algorithm with redis-cell semantics
 * (CL.THROTTLE key max_burst count period quantity): count = limit,
 * period = window, max_burst + 1 = burst (so `burst` requests pass at once),
 * quantity = cost.  The emission interval T = window/limit and the tolerance
 * burst * T are rarely whole ns, so the theoretical arrival time is kept as
 * tat_ns + tat_frac / limit, exactly; the wait is exact to the ns.
 *
 * Reported like redis-cell: limit = max_burst + 1 (= burst), remaining =
 * floor((tolerance - ttl) / T), reset = ttl = tat - now (rounded up), and on
 * rejection wait = retry_after.
 */
#include "server/limit/limiters.h"

struct gcra {
	uint64_t tat_ns;
	uint64_t tat_frac;  /* in [0, limit): tat = tat_ns + tat_frac / limit */
};

static size_t gcra_state_size(const struct limiter_params *p)
{
	(void)p;
	return sizeof(struct gcra);
}

static void gcra_init(const struct limiter_params *p, void *state, uint64_t now)
{
	struct gcra *g = state;

	(void)p;
	g->tat_ns = now;
	g->tat_frac = 0;
}

/* (tat - now) * limit, floored at 0: the ttl in scaled units (one request = window_ns). */
static uint64_t gcra_ttl_scaled(const struct limiter_params *p, const struct gcra *g, uint64_t now)
{
	if (g->tat_ns < now)
		return 0;
	return (g->tat_ns - now) * p->limit + g->tat_frac;
}

static void gcra_decide(const struct limiter_params *p, void *state, uint64_t now, uint64_t cost,
                        struct limiter_decision *d)
{
	struct gcra *g = state;
	uint64_t tol = p->burst * p->window_ns;  /* delay variation tolerance, scaled */
	uint64_t ttl = gcra_ttl_scaled(p, g, now), inc = cost * p->window_ns;

	d->limit = p->burst;
	d->window_ns = p->window_ns;
	d->layer = 0;
	d->wait_ns = 0;
	d->admitted = cost <= p->burst && ttl + inc <= tol;
	if (d->admitted) {
		ttl += inc;
		g->tat_ns = now + ttl / p->limit;
		g->tat_frac = ttl % p->limit;
	} else {
		/* redis-cell answers retry_after -1 for a quantity over the burst; we say a window. */
		d->wait_ns = cost > p->burst ? p->window_ns : limiter_ceil_div(ttl + inc - tol, p->limit);
	}
	d->remaining = (tol - ttl) / p->window_ns;
	d->reset_ns = limiter_ceil_div(ttl, p->limit);
	/* remaining grows when tol - ttl reaches the next whole window_ns (ttl shrinks at `limit` per ns). */
	d->next_ns = ttl > 0 ? limiter_ceil_div(p->window_ns - (tol - ttl) % p->window_ns, p->limit) : 0;
}

static bool gcra_idle(const struct limiter_params *p, const void *state, uint64_t now)
{
	return gcra_ttl_scaled(p, state, now) == 0;
}

/*
 * The Redis store's script: the same decision in Lua, over the names of the
 * prelude in server/store/redis_scripts.h.
 */
static const char REDIS_SCRIPT[] =
	"local st = redis.call('HMGET', key, 't', 'f')\n"
	"local tn, tf = now, 0\n"
	"if st[1] then tn, tf = tonumber(st[1]), tonumber(st[2]) end\n"
	"local tol, inc, ttl = burst * win, cost * win, 0\n"
	"if tn >= now then ttl = (tn - now) * limit + tf end\n"
	"local adm, wait = 0, 0\n"
	"if cost <= burst and ttl + inc <= tol then\n"
	"  adm = 1; ttl = ttl + inc\n"
	"  tn = now + fdiv(ttl, limit); tf = ttl - fdiv(ttl, limit) * limit\n"
	"elseif cost > burst then wait = win\n"
	"else wait = cdiv(ttl + inc - tol, limit) end\n"
	"local reset = cdiv(ttl, limit)\n"
	"local nxt = 0\n"
	"if ttl > 0 then nxt = cdiv(win - ((tol - ttl) - fdiv(tol - ttl, win) * win), limit) end\n"
	"keep(reset, 't', num(tn), 'f', num(tf))\n"
	"return {adm, wait, fdiv(tol - ttl, win), burst, win, reset, 0, nxt}\n";

const struct limiter_ops limiter_gcra_ops = {
	.name = "gcra",
	.burst = true,
	.check_params = limiter_check_rate,
	.state_size = gcra_state_size,
	.init = gcra_init,
	.decide = gcra_decide,
	.release = NULL,
	.idle = gcra_idle,
	.redis_script = REDIS_SCRIPT,
};
