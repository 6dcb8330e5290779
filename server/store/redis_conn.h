#ifndef RATELAB_REDIS_CONN_H
#define RATELAB_REDIS_CONN_H

#include <stdbool.h>

#include "server/store/store_redis_impl.h"

/*
 * The Redis store's connections: one per calling thread (created lazily,
 * freed when the thread ends), each with a command timeout and a jittered
 * exponential backoff after a failure; and the outage accounting, one log
 * line when Redis goes away and one when it is back.
 */

/* Count a failed decision (why: the reason for the outage's log line).  Thread-safe. */
void redis_conn_note_failure(struct store_redis *s, const char *why);

/*
 * The script found key's state corrupt and reset it: counted (store_stats
 * .corrupt) and logged as corrupt, not as an outage (the first
 * STORE_REDIS_CORRUPT_LOGS keys by name, then every 1000th).  Thread-safe.
 */
void redis_conn_note_corrupt(struct store_redis *s, const char *key);

/* A command succeeded: end an outage (its closing log line).  Thread-safe. */
void redis_conn_note_success(struct store_redis *s);

/* Close c after a failure and set when the next connect may be tried (backoff with jitter). */
void redis_conn_drop(struct redis_conn *c);

/* The thread-exit destructor of a thread's connection (pthread_key_create). */
void redis_conn_destroy(void *arg);

/* This thread's connection to s (made on first use, not yet connected); NULL when out of memory. */
struct redis_conn *redis_conn_get(struct store_redis *s);

/*
 * Connect c if it is down and its backoff is over, selecting the DB and
 * loading the script.  0 when usable; -1 with *why the reason, or NULL when
 * the failure was already counted.
 */
int redis_conn_ready(struct store_redis *s, struct redis_conn *c, const char **why);

/* True for a reply that is not an error; frees the reply (NULL: false). */
bool redis_conn_reply_ok(redisReply *r);

#endif
