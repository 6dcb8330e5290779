#ifndef RATELAB_STORE_REDIS_H
#define RATELAB_STORE_REDIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/cli.h"
#include "server/limit/limiter.h"
#include "server/store/store.h"

/*
 * The Redis-backed store: every decision is one atomic Lua script on a shared
 * Redis (redis_scripts.h), so several `ratelab serve` replicas enforce one
 * limit.  Each calling thread gets its own connection (created lazily), every
 * command has a timeout, and a lost connection is retried with jittered
 * exponential backoff, never blocking a thread for longer than the timeout.
 *
 * The server decides through submit (store.h) instead: HTTP threads queue
 * decisions and one pipeline thread per store sends all that is queued in one
 * write on its own connection and reads the replies in order, so many
 * requests in flight share few round trips and no HTTP thread waits on Redis.
 * Same timeout, backoff, NOSCRIPT fallback, failure mode and error counting
 * (one error per failed decision).  quiesce answers everything queued.
 *
 * release (a concurrency slot) is queued on the same pipeline with nothing to
 * call back, so it reaches Redis after every decision submitted before it and
 * before every one submitted after it; a synchronous decide on a store whose
 * limiter releases (concurrency) first waits until the releases queued before
 * it are through.  Once quiesce has closed the pipeline, release calls Redis
 * on the calling thread instead.  A release that fails is counted and lost; the
 * slot comes back when its lease (lease_ns) runs out.
 */

#define STORE_REDIS_DEFAULT_PREFIX  "ratelab:"
#define STORE_REDIS_DEFAULT_TIMEOUT (50ULL * 1000000ULL)       /* 50 ms */
#define STORE_REDIS_DEFAULT_LEASE   (60ULL * 1000000000ULL)    /* 60 s */

struct store_redis_options {
	const char *url;        /* redis://HOST:PORT[/DB] (copied) */
	const char *prefix;     /* key namespace, NULL for STORE_REDIS_DEFAULT_PREFIX (copied) */
	uint64_t timeout_ns;    /* connect and command timeout, 0 for the default */
	uint64_t lease_ns;      /* concurrency slot lease, 0 for the default */
	bool fail_closed;       /* Redis unreachable: false admits (open), true makes decide fail (503) */
	bool caller_clock;      /* decide with the caller's `now` instead of Redis TIME (tests, replays) */
	bool quiet;             /* no outage log lines on stderr (tests) */
	uint64_t seed;          /* jitter of the reconnect backoff */
};

/* Fill *o with the defaults (url NULL, fail open, Redis TIME clock). */
void store_redis_options_init(struct store_redis_options *o);

/*
 * Split a redis://HOST:PORT[/DB] URL (PORT defaults to 6379, DB to 0).
 * Returns 0, or -1 with a one-line reason naming the URL in err.
 */
int store_redis_parse_url(const char *url, char *host, size_t hostlen, int *port, int *db,
                          char *err, size_t errlen);

/* Parse --store-failure: "open" or "closed".  Returns 0, or -1 with a reason in err. */
int store_redis_parse_failure(const char *s, bool *fail_closed, char *err, size_t errlen);

/*
 * A store whose state lives in Redis.  The limiter ops and params are copied.
 * The URL is checked here but Redis need not be up yet: a first connection is
 * tried, and when it fails the store still comes up (one log line) and applies
 * the failure mode until Redis answers.  Returns NULL (reason in err) on a bad
 * URL, a limiter without a script, or allocation failure.  decide/release/stats
 * are thread-safe; free only after every calling thread has stopped using it.
 *
 * decide: returns 0 with the decision; when Redis cannot answer it counts an
 * error and either admits (fail open, d->admitted with remaining = limit) and
 * returns 0, or returns -1 (fail closed: the HTTP layer answers 503).
 */
struct store *store_redis_new(const struct limiter_ops *ops, const struct limiter_params *p,
                              const struct store_redis_options *o, char *err, size_t errlen);

/*
 * `ratelab serve --store/--store-prefix/--store-failure`: the options, and
 * how many stores (routes) were made so far, so that route N > 0 keeps its
 * keys under PREFIX "rN:" and two routes never share state.
 */
struct store_redis_cli {
	struct store_redis_options o;  /* o.url NULL: no --store, the memory store */
	unsigned routes;
};

/* No --store given: the memory store, Redis options at their defaults. */
void store_redis_cli_init(struct store_redis_cli *c);

/*
 * The flag table over a struct store_redis_cli (common/cli.h): --store
 * URL|memory, --store-prefix P, --store-failure open|closed, --store-timeout
 * DUR.  The options point into argv.
 */
extern const struct cli_option store_redis_cli_options[];

/*
 * A server_store_fn (server/server.h): ctx is a struct store_redis_cli.
 * Called once per route, in route order, from one thread.  max_keys is unused
 * (Redis memory is bounded by the keys' TTLs).
 */
struct store *store_redis_cli_store(void *ctx, const struct limiter_ops *ops, const struct limiter_params *p,
                                    size_t max_keys, char *err, size_t errlen);

#endif
