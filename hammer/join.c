/* A hammer run over several processes, joined through Redis (join.h). */
#include "hammer/join.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "common/clock.h"
#include "common/prng.h"
#include "hammer/join_conn.h"
#include "hammer/join_impl.h"

#define ALIVE_MS 4000              /* a heartbeat key lives this long ... */
#define BEAT_MS 500                /* ... and is renewed this often */
#define POLL_START_NS (2 * NS_PER_MS)
#define POLL_READY_NS (5 * NS_PER_MS)
#define TIME_SAMPLES 7

/* ---- URL and keys ---- */

static bool run_id_ok(const char *s, size_t n)
{
	if (n == 0 || n >= JOIN_RUN_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
		      s[i] == '.' || s[i] == '_' || s[i] == '-'))
			return false;
	return true;
}

int join_parse_url(const char *url, char *host, size_t hostlen, int *port, char *run, size_t runlen,
                   char *why, size_t wl)
{
	static const char scheme[] = "redis://";
	const char *h, *slash, *colon, *hend;
	char *end;
	long p = 6379;

	if (strncmp(url, scheme, sizeof(scheme) - 1) != 0)
		return snprintf(why, wl, "is not redis://HOST[:PORT]/RUNID"), -1;
	h = url + sizeof(scheme) - 1;
	slash = strchr(h, '/');
	if (slash == NULL || !run_id_ok(slash + 1, strlen(slash + 1)) || strlen(slash + 1) >= runlen)
		return snprintf(why, wl, "is not redis://HOST[:PORT]/RUNID (a RUNID of letters, digits, '.', '_' "
		                "or '-', at most %d)", JOIN_RUN_MAX - 1), -1;
	colon = memchr(h, ':', (size_t)(slash - h));
	hend = colon ? colon : slash;
	if (hend == h || (size_t)(hend - h) >= hostlen)
		return snprintf(why, wl, "is not redis://HOST[:PORT]/RUNID (no host)"), -1;
	if (colon != NULL) {
		errno = 0;
		p = strtol(colon + 1, &end, 10);
		if (end != slash || colon + 1 == slash || errno != 0 || p < 1 || p > 65535)
			return snprintf(why, wl, "is not redis://HOST[:PORT]/RUNID (a port from 1 to 65535)"), -1;
	}
	memcpy(host, h, (size_t)(hend - h));
	host[hend - h] = '\0';
	*port = (int)p;
	snprintf(run, runlen, "%s", slash + 1);
	return 0;
}

/* key = base + round + ":" + what (what printf-formatted). */
const char *join_key(const struct join *j, char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(buf, len, "%s%s%s", j->base, j->round, j->round[0] ? ":" : "");

	va_start(ap, fmt);
	vsnprintf(buf + n, len - (size_t)n, fmt, ap);
	va_end(ap);
	return buf;
}

/* A run-wide key (no round): base + what. */
const char *join_run_key(const struct join *j, char *buf, size_t len, const char *what)
{
	snprintf(buf, len, "%s%s", j->base, what);
	return buf;
}

const char *join_alive_key(const struct join *j, uint32_t node, char *buf, size_t len)
{
	snprintf(buf, len, "%salive:%" PRIu32, j->base, node);
	return buf;
}

/* ---- small replies ---- */

/* The value of a decimal string of 1 to 19 digits (no sign, nothing else) into *v; false otherwise. */
static bool digits_u64(const char *s, size_t len, uint64_t *v)
{
	*v = 0;
	if (len == 0 || len > 19)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		*v = *v * 10 + (uint64_t)(s[i] - '0');
	}
	return true;
}

/* The integer or integer-string value of r; -1 for nil or anything else.  Frees r. */
long long join_reply_int(redisReply *r)
{
	long long v = -1;
	uint64_t u;

	if (r != NULL && r->type == REDIS_REPLY_INTEGER)
		v = r->integer;
	else if (r != NULL && r->type == REDIS_REPLY_STRING && digits_u64(r->str, r->len, &u) && u <= INT64_MAX)
		v = (long long)u;
	freeReplyObject(r);
	return v;
}

bool join_reply_u64(const redisReply *r, uint64_t *v)
{
	return r != NULL && r->type == REDIS_REPLY_STRING && digits_u64(r->str, r->len, v);
}

