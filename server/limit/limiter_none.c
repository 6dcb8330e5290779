/* none: admits everything.  Reports limit 0, remaining 0, reset 0 (no policy). */
#include "server/limit/limiters.h"

static size_t none_state_size(const struct limiter_params *p)
{
	(void)p;
	return 0;
}

static void none_init(const struct limiter_params *p, void *state, uint64_t now)
{
	(void)p;
	(void)state;
	(void)now;
}

static void none_decide(const struct limiter_params *p, void *state, uint64_t now, uint64_t cost,
                        struct limiter_decision *d)
{
	(void)state;
	(void)now;
	(void)cost;
	*d = (struct limiter_decision){ .admitted = true, .window_ns = p->window_ns };
}

static bool none_idle(const struct limiter_params *p, const void *state, uint64_t now)
{
	(void)p;
	(void)state;
	(void)now;
	return true;
}

/* No policy: any params do. */
static int none_check_params(const struct limiter_ops *ops, struct limiter_params *p, char *err, size_t errlen)
{
	(void)ops;
	(void)p;
	(void)err;
	(void)errlen;
	return 0;
}

/*
 * The Redis store's script: the same decision in Lua, over the names of the
 * prelude in server/store/redis_scripts.h.
 */
static const char REDIS_SCRIPT[] =
	"return {1, 0, 0, 0, win, 0, 0, 0}\n";

const struct limiter_ops limiter_none_ops = {
	.name = "none",
	.stateless = true,
	.check_params = none_check_params,
	.state_size = none_state_size,
	.init = none_init,
	.decide = none_decide,
	.release = NULL,
	.idle = none_idle,
	.redis_script = REDIS_SCRIPT,
};
