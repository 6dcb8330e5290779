/* A request's life: in flight, parked with a reason, woken with an outcome; the drain. */
#include "server/http/lifecycle.h"

#include <time.h>

#include "common/clock.h"

static void mhd_suspend(struct MHD_Connection *c)
{
	MHD_suspend_connection(c);
}

static void mhd_resume(struct MHD_Connection *c)
{
	MHD_resume_connection(c);
}

static const struct lifecycle_conn_ops mhd_ops = { mhd_suspend, mhd_resume };

void lifecycle_init(struct lifecycle *lc, struct sched *s, const struct lifecycle_conn_ops *ops)
{
	pthread_condattr_t ca;

	lc->parked = NULL;
	lc->sched = s;
	lc->ops = ops ? ops : &mhd_ops;
	atomic_store(&lc->inflight, 0);
	atomic_store(&lc->draining, false);
	pthread_mutex_init(&lc->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&lc->idle, &ca);
	pthread_condattr_destroy(&ca);
}

void lifecycle_destroy(struct lifecycle *lc)
{
	pthread_cond_destroy(&lc->idle);
	pthread_mutex_destroy(&lc->lock);
}

bool lifecycle_begin(struct lifecycle *lc)
{
	/*
	 * Counted in flight before draining is read, both sequentially
	 * consistent: either the drain sees this request in flight and waits
	 * for it, or this request sees the drain and is not taken in.
	 */
	atomic_fetch_add(&lc->inflight, 1);
	if (!atomic_load(&lc->draining))
		return true;
	lifecycle_end(lc);
	return false;
}

void lifecycle_end(struct lifecycle *lc)
{
	if (atomic_fetch_sub(&lc->inflight, 1) == 1 && atomic_load(&lc->draining)) {
		pthread_mutex_lock(&lc->lock);
		pthread_cond_broadcast(&lc->idle);
		pthread_mutex_unlock(&lc->lock);
	}
}

bool lifecycle_draining(struct lifecycle *lc)
{
	return atomic_load(&lc->draining);
}

static void park_due(void *arg)
{
	lifecycle_wake(arg, LIFECYCLE_DUE);
}

bool lifecycle_park(struct lifecycle *lc, struct lifecycle_park *p, struct MHD_Connection *c,
                    enum lifecycle_reason why)
{
	/* A store's park is never shed: its store answers within its own timeout, drain or not. */
	bool sheddable = why != LIFECYCLE_STORE;

	if (sheddable && atomic_load(&lc->draining))
		return false;
	p->lc = lc;
	p->conn = c;
	p->reason = why;
	p->outcome = LIFECYCLE_DUE;
	sched_timer_init(&p->timer, park_due, p);
	/* Suspended before anyone can see it parked: a wake may come from another thread at once. */
	lc->ops->suspend(c);
	pthread_mutex_lock(&lc->lock);
	if (sheddable && atomic_load(&lc->draining)) {
		pthread_mutex_unlock(&lc->lock);
		lc->ops->resume(c);
		return false;
	}
	atomic_store(&p->state, LIFECYCLE_PARKED);
	p->prev = NULL;
	p->next = lc->parked;
	if (lc->parked)
		lc->parked->prev = p;
	lc->parked = p;
	pthread_mutex_unlock(&lc->lock);
	return true;
}

/*
 * Arm p's timer while p is still parked: 0, -1 when it is not (woken) or
 * the scheduler refused.  Under the lifecycle's lock, so a waker either
 * claimed p before (nothing is armed, and the timer is not touched while
 * the waker may be cancelling it) or resumes it after (its cancel comes
 * after this arm and takes the timer off): never a timer left armed on a
 * woken request, whose memory its connection may free.  set(set_arg), when
 * given, writes the request's state first, under the same lock.
 */
static int arm_parked(struct lifecycle_park *p, uint64_t due_ns, void (*fn)(void *), void *arg,
                      void (*set)(void *), void *set_arg)
{
	struct lifecycle *lc = p->lc;
	int rc = -1;

	/* Only its owner parks p: one that is not parked now will not be by the time the lock is held. */
	if (atomic_load(&p->state) != LIFECYCLE_PARKED)
		return -1;
	pthread_mutex_lock(&lc->lock);
	if (atomic_load(&p->state) == LIFECYCLE_PARKED) {
		if (set)
			set(set_arg);
		sched_timer_init(&p->timer, fn, arg);
		rc = sched_arm(lc->sched, &p->timer, due_ns) < 0 ? -1 : 0;
	}
	pthread_mutex_unlock(&lc->lock);
	return rc;
}

