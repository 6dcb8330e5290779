/*
 * The Redis store: per-thread hiredis connections, one atomic Lua script per
 * decision (EVALSHA, EVAL after NOSCRIPT), jittered reconnect backoff, and the
 * open/closed failure mode.  See store_redis.h for the contract.
 */
#include "server/store/store_redis.h"

#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "common/clock.h"
#include "common/parse.h"
#include "common/prng.h"
#include "server/store/redis_scripts.h"

#define BACKOFF_MIN_NS   (10ULL * NS_PER_MS)
#define BACKOFF_MAX_NS   (2ULL * NS_PER_SEC)
#define KEY_MAX          1024
#define RESET_MAX_ROUNDS 10000
#define NPARAM_MAX       (REDIS_SCRIPTS_FIXED_ARGS + 2 * LIMITER_MAX_LAYERS)

struct redis_conn {
	redisContext *c;
	struct store_redis *owner;
	struct redis_conn *prev, *next;
	uint64_t retry_at;    /* monotonic ns before which no reconnect is tried */
	uint64_t backoff_ns;
	struct prng rng;
};

struct redis_pipe;

static void pipe_barrier(struct redis_pipe *p);

struct store_redis {
	struct store base;
	struct redis_pipe *pipe;        /* the decisions queued by submit, and their thread */
	const struct limiter_ops *lops;
	struct limiter_params p;
	struct store_redis_options o;
	char *script;                   /* the Lua source (redis_scripts_source), owned */
	char host[256];
	int port, db;
	char prefix[128];
	char key_prefix[256];           /* prefix .. limiter name .. ":" */
	size_t key_prefix_len;
	char owner[32];                 /* this replica's id in concurrency leases */
	char params[NPARAM_MAX][24];    /* the limiter params as script arguments */
	size_t nparams;
	pthread_key_t tls;
	pthread_mutex_t lock;           /* conns list and sha */
	struct redis_conn *conns;
	char sha[48];
	atomic_bool have_sha;
	atomic_bool down;
	atomic_uint_fast64_t errors;
	atomic_uint_fast64_t outage_errors;
	atomic_uint_fast64_t seq;
};

void store_redis_options_init(struct store_redis_options *o)
{
	memset(o, 0, sizeof(*o));
	o->prefix = STORE_REDIS_DEFAULT_PREFIX;
	o->timeout_ns = STORE_REDIS_DEFAULT_TIMEOUT;
	o->lease_ns = STORE_REDIS_DEFAULT_LEASE;
}

