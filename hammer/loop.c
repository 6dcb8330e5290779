/*
 * One worker's event loop: epoll and a timerfd over the timer heap, the
 * open-loop arrivals and their backlog, and which client runs which request.
 * The transport's sockets and deadlines come through its op table.
 */
#include "hammer/loop.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/heap.h"
#include "common/prng.h"
#include "hammer/loopclock.h"
#include "hammer/vclient.h"

#define ARRIVAL_ID UINT32_MAX
#define BACKLOG_MAX (1u << 20)
/* arrival gaps draw from streams past every client's */
#define ARRIVAL_STREAM (UINT64_C(1) << 32)

struct loop {
	struct vclient_host host;
	const struct loop_shared *sh;
	struct loop_part part;
	struct hammer_result res;
	struct loopclock *clk;        /* the run's kind of clock, this loop's instance */
	struct vclient *clients;
	unsigned char *wstates;       /* the workload's per-client states */
	uint32_t *free_ids;           /* idle clients (open loop) */
	uint32_t nfree;
	uint32_t active;              /* clients not idle */
	uint64_t started;             /* requests started (closed) or arrivals made (open) */
	uint64_t arrivals;            /* open loop: arrivals scheduled so far */
	uint64_t *backlog;            /* open loop: intended starts waiting for a client (ring) */
	uint32_t bl_head, bl_n, bl_cap;
	struct prng rng;              /* open loop: Poisson gaps */
	uint64_t first_late_ns;       /* the first timer's fire time minus its due time */
	bool fired;                   /* a timer has fired */
	double sched_count;           /* open loop under a schedule: where the next arrival is on its count */
	atomic_bool finished;
};

static void fire_timers(struct loop *l);

static uint64_t loop_now(struct loop *l)
{
	return l->sh->clock->now(l->clk);
}

static bool timer_due(struct loop *l)
{
	struct heap_entry t;

	return heap_peek(l->host.heap, &t) && t.due_ns <= loop_now(l);
}

/* ---- what the transport, the clock and the clients call back ---- */

/* A long batch of transport work fires the timers that fell due meanwhile. */
static void on_timers(void *ctx)
{
	struct loop *l = ctx;

	if (timer_due(l))
		fire_timers(l);
}

/* c's request is over: the next one (closed loop, or a waiting arrival), or c idles. */
static void on_request_done(void *ctx, struct vclient *c, uint64_t now)
{
	struct loop *l = ctx;
	struct vclient_host *h = &l->host;

	if (l->part.rate > 0) {
		if (l->bl_n > 0) {
			uint64_t intended = l->backlog[l->bl_head];

			l->bl_head = (l->bl_head + 1) % l->bl_cap;
			l->bl_n--;
			vclient_start(h, c, intended, now);
			return;
		}
	} else if (l->started < l->part.requests && (l->sh->end_ns == 0 || now < l->sh->end_ns)) {
		l->started++;
		vclient_start(h, c, now, now);
		return;
	}
	l->free_ids[l->nfree++] = c->id;
	l->active--;
}

/* ---- setup ---- */

static int clients_new(struct loop *l)
{
	uint32_t n = l->part.clients;
	size_t ss = (l->sh->wl->state_size + 15) & ~(size_t)15;

	l->clients = calloc(n ? n : 1, sizeof(*l->clients));
	l->free_ids = calloc(n ? n : 1, sizeof(*l->free_ids));
	l->host.failq = calloc(n ? n : 1, sizeof(*l->host.failq));
	l->host.heap = heap_new(n + 16, false);
	l->wstates = ss ? calloc(n ? n : 1, ss) : NULL;
	if (l->clients == NULL || l->free_ids == NULL || l->host.failq == NULL || l->host.heap == NULL ||
	    (ss && l->wstates == NULL))
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		vclient_init(&l->clients[i], i, l->sh->node + l->sh->nodes * (l->part.first_client + i),
		             l->sh->cfg->seed, ss ? l->wstates + i * ss : NULL);
		l->free_ids[l->nfree++] = n - 1 - i;
	}
	return 0;
}

static void host_init(struct loop *l)
{
	const struct loop_shared *sh = l->sh;
	struct vclient_host *h = &l->host;

	h->cfg = sh->cfg;
	h->wl = sh->wl;
	h->tops = sh->tops;
	h->res = &l->res;
	h->budget = sh->budget;
	h->throttle = sh->throttle;
	h->hold_until = sh->hold_until;
	h->clients = l->clients;
	h->nurls = sh->nurls;
	h->loop_index = l->part.slot;
	h->nloops = sh->stride;
	h->nclients = l->part.clients ? l->part.clients : 1;
	h->request_done = on_request_done;
	h->done_ctx = l;
}

