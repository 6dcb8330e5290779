/* A route's modelled backend: requests parked in the capacity model, services ended by the scheduler. */
#include "server/http/backend.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "common/clock.h"
#include "server/http/lifecycle.h"
#include "server/http/request.h"

#define EVENTS 32

struct backend {
	pthread_mutex_t lock;
	struct capacity *cap;
	struct capacity_params p;
	struct lifecycle *lc;        /* parks the requests; its scheduler runs the timers */
	uint64_t poke_due;           /* the pending trigger poke's due time; 0: none */
};

struct backend *backend_new(const struct capacity_params *p, uint64_t now, uint64_t seed)
{
	struct backend *b = calloc(1, sizeof(*b));

	if (b == NULL)
		return NULL;
	b->p = *p;
	if (pthread_mutex_init(&b->lock, NULL) != 0)
		goto free_b;
	if ((b->cap = capacity_new(p, now, seed)) == NULL)
		goto destroy_lock;
	return b;
destroy_lock:
	pthread_mutex_destroy(&b->lock);
free_b:
	free(b);
	return NULL;
}

void backend_free(struct backend *b)
{
	if (b == NULL)
		return;
	capacity_free(b->cap);
	pthread_mutex_destroy(&b->lock);
	free(b);
}

size_t backend_timer_slots(const struct capacity_params *p)
{
	/* rejection work takes at most every worker; pokes: one pending, one after a reset */
	return p->workers + 2;
}

const struct capacity_params *backend_params(const struct backend *b)
{
	return &b->p;
}

