/* Open connections: per-address counts, head deadlines, and the sweep that keeps them. */
#include "server/http/conns.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "common/clock.h"

#define SWEEP_MIN_NS (10 * NS_PER_MS)
#define SWEEP_MAX_NS (250 * NS_PER_MS)

struct conns {
	struct conns_config cfg;
	pthread_mutex_t lock;                /* the list and the address table */
	pthread_cond_t wake;
	struct conns_entry *head;
	size_t open;
	struct addr_count *addrs;
	_Atomic bool draining;
	bool stop, started;
	pthread_t thread;
};

struct conns *conns_new(const struct conns_config *cfg)
{
	struct conns *cs = calloc(1, sizeof(*cs));
	pthread_condattr_t ca;

	if (!cs)
		return NULL;
	cs->cfg = *cfg;
	/* No address holds two slots of the table: it never holds more addresses than connections. */
	if (!(cs->addrs = addr_count_new(cfg->max_conns ? cfg->max_conns + 64 : 1u << 20, cfg->key))) {
		free(cs);
		return NULL;
	}
	pthread_mutex_init(&cs->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&cs->wake, &ca);
	pthread_condattr_destroy(&ca);
	return cs;
}

void conns_free(struct conns *cs)
{
	if (!cs)
		return;
	if (cs->started) {
		pthread_mutex_lock(&cs->lock);
		cs->stop = true;
		pthread_cond_signal(&cs->wake);
		pthread_mutex_unlock(&cs->lock);
		pthread_join(cs->thread, NULL);
	}
	pthread_cond_destroy(&cs->wake);
	pthread_mutex_destroy(&cs->lock);
	addr_count_free(cs->addrs);
	free(cs);
}

static uint64_t sweep_period(const struct conns *cs)
{
	uint64_t p = cs->cfg.header_timeout_ns / 10;

	return p < SWEEP_MIN_NS ? SWEEP_MIN_NS : p > SWEEP_MAX_NS ? SWEEP_MAX_NS : p;
}

static void *sweeper(void *arg)
{
	struct conns *cs = arg;
	uint64_t period = sweep_period(cs);

	pthread_mutex_lock(&cs->lock);
	while (!cs->stop) {
		uint64_t at = clock_monotonic_ns() + period;
		struct timespec ts = { (time_t)(at / NS_PER_SEC), (long)(at % NS_PER_SEC) };

		pthread_cond_timedwait(&cs->wake, &cs->lock, &ts);
		if (cs->stop)
			break;
		pthread_mutex_unlock(&cs->lock);
		conns_sweep(cs, clock_monotonic_ns());
		pthread_mutex_lock(&cs->lock);
	}
	pthread_mutex_unlock(&cs->lock);
	return NULL;
}

int conns_start(struct conns *cs)
{
	if (cs->cfg.header_timeout_ns == 0 || cs->started)
		return 0;
	if (pthread_create(&cs->thread, NULL, sweeper, cs) != 0)
		return -1;
	cs->started = true;
	return 0;
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
	atomic_store(&e->since_ns, now_ns);
	atomic_store(&e->stage, CONNS_HEAD);
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

bool conns_head_done(struct conns_entry *e, bool body)
{
	int cur = atomic_load(&e->stage);

	while (cur != CONNS_TAKEN)
		if (atomic_compare_exchange_weak(&e->stage, &cur, body ? CONNS_BODY : CONNS_SERVING))
			return true;
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

/* Take e (its stage to TAKEN) and act on it when the sweep should; true when it did. */
static bool take(struct conns *cs, struct conns_entry *e, uint64_t now_ns, bool draining)
{
	int st = atomic_load(&e->stage);
	uint64_t tmo = cs->cfg.header_timeout_ns, since = atomic_load(&e->since_ns);

	/* A since_ns after now_ns was written after this sweep read the clock: not late. */
	if (st == CONNS_HEAD && tmo > 0 && since <= now_ns && now_ns - since >= tmo &&
	    atomic_compare_exchange_strong(&e->stage, &st, CONNS_TAKEN)) {
		cs->cfg.ops.late(cs->cfg.ops.ctx, e->fd);
		return true;
	}
	if (st == CONNS_BODY && draining && atomic_compare_exchange_strong(&e->stage, &st, CONNS_TAKEN)) {
		cs->cfg.ops.drained(cs->cfg.ops.ctx, e->fd);
		return true;
	}
	return false;
}

size_t conns_sweep(struct conns *cs, uint64_t now_ns)
{
	bool draining = atomic_load(&cs->draining);
	size_t n = 0;

	pthread_mutex_lock(&cs->lock);
	for (struct conns_entry *e = cs->head; e; e = e->next)
		n += take(cs, e, now_ns, draining);
	pthread_mutex_unlock(&cs->lock);
	return n;
}

void conns_drain(struct conns *cs, uint64_t now_ns)
{
	atomic_store(&cs->draining, true);
	conns_sweep(cs, now_ns);
}

size_t conns_open_count(struct conns *cs)
{
	size_t n;

	pthread_mutex_lock(&cs->lock);
	n = cs->open;
	pthread_mutex_unlock(&cs->lock);
	return n;
}
