/*
 * sliding-log: a request at t counts against the limit while now < t + window.
 * Keeps one timestamp per admitted request in a ring of `limit` entries (so
 * limit is capped at LIMITER_SLIDING_LOG_MAX); a rejected request is not
 * logged.  The wait is exact: the time until enough of the oldest entries
 * have left the window for this request to fit.
 */
#include "server/limit/limiters.h"

struct sliding_log {
	uint64_t head;    /* index of the oldest entry */
	uint64_t n;       /* live entries */
	uint64_t ts[];    /* ring of `limit` timestamps, oldest first from head */
};

static size_t sl_state_size(const struct limiter_params *p)
{
	return sizeof(struct sliding_log) + p->limit * sizeof(uint64_t);
}

static void sl_init(const struct limiter_params *p, void *state, uint64_t now)
{
	struct sliding_log *sl = state;

	(void)p;
	(void)now;
	sl->head = 0;
	sl->n = 0;
}

static uint64_t sl_at(const struct limiter_params *p, const struct sliding_log *sl, uint64_t i)
{
	return sl->ts[(sl->head + i) % p->limit];
}

static void sl_decide(const struct limiter_params *p, void *state, uint64_t now, uint64_t cost,
                      struct limiter_decision *d)
{
	struct sliding_log *sl = state;

	if (sl->n > 0 && now < sl_at(p, sl, sl->n - 1))
		now = sl_at(p, sl, sl->n - 1);  /* keep the log sorted under out-of-order clocks */
	while (sl->n > 0 && sl_at(p, sl, 0) + p->window_ns <= now) {
		sl->head = (sl->head + 1) % p->limit;
		sl->n--;
	}
	d->limit = p->limit;
	d->window_ns = p->window_ns;
	d->layer = 0;
	d->admitted = cost <= p->limit - sl->n;
	d->wait_ns = 0;
	if (d->admitted) {
		for (uint64_t i = 0; i < cost; i++)
			sl->ts[(sl->head + sl->n++) % p->limit] = now;
	} else if (cost > p->limit) {
		d->wait_ns = p->window_ns;  /* never fits; back off a whole window */
	} else {
		d->wait_ns = sl_at(p, sl, sl->n + cost - p->limit - 1) + p->window_ns - now;
	}
	d->remaining = p->limit - sl->n;
	d->reset_ns = sl->n > 0 ? sl_at(p, sl, sl->n - 1) + p->window_ns - now : 0;
}

static bool sl_idle(const struct limiter_params *p, const void *state, uint64_t now)
{
	const struct sliding_log *sl = state;

	return sl->n == 0 || sl_at(p, sl, sl->n - 1) + p->window_ns <= now;
}

const struct limiter_ops limiter_sliding_log_ops = {
	.name = "sliding-log",
	.state_size = sl_state_size,
	.init = sl_init,
	.decide = sl_decide,
	.release = NULL,
	.idle = sl_idle,
};
