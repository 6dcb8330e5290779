/* The Redis store's pipeline thread (redis_pipe.h). */
#include "server/store/redis_pipe.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "server/store/redis_call.h"
#include "server/store/redis_conn.h"

#define PIPE_BATCH_MAX 512

struct pipe_item {
	struct pipe_item *next;
	struct limiter_decision *d;     /* NULL for a release */
	store_done_fn done;             /* NULL for a release: nothing to resume */
	void *arg;
	char *cmd;                      /* the formatted EVALSHA (EVAL while the sha is unknown) */
	int cmdlen;
	struct redis_call k;                  /* kept for the EVAL after NOSCRIPT */
};

struct redis_pipe {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t wake, idle;
	struct pipe_item *head, *tail;
	bool busy, stop, closed;
	uint64_t queued, answered;      /* items ever queued, and answered */
	uint64_t release_mark;          /* `queued` just after the latest release */
	struct redis_conn conn;         /* the pipeline's own connection */
};

static void item_free(struct pipe_item *it)
{
	free(it->cmd);
	free(it);
}

/*
 * Hand the decision back (applying the failure mode when rc < 0) and free the
 * item.  A release (done NULL) has nobody to answer: it is only freed.
 */
static void item_done(struct store_redis *s, struct pipe_item *it, int rc)
{
	store_done_fn done = it->done;
	void *arg = it->arg;

	if (done == NULL) {
		item_free(it);
		return;
	}
	if (rc < 0 && !s->o.fail_closed) {
		redis_call_fail_open(s, it->d);
		rc = STORE_UNHELD;
	}
	item_free(it);
	done(arg, rc);
}

/* Fail every item of a list; why NULL means the first one's failure is already counted. */
static void items_fail(struct store_redis *s, struct pipe_item *it, const char *why)
{
	struct pipe_item *next;

	for (; it != NULL; it = next) {
		next = it->next;
		if (why != NULL)
			redis_conn_note_failure(s, why);
		why = why != NULL ? why : "unreachable";
		item_done(s, it, -1);
	}
}

/* One reply of the batch into its item's decision; frees the reply and the item. */
static void item_reply(struct store_redis *s, struct pipe_item *it, redisReply *r)
{
	struct limiter_decision got;
	bool corrupt = false;
	int rc = -1;

	if (redis_call_decision(r, &got, &corrupt) == 0) {
		if (it->d != NULL)
			*it->d = got;
		redis_conn_note_success(s);
		if (corrupt)
			redis_conn_note_corrupt(s, it->k.key);
		rc = 0;
	} else {
		redis_conn_note_failure(s, r->type == REDIS_REPLY_ERROR ? r->str : "unexpected script reply");
	}
	freeReplyObject(r);
	item_done(s, it, rc);
}

/* Run the items that met NOSCRIPT one by one (redis_call_run falls back to EVAL). */
static void items_retry(struct store_redis *s, struct redis_conn *c, struct pipe_item *it)
{
	struct pipe_item *next;
	redisReply *r;

	for (; it != NULL; it = next) {
		next = it->next;
		r = c->c != NULL ? redis_call_run(s, c, &it->k) : NULL;
		if (r != NULL) {
			item_reply(s, it, r);
			continue;
		}
		if (c->c != NULL) {
			redis_conn_note_failure(s, c->c->errstr[0] ? c->c->errstr : "connection lost");
			redis_conn_drop(c);
		} else {
			redis_conn_note_failure(s, "connection lost");
		}
		item_done(s, it, -1);
	}
}

/* Send a batch in one write and read its replies in order; every item is answered. */
static void pipe_run(struct store_redis *s, struct pipe_item *batch)
{
	struct redis_conn *c = &s->pipe->conn;
	struct pipe_item *it, *next, *retry = NULL, **rtail = &retry;
	const char *why = "out of memory";
	redisReply *r;

	if (redis_conn_ready(s, c, &why) < 0) {
		items_fail(s, batch, why);
		return;
	}
	for (it = batch; it != NULL; it = it->next)
		if (redisAppendFormattedCommand(c->c, it->cmd, (size_t)it->cmdlen) != REDIS_OK)
			break;
	for (it = batch; it != NULL; it = next) {
		next = it->next;
		if (c->c->err || redisGetReply(c->c, (void **)&r) != REDIS_OK || r == NULL) {
			redis_conn_note_failure(s, c->c->errstr[0] ? c->c->errstr : "connection lost");
			redis_conn_drop(c);
			items_fail(s, it, NULL);
			break;
		}
		if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0) {
			freeReplyObject(r);
			it->next = NULL;
			*rtail = it;
			rtail = &it->next;
			continue;
		}
		item_reply(s, it, r);
	}
	items_retry(s, c, retry);
}

/* Up to PIPE_BATCH_MAX items off the queue (p->mu held); *n is how many. */
static struct pipe_item *pipe_take(struct redis_pipe *p, uint64_t *n)
{
	struct pipe_item *batch = p->head, *last = p->head;

	for (*n = 1; *n < PIPE_BATCH_MAX && last->next != NULL; ++*n)
		last = last->next;
	p->head = last->next;
	if (p->head == NULL)
		p->tail = NULL;
	last->next = NULL;
	return batch;
}

