#ifndef RATELAB_REQUEST_H
#define RATELAB_REQUEST_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

#include "server/faults.h"
#include "server/http/client_key.h"
#include "server/http/conns.h"
#include "server/http/lifecycle.h"
#include "server/http/responses.h"
#include "server/limit/limiter.h"
#include "server/server.h"

/*
 * One request's state between the calls MHD makes for it.  It lives in its
 * connection's socket context (one allocation per connection, not per
 * request); callbacks.c begins, feeds and ends it (it clears it up to `key`
 * when a request starts).
 */

struct backend;
struct upstream_call;

struct request {
	bool pooled;                 /* the connection's slot; false for the rare one allocated alone */
	enum request_phase phase;
	const struct server_handler *handler;  /* a special handler's path, else NULL */
	int route;                   /* the limited route, or -1 */
	bool holds_slot;             /* the store admitted it and counts it: release when it ends */
	bool body_pending;           /* its body is still arriving (the connection table knows: conns.h) */
	const char *raw_uri;         /* the request target as sent, in MHD's buffer (the URI log callback's) */
	struct MHD_Connection *conn; /* set while the store works on the decision, or the backend holds it */
	struct lifecycle_park park;  /* while parked (lifecycle.h) */
	struct backend *backend;     /* the backend holding it (queued or serving) */
	uint64_t service_ns;         /* its service time, once a virtual worker took it */
	struct MHD_Response *kept;   /* a special handler's delayed answer, sent when resumed */
	unsigned kept_status;
	enum server_reply_kind kept_kind;  /* a held scripted failure (kept is NULL then) */
	char *raw;                   /* the bytes of a held SERVER_REPLY_RAW, or NULL */
	size_t raw_len;
	struct fault_pick fault;
	struct limiter_decision d;
	char *body;                  /* a special handler's upload (NUL-terminated), or NULL */
	size_t body_len, body_cap;
	uint64_t token;              /* the handler's reply token, for its done hook */
	const char *method;          /* the request's method (MHD's) */
	char *target;                /* with --upstream: the request target as sent (malloc'd), else NULL */
	struct upstream_call *call;  /* with --upstream: its call to the upstream, once sent */
	bool notify;                 /* call the handler's done hook when the request ends */
	size_t keylen;
	char key[CLIENT_KEY_LEN];
	/* Not cleared per request: kept for the connection's life (pooled requests only). */
	struct responses_rejection rej;
	struct conns_entry tracked;  /* the connection in the server's table (conns.h) */
};

#endif