/* The string of r copied into buf ("" for nil); false when r is NULL or an error.  Frees r. */
bool join_reply_str(redisReply *r, char *buf, size_t len)
{
	bool ok = r != NULL && r->type != REDIS_REPLY_ERROR;

	buf[0] = '\0';
	if (r != NULL && r->type == REDIS_REPLY_STRING)
		snprintf(buf, len, "%.*s", (int)r->len, r->str);
	freeReplyObject(r);
	return ok;
}

uint64_t join_deadline_after(uint64_t ns)
{
	return clock_monotonic_ns() + ns;
}

void join_pause_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / NS_PER_SEC), (long)(ns % NS_PER_SEC) };

	nanosleep(&ts, NULL);
}

/* ---- the heartbeat ---- */

static void *beat_main(void *arg)
{
	struct join *j = arg;
	char k[160];
	struct timespec until;

	join_alive_key(j, j->node, k, sizeof(k));
	pthread_mutex_lock(&j->lock);
	while (!j->stop) {
		pthread_mutex_unlock(&j->lock);
		freeReplyObject(join_conn_cmd(&j->beat_conn, join_deadline_after(BEAT_MS * NS_PER_MS), "SET %s 1 PX %d",
		                              k, ALIVE_MS));
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += BEAT_MS * (long)NS_PER_MS;
		until.tv_sec += until.tv_nsec / (long)NS_PER_SEC;
		until.tv_nsec %= (long)NS_PER_SEC;
		pthread_mutex_lock(&j->lock);
		while (!j->stop && pthread_cond_timedwait(&j->wake, &j->lock, &until) == 0)
			;
	}
	pthread_mutex_unlock(&j->lock);
	/* a node that ended on purpose is not a node that died */
	freeReplyObject(join_conn_cmd(&j->beat_conn, join_deadline_after(NS_PER_SEC), "DEL %s", k));
	return NULL;
}

static int beat_start(struct join *j, char *err, size_t errlen)
{
	pthread_condattr_t ca;
	char k[160];

	/* the first beat before join_new returns: a node is never seen without one, however late its thread runs */
	join_alive_key(j, j->node, k, sizeof(k));
	if (!join_reply_str(join_conn_cmd(&j->conn, join_deadline_after(j->o.timeout_ns), "SET %s 1 PX %d", k, ALIVE_MS),
	               k, sizeof(k)))
		return join_conn_fail(&j->conn, err, errlen);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&j->wake, &ca);
	pthread_condattr_destroy(&ca);
	if (join_conn_open(&j->beat_conn, j->conn.host, j->conn.port, j->conn.timeout_ns, j->seed + 1,
	                   err, errlen) != 0)
		return -1;
	if (pthread_create(&j->beat, NULL, beat_main, j) != 0) {
		snprintf(err, errlen, "cannot start the heartbeat thread");
		return -1;
	}
	j->beating = true;
	return 0;
}

static void beat_stop(struct join *j)
{
	if (!j->beating)
		return;
	pthread_mutex_lock(&j->lock);
	j->stop = true;
	pthread_cond_signal(&j->wake);
	pthread_mutex_unlock(&j->lock);
	pthread_join(j->beat, NULL);
	j->beating = false;
}

/* ---- joining ---- */

static struct join *join_alloc(const char *url, uint64_t timeout_ns, uint64_t seed, char *err, size_t errlen)
{
	struct join *j = calloc(1, sizeof(*j));
	char host[256], run[JOIN_RUN_MAX], why[200];
	int port;

	if (j == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&j->lock, NULL);
	if (join_parse_url(url, host, sizeof(host), &port, run, sizeof(run), why, sizeof(why)) != 0) {
		snprintf(err, errlen, "--join '%s' %s", url, why);
		goto fail;
	}
	snprintf(j->url, sizeof(j->url), "redis://%s:%d/%s", host, port, run);
	snprintf(j->base, sizeof(j->base), "ratelab:join:%s:", run);
	if (join_conn_open(&j->conn, host, port, timeout_ns, seed, err, errlen) != 0)
		goto fail;
	return j;
fail:
	join_free(j);
	return NULL;
}

