/* Open connections: per-address counts, and each head's deadline on the scheduler. */
#include "server/http/conns.h"

#include <pthread.h>
#include <stdlib.h>

#include "common/clock.h"

struct conns {
	struct conns_config cfg;
	pthread_mutex_t lock;                /* the list and the address table */
	struct conns_entry *head;
	size_t open;
	struct addr_count *addrs;
	_Atomic bool draining;
};

struct conns *conns_new(const struct conns_config *cfg)
{
	struct conns *cs = calloc(1, sizeof(*cs));

	if (!cs)
		return NULL;
	cs->cfg = *cfg;
	/* No address holds two slots of the table: it never holds more addresses than connections. */
	if (!(cs->addrs = addr_count_new(cfg->max_conns ? cfg->max_conns + 64 : 1u << 20, cfg->key))) {
		free(cs);
		return NULL;
	}
	pthread_mutex_init(&cs->lock, NULL);
	return cs;
}

void conns_free(struct conns *cs)
{
	if (!cs)
		return;
	pthread_mutex_destroy(&cs->lock);
	addr_count_free(cs->addrs);
	free(cs);
}

/* The deadline of a stage (0: none). */
static uint64_t stage_timeout(const struct conns *cs, int st)
{
	return st == CONNS_HEAD ? cs->cfg.header_timeout_ns : st == CONNS_BODY ? cs->cfg.body_timeout_ns : 0;
}

/* Take e (its stage to TAKEN) and act on it when its time (or the drain) says so; true when it did. */
static bool take(struct conns *cs, struct conns_entry *e, uint64_t now_ns)
{
	int st = atomic_load(&e->stage);
	uint64_t tmo = stage_timeout(cs, st), since = atomic_load(&e->since_ns);
	/* A since_ns after now_ns was written after the caller read the clock: not late. */
	bool late = tmo > 0 && since <= now_ns && now_ns - since >= tmo;

	if (st == CONNS_HEAD && late && atomic_compare_exchange_strong(&e->stage, &st, CONNS_TAKEN)) {
		cs->cfg.ops.late(cs->cfg.ops.ctx, e->fd);
		return true;
	}
	if (st == CONNS_BODY && atomic_load(&cs->draining) &&
	    atomic_compare_exchange_strong(&e->stage, &st, CONNS_TAKEN)) {
		cs->cfg.ops.drained(cs->cfg.ops.ctx, e->fd);
		return true;
	}
	if (st == CONNS_BODY && late && atomic_compare_exchange_strong(&e->stage, &st, CONNS_TAKEN)) {
		cs->cfg.ops.body_late(cs->cfg.ops.ctx, e->fd);
		return true;
	}
	return false;
}

/*
 * A connection's timer, on the scheduler's thread with no lock held: take
 * it when its head or body is late or the drain caught its body, else look
 * again at its stage's deadline (a connection being served: a head timeout
 * on, when it may wait for its next head).
 */
static void entry_due(void *arg)
{
	struct conns_entry *e = arg;
	struct conns *cs = e->owner;
	uint64_t now = clock_monotonic_ns(), since = atomic_load(&e->since_ns), tmo;
	int st;

	if (take(cs, e, now))
		return;
	st = atomic_load(&e->stage);
	tmo = stage_timeout(cs, st);
	if (st == CONNS_TAKEN)
		return;
	if (tmo > 0)
		sched_arm(cs->cfg.sched, &e->timer, (since <= now ? since : now) + tmo);
	else if (cs->cfg.header_timeout_ns > 0)
		sched_arm(cs->cfg.sched, &e->timer, now + cs->cfg.header_timeout_ns);
}

enum conns_verdict conns_admit(struct conns *cs, const struct sockaddr *sa)
{
	unsigned char key[ADDR_COUNT_KEY_LEN];
	bool keyed = cs->cfg.per_ip > 0 && addr_count_key(sa, cs->cfg.v6_prefix, key);
	enum conns_verdict v = CONNS_ADMIT;

