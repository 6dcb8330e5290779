/* The timer thread: one deadline heap of caller-owned timers, and a pool of one-shots. */
#include "server/http/sched.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "common/clock.h"

struct sched {
	pthread_mutex_t lock;
	pthread_cond_t wake;         /* on CLOCK_MONOTONIC: an earlier timer, or stop */
	pthread_cond_t idle;         /* a timer's fn returned (sched_cancel waits for it) */
	pthread_t thread;
	bool started, stopping;
	struct sched_timer **heap;   /* by due time, then seq */
	uint32_t n, cap;
	uint64_t seq;
	struct sched_timer *running; /* the timer whose fn runs now, or NULL */
	struct sched_timer *pool;    /* sched_at's timers */
	struct sched_timer **free_pool;
	size_t nfree;
};

static bool earlier(const struct sched_timer *a, const struct sched_timer *b)
{
	return a->due_ns < b->due_ns || (a->due_ns == b->due_ns && a->seq < b->seq);
}

static void place(struct sched *s, uint32_t i, struct sched_timer *t)
{
	s->heap[i] = t;
	t->pos = i + 1;
}

static void sift_up(struct sched *s, uint32_t i)
{
	struct sched_timer *t = s->heap[i];

	while (i > 0 && earlier(t, s->heap[(i - 1) / 2])) {
		place(s, i, s->heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	place(s, i, t);
}

static void sift_down(struct sched *s, uint32_t i)
{
	struct sched_timer *t = s->heap[i];

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= s->n)
			break;
		if (c + 1 < s->n && earlier(s->heap[c + 1], s->heap[c]))
			c++;
		if (!earlier(s->heap[c], t))
			break;
		place(s, i, s->heap[c]);
		i = c;
	}
	place(s, i, t);
}

/* Take t off the heap (locked; t armed). */
static void unlink_timer(struct sched *s, struct sched_timer *t)
{
	uint32_t i = t->pos - 1;
	struct sched_timer *last = s->heap[--s->n];

	t->pos = 0;
	if (i == s->n)
		return;
	place(s, i, last);
	if (i > 0 && earlier(last, s->heap[(i - 1) / 2]))
		sift_up(s, i);
	else
		sift_down(s, i);
}

/* Run t's fn unlocked (locked on entry and exit); a pooled one goes back to the pool first. */
static void fire(struct sched *s, struct sched_timer *t)
{
	void (*fn)(void *) = t->fn;
	void *arg = t->arg;

	unlink_timer(s, t);
	if (t->pooled)
		s->free_pool[s->nfree++] = t;
	else
		s->running = t;
	pthread_mutex_unlock(&s->lock);
	fn(arg);
	pthread_mutex_lock(&s->lock);
	s->running = NULL;
	pthread_cond_broadcast(&s->idle);
}

static void *run(void *arg)
{
	struct sched *s = arg;

	pthread_mutex_lock(&s->lock);
	while (!s->stopping) {
		uint64_t now = clock_monotonic_ns();

		if (s->n == 0) {
			pthread_cond_wait(&s->wake, &s->lock);
		} else if (s->heap[0]->due_ns <= now) {
			fire(s, s->heap[0]);
		} else {
			uint64_t due = s->heap[0]->due_ns;
			struct timespec ts = { (time_t)(due / NS_PER_SEC), (long)(due % NS_PER_SEC) };

			pthread_cond_timedwait(&s->wake, &s->lock, &ts);
		}
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

struct sched *sched_new(size_t cap, size_t pool)
{
	struct sched *s = calloc(1, sizeof(*s));
	pthread_condattr_t ca;

	if (!s)
		return NULL;
	cap += pool;
	s->cap = cap > UINT32_MAX - 1 ? UINT32_MAX - 1 : (uint32_t)(cap ? cap : 1);
	s->heap = calloc(s->cap, sizeof(*s->heap));
	s->pool = calloc(pool ? pool : 1, sizeof(*s->pool));
	s->free_pool = calloc(pool ? pool : 1, sizeof(*s->free_pool));
	if (!s->heap || !s->pool || !s->free_pool) {
		sched_free(s);
		return NULL;
	}
	for (size_t i = 0; i < pool; i++) {
		s->pool[i].pooled = true;
		s->free_pool[s->nfree++] = &s->pool[pool - 1 - i];
	}
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->wake, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&s->idle, NULL);
	return s;
}

int sched_start(struct sched *s)
{
	int rc;

	/* Under the lock: the thread reads started (is it the caller?) before it can run a timer. */
	pthread_mutex_lock(&s->lock);
	rc = pthread_create(&s->thread, NULL, run, s);
	s->started = rc == 0;
	pthread_mutex_unlock(&s->lock);
	return rc == 0 ? 0 : -1;
}

void sched_stop(struct sched *s)
{
	bool join;

	if (!s || !s->heap || !s->pool || !s->free_pool)
		return;
	pthread_mutex_lock(&s->lock);
	join = s->started && !s->stopping;
	s->stopping = true;
	pthread_cond_signal(&s->wake);
	pthread_mutex_unlock(&s->lock);
	if (join)
		pthread_join(s->thread, NULL);
	pthread_mutex_lock(&s->lock);
	while (s->n > 0) {
		struct sched_timer *t = s->heap[0];

		if (t->pooled)
			fire(s, t);
		else
			unlink_timer(s, t);
	}
	pthread_mutex_unlock(&s->lock);
}

void sched_free(struct sched *s)
{
	if (!s)
		return;
	if (s->heap && s->pool && s->free_pool) {
		sched_stop(s);
		pthread_cond_destroy(&s->wake);
		pthread_cond_destroy(&s->idle);
		pthread_mutex_destroy(&s->lock);
	}
	free(s->heap);
	free(s->pool);
	free(s->free_pool);
	free(s);
}

void sched_timer_init(struct sched_timer *t, void (*fn)(void *), void *arg)
{
	*t = (struct sched_timer){ .fn = fn, .arg = arg };
}

/* Arm t (locked).  0, or -1 when full or stopping. */
static int arm_locked(struct sched *s, struct sched_timer *t, uint64_t due_ns)
{
	if (s->stopping)
		return -1;
	if (t->pos)
		unlink_timer(s, t);
	if (s->n >= s->cap)
		return -1;
	t->due_ns = due_ns;
	t->seq = s->seq++;
	s->heap[s->n] = t;
	sift_up(s, s->n++);
	/* Only an earlier first deadline changes when the thread must wake. */
	if (s->heap[0] == t)
		pthread_cond_signal(&s->wake);
	return 0;
}

int sched_arm(struct sched *s, struct sched_timer *t, uint64_t due_ns)
{
	int rc;

	pthread_mutex_lock(&s->lock);
	rc = arm_locked(s, t, due_ns);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

void sched_cancel(struct sched *s, struct sched_timer *t)
{
	pthread_mutex_lock(&s->lock);
	while (s->running == t && !(s->started && pthread_equal(s->thread, pthread_self())))
		pthread_cond_wait(&s->idle, &s->lock);
	/* After the wait: the call that ran may have armed t again. */
	if (t->pos)
		unlink_timer(s, t);
	pthread_mutex_unlock(&s->lock);
}

int sched_at(struct sched *s, uint64_t due_ns, void (*fn)(void *), void *arg)
{
	int rc = -1;

	pthread_mutex_lock(&s->lock);
	if (s->nfree > 0 && !s->stopping) {
		struct sched_timer *t = s->free_pool[--s->nfree];

		t->fn = fn;
		t->arg = arg;
		rc = arm_locked(s, t, due_ns);
		if (rc < 0)
			s->free_pool[s->nfree++] = t;
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}