/*
 * SET key value NX (with the TTL), then GET it back: what the run's first
 * node set.  0 with it in got, or -1 (Redis gone).
 */
static int set_first(struct join *j, const char *k, const char *value, char *got, size_t len, uint64_t deadline)
{
	freeReplyObject(join_conn_cmd(&j->conn, deadline, "SET %s %s NX EX %d", k, value, JOIN_KEY_TTL_S));
	return join_reply_str(join_conn_cmd(&j->conn, deadline, "GET %s", k), got, len) ? 0 : -1;
}

/* The run's N, settings and seed are the first node's: this node must agree on the first two. */
static int agree(struct join *j, char *err, size_t errlen)
{
	uint64_t dl = join_deadline_after(j->o.timeout_ns);
	char k[160], mine[512], got[512];

	snprintf(mine, sizeof(mine), "%" PRIu32, j->o.nodes);
	if (set_first(j, join_run_key(j, k, sizeof(k), "nodes"), mine, got, sizeof(got), dl) != 0)
		return join_conn_fail(&j->conn, err, errlen);
	if (strcmp(got, mine) != 0)
		return snprintf(err, errlen, "%s was started with --nodes %s, not %s", j->url, got, mine), -1;
	snprintf(mine, sizeof(mine), "%s", j->o.settings ? j->o.settings : "");
	if (set_first(j, join_run_key(j, k, sizeof(k), "settings"), mine, got, sizeof(got), dl) != 0)
		return join_conn_fail(&j->conn, err, errlen);
	if (strcmp(got, mine) != 0)
		return snprintf(err, errlen, "%s was started with other settings: %s (this node: %s)", j->url, got,
		                mine), -1;
	snprintf(mine, sizeof(mine), "%" PRIu64, j->o.seed);
	if (set_first(j, join_run_key(j, k, sizeof(k), "seed"), mine, got, sizeof(got), dl) != 0)
		return join_conn_fail(&j->conn, err, errlen);
	if (!digits_u64(got, strlen(got), &j->seed))
		return snprintf(err, errlen, "%s: the run's seed in Redis is not a number (pick a new RUNID)", j->url), -1;
	return 0;
}

static int take_index(struct join *j, char *err, size_t errlen)
{
	uint64_t dl = join_deadline_after(j->o.timeout_ns);
	char k[160];
	long long v = join_reply_int(join_conn_cmd(&j->conn, dl, "INCR %s", join_run_key(j, k, sizeof(k), "joined")));

	if (v < 1)
		return join_conn_fail(&j->conn, err, errlen);
	freeReplyObject(join_conn_cmd(&j->conn, dl, "EXPIRE %s %d", k, JOIN_KEY_TTL_S));
	if (v > j->o.nodes)
		return snprintf(err, errlen, "%s already has its %" PRIu32 " nodes (pick a new RUNID)", j->url,
		                j->o.nodes), -1;
	j->node = (uint32_t)(v - 1);
	return 0;
}

struct join *join_new(const struct join_opts *o, char *err, size_t errlen)
{
	struct join *j = join_alloc(o->url, o->timeout_ns, o->seed, err, errlen);

	if (j == NULL)
		return NULL;
	j->o = *o;
	j->nodes = o->nodes;
	j->member = true;
	if (agree(j, err, errlen) != 0 || take_index(j, err, errlen) != 0 || beat_start(j, err, errlen) != 0) {
		join_free(j);
		return NULL;
	}
	return j;
}

struct join *join_open(const char *url, uint64_t timeout_ns, char *err, size_t errlen)
{
	struct join *j = join_alloc(url, timeout_ns, clock_wall_ns(), err, errlen);
	char k[160];
	long long n;

	if (j == NULL)
		return NULL;
	j->o.timeout_ns = timeout_ns;
	n = join_reply_int(join_conn_cmd(&j->conn, join_deadline_after(timeout_ns), "GET %s", join_run_key(j, k, sizeof(k), "nodes")));
	if (n < 1 || n > JOIN_NODES_MAX) {
		if (j->conn.c == NULL)
			join_conn_fail(&j->conn, err, errlen);
		else
			snprintf(err, errlen, "%s: no such run in Redis (or it expired)", j->url);
		join_free(j);
		return NULL;
	}
	j->nodes = (uint32_t)n;
	return j;
}

