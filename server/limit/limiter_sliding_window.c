/*
 * sliding-window: the counter approximation.  Windows are aligned to
 * multiples of window_ns; the estimate at offset e into the current window is
 * prev * (window - e) / window + cur, and a request of `cost` is admitted when
 * estimate + cost <= limit.  Everything is compared multiplied by window_ns,
 * so there is no rounding and the reported wait is exact.
 */
#include "server/limit/limiters.h"

struct sliding_window {
	uint64_t start;  /* start of the current window */
	uint64_t cur;
	uint64_t prev;   /* count of the window just before `start` */
};

static size_t sw_state_size(const struct limiter_params *p)
{
	(void)p;
	return sizeof(struct sliding_window);
}

static void sw_init(const struct limiter_params *p, void *state, uint64_t now)
{
	struct sliding_window *sw = state;

	sw->start = limiter_window_start(now, p->window_ns);
	sw->cur = 0;
	sw->prev = 0;
}

static void sw_roll(const struct limiter_params *p, struct sliding_window *sw, uint64_t now)
{
	uint64_t start = limiter_window_start(now, p->window_ns);

	if (start <= sw->start)
		return;
	sw->prev = start == sw->start + p->window_ns ? sw->cur : 0;
	sw->cur = 0;
	sw->start = start;
}

/* Smallest offset e into a window with counts (prev, cur) at which `cost` fits; window_ns if none. */
static uint64_t sw_fit_offset(const struct limiter_params *p, uint64_t prev, uint64_t cur, uint64_t cost)
{
	uint64_t w = p->window_ns, room;

	if (cur + cost > p->limit)
		return w;
	room = (p->limit - cur - cost) * w;  /* need prev * (w - e) <= room */
	if (prev == 0 || room / prev >= w)
		return 0;
	return w - room / prev;
}

/*
 * Time from offset e until remaining r grows, with counts (prev, cur) and no
 * new arrivals: used = prev * (w - e) + cur * w must fall to (limit - r - 1) * w,
 * first while prev's weight shrinks, else after the roll as cur's does.
 */
static uint64_t sw_next(const struct limiter_params *p, uint64_t prev, uint64_t cur, uint64_t e, uint64_t r)
{
	uint64_t w = p->window_ns, target, used;

	if (r >= p->limit)
		return 0;
	target = (p->limit - r - 1) * w;
	used = prev * (w - e) + cur * w;
	if (used <= target)
		return 0;
	if (prev > 0 && used - target <= prev * (w - e))
		return limiter_ceil_div(used - target, prev);
	if (cur * w <= target)
		return w - e;
	return (w - e) + (w - target / cur);
}

static void sw_decide(const struct limiter_params *p, void *state, uint64_t now, uint64_t cost,
                      struct limiter_decision *d)
{
	struct sliding_window *sw = state;
	uint64_t w = p->window_ns, e, fit, used;

	sw_roll(p, sw, now);
	e = now > sw->start ? now - sw->start : 0;
	fit = sw_fit_offset(p, sw->prev, sw->cur, cost);
	d->limit = p->limit;
	d->window_ns = w;
	d->layer = 0;
	d->admitted = cost <= p->limit && e >= fit;
	d->wait_ns = 0;
	if (d->admitted)
		sw->cur += cost;
	else if (cost > p->limit)
		d->wait_ns = w;
	else if (fit < w)
		d->wait_ns = fit - e;
	else  /* next window: prev becomes cur, cur becomes 0 */
		d->wait_ns = (w - e) + sw_fit_offset(p, sw->cur, 0, cost);
	used = sw->prev * (w - e) + sw->cur * w;
	d->remaining = used >= p->limit * w ? 0 : (p->limit * w - used) / w;
	d->reset_ns = sw->cur > 0 ? 2 * w - e : sw->prev > 0 ? w - e : 0;
	d->next_ns = sw_next(p, sw->prev, sw->cur, e, d->remaining);
}

static bool sw_idle(const struct limiter_params *p, const void *state, uint64_t now)
{
	const struct sliding_window *sw = state;

	return (sw->cur == 0 && (sw->prev == 0 || now >= sw->start + p->window_ns)) ||
	       now >= sw->start + 2 * p->window_ns;
}

/*
 * The Redis store's script: the same decision in Lua, over the names of the
 * prelude in server/store/redis_scripts.h.
 */
static const char REDIS_SCRIPT[] =
	"local st = redis.call('HMGET', key, 's', 'c', 'p')\n"
	"local start, cur, prev = wstart(now, win), 0, 0\n"
	"if st[1] then\n"
	"  local s0, c0 = tonumber(st[1]), tonumber(st[2])\n"
	"  if start <= s0 then start, cur, prev = s0, c0, tonumber(st[3])\n"
	"  elseif start == s0 + win then prev = c0 end\n"
	"end\n"
	"local e = now > start and now - start or 0\n"
	"local function fit(pv, cu, c)\n"
	"  if cu + c > limit then return win end\n"
	"  local room = (limit - cu - c) * win\n"
	"  if pv == 0 or fdiv(room, pv) >= win then return 0 end\n"
	"  return win - fdiv(room, pv)\n"
	"end\n"
	"local f = fit(prev, cur, cost)\n"
	"local adm, wait = 0, 0\n"
	"if cost <= limit and e >= f then adm = 1; cur = cur + cost\n"
	"elseif cost > limit then wait = win\n"
	"elseif f < win then wait = f - e\n"
	"else wait = (win - e) + fit(cur, 0, cost) end\n"
	"local used = prev * (win - e) + cur * win\n"
	"local rem = 0\n"
	"if used < limit * win then rem = fdiv(limit * win - used, win) end\n"
	"local reset = 0\n"
	"if cur > 0 then reset = 2 * win - e elseif prev > 0 then reset = win - e end\n"
	"local nxt = 0\n"
	"if rem < limit then\n"
	"  local target = (limit - rem - 1) * win\n"
	"  local drop = used - target\n"
	"  if drop <= 0 then nxt = 0\n"
	"  elseif prev > 0 and drop <= prev * (win - e) then nxt = cdiv(drop, prev)\n"
	"  elseif cur * win <= target then nxt = win - e\n"
	"  else nxt = (win - e) + (win - fdiv(target, cur)) end\n"
	"end\n"
	"keep(reset, 's', num(start), 'c', num(cur), 'p', num(prev))\n"
	"return {adm, wait, rem, limit, win, reset, 0, nxt}\n";

const struct limiter_ops limiter_sliding_window_ops = {
	.name = "sliding-window",
	.check_params = limiter_check_rate,
	.state_size = sw_state_size,
	.init = sw_init,
	.decide = sw_decide,
	.release = NULL,
	.idle = sw_idle,
	.redis_script = REDIS_SCRIPT,
};
