/*
 * fixed-window: at most `limit` requests in each window; windows are aligned
 * to multiples of window_ns in the `now` handed in (the server's clock starts
 * at 0 when it starts, so its windows do too).  A rejected request waits for
 * the next window.
 */
#include "server/limit/limiters.h"

struct fixed_window {
	uint64_t start;  /* start of the counted window */
	uint64_t count;
};

static size_t fw_state_size(const struct limiter_params *p)
{
	(void)p;
	return sizeof(struct fixed_window);
}

static void fw_init(const struct limiter_params *p, void *state, uint64_t now)
{
	struct fixed_window *fw = state;

	fw->start = limiter_window_start(now, p->window_ns);
	fw->count = 0;
}

static void fw_decide(const struct limiter_params *p, void *state, uint64_t now, uint64_t cost,
                      struct limiter_decision *d)
{
	struct fixed_window *fw = state;
	uint64_t start = limiter_window_start(now, p->window_ns);

	if (start > fw->start) {
		fw->start = start;
		fw->count = 0;
	}
	if (now < fw->start)
		now = fw->start;  /* a slightly late clock from another thread */
	d->limit = p->limit;
	d->window_ns = p->window_ns;
	d->layer = 0;
	d->admitted = cost <= p->limit - fw->count;
	if (d->admitted)
		fw->count += cost;
	/* A cost over the limit never fits; the next window is the honest answer anyway. */
	d->wait_ns = d->admitted ? 0 : fw->start + p->window_ns - now;
	d->remaining = p->limit - fw->count;
	d->reset_ns = fw->count > 0 ? fw->start + p->window_ns - now : 0;
	d->next_ns = d->reset_ns;  /* quota comes back only when the window ends */
}

static bool fw_idle(const struct limiter_params *p, const void *state, uint64_t now)
{
	const struct fixed_window *fw = state;

	return fw->count == 0 || now >= fw->start + p->window_ns;
}

/*
 * The Redis store's script: the same decision in Lua, over the names of the
 * prelude in server/store/redis_scripts.h.
 */
static const char REDIS_SCRIPT[] =
	"local st = redis.call('HMGET', key, 's', 'n')\n"
	"local start, count = wstart(now, win), 0\n"
	"if st[1] and not (start > tonumber(st[1])) then start, count = tonumber(st[1]), tonumber(st[2]) end\n"
	"if now < start then now = start end\n"
	"local adm, wait = 0, 0\n"
	"if cost <= limit - count then adm = 1; count = count + cost else wait = start + win - now end\n"
	"local reset = 0\n"
	"if count > 0 then reset = start + win - now end\n"
	"keep(reset, 's', num(start), 'n', num(count))\n"
	"return {adm, wait, limit - count, limit, win, reset, 0, reset}\n";

const struct limiter_ops limiter_fixed_window_ops = {
	.name = "fixed-window",
	.check_params = limiter_check_rate,
	.state_size = fw_state_size,
	.init = fw_init,
	.decide = fw_decide,
	.release = NULL,
	.idle = fw_idle,
	.redis_script = REDIS_SCRIPT,
};
