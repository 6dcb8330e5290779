#include "server/http/delayq.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "common/clock.h"
#include "common/heap.h"

struct delayq_item {
	void (*fn)(void *);
	void *arg;
};

struct delayq {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	bool stopping;
	struct heap *heap;         /* due times; an entry's id is its slot in items */
	struct delayq_item *items; /* one slot per entry, found through a free list */
	uint32_t *free_slots;
	uint32_t nfree;
};

/* Take the earliest entry off the heap (the caller holds the lock). */
static struct delayq_item pop(struct delayq *q)
{
	struct heap_entry e;
	struct delayq_item it;

	heap_pop(q->heap, &e);
	it = q->items[e.id];
	q->free_slots[q->nfree++] = e.id;
	return it;
}

/* Due time of the earliest entry; false when empty (the caller holds the lock). */
static bool earliest(const struct delayq *q, uint64_t *due)
{
	struct heap_entry e;

	if (!heap_peek(q->heap, &e))
		return false;
	*due = e.due_ns;
	return true;
}

static void wait_until(struct delayq *q, uint64_t deadline)
{
	struct timespec ts = { (time_t)(deadline / NS_PER_SEC), (long)(deadline % NS_PER_SEC) };

	pthread_cond_timedwait(&q->cond, &q->lock, &ts);
}

static void *run(void *arg)
{
	struct delayq *q = arg;

	pthread_mutex_lock(&q->lock);
	while (!q->stopping) {
		uint64_t due;

		if (!earliest(q, &due)) {
			pthread_cond_wait(&q->cond, &q->lock);
		} else if (due <= clock_monotonic_ns()) {
			struct delayq_item it = pop(q);

			pthread_mutex_unlock(&q->lock);
			it.fn(it.arg);
			pthread_mutex_lock(&q->lock);
		} else {
			wait_until(q, due);
		}
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

struct delayq *delayq_new(size_t cap)
{
	struct delayq *q = calloc(1, sizeof(*q));
	pthread_condattr_t ca;

	if (!q)
		return NULL;
	if (cap == 0)
		cap = 1;
	if (cap > UINT32_MAX)
		cap = UINT32_MAX;
	q->heap = heap_new((uint32_t)cap, true);
	q->items = calloc(cap, sizeof(*q->items));
	q->free_slots = calloc(cap, sizeof(*q->free_slots));
	if (!q->heap || !q->items || !q->free_slots)
		goto free_q;
	for (size_t i = 0; i < cap; i++)
		q->free_slots[q->nfree++] = (uint32_t)(cap - 1 - i);
	pthread_mutex_init(&q->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&q->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&q->thread, NULL, run, q) != 0)
		goto destroy_sync;
	return q;
destroy_sync:
	pthread_cond_destroy(&q->cond);
	pthread_mutex_destroy(&q->lock);
free_q:
	heap_free(q->heap);
	free(q->items);
	free(q->free_slots);
	free(q);
	return NULL;
}

int delayq_push(struct delayq *q, uint64_t deadline_ns, void (*fn)(void *), void *arg)
{
	int rc = -1;

	pthread_mutex_lock(&q->lock);
	if (!q->stopping && q->nfree > 0) {
		uint32_t slot = q->free_slots[--q->nfree];

		q->items[slot] = (struct delayq_item){ fn, arg };
		rc = heap_push(q->heap, deadline_ns, slot, NULL);
		if (rc == 0)
			pthread_cond_signal(&q->cond);
		else
			q->free_slots[q->nfree++] = slot;
	}
	pthread_mutex_unlock(&q->lock);
	return rc;
}

void delayq_stop(struct delayq *q)
{
	bool joined;

	if (!q)
		return;
	pthread_mutex_lock(&q->lock);
	joined = q->stopping;
	q->stopping = true;
	pthread_cond_signal(&q->cond);
	pthread_mutex_unlock(&q->lock);
	if (!joined)
		pthread_join(q->thread, NULL);
	pthread_mutex_lock(&q->lock);
	while (heap_size(q->heap) > 0) {
		struct delayq_item it = pop(q);

		pthread_mutex_unlock(&q->lock);
		it.fn(it.arg);
		pthread_mutex_lock(&q->lock);
	}
	pthread_mutex_unlock(&q->lock);
}

void delayq_free(struct delayq *q)
{
	if (!q)
		return;
	delayq_stop(q);
	pthread_cond_destroy(&q->cond);
	pthread_mutex_destroy(&q->lock);
	heap_free(q->heap);
	free(q->items);
	free(q->free_slots);
	free(q);
}