static int transport_new(struct loop *l)
{
	struct transport_env env = {
		.epfd = l->sh->clock->epfd(l->clk), .clients = l->part.clients, .park_max = l->sh->park_max,
		.index0 = l->sh->node + l->sh->nodes * l->part.first_client, .stride = l->sh->nodes,
		.ended = vclient_call_ended, .ctx = &l->host, .timers = on_timers, .timers_ctx = l,
	};

	host_init(l);
	l->host.tl = l->sh->tops->loop_new(l->sh->trun, &env);
	return l->host.tl != NULL ? 0 : -1;
}

struct loop *loop_new(const struct loop_shared *sh, const struct loop_part *part, char *err, size_t errlen)
{
	struct loop *l = calloc(1, sizeof(*l));

	if (l == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	l->sh = sh;
	l->part = *part;
	prng_seed(&l->rng, prng_stream_seed(sh->cfg->seed, ARRIVAL_STREAM + part->slot));
	if (hammer_result_init(&l->res, sh->cfg->interval_ns) != 0 ||
	    (sh->cfg->by_start_ns && (l->res.by_start = timeline_new(sh->cfg->by_start_ns)) == NULL)) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	l->res.nservers = sh->nurls;
	for (uint32_t i = 0; i < sh->nurls; i++)
		l->res.servers[i].url = sh->urls[i];
	if ((l->clk = sh->clock->create()) == NULL) {
		snprintf(err, errlen, "cannot set up the %s clock: %s", sh->clock->name, strerror(errno));
		goto fail;
	}
	if (clients_new(l) != 0 || transport_new(l) != 0) {
		snprintf(err, errlen, "cannot set up %u clients (out of memory?)", part->clients);
		goto fail;
	}
	return l;
fail:
	loop_free(l);
	return NULL;
}

void loop_free(struct loop *l)
{
	if (l == NULL)
		return;
	if (l->host.tl != NULL)
		l->sh->tops->loop_free(l->host.tl);
	if (l->clk != NULL)
		l->sh->clock->destroy(l->clk);
	heap_free(l->host.heap);
	free(l->clients);
	free(l->wstates);
	free(l->free_ids);
	free(l->host.failq);
	free(l->backlog);
	hammer_result_destroy(&l->res);
	free(l);
}

struct hammer_result *loop_result(struct loop *l)
{
	return &l->res;
}

uint64_t loop_first_late_ns(const struct loop *l)
{
	return l->fired ? l->first_late_ns : UINT64_MAX;
}

void loop_progress(struct loop *l, uint64_t *requests, uint64_t *calls, bool *finished)
{
	*requests = atomic_load_explicit(&l->host.prog_requests, memory_order_relaxed);
	*calls = atomic_load_explicit(&l->host.prog_calls, memory_order_relaxed);
	*finished = atomic_load(&l->finished);
}

/* ---- arrivals ---- */

static void backlog_push(struct loop *l, uint64_t intended)
{
	if (l->bl_n == l->bl_cap) {
		uint32_t ncap = l->bl_cap ? l->bl_cap * 2 : 256;
		uint64_t *nb;

		if (ncap > BACKLOG_MAX || (nb = malloc(sizeof(*nb) * ncap)) == NULL) {
			l->res.dropped++;
			return;
		}
		for (uint32_t i = 0; i < l->bl_n; i++)
			nb[i] = l->backlog[(l->bl_head + i) % l->bl_cap];
		free(l->backlog);
		l->backlog = nb;
		l->bl_head = 0;
		l->bl_cap = ncap;
	}
	l->backlog[(l->bl_head + l->bl_n) % l->bl_cap] = intended;
	l->bl_n++;
}

/*
 * Arrival `arrivals` of this loop under a rate schedule: the loops of every
 * node share the run's arrivals round-robin (the loop in slot s takes s,
 * s + stride, ...), or with Poisson arrivals each loop steps stride * Exp(1)
 * along the schedule's count.  UINT64_MAX: the schedule makes no more.
 */
static uint64_t scheduled_arrival(struct loop *l)
{
	const struct rate_schedule *rs = l->sh->cfg->schedule;
	uint64_t t;

	if (l->arrivals == 0)
		l->sched_count = l->part.slot;
	else if (l->sh->cfg->poisson)
		l->sched_count += -log(1.0 - prng_double(&l->rng)) * l->sh->stride;
	else
		l->sched_count = l->part.slot + (double)l->arrivals * l->sh->stride;
	t = rate_schedule_time(rs, l->sched_count);
	return t == UINT64_MAX || t > UINT64_MAX - l->sh->start_ns ? UINT64_MAX : l->sh->start_ns + t;
}

/* When the arrival after the one due at `due` is due. */
static uint64_t next_arrival(struct loop *l, uint64_t due)
{
	if (l->sh->cfg->schedule != NULL)
		return scheduled_arrival(l);
	if (l->sh->cfg->poisson)
		return due + (uint64_t)(-log(1.0 - prng_double(&l->rng)) * (1e9 / l->part.rate));
	return l->sh->start_ns + l->part.phase_ns + (uint64_t)((double)l->arrivals * 1e9 / l->part.rate);
}

/* An open-loop arrival is due: give it a client or queue it, and plan the next. */
static void on_arrival(struct loop *l, uint64_t due, uint64_t now)
{
	uint64_t next;

	if (l->nfree > 0) {
		struct vclient *c = &l->clients[l->free_ids[--l->nfree]];

		l->active++;
		vclient_start(&l->host, c, due, now);
	} else {
		backlog_push(l, due);
	}
	l->arrivals++;
	if (l->arrivals >= l->part.requests)
		return;
	next = next_arrival(l, due);
	if (next != UINT64_MAX && (l->sh->end_ns == 0 || next < l->sh->end_ns))
		heap_push(l->host.heap, next, ARRIVAL_ID, NULL);
}

/* ---- timers ---- */

/* Fire the timers due by now and before `limit`. */
static void fire_timers_before(struct loop *l, uint64_t limit)
{
	struct heap_entry t;
	uint64_t now = loop_now(l);

	while (heap_peek(l->host.heap, &t) && t.due_ns <= now && t.due_ns < limit) {
		heap_pop(l->host.heap, &t);
		if (!l->fired) {
			l->fired = true;
			l->first_late_ns = now - t.due_ns;
		}
		/* the start instant fires every client at once by design: only waits are timed */
		if (t.id == ARRIVAL_ID || l->clients[t.id].attempt > 0)
			histogram_record(l->res.lateness, now - t.due_ns);
		if (t.id == ARRIVAL_ID)
			on_arrival(l, t.due_ns, now);
		else
			vclient_timer(&l->host, &l->clients[t.id], t.due_ns, now);
		now = loop_now(l);
	}
}

static void fire_timers(struct loop *l)
{
	fire_timers_before(l, UINT64_MAX);
}

/* ---- the loop ---- */

/* An I/O event: the transport's; a big batch of socket work must not hold back a due timer. */
static void on_io(void *ctx, uint64_t tag, uint32_t events)
{
	struct loop *l = ctx;

	l->sh->tops->event(l->host.tl, tag, events, loop_now(l));
	if (timer_due(l))
		fire_timers(l);
}

/* Let time pass until the next thing due: a timer, the transport's work, the run's end.  False: nothing is. */
static bool wait_next(struct loop *l)
{
	struct heap_entry t;
	uint64_t until = l->sh->tops->next_due(l->host.tl);
	uint64_t timer = heap_peek(l->host.heap, &t) ? t.due_ns : UINT64_MAX;

	if (l->host.fq_n > 0)
		until = loop_now(l);
	if (l->sh->end_ns != 0 && l->sh->end_ns < until)
		until = l->sh->end_ns;
	return l->sh->clock->wait(l->clk, until, timer, on_io, l);
}

static bool should_stop(struct loop *l)
{
	const struct hammer_config *cfg = l->sh->cfg;

	if (cfg->cancel != NULL && atomic_load(cfg->cancel) != 0) {
		l->res.interrupted = true;
		return true;
	}
	if (l->sh->end_ns != 0 && loop_now(l) >= l->sh->end_ns)
		return true;
	return l->active == 0 && heap_size(l->host.heap) == 0 && l->bl_n == 0;
}

static void schedule_first(struct loop *l)
{
	if (l->part.rate > 0) {
		uint64_t first = l->sh->cfg->schedule ? scheduled_arrival(l) : l->sh->start_ns + l->part.phase_ns;

		if (l->part.requests > 0 && first != UINT64_MAX && (l->sh->end_ns == 0 || first < l->sh->end_ns))
			heap_push(l->host.heap, first, ARRIVAL_ID, NULL);
		return;
	}
	while (l->nfree > 0 && l->started < l->part.requests) {
		uint32_t id = l->free_ids[--l->nfree];

		l->active++;
		l->started++;
		heap_push(l->host.heap, l->sh->start_ns, id, NULL);
	}
}

void loop_run(struct loop *l)
{
	/* the start instant is set once every loop is ready */
	l->host.start_ns = l->sh->start_ns;
	l->host.start_wall_ns = l->sh->start_wall_ns;
	schedule_first(l);
	while (!should_stop(l)) {
		fire_timers(l);
		vclient_drain_failed(&l->host, loop_now(l));
		l->sh->tops->expire(l->host.tl, loop_now(l));
		if (should_stop(l) || !wait_next(l))
			break;
	}
	/* what fell due within the duration is sent even when the loop saw it late: the run's arrivals stay exact */
	if (l->sh->end_ns != 0 && !l->res.interrupted)
		fire_timers_before(l, l->sh->end_ns);
	l->res.unfinished = l->active + l->bl_n;
	l->res.wall_ns = vclient_since_start(&l->host, loop_now(l));
	atomic_store(&l->finished, true);
}