static int parse_int_range(const char *s, size_t n, long lo, long hi, long *out)
{
	long v = 0;

	if (n == 0 || n > 6)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	if (v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

int store_redis_parse_url(const char *url, char *host, size_t hostlen, int *port, int *db,
                          char *err, size_t errlen)
{
	static const char scheme[] = "redis://";
	const char *h, *colon, *slash, *end;
	long v;

	if (url == NULL || strncmp(url, scheme, sizeof(scheme) - 1) != 0)
		goto bad;
	h = url + sizeof(scheme) - 1;
	end = h + strlen(h);
	slash = strchr(h, '/');
	if (slash == NULL)
		slash = end;
	colon = memchr(h, ':', (size_t)(slash - h));
	if ((colon ? colon : slash) == h || (size_t)((colon ? colon : slash) - h) >= hostlen)
		goto bad;
	memcpy(host, h, (size_t)((colon ? colon : slash) - h));
	host[(colon ? colon : slash) - h] = '\0';
	*port = 6379;
	*db = 0;
	if (colon) {
		if (parse_int_range(colon + 1, (size_t)(slash - colon - 1), 1, 65535, &v) < 0)
			goto bad;
		*port = (int)v;
	}
	if (slash != end) {
		if (parse_int_range(slash + 1, (size_t)(end - slash - 1), 0, 65535, &v) < 0)
			goto bad;
		*db = (int)v;
	}
	return 0;
bad:
	snprintf(err, errlen, "--store: bad value '%s' (want redis://HOST:PORT[/DB])", url ? url : "");
	return -1;
}

int store_redis_parse_failure(const char *s, bool *fail_closed, char *err, size_t errlen)
{
	if (s != NULL && strcmp(s, "open") == 0) {
		*fail_closed = false;
		return 0;
	}
	if (s != NULL && strcmp(s, "closed") == 0) {
		*fail_closed = true;
		return 0;
	}
	snprintf(err, errlen, "--store-failure: bad value '%s' (want open or closed)", s ? s : "");
	return -1;
}

/* ---- outage accounting: one log line when Redis goes away, one when it is back ---- */

static void note_failure(struct store_redis *s, const char *why)
{
	atomic_fetch_add(&s->errors, 1);
	atomic_fetch_add(&s->outage_errors, 1);
	if (atomic_exchange(&s->down, true) || s->o.quiet)
		return;
	fprintf(stderr, "ratelab: store: redis %s:%d unreachable (%s); failing %s until it is back\n",
	        s->host, s->port, why, s->o.fail_closed ? "closed (503)" : "open (admitting)");
}

static void note_success(struct store_redis *s)
{
	uint64_t n;

	if (!atomic_load_explicit(&s->down, memory_order_relaxed) || !atomic_exchange(&s->down, false))
		return;
	n = atomic_exchange(&s->outage_errors, 0);
	if (!s->o.quiet)
		fprintf(stderr, "ratelab: store: redis %s:%d is back (%" PRIu64 " decisions failed %s)\n",
		        s->host, s->port, n, s->o.fail_closed ? "closed" : "open");
}

/* ---- per-thread connections ---- */

static void conn_drop(struct redis_conn *c)
{
	uint64_t span;

	if (c->c != NULL)
		redisFree(c->c);
	c->c = NULL;
	c->backoff_ns = c->backoff_ns == 0 ? BACKOFF_MIN_NS : c->backoff_ns * 2;
	if (c->backoff_ns > BACKOFF_MAX_NS)
		c->backoff_ns = BACKOFF_MAX_NS;
	/* Jitter: replicas and threads that lost Redis together do not come back in lockstep. */
	span = c->backoff_ns / 2;
	c->retry_at = clock_monotonic_ns() + span + prng_below(&c->rng, span + 1);
}

static void conn_destroy(void *arg)
{
	struct redis_conn *c = arg;
	struct store_redis *s = c->owner;

	pthread_mutex_lock(&s->lock);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	pthread_mutex_unlock(&s->lock);
	if (c->c != NULL)
		redisFree(c->c);
	free(c);
}

static struct redis_conn *conn_get(struct store_redis *s)
{
	struct redis_conn *c = pthread_getspecific(s->tls);

	if (c != NULL)
		return c;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	c->owner = s;
	prng_seed(&c->rng, prng_stream_seed(s->o.seed, atomic_fetch_add(&s->seq, 1)));
	pthread_mutex_lock(&s->lock);
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	pthread_mutex_unlock(&s->lock);
	if (pthread_setspecific(s->tls, c) != 0) {
		conn_destroy(c);
		return NULL;
	}
	return c;
}

static struct timeval tv_of(uint64_t ns)
{
	struct timeval tv = { .tv_sec = (time_t)(ns / NS_PER_SEC),
	                      .tv_usec = (suseconds_t)((ns % NS_PER_SEC) / 1000) };
	return tv;
}

/* A status or bulk reply that is not an error; frees the reply. */
static bool reply_ok(redisReply *r)
{
	bool ok = r != NULL && r->type != REDIS_REPLY_ERROR;

	if (r != NULL)
		freeReplyObject(r);
	return ok;
}

static void load_script(struct store_redis *s, redisContext *rc)
{
	redisReply *r;

	if (atomic_load(&s->have_sha))
		return;
	r = redisCommand(rc, "SCRIPT LOAD %s", s->script);
	if (r != NULL && r->type == REDIS_REPLY_STRING && r->len < (int)sizeof(s->sha)) {
		/* Written once: readers look at sha only after seeing have_sha. */
		pthread_mutex_lock(&s->lock);
		if (!atomic_load(&s->have_sha)) {
			memcpy(s->sha, r->str, (size_t)r->len);
			s->sha[r->len] = '\0';
			atomic_store(&s->have_sha, true);
		}
		pthread_mutex_unlock(&s->lock);
	}
	if (r != NULL)
		freeReplyObject(r);
}

/* Connect this thread's connection if it is down and its backoff is over; 0 when usable. */
static int conn_ready(struct store_redis *s, struct redis_conn *c, const char **why)
{
	if (c->c != NULL)
		return 0;
	/* Back off only while Redis is down for everyone: once one thread is through, all retry. */
	if (clock_monotonic_ns() < c->retry_at && atomic_load(&s->down)) {
		*why = "backing off";
		return -1;
	}
	c->c = redisConnectWithTimeout(s->host, s->port, tv_of(s->o.timeout_ns));
	if (c->c == NULL || c->c->err) {
		*why = c->c ? c->c->errstr : "out of memory";
		goto fail;
	}
	if (redisSetTimeout(c->c, tv_of(s->o.timeout_ns)) != REDIS_OK) {
		*why = "cannot set timeout";
		goto fail;
	}
	if (s->db != 0 && !reply_ok(redisCommand(c->c, "SELECT %d", s->db))) {
		*why = "SELECT failed";
		goto fail;
	}
	load_script(s, c->c);
	c->backoff_ns = 0;
	return 0;
fail:
	note_failure(s, *why);
	conn_drop(c);
	*why = NULL; /* already counted */
	return -1;
}

/* ---- the script call ---- */

struct call {
	const char *argv[4 + 1 + 5 + NPARAM_MAX];
	size_t argl[4 + 1 + 5 + NPARAM_MAX];
	int argc;
	char key[KEY_MAX];
	char now[24], cost[24], token[64];
};

/*
 * Append `key` to out at *n, with bytes outside printable ASCII (and '%') as
 * %XX, so that binary keys (client addresses) read well in redis-cli.
 */
static int key_escape(char *out, size_t cap, size_t *n, const char *key, size_t keylen)
{
	static const char hex[] = "0123456789ABCDEF";

	for (size_t i = 0; i < keylen; i++) {
		unsigned char b = (unsigned char)key[i];

		if (*n + 3 > cap)
			return -1;
		if (b > 0x20 && b < 0x7f && b != '%') {
			out[(*n)++] = (char)b;
			continue;
		}
		out[(*n)++] = '%';
		out[(*n)++] = hex[b >> 4];
		out[(*n)++] = hex[b & 15];
	}
	return 0;
}

static int call_build(struct store_redis *s, struct call *k, const char *key, size_t keylen,
                      uint64_t now, uint64_t cost, const char *op)
{
	size_t n = s->key_prefix_len, own = strlen(s->owner);

	memcpy(k->key, s->key_prefix, n);
	if (key_escape(k->key, sizeof(k->key), &n, key, keylen) < 0)
		return -1;
	if (s->o.caller_clock)
		parse_format_u64(k->now, now);
	else
		k->now[0] = '\0';
	parse_format_u64(k->cost, cost);
	memcpy(k->token, s->owner, own);
	k->token[own] = ':';
	parse_format_u64(k->token + own + 1, (uint64_t)atomic_fetch_add(&s->seq, 1));
	k->argc = 0;
#define ARG(p, l) (k->argv[k->argc] = (p), k->argl[k->argc++] = (l))
	ARG("EVALSHA", 7);
	ARG("", 0);  /* the sha or the script: call_run decides */
	ARG("1", 1);
	ARG(k->key, n);
	ARG(k->now, strlen(k->now));
	ARG(k->cost, strlen(k->cost));
	ARG(op, strlen(op));
	ARG(k->token, strlen(k->token));
	for (size_t i = 0; i < s->nparams; i++)
		ARG(s->params[i], strlen(s->params[i]));
#undef ARG
	return 0;
}

/* Run the call on c: EVALSHA, or EVAL when the sha is unknown or Redis forgot it. */
static redisReply *call_run(struct store_redis *s, struct redis_conn *c, struct call *k)
{
	redisReply *r = NULL;

	if (atomic_load(&s->have_sha)) {
		k->argv[1] = s->sha;
		k->argl[1] = strlen(s->sha);
		r = redisCommandArgv(c->c, k->argc, k->argv, k->argl);
		if (r == NULL || r->type != REDIS_REPLY_ERROR || strncmp(r->str, "NOSCRIPT", 8) != 0)
			return r;
		freeReplyObject(r);
	}
	k->argv[0] = "EVAL";
	k->argl[0] = 4;
	k->argv[1] = s->script;
	k->argl[1] = strlen(s->script);
	return redisCommandArgv(c->c, k->argc, k->argv, k->argl);
}

static int reply_decision(const redisReply *r, struct limiter_decision *d)
{
	long long v[7];

	if (r->type != REDIS_REPLY_ARRAY || r->elements != 7)
		return -1;
	for (size_t i = 0; i < 7; i++) {
		if (r->element[i]->type != REDIS_REPLY_INTEGER || r->element[i]->integer < 0)
			return -1;
		v[i] = r->element[i]->integer;
	}
	d->admitted = v[0] != 0;
	d->wait_ns = (uint64_t)v[1];
	d->remaining = (uint64_t)v[2];
	d->limit = (uint64_t)v[3];
	d->window_ns = (uint64_t)v[4];
	d->reset_ns = (uint64_t)v[5];
	d->layer = (int)v[6];
	return 0;
}

/* One script call; 0 with *d filled (when d is not NULL), or -1 after counting the failure. */
static int script_call(struct store_redis *s, const char *key, size_t keylen, uint64_t now,
                       uint64_t cost, const char *op, struct limiter_decision *d)
{
	struct redis_conn *c = conn_get(s);
	struct call k;
	redisReply *r;
	const char *why = "out of memory";
	int rc = -1;

	if (c == NULL || conn_ready(s, c, &why) < 0)
		goto fail;
	if (call_build(s, &k, key, keylen, now, cost, op) < 0) {
		why = "key too long";
		goto fail;
	}
	r = call_run(s, c, &k);
	if (r == NULL) {
		note_failure(s, c->c->errstr[0] ? c->c->errstr : "connection lost");
		conn_drop(c);
		return -1;
	}
	if (d == NULL || reply_decision(r, d) == 0)
		rc = 0;
	else
		why = r->type == REDIS_REPLY_ERROR ? r->str : "unexpected script reply";
	if (rc == 0)
		note_success(s);
	else
		note_failure(s, why);
	freeReplyObject(r);
	return rc;
fail:
	if (why != NULL)
		note_failure(s, why);
	return -1;
}

/* ---- store ops ---- */

/* The answer of fail-open mode: admitted, with the whole limit remaining. */
static void fail_open(const struct store_redis *s, struct limiter_decision *d)
{
	memset(d, 0, sizeof(*d));
	d->admitted = true;
	d->limit = s->p.nlayers > 0 ? s->p.layers[0].limit : s->p.limit;
	d->remaining = d->limit;
	d->window_ns = s->p.nlayers > 0 ? s->p.layers[0].window_ns : s->p.window_ns;
}

static int redis_decide(struct store *base, const char *key, size_t keylen, uint64_t now, uint64_t cost,
                        struct limiter_decision *d)
{
	struct store_redis *s = (struct store_redis *)base;
	struct limiter_decision got;

	/* Releases go through the pipeline: let those queued before this decision reach Redis first. */
	if (s->lops->release != NULL && s->pipe != NULL)
		pipe_barrier(s->pipe);
	if (script_call(s, key, keylen, now, cost, "d", &got) == 0) {
		*d = got;
		return 0;
	}
	if (s->o.fail_closed)
		return -1;
	fail_open(s, d);
	return STORE_UNHELD;
}

/*
 * ---- the pipeline ----
 * HTTP threads queue decisions (submit) and slot releases (release) and go
 * on serving other connections; one thread per store sends everything queued
 * as one batch (one write), reads the replies in order (FIFO: a release runs
 * after every decision queued before it) and hands each decision back.  Many
 * requests in flight then share few Redis round trips, and no HTTP thread
 * blocks on Redis.
 */

#define PIPE_BATCH_MAX 512

struct pipe_item {
	struct pipe_item *next;
	struct limiter_decision *d;     /* NULL for a release */
	store_done_fn done;             /* NULL for a release: nothing to resume */
	void *arg;
	char *cmd;                      /* the formatted EVALSHA (EVAL while the sha is unknown) */
	int cmdlen;
	struct call k;                  /* kept for the EVAL after NOSCRIPT */
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
		fail_open(s, it->d);
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
			note_failure(s, why);
		why = why != NULL ? why : "unreachable";
		item_done(s, it, -1);
	}
}

/* One reply of the batch into its item's decision; frees the reply and the item. */
static void item_reply(struct store_redis *s, struct pipe_item *it, redisReply *r)
{
	struct limiter_decision got;
	int rc = -1;

	if (reply_decision(r, &got) == 0) {
		if (it->d != NULL)
			*it->d = got;
		note_success(s);
		rc = 0;
	} else {
		note_failure(s, r->type == REDIS_REPLY_ERROR ? r->str : "unexpected script reply");
	}
	freeReplyObject(r);
	item_done(s, it, rc);
}

/* Run the items that met NOSCRIPT one by one (call_run falls back to EVAL). */
static void items_retry(struct store_redis *s, struct redis_conn *c, struct pipe_item *it)
{
	struct pipe_item *next;
	redisReply *r;

	for (; it != NULL; it = next) {
		next = it->next;
		r = c->c != NULL ? call_run(s, c, &it->k) : NULL;
		if (r != NULL) {
			item_reply(s, it, r);
			continue;
		}
		if (c->c != NULL) {
			note_failure(s, c->c->errstr[0] ? c->c->errstr : "connection lost");
			conn_drop(c);
		} else {
			note_failure(s, "connection lost");
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

	if (conn_ready(s, c, &why) < 0) {
		items_fail(s, batch, why);
		return;
	}
	for (it = batch; it != NULL; it = it->next)
		if (redisAppendFormattedCommand(c->c, it->cmd, (size_t)it->cmdlen) != REDIS_OK)
			break;
	for (it = batch; it != NULL; it = next) {
		next = it->next;
		if (c->c->err || redisGetReply(c->c, (void **)&r) != REDIS_OK || r == NULL) {
			note_failure(s, c->c->errstr[0] ? c->c->errstr : "connection lost");
			conn_drop(c);
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
		pthread_cond_broadcast(&p->idle);  /* pipe_barrier; free when nobody waits */
	}
	p->busy = false;
	pthread_cond_broadcast(&p->idle);
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/*
 * The command of an item in the Redis protocol, formatted on the caller's
 * thread: EVALSHA when the sha is known.  (hiredis's formatter calls sprintf
 * twice per argument; this one costs a few hundred ns.)
 */
static int item_format(struct store_redis *s, struct pipe_item *it)
{
	struct call *k = &it->k;
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
	if (call_build(s, &it->k, key, keylen, now, cost, op) < 0 || item_format(s, it) < 0) {
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
static void pipe_barrier(struct redis_pipe *p)
{
	uint64_t mark;

	pthread_mutex_lock(&p->mu);
	mark = p->release_mark;
	while (p->answered < mark)
		pthread_cond_wait(&p->idle, &p->mu);
	pthread_mutex_unlock(&p->mu);
}

/* item_new, then pipe_push; 0 when queued, -1 (nothing queued) otherwise. */
static int pipe_queue(struct store_redis *s, const char *key, size_t keylen, uint64_t now, uint64_t cost,
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

static int redis_submit(struct store *base, const char *key, size_t keylen, uint64_t now, uint64_t cost,
                        struct limiter_decision *d, store_done_fn done, void *arg)
{
	return pipe_queue((struct store_redis *)base, key, keylen, now, cost, "d", d, done, arg);
}

static void redis_quiesce(struct store *base)
{
	struct redis_pipe *p = ((struct store_redis *)base)->pipe;

	pthread_mutex_lock(&p->mu);
	p->closed = true;
	while (p->head != NULL || p->busy)
		pthread_cond_wait(&p->idle, &p->mu);
	pthread_mutex_unlock(&p->mu);
}

/* Start the pipeline thread; 0 or -1. */
static int pipe_start(struct store_redis *s)
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
static void pipe_stop(struct store_redis *s)
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

/*
 * Queue the release on the pipeline behind every decision queued before it,
 * so the HTTP thread that completes a request never waits on Redis.  Only when
 * the pipeline refuses it (closed by quiesce, or no memory) does this thread
 * call Redis itself, bounded by the command timeout.  A release that fails
 * (Redis down or stalled) is counted as an error and lost: the slot's lease
 * (lease_ns) runs out and the next script call on the key drops it.
 */
static void redis_release(struct store *base, const char *key, size_t keylen, uint64_t now)
{
	struct store_redis *s = (struct store_redis *)base;

	if (s->lops->release != NULL && pipe_queue(s, key, keylen, now, 1, "r", NULL, NULL, NULL) < 0)
		(void)script_call(s, key, keylen, now, 1, "r", NULL);
}

/* Unlink one SCAN page of this store's keys; returns the next cursor, or -1 on failure. */
static long long reset_page(struct store_redis *s, redisContext *rc, long long cursor)
{
	char pattern[KEY_MAX];
	redisReply *r, *keys;
	long long next = -1;

	snprintf(pattern, sizeof(pattern), "%s%s:*", s->prefix, s->lops->name);
	r = redisCommand(rc, "SCAN %lld MATCH %s COUNT 1000", cursor, pattern);
	if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 2)
		goto out;
	keys = r->element[1];
	next = strtoll(r->element[0]->str, NULL, 10);
	for (size_t i = 0; i < keys->elements; i++)
		if (!reply_ok(redisCommand(rc, "UNLINK %b", keys->element[i]->str, (size_t)keys->element[i]->len)))
			next = -1;
out:
	if (r != NULL)
		freeReplyObject(r);
	return next;
}

static void redis_reset(struct store *base)
{
	struct store_redis *s = (struct store_redis *)base;
	struct redis_conn *c = conn_get(s);
	const char *why = NULL;
	long long cursor = 0;

	if (c == NULL || conn_ready(s, c, &why) < 0)
		return;
	for (int i = 0; i < RESET_MAX_ROUNDS; i++) {
		cursor = reset_page(s, c->c, cursor);
		if (cursor <= 0)
			break;
	}
	if (cursor < 0) {
		note_failure(s, "reset failed");
		if (c->c->err)
			conn_drop(c);
	}
}

static void redis_stats(struct store *base, struct store_stats *out)
{
	struct store_redis *s = (struct store_redis *)base;

	memset(out, 0, sizeof(*out));
	out->errors = atomic_load(&s->errors);
}

static void redis_free(struct store *base)
{
	struct store_redis *s = (struct store_redis *)base;
	struct redis_conn *c, *next;

	if (s == NULL)
		return;
	pipe_stop(s);
	pthread_key_delete(s->tls);
	for (c = s->conns; c != NULL; c = next) {
		next = c->next;
		if (c->c != NULL)
			redisFree(c->c);
		free(c);
	}
	pthread_mutex_destroy(&s->lock);
	free(s->script);
	free(s);
}

static const struct store_ops REDIS_OPS = {
	.name = "redis",
	.decide = redis_decide,
	.release = redis_release,
	.reset = redis_reset,
	.stats = redis_stats,
	.free = redis_free,
	.submit = redis_submit,
	.quiesce = redis_quiesce,
};

bool store_redis_up(struct store *base)
{
	return base != NULL && base->ops == &REDIS_OPS && !atomic_load(&((struct store_redis *)base)->down);
}

static int set_params(struct store_redis *s)
{
	const struct limiter_params *p = &s->p;
	size_t n = 0;

#define PUT(v) snprintf(s->params[n++], sizeof(s->params[0]), "%" PRIu64, (uint64_t)(v))
	PUT(p->limit);
	PUT(p->window_ns);
	PUT(p->burst);
	PUT(s->o.lease_ns);
	PUT(p->nlayers);
	if (p->nlayers > LIMITER_MAX_LAYERS)
		return -1;
	for (size_t i = 0; i < p->nlayers; i++) {
		PUT(p->layers[i].limit);
		PUT(p->layers[i].window_ns);
	}
#undef PUT
	s->nparams = n;
	return 0;
}

static int store_setup(struct store_redis *s, const struct store_redis_options *o, char *err, size_t errlen)
{
	const char *prefix = o->prefix ? o->prefix : STORE_REDIS_DEFAULT_PREFIX;

	if (store_redis_parse_url(o->url, s->host, sizeof(s->host), &s->port, &s->db, err, errlen) < 0)
		return -1;
	if (strlen(prefix) >= sizeof(s->prefix)) {
		snprintf(err, errlen, "--store-prefix: bad value '%s' (longer than %zu bytes)", prefix,
		         sizeof(s->prefix) - 1);
		return -1;
	}
	strcpy(s->prefix, prefix);
	/* prefix < 128 bytes and a limiter name: it fits. */
	s->key_prefix_len = (size_t)snprintf(s->key_prefix, sizeof(s->key_prefix), "%s%s:", prefix, s->lops->name);
	if (s->key_prefix_len >= sizeof(s->key_prefix))
		return -1;
	s->o = *o;
	s->o.url = NULL;
	s->o.prefix = NULL;
	if (s->o.timeout_ns == 0)
		s->o.timeout_ns = STORE_REDIS_DEFAULT_TIMEOUT;
	if (s->o.lease_ns == 0)
		s->o.lease_ns = STORE_REDIS_DEFAULT_LEASE;
	snprintf(s->owner, sizeof(s->owner), "%016" PRIx64,
	         prng_stream_seed(clock_wall_ns() ^ o->seed, (uint64_t)(uintptr_t)s));
	return set_params(s);
}

struct store *store_redis_new(const struct limiter_ops *ops, const struct limiter_params *p,
                              const struct store_redis_options *o, char *err, size_t errlen)
{
	struct store_redis *s = calloc(1, sizeof(*s));
	const char *why = NULL;

	if (s == NULL) {
		snprintf(err, errlen, "store: out of memory");
		return NULL;
	}
	s->base.ops = &REDIS_OPS;
	s->lops = ops;
	s->p = *p;
	s->script = redis_scripts_source(ops);
	if (s->script == NULL) {
		if (ops->redis_script == NULL)
			snprintf(err, errlen, "--store: limiter '%s' has no Redis script", ops->name);
		else
			snprintf(err, errlen, "store: out of memory");
		goto free_store;
	}
	if (store_setup(s, o, err, errlen) < 0)
		goto free_store;
	if (pthread_key_create(&s->tls, conn_destroy) != 0) {
		snprintf(err, errlen, "store: cannot create thread key");
		goto free_store;
	}
	pthread_mutex_init(&s->lock, NULL);
	if (pipe_start(s) < 0) {
		snprintf(err, errlen, "store: cannot start the Redis pipeline thread");
		goto delete_key;
	}
	/* Connect now so a reachable Redis gets the script loaded; a dead one is only logged. */
	if (conn_get(s) != NULL)
		(void)conn_ready(s, pthread_getspecific(s->tls), &why);
	/* The start-up probe logs an outage but is no failed decision: errors count decisions. */
	atomic_store(&s->errors, 0);
	atomic_store(&s->outage_errors, 0);
	return &s->base;
delete_key:
	pthread_mutex_destroy(&s->lock);
	pthread_key_delete(s->tls);
free_store:
	free(s->script);
	free(s);
	return NULL;
}
