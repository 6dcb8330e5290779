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

const struct limiter_ops limiter_none_ops = {
	.name = "none",
	.state_size = none_state_size,
	.init = none_init,
	.decide = none_decide,
	.release = NULL,
	.idle = none_idle,
};