	pthread_mutex_lock(&cs->lock);
	if (cs->cfg.max_conns > 0 && cs->open >= cs->cfg.max_conns)
		v = CONNS_FULL;
	else if (keyed && addr_count_get(cs->addrs, key) >= cs->cfg.per_ip)
		v = CONNS_ADDRESS_FULL;
	pthread_mutex_unlock(&cs->lock);
	return v;
}

void conns_open(struct conns *cs, struct conns_entry *e, const struct sockaddr *sa, int fd, uint64_t now_ns)
{
	e->fd = fd;
	e->owner = cs;
	atomic_store(&e->since_ns, now_ns);
	atomic_store(&e->stage, CONNS_HEAD);
	sched_timer_init(&e->timer, entry_due, e);
	/* No room for its timer: its head has no deadline but libmicrohttpd's idle one. */
	if (cs->cfg.header_timeout_ns > 0 && cs->cfg.sched)
		sched_arm(cs->cfg.sched, &e->timer, now_ns + cs->cfg.header_timeout_ns);
	pthread_mutex_lock(&cs->lock);
	e->counted = addr_count_key(sa, cs->cfg.v6_prefix, e->addr) && addr_count_add(cs->addrs, e->addr) == 0;
	e->prev = NULL;
	e->next = cs->head;
	if (cs->head)
		cs->head->prev = e;
	cs->head = e;
	cs->open++;
	pthread_mutex_unlock(&cs->lock);
}

void conns_close(struct conns *cs, struct conns_entry *e)
{
	if (cs->cfg.sched)
		sched_cancel(cs->cfg.sched, &e->timer);
	pthread_mutex_lock(&cs->lock);
	if (e->counted)
		addr_count_sub(cs->addrs, e->addr);
	if (e->prev)
		e->prev->next = e->next;
	else
		cs->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	cs->open--;
	pthread_mutex_unlock(&cs->lock);
}

bool conns_head_done(struct conns_entry *e, bool body, uint64_t now_ns)
{
	const struct conns *cs = e->owner;
	int cur = atomic_load(&e->stage);

	while (cur != CONNS_TAKEN) {
		/* since_ns before the stage: a timer that sees this BODY reads this since_ns (the head's, else). */
		if (body && cur == CONNS_HEAD)
			atomic_store(&e->since_ns, now_ns);
		if (atomic_compare_exchange_weak(&e->stage, &cur, body ? CONNS_BODY : CONNS_SERVING)) {
			/* The drain began: its timer answers it now, not when its body is in; else at its deadline. */
			if (body && cs->cfg.sched && atomic_load(&cs->draining))
				sched_arm(cs->cfg.sched, &e->timer, 0);
			else if (body && cs->cfg.sched && cs->cfg.body_timeout_ns > 0)
				sched_arm(cs->cfg.sched, &e->timer, now_ns + cs->cfg.body_timeout_ns);
			return true;
		}
	}
	return false;
}

bool conns_body_done(struct conns_entry *e)
{
	int cur = atomic_load(&e->stage);

	while (cur != CONNS_TAKEN)
		if (atomic_compare_exchange_weak(&e->stage, &cur, CONNS_SERVING))
			return true;
	return false;
}

void conns_wait_head(struct conns_entry *e, uint64_t now_ns)
{
	int cur = atomic_load(&e->stage);

	if (cur == CONNS_TAKEN)
		return;
	/* since_ns before the stage: a sweep that sees this HEAD reads this since_ns. */
	atomic_store(&e->since_ns, now_ns);
	atomic_compare_exchange_strong(&e->stage, &cur, CONNS_HEAD);
}

size_t conns_sweep(struct conns *cs, uint64_t now_ns)
{
	size_t n = 0;

	pthread_mutex_lock(&cs->lock);
	for (struct conns_entry *e = cs->head; e; e = e->next)
		n += take(cs, e, now_ns);
	pthread_mutex_unlock(&cs->lock);
	return n;
}

size_t conns_drain(struct conns *cs, uint64_t now_ns)
{
	atomic_store(&cs->draining, true);
	return conns_sweep(cs, now_ns);
}

size_t conns_open_count(struct conns *cs)
{
	size_t n;

	pthread_mutex_lock(&cs->lock);
	n = cs->open;
	pthread_mutex_unlock(&cs->lock);
	return n;
}
