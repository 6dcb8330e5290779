/* The real clock of a loop: CLOCK_MONOTONIC, epoll and a timerfd. */
#include "hammer/loopclock.h"

#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"

#define MAX_EVENTS 256
#define CANCEL_POLL_NS (50 * NS_PER_MS)

struct loopclock {
	int epfd;
	int tfd;
	uint64_t tfd_armed;    /* due time the timerfd is set to; 0 = disarmed */
};

static uint64_t real_origin(void)
{
	return clock_monotonic_ns();
}

static uint64_t real_wall_of(uint64_t t)
{
	uint64_t now = clock_monotonic_ns(), wall = clock_wall_ns();

	return t >= now ? wall + (t - now) : wall - (now - t);
}

static void real_destroy(struct loopclock *c)
{
	if (c == NULL)
		return;
	if (c->epfd >= 0)
		close(c->epfd);
	if (c->tfd >= 0)
		close(c->tfd);
	free(c);
}

static struct loopclock *real_create(void)
{
	struct loopclock *c = calloc(1, sizeof(*c));
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = LOOPCLOCK_TAG };

	if (c == NULL)
		return NULL;
	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	c->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (c->epfd < 0 || c->tfd < 0 || epoll_ctl(c->epfd, EPOLL_CTL_ADD, c->tfd, &ev) != 0) {
		real_destroy(c);
		return NULL;
	}
	return c;
}

static int real_epfd(const struct loopclock *c)
{
	return c->epfd;
}

static uint64_t real_now(struct loopclock *c)
{
	(void)c;
	return clock_monotonic_ns();
}

/* Point the timerfd at due (0: disarm). */
static void arm(struct loopclock *c, uint64_t due)
{
	struct itimerspec its = { 0 };

	if (due == c->tfd_armed)
		return;
	if (due != 0) {
		its.it_value.tv_sec = (time_t)(due / NS_PER_SEC);
		its.it_value.tv_nsec = (long)(due % NS_PER_SEC);
	}
	timerfd_settime(c->tfd, TFD_TIMER_ABSTIME, &its, NULL);
	c->tfd_armed = due;
}

static bool real_wait(struct loopclock *c, uint64_t until, uint64_t timer_ns, loopclock_io_fn io, void *ctx)
{
	struct epoll_event ev[MAX_EVENTS];
	uint64_t now = clock_monotonic_ns();
	int ms = 0, n;

	arm(c, timer_ns == UINT64_MAX ? 0 : timer_ns);
	if (until > now + CANCEL_POLL_NS)
		until = now + CANCEL_POLL_NS;
	if (until > now)
		ms = (int)((until - now + NS_PER_MS - 1) / NS_PER_MS);
	n = epoll_wait(c->epfd, ev, MAX_EVENTS, ms);
	for (int i = 0; i < n; i++) {
		uint64_t ticks;

		if (ev[i].data.u64 != LOOPCLOCK_TAG) {
			io(ctx, ev[i].data.u64, ev[i].events);
			continue;
		}
		if (read(c->tfd, &ticks, sizeof(ticks)) < 0)
			ticks = 0;
		c->tfd_armed = 0;
	}
	return true;
}

const struct loopclock_ops LOOPCLOCK_REAL = {
	.name = "real", .one_loop = false, .origin = real_origin, .wall_of = real_wall_of,
	.create = real_create, .destroy = real_destroy, .epfd = real_epfd, .now = real_now, .wait = real_wait,
};
