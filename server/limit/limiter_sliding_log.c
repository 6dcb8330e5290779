/*
 * sliding-log: a request at t counts against the limit while now < t + window.
 * Keeps one timestamp per admitted request in a ring of `limit` entries (so
 * limit is capped at LIMITER_SLIDING_LOG_MAX); a rejected request is not
 * logged.  The wait is exact: the time until enough of the oldest entries
 * have left the window for this request to fit.
 */
#include <inttypes.h>
#include <stdio.h>

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
	d->next_ns = sl->n > 0 ? sl_at(p, sl, 0) + p->window_ns - now : 0;  /* the oldest entry leaves */
}

static bool sl_idle(const struct limiter_params *p, const void *state, uint64_t now)
{
	const struct sliding_log *sl = state;

	return sl->n == 0 || sl_at(p, sl, sl->n - 1) + p->window_ns <= now;
}

/* A rate limiter whose log holds at most LIMITER_SLIDING_LOG_MAX timestamps per key. */
static int sl_check_params(const struct limiter_ops *ops, struct limiter_params *p, char *err, size_t errlen)
{
	if (p->limit > LIMITER_SLIDING_LOG_MAX) {
		snprintf(err, errlen,
		         "sliding-log: --limit %" PRIu64 " is too large; it keeps one timestamp per "
		         "request, at most %llu per key (use sliding-window for larger limits)",
		         p->limit, LIMITER_SLIDING_LOG_MAX);
		return -1;
	}
	return limiter_check_rate(ops, p, err, errlen);
}

/*
 * The Redis store's script: the same decision in Lua, over the names of the
 * prelude in server/store/redis_scripts.h.
 *
 * The log is a sorted set of admitted requests scored by time, trimmed to `limit` entries.
 */
static const char REDIS_SCRIPT[] =
	"local top = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')\n"
	"if top[2] and now < tonumber(top[2]) then now = tonumber(top[2]) end\n"
	"redis.call('ZREMRANGEBYSCORE', key, '-inf', num(now - win))\n"
	"local n = redis.call('ZCARD', key)\n"
	"local adm, wait = 0, 0\n"
	"if cost <= limit - n then\n"
	"  adm = 1\n"
	"  for i = 1, cost do redis.call('ZADD', key, num(now), token .. ':' .. i) end\n"
	"  n = n + cost\n"
	"elseif cost > limit then wait = win\n"
	"else\n"
	"  local e = redis.call('ZRANGE', key, n + cost - limit - 1, n + cost - limit - 1, 'WITHSCORES')\n"
	"  wait = tonumber(e[2]) + win - now\n"
	"end\n"
	"redis.call('ZREMRANGEBYRANK', key, 0, -(limit + 1))\n"
	"local reset = 0\n"
	"if n > 0 then reset = tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]) + win - now end\n"
	"local nxt = 0\n"
	"if n > 0 then nxt = tonumber(redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')[2]) + win - now end\n"
	"expire(reset)\n"
	"return {adm, wait, limit - n, limit, win, reset, 0, nxt}\n";

const struct limiter_ops limiter_sliding_log_ops = {
	.name = "sliding-log",
	.check_params = sl_check_params,
	.state_size = sl_state_size,
	.init = sl_init,
	.decide = sl_decide,
	.release = NULL,
	.idle = sl_idle,
	.redis_script = REDIS_SCRIPT,
};