/* Did the client close or reset its connection?  A peek reads end-of-file or an error then. */
static bool client_gone(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	char byte;
	ssize_t r;

	if (ci == NULL)
		return false;
	r = recv(ci->connect_fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
	return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

static void act(struct backend *b, const struct capacity_event *ev, size_t n);

/* Poll the model until it has nothing more to say (each call returns at most EVENTS). */
static void drain_events(struct backend *b, size_t n)
{
	struct capacity_event ev[EVENTS];

	while (n == EVENTS) {
		pthread_mutex_lock(&b->lock);
		n = capacity_poll(b->cap, clock_monotonic_ns(), ev, EVENTS);
		pthread_mutex_unlock(&b->lock);
		act(b, ev, n);
	}
}

/* A request's service ended (the timer thread): answer it, and give its worker the next. */
static void service_done(void *arg)
{
	struct request *rq = arg;
	struct backend *b = rq->backend;
	enum capacity_client who;
	struct capacity_event ev[EVENTS];
	size_t n;

	/* Woken already (the drain ended its service early): rq is no longer ours. */
	if (!lifecycle_claim(&rq->park))
		return;
	who = client_gone(rq->conn) ? CAPACITY_GONE : CAPACITY_PRESENT;
	pthread_mutex_lock(&b->lock);
	n = capacity_done(b->cap, clock_monotonic_ns(), rq->service_ns, who, ev, EVENTS);
	pthread_mutex_unlock(&b->lock);
	rq->phase = REQUEST_SERVED;
	/* rq may be reused by its connection from here on */
	lifecycle_resume(&rq->park, LIFECYCLE_DUE);
	act(b, ev, n);
	drain_events(b, n);
}

/* Rejection work ended: the worker is free. */
static void debt_done(void *arg)
{
	struct backend *b = arg;
	struct capacity_event ev[EVENTS];
	size_t n;

	pthread_mutex_lock(&b->lock);
	n = capacity_done(b->cap, clock_monotonic_ns(), 0, CAPACITY_NOBODY, ev, EVENTS);
	pthread_mutex_unlock(&b->lock);
	act(b, ev, n);
	drain_events(b, n);
}

static void shed_request(struct request *rq)
{
	if (!lifecycle_claim(&rq->park))
		return;
	rq->phase = REQUEST_SHED;
	lifecycle_resume(&rq->park, LIFECYCLE_DUE);
}

/* A worker took rq: its service time and phase, written only while it is still parked (lifecycle_arm). */
struct serving {
	struct request *rq;
	uint64_t service_ns;
};

static void start_serving(void *arg)
{
	const struct serving *sv = arg;

	sv->rq->service_ns = sv->service_ns;
	sv->rq->phase = REQUEST_SERVING;
}

/*
 * Carry out the model's events, outside its lock.  A service the scheduler
 * refuses (it refuses only once the server is stopping) is shed; its
 * worker stays taken, which no longer matters then.
 */
static void act(struct backend *b, const struct capacity_event *ev, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct request *rq = ev[i].job;

		switch (ev[i].kind) {
		case CAPACITY_START: {
			struct serving sv = { rq, ev[i].service_ns };

			if (lifecycle_arm(&rq->park, ev[i].done_ns, service_done, rq, start_serving, &sv) != 0)
				shed_request(rq);
			break;
		}
		case CAPACITY_SHED:
			shed_request(rq);
			break;
		case CAPACITY_DEBT:
			sched_at(b->lc->sched, ev[i].done_ns, debt_done, b);
			break;
		}
	}
}

static void schedule_poke(struct backend *b, uint64_t due);

/* A trigger boundary: capacity may have come back, so free workers take waiting requests. */
static void poke(void *arg)
{
	struct backend *b = arg;
	struct capacity_event ev[EVENTS];
	uint64_t now, next;
	size_t n;

	pthread_mutex_lock(&b->lock);
	now = clock_monotonic_ns();
	if (b->poke_due != 0 && b->poke_due <= now)
		b->poke_due = 0;
	n = capacity_poll(b->cap, now, ev, EVENTS);
	next = capacity_next_change(b->cap, now);
	pthread_mutex_unlock(&b->lock);
	schedule_poke(b, next);
	act(b, ev, n);
	drain_events(b, n);
}

/* Poke at due unless an earlier poke is pending. */
static void schedule_poke(struct backend *b, uint64_t due)
{
	bool push;

	if (due == UINT64_MAX || b->lc == NULL)
		return;
	pthread_mutex_lock(&b->lock);
	push = b->poke_due == 0 || due < b->poke_due;
	if (push)
		b->poke_due = due;
	pthread_mutex_unlock(&b->lock);
	if (push && sched_at(b->lc->sched, due, poke, b) != 0) {
		pthread_mutex_lock(&b->lock);
		b->poke_due = 0;
		pthread_mutex_unlock(&b->lock);
	}
}

void backend_start(struct backend *b, struct lifecycle *lc)
{
	uint64_t next;

	b->lc = lc;
	pthread_mutex_lock(&b->lock);
	next = capacity_next_change(b->cap, clock_monotonic_ns());
	pthread_mutex_unlock(&b->lock);
	schedule_poke(b, next);
}

bool backend_enter(struct backend *b, struct lifecycle *lc, struct MHD_Connection *c, struct request *rq)
{
	struct capacity_event ev[EVENTS];
	size_t n;

	rq->backend = b;
	rq->conn = c;
	rq->phase = REQUEST_QUEUED;
	/* parked before the model sees it: another thread may wake it as soon as it does */
	if (!lifecycle_park(lc, &rq->park, c, LIFECYCLE_BACKEND)) {
		rq->phase = REQUEST_SHED;
		return false;
	}
	pthread_mutex_lock(&b->lock);
	n = capacity_arrive(b->cap, clock_monotonic_ns(), rq, ev, EVENTS);
	pthread_mutex_unlock(&b->lock);
	act(b, ev, n);
	drain_events(b, n);
	return true;
}

void backend_close(struct backend *b)
{
	struct capacity_event ev[EVENTS];
	size_t n;

	do {
		pthread_mutex_lock(&b->lock);
		n = capacity_flush(b->cap, clock_monotonic_ns(), ev, EVENTS);
		pthread_mutex_unlock(&b->lock);
		act(b, ev, n);
	} while (n > 0);
}

void backend_reset(struct backend *b)
{
	uint64_t next;

	pthread_mutex_lock(&b->lock);
	capacity_reset(b->cap, clock_monotonic_ns());
	next = capacity_next_change(b->cap, clock_monotonic_ns());
	pthread_mutex_unlock(&b->lock);
	schedule_poke(b, next);
}

void backend_stats(struct backend *b, struct capacity_stats *out)
{
	pthread_mutex_lock(&b->lock);
	capacity_stats(b->cap, clock_monotonic_ns(), out);
	pthread_mutex_unlock(&b->lock);
}

size_t backend_series(struct backend *b, struct capacity_bucket *out, size_t max)
{
	size_t n;

	pthread_mutex_lock(&b->lock);
	n = capacity_series(b->cap, out, max);
	pthread_mutex_unlock(&b->lock);
	return n;
}
