#include "server/delayq.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "common/clock.h"

struct delayq_item {
	uint64_t deadline;
	void (*fn)(void *);
	void *arg;
};

struct delayq {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	bool stopping;
	size_t n, cap;
	struct delayq_item *heap;
};

static void swap(struct delayq_item *a, struct delayq_item *b)
{
	struct delayq_item t = *a;

	*a = *b;
	*b = t;
}

static void sift_up(struct delayq *q, size_t i)
{
	while (i > 0 && q->heap[(i - 1) / 2].deadline > q->heap[i].deadline) {
		swap(&q->heap[(i - 1) / 2], &q->heap[i]);
		i = (i - 1) / 2;
	}
}

static void sift_down(struct delayq *q, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;

		if (l < q->n && q->heap[l].deadline < q->heap[m].deadline)
			m = l;
		if (l + 1 < q->n && q->heap[l + 1].deadline < q->heap[m].deadline)
			m = l + 1;
		if (m == i)
			return;
		swap(&q->heap[m], &q->heap[i]);
		i = m;
	}
}

static struct delayq_item pop(struct delayq *q)
{
	struct delayq_item top = q->heap[0];

	q->heap[0] = q->heap[--q->n];
	sift_down(q, 0);
	return top;
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
		if (q->n == 0) {
			pthread_cond_wait(&q->cond, &q->lock);
		} else if (q->heap[0].deadline <= clock_monotonic_ns()) {
			struct delayq_item it = pop(q);

			pthread_mutex_unlock(&q->lock);
			it.fn(it.arg);
			pthread_mutex_lock(&q->lock);
		} else {
			wait_until(q, q->heap[0].deadline);
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
	q->cap = cap ? cap : 1;
	q->heap = calloc(q->cap, sizeof(*q->heap));
	if (!q->heap)
		goto free_q;
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
	free(q->heap);
free_q:
	free(q);
	return NULL;
}

int delayq_push(struct delayq *q, uint64_t deadline_ns, void (*fn)(void *), void *arg)
{
	int rc = -1;

	pthread_mutex_lock(&q->lock);
	if (!q->stopping && q->n < q->cap) {
		q->heap[q->n] = (struct delayq_item){ deadline_ns, fn, arg };
		sift_up(q, q->n++);
		pthread_cond_signal(&q->cond);
		rc = 0;
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
	while (q->n > 0) {
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
	free(q->heap);
	free(q);
}
