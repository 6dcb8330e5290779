#ifndef RATELAB_JOIN_CONN_H
#define RATELAB_JOIN_CONN_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

#include "common/prng.h"

/*
 * One connection to the Redis a joined run meets in (hammer/join.h): every
 * command has a timeout, and a command whose connection broke is sent again
 * on a new one, after a jittered backoff, until the caller's deadline.  Not
 * thread-safe: one per thread.
 */
struct join_conn {
	redisContext *c;           /* NULL: not connected */
	char host[256];
	int port;
	uint64_t timeout_ns;       /* of one command (and of a connect) */
	uint64_t backoff_ns;       /* the next wait before reconnecting */
	struct prng rng;           /* the backoff's jitter */
	char why[160];             /* why the last command or connect failed */
};

/*
 * Connect to host:port, each command bounded by min(timeout_ns, 2 s).
 * 0, or -1 with "cannot reach Redis at HOST:PORT (why)" in err.
 */
int join_conn_open(struct join_conn *c, const char *host, int port, uint64_t timeout_ns, uint64_t seed,
                   char *err, size_t errlen);

/*
 * Send a command (hiredis format) and return its reply (the caller frees
 * it; an error reply is a reply), reconnecting with backoff until deadline
 * (CLOCK_MONOTONIC).  NULL when Redis stayed unreachable: c->why says why.
 */
redisReply *join_conn_cmd(struct join_conn *c, uint64_t deadline, const char *fmt, ...);

/* Write "Redis at HOST:PORT stopped answering (why)" into err; returns -1. */
int join_conn_fail(const struct join_conn *c, char *err, size_t errlen);

/* Close it (no-op when closed). */
void join_conn_close(struct join_conn *c);

#endif
