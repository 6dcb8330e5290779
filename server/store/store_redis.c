/*
 * The Redis store: its set-up and its store ops.  The connections, the script
 * call and the pipeline are in redis_conn.c, redis_call.c and redis_pipe.c.
 * See store_redis.h for the contract.
 */
#include "server/store/store_redis.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "server/store/redis_call.h"
#include "server/store/redis_conn.h"
#include "server/store/redis_pipe.h"
#include "server/store/store_redis_impl.h"

#define RESET_MAX_ROUNDS 10000

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

static int redis_decide(struct store *base, const char *key, size_t keylen, uint64_t now, uint64_t cost,
                        struct limiter_decision *d)
{
	struct store_redis *s = (struct store_redis *)base;
	struct limiter_decision got;

	/* Releases go through the pipeline: let those queued before this decision reach Redis first. */
	if (s->lops->release != NULL && s->pipe != NULL)
		redis_pipe_barrier(s->pipe);
	if (redis_call_script(s, key, keylen, now, cost, "d", &got) == 0) {
		*d = got;
		return 0;
	}
	if (s->o.fail_closed)
		return -1;
	redis_call_fail_open(s, d);
	return STORE_UNHELD;
}

static int redis_submit(struct store *base, const char *key, size_t keylen, uint64_t now, uint64_t cost,
                        struct limiter_decision *d, store_done_fn done, void *arg)
{
	return redis_pipe_queue((struct store_redis *)base, key, keylen, now, cost, "d", d, done, arg);
}

static void redis_quiesce(struct store *base)
{
	redis_pipe_quiesce(((struct store_redis *)base)->pipe);
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

	if (s->lops->release != NULL && redis_pipe_queue(s, key, keylen, now, 1, "r", NULL, NULL, NULL) < 0)
		(void)redis_call_script(s, key, keylen, now, 1, "r", NULL);
}

/* SCAN's cursor: a decimal string of 1 to 18 digits; -1 for anything else. */
static long long scan_cursor(const redisReply *r)
{
	long long v = 0;

	if (r == NULL || r->type != REDIS_REPLY_STRING || r->len < 1 || r->len > 18)
		return -1;
	for (size_t i = 0; i < r->len; i++) {
		if (r->str[i] < '0' || r->str[i] > '9')
			return -1;
		v = v * 10 + (r->str[i] - '0');
	}
	return v;
}

/* Unlink one SCAN page of this store's keys; returns the next cursor, or -1 on failure (any other reply shape). */
static long long reset_page(struct store_redis *s, redisContext *rc, long long cursor)
{
	char pattern[STORE_REDIS_KEY_MAX];
	redisReply *r, *keys;
	long long next = -1;

	snprintf(pattern, sizeof(pattern), "%s%s:*", s->prefix, s->lops->name);
	r = redisCommand(rc, "SCAN %lld MATCH %s COUNT 1000", cursor, pattern);
	if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[1]->type != REDIS_REPLY_ARRAY)
		goto out;
	keys = r->element[1];
	next = scan_cursor(r->element[0]);
	for (size_t i = 0; next >= 0 && i < keys->elements; i++) {
		redisReply *k = keys->element[i];

		if (k->type != REDIS_REPLY_STRING ||
		    !redis_conn_reply_ok(redisCommand(rc, "UNLINK %b", k->str, (size_t)k->len)))
			next = -1;
	}
out:
	if (r != NULL)
		freeReplyObject(r);
	return next;
}

static void redis_reset(struct store *base)
{
	struct store_redis *s = (struct store_redis *)base;
	struct redis_conn *c = redis_conn_get(s);
	const char *why = NULL;
	long long cursor = 0;

	if (c == NULL || redis_conn_ready(s, c, &why) < 0)
		return;
	for (int i = 0; i < RESET_MAX_ROUNDS; i++) {
		cursor = reset_page(s, c->c, cursor);
		if (cursor <= 0)
			break;
	}
	if (cursor < 0) {
		redis_conn_note_failure(s, "reset failed");
		if (c->c->err)
			redis_conn_drop(c);
	}
}

static void redis_stats(struct store *base, struct store_stats *out)
{
	struct store_redis *s = (struct store_redis *)base;

	memset(out, 0, sizeof(*out));
	out->errors = atomic_load(&s->errors);
	out->corrupt = atomic_load(&s->corrupt);
}

static void redis_free(struct store *base)
{
	struct store_redis *s = (struct store_redis *)base;
	struct redis_conn *c, *next;

	if (s == NULL)
		return;
	redis_pipe_stop(s);
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
	if (pthread_key_create(&s->tls, redis_conn_destroy) != 0) {
		snprintf(err, errlen, "store: cannot create thread key");
		goto free_store;
	}
	pthread_mutex_init(&s->lock, NULL);
	if (redis_pipe_start(s) < 0) {
		snprintf(err, errlen, "store: cannot start the Redis pipeline thread");
		goto delete_key;
	}
	/* Connect now so a reachable Redis gets the script loaded; a dead one is only logged. */
	if (redis_conn_get(s) != NULL)
		(void)redis_conn_ready(s, pthread_getspecific(s->tls), &why);
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