void join_free(struct join *j)
{
	if (j == NULL)
		return;
	beat_stop(j);
	join_conn_close(&j->beat_conn);
	join_conn_close(&j->conn);
	json_decref(j->kept);
	pthread_mutex_destroy(&j->lock);
	if (j->member)
		pthread_cond_destroy(&j->wake);
	free(j);
}

uint32_t join_node(const struct join *j) { return j->node; }
uint32_t join_nodes(const struct join *j) { return j->nodes; }
uint64_t join_seed(const struct join *j) { return j->seed; }
const char *join_url(const struct join *j) { return j->url; }

void join_round(struct join *j, const char *name)
{
	snprintf(j->round, sizeof(j->round), "%s", name);
}

/* ---- the start ---- */

/* TIME's reply as ns since 1970: two decimal strings, seconds and microseconds; false for anything else. */
static bool time_of(const redisReply *r, uint64_t *ns)
{
	uint64_t sec, usec;

	if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 2 || !join_reply_u64(r->element[0], &sec) ||
	    !join_reply_u64(r->element[1], &usec) || usec >= 1000000 || sec > UINT64_MAX / NS_PER_SEC - 1)
		return false;
	*ns = sec * NS_PER_SEC + usec * 1000;
	return true;
}

/*
 * Sample Redis TIME a few times and keep the tightest round trip: Redis
 * time then was T at the midpoint of the call.  Sets j's offset and rtt and
 * *mid_mono / *t_redis.  0, or -1 with j->conn.why (Redis gone, or a reply
 * that is not a time).
 */
static int sync_clock(struct join *j, uint64_t deadline, uint64_t *mid_mono, uint64_t *t_redis)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < TIME_SAMPLES; i++) {
		uint64_t w0 = clock_wall_ns(), t0 = clock_monotonic_ns(), t1, w1;
		redisReply *r = join_conn_cmd(&j->conn, deadline, "TIME");

		uint64_t t;

		t1 = clock_monotonic_ns();
		w1 = clock_wall_ns();
		if (r != NULL && !time_of(r, &t))
			snprintf(j->conn.why, sizeof(j->conn.why), "its answer to TIME is not a time");
		if (r == NULL || !time_of(r, &t)) {
			freeReplyObject(r);
			return -1;
		}
		if (t1 - t0 < best) {
			best = t1 - t0;
			*mid_mono = t0 + best / 2;
			*t_redis = t;
			j->offset_ns = (int64_t)(t - (w0 + (w1 - w0) / 2));
			j->rtt_ns = best;
		}
		freeReplyObject(r);
	}
	return 0;
}

/* Redis time now, from the last clock sync. */
static uint64_t redis_now_ns(const struct join *j)
{
	return j->sync_redis + (clock_monotonic_ns() - j->sync_mono);
}

/* How many nodes are ready in this round (-1: Redis gone). */
static long long ready_count(struct join *j, uint64_t deadline)
{
	char k[200];

	return join_reply_int(join_conn_cmd(&j->conn, deadline, "GET %s", join_key(j, k, sizeof(k), "ready")));
}

/* Node 0: wait for all N, run the leader hook, set the start instant.  -1 marks the round aborted. */
static int lead(struct join *j, uint64_t deadline, char *err, size_t errlen)
{
	char k[200], v[32];
	long long n = 0;
	uint64_t start;

	while ((n = ready_count(j, deadline)) >= 0 && n < j->nodes && clock_monotonic_ns() < deadline)
		join_pause_ns(POLL_READY_NS);
	if (n < 0)
		return join_conn_fail(&j->conn, err, errlen);
	if (n < j->nodes) {
		snprintf(err, errlen, "%lld of %" PRIu32 " nodes joined %s within %.0fs", n, j->nodes, j->url,
		         (double)j->o.timeout_ns / 1e9);
		freeReplyObject(join_conn_cmd(&j->conn, join_deadline_after(NS_PER_SEC), "SET %s %s EX %d",
		                              join_key(j, k, sizeof(k), "abort"), "timeout", JOIN_KEY_TTL_S));
		return -1;
	}
	if (j->o.leader != NULL && j->o.leader(j->o.leader_ctx, err, errlen) != 0) {
		freeReplyObject(join_conn_cmd(&j->conn, join_deadline_after(NS_PER_SEC), "SET %s %s EX %d",
		                              join_key(j, k, sizeof(k), "abort"), "leader", JOIN_KEY_TTL_S));
		return -1;
	}
	start = redis_now_ns(j) + j->o.margin_ns;
	snprintf(v, sizeof(v), "%" PRIu64, start);
	freeReplyObject(join_conn_cmd(&j->conn, join_deadline_after(j->o.timeout_ns), "SET %s %s NX EX %d",
	                              join_key(j, k, sizeof(k), "start"), v, JOIN_KEY_TTL_S));
	return 0;
}

