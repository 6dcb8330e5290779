/* The nodes' results of a joined run: publish, collect, merge and sum up (join.h). */
#include "hammer/join.h"

#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "hammer/join_conn.h"
#include "hammer/join_impl.h"
#include "hammer/report.h"
#include "hammer/result_codec.h"
#include "hammer/result_text.h"

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
	rep = join_conn_cmd(&j->conn, join_deadline_after(j->o.timeout_ns), "SET %s %s EX %d",
	                    join_key(j, k, sizeof(k), "result:%" PRIu32, j->node), text, JOIN_KEY_TTL_S);
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
enum node_state { NODE_WAITING, NODE_IN, NODE_GONE, NODE_NEVER, NODE_LATE, NODE_CORRUPT };

#define WHY_LEN 120
#define JOIN_READ_CHUNK ((size_t)256 << 10)   /* a result is read from Redis in pieces of 256 KiB */

struct collect {
	json_t **res;                  /* node i's result object (once merged, what is kept of it), or NULL */
	enum node_state *state;
	char (*why)[WHY_LEN];          /* why node i's result is NODE_CORRUPT */
	uint32_t pending;              /* nodes still NODE_WAITING */
	struct hammer_result *dst;     /* the results merged so far */
	bool ready;                    /* dst is set up (with the first merged result's interval) */
	bool have_config;              /* a result kept its config (the others dropped theirs) */
};

/* Node i's result is in Redis but does not read: it counts as missing, with why. */
static void corrupt(struct collect *c, uint32_t i, const char *why)
{
	snprintf(c->why[i], WHY_LEN, "%s", why);
	json_decref(c->res[i]);
	c->res[i] = NULL;
	c->state[i] = NODE_CORRUPT;
	c->pending--;
}

/* An integer member from lo to hi; false when absent or out of range. */
static bool member_in(const json_t *o, const char *k, json_int_t lo, json_int_t hi)
{
	const json_t *v = json_object_get(o, k);

	return json_is_integer(v) && json_integer_value(v) >= lo && json_integer_value(v) <= hi;
}

/* The members summarize reads, in range for its sums; the raw counts are checked when merged. */
static bool envelope_ok(const json_t *o, uint32_t i)
{
	json_int_t ns = (json_int_t)RESULT_CODEC_MAX_NS;

	return member_in(o, "node", i, i) && member_in(o, "nodes", 1, JOIN_NODES_MAX) &&
	       member_in(o, "clock_offset_ns", -ns, ns) && member_in(o, "rtt_ns", 0, ns) &&
	       member_in(o, "start_ns", 0, INT64_MAX / 2) &&
	       member_in(o, "began_ns", json_integer_value(json_object_get(o, "start_ns")),
	                 json_integer_value(json_object_get(o, "start_ns")) + ns) &&
	       json_is_object(json_object_get(o, "raw"));
}

/*
 * Once node i's result is merged, keep only what dst and the summary point
 * into: the server URLs dst took from it, the envelope's numbers and what
 * the report reads of the first config (report_config_kept).  Whatever else
 * a result holds is dropped, so that memory does not grow with the nodes.
 * Out of memory: the whole result stays.
 */
static void keep_what_is_used(struct collect *c, uint32_t i)
{
	static const char *const numbers[] = { "clock_offset_ns", "rtt_ns", "start_ns", "began_ns" };
	const json_t *config = json_object_get(c->res[i], "config");
	json_t *keep = json_pack("{s:o}", "urls", result_codec_kept(json_object_get(c->res[i], "raw"), c->dst));

	for (size_t k = 0; keep != NULL && k < sizeof(numbers) / sizeof(numbers[0]); k++)
		json_object_set(keep, numbers[k], json_object_get(c->res[i], numbers[k]));
	if (keep != NULL && !c->have_config && json_is_object(config)) {
		json_object_set_new(keep, "config", report_config_kept(config));
		c->have_config = true;
	}
	if (keep == NULL || json_object_size(keep) < 1 + sizeof(numbers) / sizeof(numbers[0])) {
		json_decref(keep);
		return;
	}
	json_decref(c->res[i]);
	c->res[i] = keep;
}

