#ifndef RATELAB_STORE_REDIS_IMPL_H
#define RATELAB_STORE_REDIS_IMPL_H

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/prng.h"
#include "server/store/redis_scripts.h"
#include "server/store/store_redis.h"

/*
 * The Redis store's state, shared by its parts: store_redis.c (set-up and
 * the store ops), redis_conn.c (connections and outage accounting),
 * redis_call.c (one script call) and redis_pipe.c (the pipeline thread).
 * Private to server/store/.
 */

#define STORE_REDIS_KEY_MAX     1024
#define STORE_REDIS_NPARAM_MAX  (REDIS_SCRIPTS_FIXED_ARGS + 2 * LIMITER_MAX_LAYERS)
#define STORE_REDIS_CORRUPT_LOGS 10

/* One connection: a thread's own (redis_conn_get), or the pipeline's. */
struct redis_conn {
	redisContext *c;
	struct store_redis *owner;
	struct redis_conn *prev, *next;
	uint64_t retry_at;    /* monotonic ns before which no reconnect is tried */
	uint64_t backoff_ns;
	struct prng rng;
};

struct redis_pipe;

struct store_redis {
	struct store base;
	struct redis_pipe *pipe;        /* the decisions queued by submit, and their thread */
	const struct limiter_ops *lops;
	struct limiter_params p;
	struct store_redis_options o;
	char *script;                   /* the Lua source (redis_scripts_source), owned */
	char host[256];
	int port, db;
	char prefix[128];
	char key_prefix[256];           /* prefix .. limiter name .. ":" */
	size_t key_prefix_len;
	char owner[32];                 /* this replica's id in concurrency leases */
	char params[STORE_REDIS_NPARAM_MAX][24];  /* the limiter params as script arguments */
	size_t nparams;
	pthread_key_t tls;
	pthread_mutex_t lock;           /* conns list and sha */
	struct redis_conn *conns;
	char sha[48];
	atomic_bool have_sha;
	atomic_bool down;
	atomic_uint_fast64_t errors;
	atomic_uint_fast64_t corrupt;   /* keys found corrupt and reset */
	atomic_uint_fast64_t outage_errors;
	atomic_uint_fast64_t seq;
};

#endif