static void *pipe_main(void *arg)
{
	struct store_redis *s = arg;
	struct redis_pipe *p = s->pipe;
	struct pipe_item *batch;
	uint64_t n;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (p->head == NULL && !p->stop) {
			p->busy = false;
			pthread_cond_broadcast(&p->idle);
			pthread_cond_wait(&p->wake, &p->mu);
		}
		if (p->head == NULL)
			break;
		p->busy = true;
		batch = pipe_take(p, &n);
		pthread_mutex_unlock(&p->mu);
		pipe_run(s, batch);
		pthread_mutex_lock(&p->mu);
		p->answered += n;
		pthread_cond_broadcast(&p->idle);  /* redis_pipe_barrier; free when nobody waits */
	}
	p->busy = false;
	pthread_cond_broadcast(&p->idle);
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/*
 * The command of an item in the Redis protocol, formatted on the caller's
 * thread: EVALSHA when the sha is known.  Built by hand: hiredis's formatter
 * calls sprintf twice per argument.
 */
static int item_format(struct store_redis *s, struct pipe_item *it)
{
	struct redis_call *k = &it->k;
	bool sha = atomic_load(&s->have_sha);
	size_t len = 16, n;
	char *p;

	k->argv[0] = sha ? "EVALSHA" : "EVAL";
	k->argl[0] = strlen(k->argv[0]);
	k->argv[1] = sha ? s->sha : s->script;
	k->argl[1] = strlen(k->argv[1]);
	for (int i = 0; i < k->argc; i++)
		len += k->argl[i] + 26;
	if ((p = it->cmd = malloc(len)) == NULL)
		return -1;
	*p++ = '*';
	p += parse_format_u64(p, (uint64_t)k->argc);
	for (int i = 0; i < k->argc; i++) {
		n = k->argl[i];
		memcpy(p, "\r\n$", 3);
		p += 3;
		p += parse_format_u64(p, n);
		memcpy(p, "\r\n", 2);
		memcpy(p + 2, k->argv[i], n);
		p += 2 + n;
	}
	memcpy(p, "\r\n", 2);
	it->cmdlen = (int)(p + 2 - it->cmd);
	return 0;
}

/*
 * A queued script call of `op` ("d" decide, "r" release), formatted on the
 * caller's thread; d, done and arg are NULL for a release.  NULL when the key
 * is too long or memory is short.
 */
static struct pipe_item *item_new(struct store_redis *s, const char *key, size_t keylen, uint64_t now,
                                  uint64_t cost, const char *op, struct limiter_decision *d,
                                  store_done_fn done, void *arg)
{
	struct pipe_item *it = malloc(sizeof(*it));

	if (it == NULL)
		return NULL;
	/* Field by field: the item is 1.5 KB, mostly the key buffer, and clearing it is not free. */
	it->next = NULL;
	it->d = d;
	it->done = done;
	it->arg = arg;
	it->cmd = NULL;
	if (redis_call_build(s, &it->k, key, keylen, now, cost, op) < 0 || item_format(s, it) < 0) {
		item_free(it);
		return NULL;
	}
	return it;
}

/* Append it to the queue (FIFO) and wake the thread; -1 (it untouched) when the pipeline is closed. */
static int pipe_push(struct redis_pipe *p, struct pipe_item *it)
{
	pthread_mutex_lock(&p->mu);
	if (p->closed) {
		pthread_mutex_unlock(&p->mu);
		return -1;
	}
	if (p->tail != NULL)
		p->tail->next = it;
	else
		p->head = it;
	p->tail = it;
	p->queued++;
	if (it->done == NULL)
		p->release_mark = p->queued;
	if (!p->busy)
		pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->mu);
	return 0;
}

/*
 * Wait until every release queued so far has been answered, so that a
 * synchronous decide on this thread comes after the releases it queued (as
 * with the memory store).  Bounded: each batch ends within the timeouts.
 */
void redis_pipe_barrier(struct redis_pipe *p)
{
	uint64_t mark;

	pthread_mutex_lock(&p->mu);
	mark = p->release_mark;
	while (p->answered < mark)
		pthread_cond_wait(&p->idle, &p->mu);
	pthread_mutex_unlock(&p->mu);
}

/* item_new, then pipe_push; 0 when queued, -1 (nothing queued) otherwise. */
int redis_pipe_queue(struct store_redis *s, const char *key, size_t keylen, uint64_t now, uint64_t cost,
                     const char *op, struct limiter_decision *d, store_done_fn done, void *arg)
{
	struct pipe_item *it = item_new(s, key, keylen, now, cost, op, d, done, arg);

	if (it == NULL)
		return -1;
	if (pipe_push(s->pipe, it) == 0)
		return 0;
	item_free(it);
	return -1;
}

/* Start the pipeline thread; 0 or -1. */
int redis_pipe_start(struct store_redis *s)
{
	struct redis_pipe *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return -1;
	p->conn.owner = s;
	prng_seed(&p->conn.rng, prng_stream_seed(s->o.seed, atomic_fetch_add(&s->seq, 1)));
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->wake, NULL);
	pthread_cond_init(&p->idle, NULL);
	s->pipe = p;
	if (pthread_create(&p->thread, NULL, pipe_main, s) == 0)
		return 0;
	s->pipe = NULL;
	pthread_cond_destroy(&p->idle);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->mu);
	free(p);
	return -1;
}

/* Answer what is queued, stop the thread and free the pipeline. */
void redis_pipe_stop(struct store_redis *s)
{
	struct redis_pipe *p = s->pipe;

	if (p == NULL)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = p->closed = true;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->thread, NULL);
	if (p->conn.c != NULL)
		redisFree(p->conn.c);
	pthread_cond_destroy(&p->idle);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->mu);
	free(p);
	s->pipe = NULL;
}

void redis_pipe_quiesce(struct redis_pipe *p)
{
	pthread_mutex_lock(&p->mu);
	p->closed = true;
	while (p->head != NULL || p->busy)
		pthread_cond_wait(&p->idle, &p->mu);
	pthread_mutex_unlock(&p->mu);
}
