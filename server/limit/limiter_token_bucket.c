/*
 * token-bucket: rate = limit/window, capacity = burst, starts full; a rejected
 * request takes nothing.  Credit is kept in scaled units (one token =
 * window_ns units, refilling `limit` units per ns), so refill is exact and the
 * reported wait is exact to the nanosecond.
 */
#include "server/limit/limiters.h"

struct token_bucket {
	uint64_t credit;  /* scaled units, <= burst * window_ns */
	uint64_t last;    /* ns of the last refill */
};

static size_t tb_state_size(const struct limiter_params *p)
{
	(void)p;
	return sizeof(struct token_bucket);
}

static void tb_init(const struct limiter_params *p, void *state, uint64_t now)
{
	struct token_bucket *tb = state;

	tb->credit = p->burst * p->window_ns;
	tb->last = now;
}

/* Bring the credit up to `now`; returns the capacity in scaled units. */
static uint64_t tb_refill(const struct limiter_params *p, struct token_bucket *tb, uint64_t now)
{
	uint64_t cap = p->burst * p->window_ns;
	uint64_t add;

	/* elapsed * limit may not fit in 64 bits after a long idle: then the bucket is full anyway. */
	if (limiter_mul_overflows(limiter_elapsed(now, tb->last), p->limit, &add) || add >= cap - tb->credit)
		tb->credit = cap;
	else
		tb->credit += add;
	if (now > tb->last)
		tb->last = now;
	return cap;
}

static void tb_decide(const struct limiter_params *p, void *state, uint64_t now, uint64_t cost,
                      struct limiter_decision *d)
{
	struct token_bucket *tb = state;
	uint64_t cap = tb_refill(p, tb, now);
	uint64_t need = cost <= p->burst ? cost * p->window_ns : 0;

	d->limit = p->limit;
	d->window_ns = p->window_ns;
	d->layer = 0;
	if (cost > p->burst) {
		/* Can never be admitted; report a whole window so clients back off. */
		d->admitted = false;
		d->wait_ns = p->window_ns;
	} else if (tb->credit >= need) {
		tb->credit -= need;
		d->admitted = true;
		d->wait_ns = 0;
	} else {
		d->admitted = false;
		d->wait_ns = limiter_ceil_div(need - tb->credit, p->limit);
	}
	d->remaining = tb->credit / p->window_ns;
	d->reset_ns = limiter_ceil_div(cap - tb->credit, p->limit);
	/* The next whole token: credit is counted in window_ns units per token. */
	d->next_ns = tb->credit < cap ? limiter_ceil_div(p->window_ns - tb->credit % p->window_ns, p->limit) : 0;
}

static bool tb_idle(const struct limiter_params *p, const void *state, uint64_t now)
{
	const struct token_bucket *tb = state;
	uint64_t cap = p->burst * p->window_ns;

	return limiter_elapsed(now, tb->last) >= limiter_ceil_div(cap - tb->credit, p->limit);
}

/*
 * The Redis store's script: the same decision in Lua, over the names of the
 * prelude in server/store/redis_scripts.h.
 */
static const char REDIS_SCRIPT[] =
	"local cap = burst * win\n"
	"local st = redis.call('HMGET', key, 'c', 'l')\n"
	"local credit, last = cap, now\n"
	"if st[1] then credit, last = tonumber(st[1]), tonumber(st[2]) end\n"
	"local el = now > last and now - last or 0\n"
	"if el >= cdiv(cap - credit, limit) then credit = cap else credit = credit + el * limit end\n"
	"if now > last then last = now end\n"
	"local adm, wait, need = 0, 0, cost * win\n"
	"if cost > burst then wait = win\n"
	"elseif credit >= need then credit = credit - need; adm = 1\n"
	"else wait = cdiv(need - credit, limit) end\n"
	"local reset = cdiv(cap - credit, limit)\n"
	"local nxt = 0\n"
	"if credit < cap then nxt = cdiv(win - (credit - fdiv(credit, win) * win), limit) end\n"
	"keep(reset, 'c', num(credit), 'l', num(last))\n"
	"return {adm, wait, fdiv(credit, win), limit, win, reset, 0, nxt}\n";

const struct limiter_ops limiter_token_bucket_ops = {
	.name = "token-bucket",
	.burst = true,
	.check_params = limiter_check_rate,
	.state_size = tb_state_size,
	.init = tb_init,
	.decide = tb_decide,
	.release = NULL,
	.idle = tb_idle,
	.redis_script = REDIS_SCRIPT,
};