/*
 * Merge node i's result into c->dst as soon as it is read, set up with the
 * interval of the first one that reads, and keep only what is used of it:
 * only one result is whole in memory at a time, whatever N.
 * One that does not read (a count out of range, another interval) is
 * marked corrupt and leaves dst untouched.  -1 only when out of memory.
 */
static int take_in(struct collect *c, uint32_t i, char *err, size_t errlen)
{
	json_t *raw = json_object_get(c->res[i], "raw");
	uint64_t interval = result_codec_interval_ns(raw);
	char why[WHY_LEN] = "raw result: timeline interval";

	if (!c->ready && interval != 0 && hammer_result_init(c->dst, interval) != 0)
		return snprintf(err, errlen, "out of memory"), -1;
	if (interval == 0 || result_codec_add(c->dst, raw, 0, why, sizeof(why)) != 0) {
		if (!c->ready && interval != 0)
			hammer_result_destroy(c->dst);
		corrupt(c, i, why);
		return 0;
	}
	c->ready = true;
	keep_what_is_used(c, i);
	c->state[i] = NODE_IN;
	c->pending--;
	return 0;
}

/*
 * The len bytes of the string at key k (len at most the bound), read in
 * pieces of JOIN_READ_CHUNK so that hiredis never holds more than a piece,
 * squeezed as result_text_add does: a new malloc'd buffer with its
 * length in *got.  NULL with *gone set when Redis is gone, or without it
 * when the key is no string (why says so) or memory ran out.
 */
static char *read_value(struct join *j, const char *k, size_t len, uint64_t deadline, size_t *got, bool *gone,
                        char *why, size_t wl)
{
	struct result_text t = { malloc(len > 0 ? len : 1), 0, false, false, false };
	size_t raw = 0;

	*gone = false;
	if (t.buf == NULL)
		return snprintf(why, wl, "out of memory"), NULL;
	while (raw < len) {
		size_t want = len - raw < JOIN_READ_CHUNK ? len - raw : JOIN_READ_CHUNK;
		redisReply *r = join_conn_cmd(&j->conn, deadline, "GETRANGE %s %llu %llu", k, (unsigned long long)raw,
		                               (unsigned long long)(raw + want - 1));
		bool shrank;

		if (r == NULL || r->type != REDIS_REPLY_STRING || r->len > want) {
			*gone = r == NULL;
			snprintf(why, wl, "its key is not a string");
			freeReplyObject(r);
			free(t.buf);
			return NULL;
		}
		result_text_add(&t, r->str, r->len);
		raw += r->len;
		shrank = r->len < want;
		freeReplyObject(r);
		if (shrank)
			break;
	}
	*got = t.len;
	return t.buf;
}

/*
 * Read node i's result if it is there: NODE_IN, NODE_CORRUPT, or still
 * NODE_WAITING.  Its length is asked first and at most the bound is read.
 * -1 only when Redis is gone.
 */
static int fetch_result(struct join *j, struct collect *c, uint32_t i, uint64_t deadline, char *err, size_t errlen)
{
	char k[200], why[WHY_LEN];
	redisReply *r;
	long long len;
	size_t got;
	bool gone;
	char *text;

	join_key(j, k, sizeof(k), "result:%" PRIu32, i);
	r = join_conn_cmd(&j->conn, deadline, "STRLEN %s", k);
	if (r == NULL)
		return join_conn_fail(&j->conn, err, errlen);
	len = r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
	freeReplyObject(r);
	if (len == 0)
		return 0;
	if (len < 0 || len > RESULT_TEXT_MAX_BYTES) {
		corrupt(c, i, len < 0 ? "its key is not a string" : "it is larger than the bound");
		return 0;
	}
	/* the value may change after STRLEN: still no more than len bytes are read */
	text = read_value(j, k, (size_t)len, deadline, &got, &gone, why, sizeof(why));
	if (text == NULL && gone)
		return join_conn_fail(&j->conn, err, errlen);
	c->res[i] = text != NULL ? result_text_parse(text, got, why, sizeof(why)) : NULL;
	free(text);
	if (c->res[i] == NULL)
		corrupt(c, i, why);
	else if (!envelope_ok(c->res[i], i))
		corrupt(c, i, "a member is missing or out of range");
	else
		return take_in(c, i, err, errlen);
	return 0;
}

