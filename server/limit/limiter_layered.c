/*
 * layered: several fixed windows at once (e.g. 30/1m, 500/1h, 2000/1d), each
 * aligned to multiples of its window in the `now` handed in (0 at the
 * server's start).  A request is
 * admitted only if every layer admits it, and then every layer counts it.  A
 * rejection names the binding layer (the rejecting one with the longest
 * wait) and its wait; remaining is the minimum over layers, and an admitted
 * decision reports the layer with the least remaining.
 */
#include "server/limit/limiters.h"

struct layered_window {
	uint64_t start;
	uint64_t count;
};

static size_t ly_state_size(const struct limiter_params *p)
{
	return p->nlayers * sizeof(struct layered_window);
}

static void ly_init(const struct limiter_params *p, void *state, uint64_t now)
{
	struct layered_window *lw = state;

	for (size_t i = 0; i < p->nlayers; i++) {
		lw[i].start = limiter_window_start(now, p->layers[i].window_ns);
		lw[i].count = 0;
	}
}

/* Roll layer i to `now`; returns the ns left in its window. */
static uint64_t ly_roll(const struct limiter_layer *l, struct layered_window *w, uint64_t now)
{
	uint64_t start = limiter_window_start(now, l->window_ns);

	if (start > w->start) {
		w->start = start;
		w->count = 0;
	}
	return now > w->start ? w->start + l->window_ns - now : l->window_ns;
}

static void ly_decide(const struct limiter_params *p, void *state, uint64_t now, uint64_t cost,
                      struct limiter_decision *d)
{
	struct layered_window *lw = state;
	uint64_t left[LIMITER_MAX_LAYERS], wait = 0;
	size_t bind = 0, tight = 0;

	for (size_t i = 0; i < p->nlayers; i++) {
		left[i] = ly_roll(&p->layers[i], &lw[i], now);
		if (cost > p->layers[i].limit - lw[i].count && left[i] > wait) {
			wait = left[i];
			bind = i;
		}
	}
	d->admitted = wait == 0;
	d->wait_ns = wait;
	for (size_t i = 0; i < p->nlayers; i++) {
		if (d->admitted)
			lw[i].count += cost;
		if (p->layers[i].limit - lw[i].count < p->layers[tight].limit - lw[tight].count)
			tight = i;
	}
	if (d->admitted)
		bind = tight;
	d->layer = (int)bind;
	d->limit = p->layers[bind].limit;
	d->window_ns = p->layers[bind].window_ns;
	d->remaining = p->layers[tight].limit - lw[tight].count;
	d->reset_ns = lw[bind].count > 0 ? left[bind] : 0;
}

static bool ly_idle(const struct limiter_params *p, const void *state, uint64_t now)
{
	const struct layered_window *lw = state;

	for (size_t i = 0; i < p->nlayers; i++)
		if (lw[i].count > 0 && now < lw[i].start + p->layers[i].window_ns)
			return false;
	return true;
}

const struct limiter_ops limiter_layered_ops = {
	.name = "layered",
	.state_size = ly_state_size,
	.init = ly_init,
	.decide = ly_decide,
	.release = NULL,
	.idle = ly_idle,
};
