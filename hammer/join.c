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
#include "hammer/result_codec.h"

#define KEY_TTL_S 86400
#define ALIVE_MS 4000              /* a heartbeat key lives this long ... */
#define BEAT_MS 500                /* ... and is renewed this often */
#define POLL_START_NS (2 * NS_PER_MS)
#define POLL_READY_NS (5 * NS_PER_MS)
#define POLL_RESULTS_NS (50 * NS_PER_MS)
#define TIME_SAMPLES 7

struct join {
	struct join_conn conn;         /* the owning thread's */
	struct join_conn beat_conn;    /* the heartbeat thread's */
	char url[352];
	char base[32 + JOIN_RUN_MAX];  /* "ratelab:join:RUNID:" */
	char round[64];
	uint32_t node, nodes;
	bool member;                   /* joined (an index and a heartbeat), not just opened */
	uint64_t seed;
	struct join_opts o;
	int64_t offset_ns;             /* Redis TIME minus this machine's wall clock, at the last sync */
	uint64_t rtt_ns;               /* the round trip of the TIME sample used */
	uint64_t start_redis_ns;       /* the current round's start instant, Redis time */
	uint64_t sync_mono, sync_redis;  /* Redis time was sync_redis at sync_mono (CLOCK_MONOTONIC) */
	json_t *kept;                  /* results read by join_collect (dst's URLs point in) */
	pthread_t beat;
	bool beating;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop;
};

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
static const char *key(const struct join *j, char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(buf, len, "%s%s%s", j->base, j->round, j->round[0] ? ":" : "");

	va_start(ap, fmt);
	vsnprintf(buf + n, len - (size_t)n, fmt, ap);
	va_end(ap);
	return buf;
}

/* A run-wide key (no round): base + what. */
static const char *run_key(const struct join *j, char *buf, size_t len, const char *what)
{
	snprintf(buf, len, "%s%s", j->base, what);
	return buf;
}

/* ---- small replies ---- */

/* The integer or integer-string value of r; -1 for nil or anything else.  Frees r. */
static long long reply_int(redisReply *r)
{
	long long v = -1;

	if (r != NULL && r->type == REDIS_REPLY_INTEGER)
		v = r->integer;
	else if (r != NULL && r->type == REDIS_REPLY_STRING)
		v = strtoll(r->str, NULL, 10);
	freeReplyObject(r);
	return v;
}

/* The string of r copied into buf ("" for nil); false when r is NULL or an error.  Frees r. */
static bool reply_str(redisReply *r, char *buf, size_t len)
{
	bool ok = r != NULL && r->type != REDIS_REPLY_ERROR;

	buf[0] = '\0';
	if (r != NULL && r->type == REDIS_REPLY_STRING)
		snprintf(buf, len, "%.*s", (int)r->len, r->str);
	freeReplyObject(r);
	return ok;
}

static uint64_t deadline_after(uint64_t ns)
{
	return clock_monotonic_ns() + ns;
}

