#ifndef RATELAB_JOIN_H
#define RATELAB_JOIN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hammer/engine.h"

/*
 * Hammers on several machines as one run, through Redis: no control plane
 * of its own.  Each process joins redis://HOST:PORT/RUNID and takes a node
 * index (INCR), every node waits until N are ready, the first node sets a
 * start instant a little in the future in Redis time, and each node maps it
 * onto its own monotonic clock through TIME (its offset to Redis corrected
 * by half the round trip).  The engine slices the work (hammer/engine.h,
 * cfg.node and cfg.nodes); each node writes its result in mergeable form
 * (hammer/result_codec.h) and keeps a heartbeat key alive while it runs, so
 * the merge can tell a node that died from one still at work.
 *
 * Every Redis command has a timeout and every wait on the other nodes a
 * bound; a lost connection is retried with jittered backoff until then.
 * Keys live under ratelab:join:RUNID: and expire after a day.  A join is
 * owned by one thread, apart from its own heartbeat thread.
 */

#define JOIN_RUN_MAX 64        /* bytes of a RUNID: letters, digits, '.', '_', '-' */
/* The start instant is this long after the last node is ready: room for a Redis round trip on a
 * busy machine or a Wi-Fi link, and for every node's threads to start. */
#define JOIN_START_MARGIN_NS (1000ULL * 1000 * 1000)
#define JOIN_NODES_MAX 1000

struct join;

struct join_opts {
	const char *url;           /* redis://HOST[:PORT]/RUNID */
	uint32_t nodes;            /* N: nodes in the run */
	uint64_t timeout_ns;       /* the bound of every wait on the other nodes */
	uint64_t margin_ns;        /* the start instant this long after the last node is ready */
	const char *settings;      /* the run's settings as one line; every node must give the same */
	uint64_t seed;             /* this node's seed; the run uses the first node's */
	/* Called on node 0 once every node is ready, before the start is set (herd: POST /reset). */
	int (*leader)(void *ctx, char *err, size_t errlen);
	void *leader_ctx;
};

/* Split redis://HOST[:PORT]/RUNID; 0, or -1 with a reason in why (for `ratelab CMD: --join ...`). */
int join_parse_url(const char *url, char *host, size_t hostlen, int *port, char *run, size_t runlen,
                   char *why, size_t wl);

/*
 * Join the run: connect, check that the run's N and settings are this
 * node's, take a node index, start the heartbeat.  NULL with a one-line
 * reason in err (Redis unreachable, the run full or set up otherwise).
 */
struct join *join_new(const struct join_opts *o, char *err, size_t errlen);

/*
 * Open a run to read its results only (`ratelab merge redis://...`): no
 * index, no heartbeat; N is the run's.  NULL with a reason in err.
 */
struct join *join_open(const char *url, uint64_t timeout_ns, char *err, size_t errlen);

void join_free(struct join *j);

uint32_t join_node(const struct join *j);
uint32_t join_nodes(const struct join *j);
/* The run's seed: the first node's. */
uint64_t join_seed(const struct join *j);
/* "redis://HOST:PORT/RUNID", for messages. */
const char *join_url(const struct join *j);

/*
 * Name the next round of a run that starts several times (herd: one round
 * per policy): its start, results and readiness are kept apart.  The round
 * of a new join is "" (a hammer run has just that one).
 */
void join_round(struct join *j, const char *name);

/*
 * The engine's ready hook (hammer_config.ready, ctx the join): tell the run
 * this node is ready, wait (bounded) for all N and the start instant, and
 * measure the clock offset to Redis.  Sets *start_ns on CLOCK_MONOTONIC.
 * -1 with a one-line reason (how many nodes joined, Redis gone).
 */
int join_ready(void *ctx, uint64_t *start_ns, char *err, size_t errlen);

/*
 * Write this node's result of the current round to Redis, with the run's
 * config (report_config_json; borrowed, may be NULL).  0, or -1 with a
 * reason in err.
 */
int join_publish(struct join *j, const struct hammer_result *r, const json_t *config, char *err, size_t errlen);

/* What a merge of the nodes' results found. */
struct join_summary {
	uint32_t nodes;            /* N */
	uint32_t merged;           /* results merged */
	bool complete;             /* every node's result is in */
	double start_spread_ms;    /* latest minus earliest actual start, in Redis time */
	double max_offset_ms;      /* the largest clock offset to Redis, either sign */
	char missing[512];         /* one line per node without a result ("node 2 of 4: ..."), or "" */
	json_t *json;              /* the "join" object of --json (owned by the summary) */
	const json_t *config;      /* the first merged node's config (report_info_from_json), or NULL */
};

/*
 * Wait (bounded: while a node's heartbeat lives, at most the timeout) for
 * every node's result of the current round and add them into dst
 * (initialised with the run's interval).  Fills s; free it with
 * join_summary_destroy.  A result that does not read (not JSON, over the
 * bounds of result_codec.h, a count out of range) is left out like a node
 * that sent none, and named in s->missing.  0, or -1 with a reason in err
 * (Redis gone).  The URLs dst takes point into results kept by the join:
 * use dst before join_free.
 */
int join_collect(struct join *j, struct hammer_result *dst, struct join_summary *s, char *err, size_t errlen);
void join_summary_destroy(struct join_summary *s);

/* The summary's line: "4 nodes, start spread 1.2 ms, max clock offset 0.3 ms". */
void join_summary_line(const struct join_summary *s, char *buf, size_t len);

#endif