/* Does node i's heartbeat key live?  An error reads as yes: the deadline decides then. */
static bool heartbeat_lives(struct join *j, uint32_t i, uint64_t deadline)
{
	char alive[160];

	return join_reply_int(join_conn_cmd(&j->conn, deadline, "EXISTS %s", join_alive_key(j, i, alive, sizeof(alive)))) != 0;
}

/*
 * Look at node i once: its heartbeat first, then its result.  A node writes
 * its result before it ends its heartbeat, so a heartbeat already gone and
 * still no result means it will send none: it never joined, or it stopped.
 * (Read the other way round, a node that published and ended between the two
 * reads would be called gone with its result in Redis.)
 */
static int look_at(struct join *j, struct collect *c, uint32_t i, long long joined, uint64_t deadline, char *err,
                   size_t errlen)
{
	bool lives = heartbeat_lives(j, i, deadline);

	if (fetch_result(j, c, i, deadline, err, errlen) != 0)
		return -1;
	if (c->state[i] == NODE_WAITING && !lives) {
		c->state[i] = (long long)i >= joined ? NODE_NEVER : NODE_GONE;
		c->pending--;
	}
	return 0;
}

/* Wait for the results: every node in, gone, or the deadline. */
static int gather(struct join *j, struct collect *c, char *err, size_t errlen)
{
	uint64_t deadline = join_deadline_after(j->o.timeout_ns);
	char k[200];

	for (;;) {
		long long joined = join_reply_int(join_conn_cmd(&j->conn, deadline, "GET %s",
		                                                join_run_key(j, k, sizeof(k), "joined")));

		for (uint32_t i = 0; i < j->nodes; i++)
			if (c->state[i] == NODE_WAITING && look_at(j, c, i, joined, deadline, err, errlen) != 0)
				return -1;
		if (c->pending == 0)
			return 0;
		if (clock_monotonic_ns() >= deadline)
			break;
		join_pause_ns(JOIN_POLL_RESULTS_NS);
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
		[NODE_CORRUPT] = "wrote a result that does not read: ",
	};
	size_t n = 0;

	for (uint32_t i = 0; i < j->nodes; i++)
		if (c->state[i] != NODE_IN && n < sizeof(s->missing))
			n += (size_t)snprintf(s->missing + n, sizeof(s->missing) - n, "%snode %" PRIu32 " of %" PRIu32
			                      " %s%s", n ? "\n" : "", i, j->nodes, why[c->state[i]],
			                      c->state[i] == NODE_CORRUPT ? c->why[i] : "");
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

int join_collect(struct join *j, struct hammer_result *dst, struct join_summary *s, char *err, size_t errlen)
{
	struct collect c = { calloc(j->nodes, sizeof(*c.res)), calloc(j->nodes, sizeof(*c.state)),
	                     calloc(j->nodes, sizeof(*c.why)), j->nodes, dst, false, false };
	int rc = -1;

	memset(s, 0, sizeof(*s));
	memset(dst, 0, sizeof(*dst));
	s->nodes = j->nodes;
	result_text_malloc_tune();
	if (c.res == NULL || c.state == NULL || c.why == NULL) {
		snprintf(err, errlen, "out of memory");
		goto free_c;
	}
	if (gather(j, &c, err, errlen) != 0)
		goto keep;
	if (!c.ready && hammer_result_init(dst, 100 * NS_PER_MS) != 0) {
		snprintf(err, errlen, "out of memory");
		goto keep;
	}
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
	free(c.why);
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
