/* The virtual clock of a loop: time is a number that jumps to the next thing due. */
#include "hammer/loopclock.h"

#include <stdlib.h>

struct loopclock {
	uint64_t now;
};

static uint64_t virtual_origin(void)
{
	return LOOPCLOCK_VIRTUAL_T0;
}

static uint64_t virtual_wall_of(uint64_t t)
{
	return LOOPCLOCK_VIRTUAL_WALL0 + (t - LOOPCLOCK_VIRTUAL_T0);
}

static struct loopclock *virtual_create(void)
{
	struct loopclock *c = calloc(1, sizeof(*c));

	if (c != NULL)
		c->now = LOOPCLOCK_VIRTUAL_T0;
	return c;
}

static void virtual_destroy(struct loopclock *c)
{
	free(c);
}

static int virtual_epfd(const struct loopclock *c)
{
	(void)c;
	return -1;
}

static uint64_t virtual_now(struct loopclock *c)
{
	return c->now;
}

static bool virtual_wait(struct loopclock *c, uint64_t until, uint64_t timer_ns, loopclock_io_fn io, void *ctx)
{
	uint64_t next = until < timer_ns ? until : timer_ns;

	(void)io;
	(void)ctx;
	if (next == UINT64_MAX)
		return false;
	/* time never runs backwards: something due in the past is due now */
	if (next > c->now)
		c->now = next;
	return true;
}

const struct loopclock_ops LOOPCLOCK_VIRTUAL = {
	.name = "virtual", .one_loop = true, .origin = virtual_origin, .wall_of = virtual_wall_of,
	.create = virtual_create, .destroy = virtual_destroy, .epfd = virtual_epfd, .now = virtual_now,
	.wait = virtual_wait,
};