bool lifecycle_park_until(struct lifecycle *lc, struct lifecycle_park *p, struct MHD_Connection *c,
                          enum lifecycle_reason why, uint64_t due_ns)
{
	if (!lifecycle_park(lc, p, c, why))
		return false;
	/* No room in the scheduler: due at once (a no-op when the drain woke it meanwhile). */
	if (arm_parked(p, due_ns, park_due, p, NULL, NULL) < 0)
		lifecycle_wake(p, LIFECYCLE_DUE);
	return true;
}

int lifecycle_arm(struct lifecycle_park *p, uint64_t due_ns, void (*fn)(void *), void *arg, void (*set)(void *),
                  void *set_arg)
{
	return arm_parked(p, due_ns, fn, arg, set, set_arg);
}

/* Take p off the parked list. */
static void unlink_park(struct lifecycle *lc, struct lifecycle_park *p)
{
	if (p->prev)
		p->prev->next = p->next;
	else
		lc->parked = p->next;
	if (p->next)
		p->next->prev = p->prev;
	p->prev = p->next = NULL;
}

bool lifecycle_claim(struct lifecycle_park *p)
{
	int cur = LIFECYCLE_PARKED;

	return atomic_compare_exchange_strong(&p->state, &cur, LIFECYCLE_WOKEN);
}

bool lifecycle_wake(struct lifecycle_park *p, enum lifecycle_outcome o)
{
	if (!lifecycle_claim(p))
		return false;
	lifecycle_resume(p, o);
	return true;
}

void lifecycle_resume(struct lifecycle_park *p, enum lifecycle_outcome o)
{
	struct lifecycle *lc = p->lc;

	p->outcome = o;
	pthread_mutex_lock(&lc->lock);
	unlink_park(lc, p);
	pthread_mutex_unlock(&lc->lock);
	sched_cancel(lc->sched, &p->timer);
	lc->ops->resume(p->conn);
}

/* Take every sheddable parked request off the list, marked woken; returns them linked by next. */
static struct lifecycle_park *take_sheddable(struct lifecycle *lc)
{
	struct lifecycle_park *out = NULL, *p, *next;

	pthread_mutex_lock(&lc->lock);
	for (p = lc->parked; p; p = next) {
		int cur = LIFECYCLE_PARKED;

		next = p->next;
		if (p->reason == LIFECYCLE_STORE ||
		    !atomic_compare_exchange_strong(&p->state, &cur, LIFECYCLE_WOKEN))
			continue;
		p->outcome = LIFECYCLE_SHED;
		unlink_park(lc, p);
		p->next = out;
		out = p;
	}
	pthread_mutex_unlock(&lc->lock);
	return out;
}

void lifecycle_close(struct lifecycle *lc)
{
	/* Under the lock: a park either sees it or is on the list the drain walks. */
	pthread_mutex_lock(&lc->lock);
	atomic_store(&lc->draining, true);
	pthread_mutex_unlock(&lc->lock);
}

long lifecycle_drain(struct lifecycle *lc, uint64_t deadline_ns)
{
	struct timespec ts = { (time_t)(deadline_ns / NS_PER_SEC), (long)(deadline_ns % NS_PER_SEC) };
	struct lifecycle_park *p, *next;
	long left;

	lifecycle_close(lc);
	for (p = take_sheddable(lc); p; p = next) {
		next = p->next;
		sched_cancel(lc->sched, &p->timer);
		lc->ops->resume(p->conn);
	}
	pthread_mutex_lock(&lc->lock);
	while ((left = atomic_load(&lc->inflight)) > 0)
		if (pthread_cond_timedwait(&lc->idle, &lc->lock, &ts) != 0 && clock_monotonic_ns() >= deadline_ns)
			break;
	left = atomic_load(&lc->inflight);
	pthread_mutex_unlock(&lc->lock);
	return left;
}
