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
}

static bool sw_idle(const struct limiter_params *p, const void *state, uint64_t now)
{
	const struct sliding_window *sw = state;

	return (sw->cur == 0 && (sw->prev == 0 || now >= sw->start + p->window_ns)) ||
	       now >= sw->start + 2 * p->window_ns;
}

const struct limiter_ops limiter_sliding_window_ops = {
	.name = "sliding-window",
	.state_size = sw_state_size,
	.init = sw_init,
	.decide = sw_decide,
	.release = NULL,
	.idle = sw_idle,
};
