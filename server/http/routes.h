#ifndef RATELAB_ROUTES_H
#define RATELAB_ROUTES_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

#include "server/http/client_key.h"
#include "server/http/lifecycle.h"
#include "server/http/headers.h"
#include "server/limit/limiter.h"
#include "server/server.h"
#include "server/stats.h"
#include "server/store/store.h"

/*
 * The limited routes of a server at run time: each route's limiter, its
 * store and what its answers say, and the matching of a path to the route
 * with the longest prefix.  Set up once before the daemon starts, then read
 * by every server thread (the stores lock themselves).
 */

struct route {
	const char *prefix;          /* points into the server's config, as written there */
	char match[CONFIG_PREFIX_LEN + 2];  /* the prefix normalised (path.h): what paths are matched on */
	size_t match_len;
	const char *limiter;
	const struct limiter_ops *ops;
	struct limiter_params params;
	bool releases;               /* the limiter gives slots back when a request ends */
	enum config_key key;
	const char *key_header;
	unsigned v6_prefix;          /* --key ip: an IPv6 client is keyed by this prefix (client_key.h) */
	struct store *store;
	bool stateless;              /* a stateless limiter on the memory store: decide without a key */
	bool async;                  /* the store queues decisions (Redis): suspend while it works */
	char policy[HEADERS_POLICY_LEN];
	char key_name[CONFIG_HEADER_LEN + 8];   /* "global", "ip" or "header:NAME" */
	struct backend *backend;     /* --capacity: the modelled backend behind the limiter; NULL: none */
};

struct routes {
	struct route r[SERVER_MAX_ROUTES];
	size_t n;
	size_t order[SERVER_MAX_ROUTES];   /* indexes into r, longest prefix first */
};

/*
 * Set up the routes of cfg into rs (which starts zeroed): check each
 * limiter's params and make its store (cfg->store_new, or the memory store).
 * rs points into cfg, which must outlive it.  Returns 0, or -1 with a one-line
 * reason in err; routes_free frees what was made either way.
 */
int routes_setup(struct routes *rs, const struct server_config *cfg, char *err, size_t errlen);

/* Free the routes' stores.  Only once no thread uses them. */
void routes_free(struct routes *rs);

/*
 * The index of the route with the longest prefix covering path (len bytes,
 * normalised by path_normalize): on segment boundaries, so "/api" covers
 * "/api" and "/api/x", not "/apix" (path_prefix_covers).  -1 when none does.
 */
int routes_match(const struct routes *rs, const char *path, size_t len);

/* The client key of a request on route rt (client_key.h) into key; returns its length. */
size_t routes_client_key(const struct route *rt, struct MHD_Connection *c, char key[CLIENT_KEY_LEN]);

/* The client key of c's address (client_key_address) into key; returns its length. */
size_t routes_client_address(struct MHD_Connection *c, unsigned v6_prefix, char key[CLIENT_KEY_LEN]);

/* True when some route's store answers asynchronously (connections are suspended meanwhile). */
bool routes_any_async(const struct routes *rs);

/* What /stats and /metrics say of each route besides the counters, into ri; returns how many. */
size_t routes_infos(const struct routes *rs, struct stats_route_info ri[SERVER_MAX_ROUTES]);

/* Forget every key of every route's store (POST /reset).  Thread-safe. */
void routes_reset(struct routes *rs);

/* Finish every store's queued decisions (store_ops.quiesce); before the daemon stops. */
void routes_quiesce(struct routes *rs);

/* Start every route's backend on lc (server/http/backend.h). */
void routes_start_backends(struct routes *rs, struct lifecycle *lc);

/* Close every route's backend: its waiting requests are shed (server_drain, before it wakes the rest). */
void routes_close_backends(struct routes *rs);

/* One-shot timers the routes' backends may hold besides their requests'. */
size_t routes_backend_timer_slots(const struct routes *rs);

#endif
