/* The Redis store's connections and its outage accounting (redis_conn.h). */
#include "server/store/redis_conn.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "common/clock.h"

#define BACKOFF_MIN_NS   (10ULL * NS_PER_MS)
#define BACKOFF_MAX_NS   (2ULL * NS_PER_SEC)

/*
 * hiredis 0.14 takes an array's length on trust: "*2147483647" is a 16 GiB
 * calloc, walked again when freed, seconds of a core past any timeout.  A
 * reply of the store reads is a few elements (a script's 8 or 9 integers, a SCAN page of about its COUNT, 1000): past
 * REPLY_ELEMENTS_MAX in one reply, nested arrays counted together, the read
 * fails as a broken peer's does (hiredis says "Out of memory"; reply_refused
 * names the cause).  Per thread: a connection is read by one thread, one
 * reply at a time.
 */
#define REPLY_ELEMENTS_MAX 65536

static _Thread_local size_t reply_elements;
static _Thread_local bool reply_refused;
static redisReplyObjectFunctions bounded_fns;
static void *(*hiredis_create_array)(const redisReadTask *, int);
static pthread_once_t bounded_once = PTHREAD_ONCE_INIT;

static void *bounded_array(const redisReadTask *t, int n)
{
	if (t->parent == NULL)
		reply_elements = 0;
	reply_elements += n > 0 ? (size_t)n : 0;
	if (reply_elements > REPLY_ELEMENTS_MAX) {
		reply_refused = true;
		return NULL;
	}
	return hiredis_create_array(t, n);
}

/* hiredis's own reply functions, with the array bounded. */
static void bounded_init(void)
{
	redisReader *r = redisReaderCreate();

	if (r == NULL)
		return;
	bounded_fns = *r->fn;
	hiredis_create_array = bounded_fns.createArray;
	bounded_fns.createArray = bounded_array;
	redisReaderFree(r);
}

static void bound_replies(redisContext *c)
{
	pthread_once(&bounded_once, bounded_init);
	if (hiredis_create_array != NULL)
		c->reader->fn = &bounded_fns;
}

void redis_conn_note_failure(struct store_redis *s, const char *why)
{
	if (reply_refused) {
		reply_refused = false;
		why = "a reply of over 65536 elements";
	}
	atomic_fetch_add(&s->errors, 1);
	atomic_fetch_add(&s->outage_errors, 1);
	if (atomic_exchange(&s->down, true) || s->o.quiet)
		return;
	fprintf(stderr, "ratelab: store: redis %s:%d unreachable (%s); failing %s until it is back\n",
	        s->host, s->port, why, s->o.fail_closed ? "closed (503)" : "open (admitting)");
}

void redis_conn_note_corrupt(struct store_redis *s, const char *key)
{
	uint64_t n = atomic_fetch_add(&s->corrupt, 1) + 1;

	if (s->o.quiet || (n > STORE_REDIS_CORRUPT_LOGS && n % 1000 != 0))
		return;
	fprintf(stderr, "ratelab: store: redis key %s was corrupt (not a state ratelab writes); reset to a fresh "
	        "state (%" PRIu64 " so far)\n", key, n);
}

void redis_conn_note_success(struct store_redis *s)
{
	uint64_t n;

	if (!atomic_load_explicit(&s->down, memory_order_relaxed) || !atomic_exchange(&s->down, false))
		return;
	n = atomic_exchange(&s->outage_errors, 0);
	if (!s->o.quiet)
		fprintf(stderr, "ratelab: store: redis %s:%d is back (%" PRIu64 " decisions failed %s)\n",
		        s->host, s->port, n, s->o.fail_closed ? "closed" : "open");
}

void redis_conn_drop(struct redis_conn *c)
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

void redis_conn_destroy(void *arg)
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

struct redis_conn *redis_conn_get(struct store_redis *s)
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
		redis_conn_destroy(c);
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
bool redis_conn_reply_ok(redisReply *r)
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
int redis_conn_ready(struct store_redis *s, struct redis_conn *c, const char **why)
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
	bound_replies(c->c);
	if (s->db != 0 && !redis_conn_reply_ok(redisCommand(c->c, "SELECT %d", s->db))) {
		*why = "SELECT failed";
		goto fail;
	}
	load_script(s, c->c);
	c->backoff_ns = 0;
	return 0;
fail:
	redis_conn_note_failure(s, *why);
	redis_conn_drop(c);
	*why = NULL; /* already counted */
	return -1;
}