static void pause_ns(uint64_t ns)
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

	snprintf(k, sizeof(k), "%salive:%" PRIu32, j->base, j->node);
	pthread_mutex_lock(&j->lock);
	while (!j->stop) {
		pthread_mutex_unlock(&j->lock);
		freeReplyObject(join_conn_cmd(&j->beat_conn, deadline_after(BEAT_MS * NS_PER_MS), "SET %s 1 PX %d",
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
	freeReplyObject(join_conn_cmd(&j->beat_conn, deadline_after(NS_PER_SEC), "DEL %s", k));
	return NULL;
}

static int beat_start(struct join *j, char *err, size_t errlen)
{
	pthread_condattr_t ca;
	char k[160];

	/* the first beat before join_new returns: a node is never seen without one, however late its thread runs */
	snprintf(k, sizeof(k), "%salive:%" PRIu32, j->base, j->node);
	if (!reply_str(join_conn_cmd(&j->conn, deadline_after(j->o.timeout_ns), "SET %s 1 PX %d", k, ALIVE_MS),
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
	freeReplyObject(join_conn_cmd(&j->conn, deadline, "SET %s %s NX EX %d", k, value, KEY_TTL_S));
	return reply_str(join_conn_cmd(&j->conn, deadline, "GET %s", k), got, len) ? 0 : -1;
}

/* The run's N, settings and seed are the first node's: this node must agree on the first two. */
static int agree(struct join *j, char *err, size_t errlen)
{
	uint64_t dl = deadline_after(j->o.timeout_ns);
	char k[160], mine[512], got[512];

	snprintf(mine, sizeof(mine), "%" PRIu32, j->o.nodes);
	if (set_first(j, run_key(j, k, sizeof(k), "nodes"), mine, got, sizeof(got), dl) != 0)
		return join_conn_fail(&j->conn, err, errlen);
	if (strcmp(got, mine) != 0)
		return snprintf(err, errlen, "%s was started with --nodes %s, not %s", j->url, got, mine), -1;
	snprintf(mine, sizeof(mine), "%s", j->o.settings ? j->o.settings : "");
	if (set_first(j, run_key(j, k, sizeof(k), "settings"), mine, got, sizeof(got), dl) != 0)
		return join_conn_fail(&j->conn, err, errlen);
	if (strcmp(got, mine) != 0)
		return snprintf(err, errlen, "%s was started with other settings: %s (this node: %s)", j->url, got,
		                mine), -1;
	snprintf(mine, sizeof(mine), "%" PRIu64, j->o.seed);
	if (set_first(j, run_key(j, k, sizeof(k), "seed"), mine, got, sizeof(got), dl) != 0)
		return join_conn_fail(&j->conn, err, errlen);
	j->seed = strtoull(got, NULL, 10);
	return 0;
}

static int take_index(struct join *j, char *err, size_t errlen)
{
	uint64_t dl = deadline_after(j->o.timeout_ns);
	char k[160];
	long long v = reply_int(join_conn_cmd(&j->conn, dl, "INCR %s", run_key(j, k, sizeof(k), "joined")));

	if (v < 1)
		return join_conn_fail(&j->conn, err, errlen);
	freeReplyObject(join_conn_cmd(&j->conn, dl, "EXPIRE %s %d", k, KEY_TTL_S));
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
	n = reply_int(join_conn_cmd(&j->conn, deadline_after(timeout_ns), "GET %s", run_key(j, k, sizeof(k), "nodes")));
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

/*
 * Sample Redis TIME a few times and keep the tightest round trip: Redis
 * time then was T at the midpoint of the call.  Sets j's offset and rtt and
 * *mid_mono / *t_redis.  0, or -1 (Redis gone).
 */
static int sync_clock(struct join *j, uint64_t deadline, uint64_t *mid_mono, uint64_t *t_redis)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < TIME_SAMPLES; i++) {
		uint64_t w0 = clock_wall_ns(), t0 = clock_monotonic_ns(), t1, w1;
		redisReply *r = join_conn_cmd(&j->conn, deadline, "TIME");

		t1 = clock_monotonic_ns();
		w1 = clock_wall_ns();
		if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
			freeReplyObject(r);
			return -1;
		}
		if (t1 - t0 < best) {
			uint64_t t = strtoull(r->element[0]->str, NULL, 10) * NS_PER_SEC +
			             strtoull(r->element[1]->str, NULL, 10) * 1000;

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

	return reply_int(join_conn_cmd(&j->conn, deadline, "GET %s", key(j, k, sizeof(k), "ready")));
}

/* Node 0: wait for all N, run the leader hook, set the start instant.  -1 marks the round aborted. */
static int lead(struct join *j, uint64_t deadline, char *err, size_t errlen)
{
	char k[200], v[32];
	long long n = 0;
	uint64_t start;

	while ((n = ready_count(j, deadline)) >= 0 && n < j->nodes && clock_monotonic_ns() < deadline)
		pause_ns(POLL_READY_NS);
	if (n < 0)
		return join_conn_fail(&j->conn, err, errlen);
	if (n < j->nodes) {
		snprintf(err, errlen, "%lld of %" PRIu32 " nodes joined %s within %.0fs", n, j->nodes, j->url,
		         (double)j->o.timeout_ns / 1e9);
		freeReplyObject(join_conn_cmd(&j->conn, deadline_after(NS_PER_SEC), "SET %s %s EX %d",
		                              key(j, k, sizeof(k), "abort"), "timeout", KEY_TTL_S));
		return -1;
	}
	if (j->o.leader != NULL && j->o.leader(j->o.leader_ctx, err, errlen) != 0) {
		freeReplyObject(join_conn_cmd(&j->conn, deadline_after(NS_PER_SEC), "SET %s %s EX %d",
		                              key(j, k, sizeof(k), "abort"), "leader", KEY_TTL_S));
		return -1;
	}
	start = redis_now_ns(j) + j->o.margin_ns;
	snprintf(v, sizeof(v), "%" PRIu64, start);
	freeReplyObject(join_conn_cmd(&j->conn, deadline_after(j->o.timeout_ns), "SET %s %s NX EX %d",
	                              key(j, k, sizeof(k), "start"), v, KEY_TTL_S));
	return 0;
}

/* Every node: poll for the start instant (or the round's abort) until the deadline. */
static int await_start(struct join *j, uint64_t deadline, uint64_t *start, char *err, size_t errlen)
{
	char ks[200], ka[200];

	key(j, ks, sizeof(ks), "start");
	key(j, ka, sizeof(ka), "abort");
	for (;;) {
		redisReply *r = join_conn_cmd(&j->conn, deadline, "MGET %s %s", ks, ka);

		if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
			freeReplyObject(r);
			return join_conn_fail(&j->conn, err, errlen);
		}
		if (r->element[0]->type == REDIS_REPLY_STRING)
			*start = strtoull(r->element[0]->str, NULL, 10);
		if (r->element[1]->type == REDIS_REPLY_STRING)
			*start = 0;
		freeReplyObject(r);
		if (*start != UINT64_MAX)
			break;
		if (clock_monotonic_ns() >= deadline)
			break;
		pause_ns(POLL_START_NS);
	}
	if (*start != UINT64_MAX && *start != 0)
		return 0;
	snprintf(err, errlen, "node %" PRIu32 " of %" PRIu32 ": the run did not start: %lld of %" PRIu32
	         " nodes joined %s within %.0fs", j->node, j->nodes, ready_count(j, deadline_after(NS_PER_SEC)),
	         j->nodes, j->url, (double)j->o.timeout_ns / 1e9);
	return -1;
}

int join_ready(void *ctx, uint64_t *start_ns, char *err, size_t errlen)
{
	struct join *j = ctx;
	uint64_t deadline = deadline_after(j->o.timeout_ns), start = UINT64_MAX, mid = 0, t = 0;
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
	if (reply_int(join_conn_cmd(&j->conn, deadline, "INCR %s", key(j, k, sizeof(k), "ready"))) < 1)
		return join_conn_fail(&j->conn, err, errlen);
	freeReplyObject(join_conn_cmd(&j->conn, deadline, "EXPIRE %s %d", k, KEY_TTL_S));
	if (j->node == 0 && lead(j, deadline, err, errlen) != 0)
		return -1;
	/* the others wait a little longer than node 0, which gives up first and says why */
	if (await_start(j, deadline + (j->node ? NS_PER_SEC : 0), &start, err, errlen) != 0)
		return -1;
	j->start_redis_ns = start;
	*start_ns = start >= t ? mid + (start - t) : mid - (t - start < mid ? t - start : mid);
	return 0;
}

/* ---- results ---- */

int join_publish(struct join *j, const struct hammer_result *r, const json_t *config, char *err, size_t errlen)
{
	json_t *o = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:o,s:O?}", "node", (json_int_t)j->node,
	                      "nodes", (json_int_t)j->nodes, "clock_offset_ns", (json_int_t)j->offset_ns,
	                      "rtt_ns", (json_int_t)j->rtt_ns, "start_ns", (json_int_t)j->start_redis_ns,
	                      "began_ns", (json_int_t)(j->start_redis_ns + r->start_late_ns),
	                      "raw", result_codec_json(r), "config", config);
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL, k[200];
	redisReply *rep;
	int rc = -1;

	if (text == NULL) {
		snprintf(err, errlen, "out of memory writing the result");
		goto put;
	}
	rep = join_conn_cmd(&j->conn, deadline_after(j->o.timeout_ns), "SET %s %s EX %d",
	                    key(j, k, sizeof(k), "result:%" PRIu32, j->node), text, KEY_TTL_S);
	rc = rep != NULL && rep->type != REDIS_REPLY_ERROR ? 0 : -1;
	if (rc != 0)
		join_conn_fail(&j->conn, err, errlen);
	freeReplyObject(rep);
put:
	free(text);
	json_decref(o);
	return rc;
}

/* The states of one node's result as join_collect waits for it. */
enum node_state { NODE_WAITING, NODE_IN, NODE_GONE, NODE_NEVER, NODE_LATE };

struct collect {
	json_t **res;                  /* node i's result object, or NULL */
	enum node_state *state;
	uint32_t pending;              /* nodes still NODE_WAITING */
};

/* Read node i's result if it is there: NODE_IN, or NODE_WAITING; -1 when Redis is gone or it does not parse. */
static int fetch_result(struct join *j, struct collect *c, uint32_t i, uint64_t deadline, char *err, size_t errlen)
{
	char k[200];
	redisReply *r = join_conn_cmd(&j->conn, deadline, "GET %s", key(j, k, sizeof(k), "result:%" PRIu32, i));
	json_error_t je;

	if (r == NULL)
		return join_conn_fail(&j->conn, err, errlen);
	if (r->type == REDIS_REPLY_STRING) {
		c->res[i] = json_loadb(r->str, r->len, 0, &je);
		if (!json_is_object(c->res[i]) || !json_is_object(json_object_get(c->res[i], "raw"))) {
			snprintf(err, errlen, "%s: node %" PRIu32 "'s result does not read (%s)", j->url, i, je.text);
			freeReplyObject(r);
			return -1;
		}
		c->state[i] = NODE_IN;
		c->pending--;
	}
	freeReplyObject(r);
	return 0;
}

/* A node with no result and no heartbeat will send none: it never joined, or it stopped. */
static void mark_gone(struct join *j, struct collect *c, uint64_t deadline)
{
	char k[200], alive[160];
	long long joined = reply_int(join_conn_cmd(&j->conn, deadline, "GET %s", run_key(j, k, sizeof(k), "joined")));

	for (uint32_t i = 0; i < j->nodes; i++) {
		if (c->state[i] != NODE_WAITING)
			continue;
		snprintf(alive, sizeof(alive), "%salive:%" PRIu32, j->base, i);
		if (reply_int(join_conn_cmd(&j->conn, deadline, "EXISTS %s", alive)) == 1)
			continue;
		c->state[i] = (long long)i >= joined ? NODE_NEVER : NODE_GONE;
		c->pending--;
	}
}

/* Wait for the results: every node in, gone, or the deadline. */
static int gather(struct join *j, struct collect *c, char *err, size_t errlen)
{
	uint64_t deadline = deadline_after(j->o.timeout_ns);

	for (;;) {
		for (uint32_t i = 0; i < j->nodes; i++)
			if (c->state[i] == NODE_WAITING && fetch_result(j, c, i, deadline, err, errlen) != 0)
				return -1;
		if (c->pending > 0)
			mark_gone(j, c, deadline);
		if (c->pending == 0)
			return 0;
		if (clock_monotonic_ns() >= deadline)
			break;
		pause_ns(POLL_RESULTS_NS);
	}
	for (uint32_t i = 0; i < j->nodes; i++)
		if (c->state[i] == NODE_WAITING)
			c->state[i] = NODE_LATE;
	return 0;
}

static int64_t jint(const json_t *o, const char *k)
{
	return (int64_t)json_integer_value(json_object_get(o, k));
}

static void note_missing(struct join *j, const struct collect *c, struct join_summary *s)
{
	static const char *const why[] = {
		[NODE_GONE] = "stopped without a result (killed or crashed mid-run?)",
		[NODE_NEVER] = "never joined",
		[NODE_LATE] = "sent no result in time (still running?)",
	};
	size_t n = 0;

	for (uint32_t i = 0; i < j->nodes; i++)
		if (c->state[i] != NODE_IN && n < sizeof(s->missing))
			n += (size_t)snprintf(s->missing + n, sizeof(s->missing) - n, "%snode %" PRIu32 " of %" PRIu32 " %s",
			                      n ? "\n" : "", i, j->nodes, why[c->state[i]]);
}

/* Spread, offsets and the "join" JSON of the results that came in. */
static void summarize(struct join *j, const struct collect *c, struct join_summary *s)
{
	int64_t first = INT64_MAX, last = INT64_MIN;
	json_t *per = json_array(), *missing = json_array();

	for (uint32_t i = 0; i < j->nodes; i++) {
		const json_t *o = c->res[i];
		int64_t off;

		if (c->state[i] != NODE_IN) {
			json_array_append_new(missing, json_integer(i));
			continue;
		}
		if (s->config == NULL && json_is_object(json_object_get(o, "config")))
			s->config = json_object_get(o, "config");
		off = jint(o, "clock_offset_ns");
		first = jint(o, "began_ns") < first ? jint(o, "began_ns") : first;
		last = jint(o, "began_ns") > last ? jint(o, "began_ns") : last;
		if ((double)(off < 0 ? -off : off) / 1e6 > s->max_offset_ms)
			s->max_offset_ms = (double)(off < 0 ? -off : off) / 1e6;
		s->merged++;
		json_array_append_new(per, json_pack("{s:I,s:f,s:f,s:f}", "node", (json_int_t)i,
		                      "clock_offset_ms", (double)off / 1e6, "rtt_ms", (double)jint(o, "rtt_ns") / 1e6,
		                      "start_late_ms", (double)(jint(o, "began_ns") - jint(o, "start_ns")) / 1e6));
	}
	s->start_spread_ms = s->merged > 0 ? (double)(last - first) / 1e6 : 0;
	s->complete = s->merged == j->nodes;
	note_missing(j, c, s);
	s->json = json_pack("{s:s,s:I,s:I,s:b,s:o,s:f,s:f,s:o}", "run", j->url, "nodes", (json_int_t)j->nodes,
	                    "merged", (json_int_t)s->merged, "complete", s->complete, "missing", missing,
	                    "start_spread_ms", s->start_spread_ms, "max_clock_offset_ms", s->max_offset_ms,
	                    "per_node", per);
}

/* Add every result that came in into dst, set up with the first one's interval. */
static int merge_in(struct join *j, const struct collect *c, struct hammer_result *dst, char *err, size_t errlen)
{
	uint64_t interval = 0;

	for (uint32_t i = 0; i < j->nodes && interval == 0; i++)
		if (c->state[i] == NODE_IN)
			interval = result_codec_interval_ns(json_object_get(c->res[i], "raw"));
	if (hammer_result_init(dst, interval ? interval : 100 * NS_PER_MS) != 0) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (uint32_t i = 0; i < j->nodes; i++) {
		char why[256];

		if (c->state[i] == NODE_IN &&
		    result_codec_add(dst, json_object_get(c->res[i], "raw"), 0, why, sizeof(why)) != 0) {
			snprintf(err, errlen, "%s: node %" PRIu32 ": %s", j->url, i, why);
			return -1;
		}
	}
	return 0;
}

int join_collect(struct join *j, struct hammer_result *dst, struct join_summary *s, char *err, size_t errlen)
{
	struct collect c = { calloc(j->nodes, sizeof(*c.res)), calloc(j->nodes, sizeof(*c.state)), j->nodes };
	int rc = -1;

	memset(s, 0, sizeof(*s));
	memset(dst, 0, sizeof(*dst));
	s->nodes = j->nodes;
	if (c.res == NULL || c.state == NULL) {
		snprintf(err, errlen, "out of memory");
		goto free_c;
	}
	if (gather(j, &c, err, errlen) != 0 || merge_in(j, &c, dst, err, errlen) != 0)
		goto keep;
	summarize(j, &c, s);
	rc = 0;
keep:
	/* dst's URLs point into the results: they stay with the join */
	json_decref(j->kept);
	j->kept = json_array();
	for (uint32_t i = 0; i < j->nodes; i++)
		if (c.res[i] != NULL)
			json_array_append_new(j->kept, c.res[i]);
free_c:
	free(c.res);
	free(c.state);
	return rc;
}

void join_summary_destroy(struct join_summary *s)
{
	json_decref(s->json);
	s->json = NULL;
}

void join_summary_line(const struct join_summary *s, char *buf, size_t len)
{
	char merged[48] = "";

	if (!s->complete)
		snprintf(merged, sizeof(merged), " (%" PRIu32 " merged, the result is incomplete)", s->merged);
	snprintf(buf, len, "%" PRIu32 " nodes%s, start spread %.1f ms, max clock offset %.1f ms", s->nodes, merged,
	         s->start_spread_ms, s->max_offset_ms);
}