/* Every node: poll for the start instant (or the round's abort) until the deadline. */
static int await_start(struct join *j, uint64_t deadline, uint64_t *start, char *err, size_t errlen)
{
	char ks[200], ka[200];

	join_key(j, ks, sizeof(ks), "start");
	join_key(j, ka, sizeof(ka), "abort");
	for (;;) {
		redisReply *r = join_conn_cmd(&j->conn, deadline, "MGET %s %s", ks, ka);

		if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
			freeReplyObject(r);
			return join_conn_fail(&j->conn, err, errlen);
		}
		if (r->element[0]->type == REDIS_REPLY_STRING && !join_reply_u64(r->element[0], start))
			*start = 0;
		if (r->element[1]->type != REDIS_REPLY_NIL)
			*start = 0;
		freeReplyObject(r);
		if (*start != UINT64_MAX)
			break;
		if (clock_monotonic_ns() >= deadline)
			break;
		join_pause_ns(POLL_START_NS);
	}
	if (*start != UINT64_MAX && *start != 0)
		return 0;
	snprintf(err, errlen, "node %" PRIu32 " of %" PRIu32 ": the run did not start: %lld of %" PRIu32
	         " nodes joined %s within %.0fs", j->node, j->nodes, ready_count(j, join_deadline_after(NS_PER_SEC)),
	         j->nodes, j->url, (double)j->o.timeout_ns / 1e9);
	return -1;
}

int join_ready(void *ctx, uint64_t *start_ns, char *err, size_t errlen)
{
	struct join *j = ctx;
	uint64_t deadline = join_deadline_after(j->o.timeout_ns), start = UINT64_MAX, mid = 0, t = 0;
	char k[200];

	/*
	 * The clock is synced before this node says it is ready, not once the
	 * start is known: on a busy machine seven round trips to Redis can take
	 * longer than the margin.  Over the seconds until the start the offset
	 * moves by microseconds.
	 */
	if (sync_clock(j, deadline, &mid, &t) != 0)
		return join_conn_fail(&j->conn, err, errlen);
	j->sync_mono = mid;
	j->sync_redis = t;
	if (join_reply_int(join_conn_cmd(&j->conn, deadline, "INCR %s", join_key(j, k, sizeof(k), "ready"))) < 1)
		return join_conn_fail(&j->conn, err, errlen);
	freeReplyObject(join_conn_cmd(&j->conn, deadline, "EXPIRE %s %d", k, JOIN_KEY_TTL_S));
	if (j->node == 0 && lead(j, deadline, err, errlen) != 0)
		return -1;
	/* the others wait a little longer than node 0, which gives up first and says why */
	if (await_start(j, deadline + (j->node ? NS_PER_SEC : 0), &start, err, errlen) != 0)
		return -1;
	/* a start set by node 0 is a margin ahead: one much further is a stale or planted key, never waited for */
	if (start > redis_now_ns(j) + j->o.margin_ns + j->o.timeout_ns)
		return snprintf(err, errlen, "node %" PRIu32 " of %" PRIu32 ": %s: the start time in Redis is %.0fs ahead, "
		                "more than the margin and --join-timeout allow (a stale or planted key? pick a new RUNID)",
		                j->node, j->nodes, j->url, (double)(start - redis_now_ns(j)) / 1e9), -1;
	j->start_redis_ns = start;
	*start_ns = start >= t ? mid + (start - t) : mid - (t - start < mid ? t - start : mid);
	return 0;
}
