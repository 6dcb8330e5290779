#ifndef RATELAB_JOIN_IMPL_H
#define RATELAB_JOIN_IMPL_H

/*
 * Inside the join (join.c: the URL, joining, the heartbeat and the start;
 * join_collect.c: publishing, collecting and summing up the nodes'
 * results).  Not an interface: only those two files include it.
 */
#include <hiredis/hiredis.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/clock.h"
#include "hammer/join.h"
#include "hammer/join_conn.h"

#define JOIN_KEY_TTL_S 86400
#define JOIN_POLL_RESULTS_NS (50 * NS_PER_MS)

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

/* The key base + round + ":" + what (what printf-formatted) in buf; returns buf. */
const char *join_key(const struct join *j, char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* The run-wide key (no round) base + what in buf; returns buf. */
const char *join_run_key(const struct join *j, char *buf, size_t len, const char *what);

/* Node's heartbeat key (run-wide: base + "alive:" + node) in buf; returns buf. */
const char *join_alive_key(const struct join *j, uint32_t node, char *buf, size_t len);

/* The integer or integer-string value of r; -1 for nil or anything else.  Frees r. */
long long join_reply_int(redisReply *r);

/* r is a decimal string of at most 19 digits: its value into *v.  Does not free r. */
bool join_reply_u64(const redisReply *r, uint64_t *v);

/* The string of r copied into buf ("" for nil); false when r is NULL or an error.  Frees r. */
bool join_reply_str(redisReply *r, char *buf, size_t len);

/* CLOCK_MONOTONIC now plus ns. */
uint64_t join_deadline_after(uint64_t ns);

/* Sleep ns (the poll between two looks at Redis). */
void join_pause_ns(uint64_t ns);

#endif
