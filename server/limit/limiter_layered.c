/*
 * layered: several fixed windows at once (e.g. 30/1m, 500/1h, 2000/1d), each
 * aligned to multiples of its window in the `now` handed in (0 at the
 * server's start).  A request is
 * admitted only if every layer admits it, and then every layer counts it.  A
 * rejection names the binding layer (the rejecting one with the longest
 * wait) and its wait; remaining is the minimum over layers, and an admitted
 * decision reports the layer with the least remaining.
 */
#include <stdio.h>

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

/*
 * Time until the least remaining grows: every layer at that minimum must roll
 * (the longest of their waits), and never while one of them is still unused.
 */
static uint64_t ly_next(const struct limiter_params *p, const struct layered_window *lw, const uint64_t *left,
                        uint64_t remaining)
{
	uint64_t next = 0;

	for (size_t i = 0; i < p->nlayers; i++) {
		if (p->layers[i].limit - lw[i].count != remaining)
			continue;
		if (lw[i].count == 0)
			return 0;
		if (left[i] > next)
			next = left[i];
	}
	return next;
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
	d->next_ns = ly_next(p, lw, left, d->remaining);
}

static bool ly_idle(const struct limiter_params *p, const void *state, uint64_t now)
{
	const struct layered_window *lw = state;

	for (size_t i = 0; i < p->nlayers; i++)
		if (lw[i].count > 0 && now < lw[i].start + p->layers[i].window_ns)
			return false;
	return true;
}

/* One layer from limit/window when none is given; each layer needs a limit and a window. */
static int ly_check_params(const struct limiter_ops *ops, struct limiter_params *p, char *err, size_t errlen)
{
	(void)ops;
	if (p->nlayers == 0 && p->limit > 0) {
		p->layers[0] = (struct limiter_layer){ .limit = p->limit, .window_ns = p->window_ns };
		p->nlayers = 1;
	}
	if (p->nlayers == 0 || p->nlayers > LIMITER_MAX_LAYERS) {
		snprintf(err, errlen, "layered: needs 1 to %d layers (got %zu)", LIMITER_MAX_LAYERS,
		         p->nlayers);
		return -1;
	}
	for (size_t i = 0; i < p->nlayers; i++) {
		if (p->layers[i].limit == 0 || p->layers[i].window_ns == 0) {
			snprintf(err, errlen, "layered: layer %zu needs a limit >= 1 and a window > 0", i + 1);
			return -1;
		}
	}
	/* The first layer is the headline policy when a caller wants just one. */
	if (p->limit == 0) {
		p->limit = p->layers[0].limit;
		p->window_ns = p->layers[0].window_ns;
	}
	return 0;
}

/*
 * The Redis store's script: the same decision in Lua, over the names of the
 * prelude in server/store/redis_scripts.h.
 */
static const char REDIS_SCRIPT[] =
	"local nl = tonumber(ARGV[9])\n"
	"local L, W, S, C, left, fields, out = {}, {}, {}, {}, {}, {}, {}\n"
	"for i = 1, nl do fields[2 * i - 1] = 's' .. i; fields[2 * i] = 'c' .. i end\n"
	"local st = redis.call('HMGET', key, unpack(fields))\n"
	"local wait, bind, tight, ttl = 0, 1, 1, 0\n"
	"for i = 1, nl do\n"
	"  L[i], W[i] = tonumber(ARGV[8 + 2 * i]), tonumber(ARGV[9 + 2 * i])\n"
	"  S[i], C[i] = wstart(now, W[i]), 0\n"
	"  if st[2 * i - 1] and not (S[i] > tonumber(st[2 * i - 1])) then\n"
	"    S[i], C[i] = tonumber(st[2 * i - 1]), tonumber(st[2 * i])\n"
	"  end\n"
	"  left[i] = W[i]\n"
	"  if now > S[i] then left[i] = S[i] + W[i] - now end\n"
	"  if cost > L[i] - C[i] and left[i] > wait then wait = left[i]; bind = i end\n"
	"end\n"
	"local adm = 0\n"
	"if wait == 0 then adm = 1 end\n"
	"for i = 1, nl do\n"
	"  if adm == 1 then C[i] = C[i] + cost end\n"
	"  if L[i] - C[i] < L[tight] - C[tight] then tight = i end\n"
	"  if C[i] > 0 and S[i] + W[i] - now > ttl then ttl = S[i] + W[i] - now end\n"
	"  out[#out + 1] = 's' .. i; out[#out + 1] = num(S[i])\n"
	"  out[#out + 1] = 'c' .. i; out[#out + 1] = num(C[i])\n"
	"end\n"
	"if adm == 1 then bind = tight end\n"
	"local reset = 0\n"
	"if C[bind] > 0 then reset = left[bind] end\n"
	"local nxt = 0\n"
	"for i = 1, nl do\n"
	"  if L[i] - C[i] == L[tight] - C[tight] then\n"
	"    if C[i] == 0 then nxt = 0; break end\n"
	"    if left[i] > nxt then nxt = left[i] end\n"
	"  end\n"
	"end\n"
	"keep(ttl, unpack(out))\n"
	"return {adm, wait, L[tight] - C[tight], L[bind], W[bind], reset, bind - 1, nxt}\n";

const struct limiter_ops limiter_layered_ops = {
	.name = "layered",
	.layered = true,
	.check_params = ly_check_params,
	.state_size = ly_state_size,
	.init = ly_init,
	.decide = ly_decide,
	.release = NULL,
	.idle = ly_idle,
	.redis_script = REDIS_SCRIPT,
};
