/* A Redis connection with timeouts and jittered reconnects, for joined runs (join_conn.h). */
#include "hammer/join_conn.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "common/clock.h"

#define COMMAND_TIMEOUT_MAX_NS (2 * NS_PER_SEC)
#define COMMAND_TIMEOUT_MIN_NS (100 * NS_PER_MS)
#define BACKOFF_MIN_NS (10 * NS_PER_MS)
#define BACKOFF_MAX_NS (500 * NS_PER_MS)

static struct timeval tv_of(uint64_t ns)
{
	struct timeval tv = { .tv_sec = (time_t)(ns / NS_PER_SEC), .tv_usec = (suseconds_t)((ns % NS_PER_SEC) / 1000) };

	return tv;
}

void join_conn_close(struct join_conn *c)
{
	if (c->c != NULL)
		redisFree(c->c);
	c->c = NULL;
}

/*
 * hiredis 0.14 takes an array's length on trust: "*2147483647" is a 16 GiB
 * calloc, walked again when freed, seconds of a core past any timeout.  A
 * reply of a joined run reads is a few elements (TIME, an MGET of a node's two keys, at most JOIN_NODES_MAX results): past
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

/* One connect attempt; 0, or -1 with c->why. */
static int connect_once(struct join_conn *c)
{
	join_conn_close(c);
	c->c = redisConnectWithTimeout(c->host, c->port, tv_of(c->timeout_ns));
	if (c->c == NULL || c->c->err) {
		snprintf(c->why, sizeof(c->why), "%s", c->c ? c->c->errstr : "out of memory");
		join_conn_close(c);
		return -1;
	}
	if (redisSetTimeout(c->c, tv_of(c->timeout_ns)) != REDIS_OK) {
		snprintf(c->why, sizeof(c->why), "cannot set a timeout");
		join_conn_close(c);
		return -1;
	}
	bound_replies(c->c);
	c->backoff_ns = 0;
	return 0;
}

int join_conn_open(struct join_conn *c, const char *host, int port, uint64_t timeout_ns, uint64_t seed,
                   char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->host, sizeof(c->host), "%s", host);
	c->port = port;
	c->timeout_ns = timeout_ns < COMMAND_TIMEOUT_MIN_NS ? COMMAND_TIMEOUT_MIN_NS :
	                timeout_ns > COMMAND_TIMEOUT_MAX_NS ? COMMAND_TIMEOUT_MAX_NS : timeout_ns;
	prng_seed(&c->rng, prng_stream_seed(seed, 0x6a6f696eu));
	if (connect_once(c) == 0)
		return 0;
	snprintf(err, errlen, "cannot reach Redis at %s:%d (%s)", c->host, c->port, c->why);
	return -1;
}

/* Wait out the backoff (jittered, doubling) unless the deadline comes first; false when it has. */
static bool back_off(struct join_conn *c, uint64_t deadline)
{
	uint64_t now = clock_monotonic_ns(), wait;
	struct timespec ts;

	c->backoff_ns = c->backoff_ns ? c->backoff_ns * 2 : BACKOFF_MIN_NS;
	if (c->backoff_ns > BACKOFF_MAX_NS)
		c->backoff_ns = BACKOFF_MAX_NS;
	/* jitter: nodes that lost Redis together do not come back in lockstep */
	wait = c->backoff_ns / 2 + prng_below(&c->rng, c->backoff_ns / 2 + 1);
	if (now >= deadline)
		return false;
	if (wait > deadline - now)
		wait = deadline - now;
	ts.tv_sec = (time_t)(wait / NS_PER_SEC);
	ts.tv_nsec = (long)(wait % NS_PER_SEC);
	nanosleep(&ts, NULL);
	return true;
}

redisReply *join_conn_cmd(struct join_conn *c, uint64_t deadline, const char *fmt, ...)
{
	for (;;) {
		redisReply *r = NULL;
		va_list ap;

		if (c->c != NULL || connect_once(c) == 0) {
			va_start(ap, fmt);
			r = redisvCommand(c->c, fmt, ap);
			va_end(ap);
			if (r != NULL)
				return r;
			snprintf(c->why, sizeof(c->why), "%s", reply_refused ? "a reply of over 65536 elements"
			         : c->c->errstr[0] ? c->c->errstr : "connection lost");
			reply_refused = false;
			join_conn_close(c);
		}
		if (!back_off(c, deadline))
			return NULL;
	}
}

int join_conn_fail(const struct join_conn *c, char *err, size_t errlen)
{
	snprintf(err, errlen, "Redis at %s:%d stopped answering (%s)", c->host, c->port, c->why[0] ? c->why : "?");
	return -1;
}
