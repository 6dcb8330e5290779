#ifndef RATELAB_SERVER_H
#define RATELAB_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "server/config.h"
#include "server/faults.h"
#include "server/http/headers.h"
#include "server/limit/limiter.h"
#include "server/store/store.h"

/*
 * The in-process lab server: libmicrohttpd in front of the limiters.  `ratelab
 * serve` is server_config_from_args + server_start + wait for a signal +
 * server_stop; tests and `ratelab herd` call the same functions to run a
 * server without a subprocess.
 *
 * Every path is limited by the route with the longest matching prefix,
 * except the special handlers (/stats, /metrics, /reset, /healthz and those
 * added with server_config_add_handler).  POST /reset clears every part that
 * holds state: the routes' limiter state, the statistics, and each special
 * handler's state through its reset hook.
 */

#define SERVER_MAX_ROUTES (CONFIG_MAX_ROUTES + 1)
#define SERVER_MAX_HANDLERS 16
#define SERVER_MAX_PLUGIN_HANDLERS 8

struct server;
struct live_parts;
struct stats_route_info;

/* One request as a special handler sees it (valid during the call only). */
struct server_request {
	const char *method;
	const char *path;
	const char *body;        /* the uploaded body (NUL-terminated), "" when none */
	size_t body_len;
	void *conn;              /* for server_request_header/_query */
	const char *key;         /* limited-path hook only: the client key as the limiter keys it, else NULL */
	size_t keylen;
	const struct sockaddr *client;  /* the peer's address, or NULL when unknown */
};

/* How a special handler's answer goes out: whole, or as a scripted transport failure. */
enum server_reply_kind {
	SERVER_REPLY_ANSWER,     /* status line, headers and body */
	SERVER_REPLY_RESET,      /* not one byte: the connection is reset (TCP RST) */
	SERVER_REPLY_CUT,        /* status line, headers and the first half of the body, then close */
	SERVER_REPLY_RAW,        /* the body's bytes as they are (not HTTP), then close */
	SERVER_REPLY_PASS,       /* with --upstream: the request goes to the upstream (after delay_ns) and its
	                          * answer is relayed (the handler's relayed hook is told its status); without
	                          * one, as SERVER_REPLY_ANSWER */
};

/* A special handler's answer.  body is malloc'd (the server frees it) or NULL. */
struct server_reply {
	int status;
	const char *content_type;
	char *body;
	size_t body_len;
	char headers[512];       /* extra "Name: value\n" lines */
	uint64_t delay_ns;       /* > 0: send the answer this long after the handler returned,
	                          * without blocking a server thread (sent at once when stopping) */
	/*
	 * Instead of body, a stream of unknown length (chunked): the server calls
	 * stream_read(stream_ctx, pos, buf, max) for the next bytes, which returns
	 * their count, -1 at the end, -2 on an error (the connection closes), or 0
	 * after suspending the connection (req->conn) until it has more; and
	 * stream_free(stream_ctx) once the answer is over (also when it could not
	 * be sent).  stream_read may run on any server thread, one call at a time.
	 */
	ssize_t (*stream_read)(void *ctx, uint64_t pos, char *buf, size_t max);
	void (*stream_free)(void *ctx);
	void *stream_ctx;
	enum server_reply_kind kind;
	uint64_t token;          /* handed to the handler's done hook when the request ends */
};

/*
 * Whether req may use an admin endpoint: one that changes the server's
 * state (POST /reset), which every such handler checks first.  By default
 * only loopback clients may; with --admin-token T, any client that sends
 * "Authorization: Bearer T" may too.  Refused whoever asks: a body of type
 * application/x-www-form-urlencoded, multipart/form-data or text/plain, and
 * an Origin other than the server's own ("http://" + Host), so a web page
 * cannot make a browser do it; and, from loopback, a browser's request to a
 * host name other than localhost (DNS rebinding).  False with the reason in
 * why.  Thread-safe.
 */
bool server_admin_allowed(struct server *srv, const struct server_request *req, char *why, size_t len);

/*
 * server_admin_allowed for a handler: true when req is refused, with *out
 * filled (403, an application/problem+json body whose detail says why) and
 * the refusal counted (/stats refused.admin); false to go on.  Thread-safe.
 */
bool server_admin_refused(struct server *srv, const struct server_request *req, struct server_reply *out);

/* Header `name` of the request, or NULL. */
const char *server_request_header(const struct server_request *r, const char *name);

/* Query argument `name` of the request, or NULL. */
const char *server_request_query(const struct server_request *r, const char *name);

/*
 * Call fn(ctx) every period_ns on the server's timer thread, from now until
 * server_drain (never after it returns).  fn must be quick: every timer
 * of the server waits for it.  Returns 0, or -1 when out of room.
 */
int server_every(struct server *srv, uint64_t period_ns, void (*fn)(void *ctx), void *ctx);

/*
 * A handler's parked answer (a stream waiting for its next bytes): park
 * suspends the request on conn (server_request.conn), called on the thread
 * the server runs it on, until server_wake; false (not parked) once the
 * server drains.  A wake is once per park; true for the call that woke
 * it.  Thread-safe.
 */
struct server_park;
struct server_park *server_park_new(void);
void server_park_free(struct server_park *p);
bool server_park(struct server *srv, struct server_park *p, void *conn);
bool server_wake(struct server_park *p);

/*
 * A special handler: answers `path` exactly (any method).  Fills *out and
 * returns 0, or returns -1 to close the connection without an answer.
 * Called from the server's threads concurrently: it must be thread-safe.
 */
typedef int (*server_handler_fn)(struct server *srv, void *ctx, const struct server_request *req,
                                 struct server_reply *out);

/* A special handler's reset hook: clears the state the handler keeps under ctx.  Thread-safe. */
typedef void (*server_reset_fn)(void *ctx);

/*
 * A special handler's done hook: the request whose reply carried `token`
 * ended at now_ns (monotonic).  sent is true when the answer's last byte was
 * handed to the socket, false when it ended otherwise (a scripted transport
 * failure, a client that went away, an error).  Called from a server thread
 * once per request the handler answered; must be thread-safe.
 */
typedef void (*server_done_fn)(void *ctx, uint64_t token, bool sent, uint64_t now_ns);

/*
 * A special handler's relayed hook: the request whose SERVER_REPLY_PASS
 * reply carried `token` went to the upstream, and `status` is what its
 * client is answered (the upstream's status, or 502/503/504 when the
 * upstream failed).  Called from a server thread before the done hook;
 * must be thread-safe.
 */
typedef void (*server_relayed_fn)(void *ctx, uint64_t token, int status);

/* Makes the store of one route; NULL (reason in err) on failure.  Default: store_memory_new. */
typedef struct store *(*server_store_fn)(void *ctx, const struct limiter_ops *ops, const struct limiter_params *p,
                                         size_t max_keys, char *err, size_t errlen);

struct server_handler {
	char path[64];
	server_handler_fn fn;
	server_reset_fn reset;           /* optional: called with ctx on POST /reset */
	void *ctx;
	server_done_fn done;             /* optional: told when each answered request ends */
	server_relayed_fn relayed;       /* optional: told the status of each request passed to the upstream */
};

struct server_config;

/*
 * A set of handlers plugged into every server at start-up: the built-ins
 * (server/handlers/builtin.h), set by server_config_defaults.  The server
 * calls start once before it listens (the handlers it fills come after the
 * config's, so a config's handler can take over a built-in path), stop at
 * the drain's start (end whatever it keeps parked), and free once the
 * daemon stopped.  streams is the figure /stats calls subscribers;
 * announce (optional) hands a named event to every stream at once
 * (server_announce).
 */
struct server_plugin {
	/* Fill up to max handlers into out; returns how many, or -1 (state freed).  *state is the plugin's. */
	int (*start)(struct server *srv, const struct server_config *cfg, struct server_handler *out, size_t max,
	             void **state);
	void (*stop)(void *state);
	void (*free)(void *state);
	unsigned (*streams)(void *state);
	int (*announce)(void *state, const char *name, const char *json);
};

struct server_config {
	char bind[64];                   /* default 127.0.0.1 */
	unsigned port;                   /* default 8080; 0 picks a free port */
	struct config_route routes[SERVER_MAX_ROUTES]; /* routes[0] is "/" from the command line */
	size_t nroutes;
	enum config_key key;             /* default ip */
	char key_header[CONFIG_HEADER_LEN];
	int reject_status;               /* 429 or 503 */
	enum headers_retry_after retry_after;
	enum headers_mode headers;
	unsigned ipv6_prefix;                /* IPv6 clients are keyed and counted by this prefix (1..128) */
	unsigned threads;                /* listeners (MHD daemons, one thread each) on the port; default 2 */
	uint64_t max_keys;               /* per route; default 100000, or what fits max_key_memory */
	bool max_keys_set;               /* --max-keys given: refused, not lowered, when it does not fit */
	uint64_t max_key_memory;         /* bytes all routes' key tables may grow to; default 64 MiB */
	unsigned max_connections;        /* 0 (default): sized to the open-file limit, at most 16384 */
	unsigned max_connections_per_ip; /* 0 (default): three quarters of max_connections */
	uint64_t connection_timeout_ns;  /* idle timeout; default 30 s */
	uint64_t header_timeout_ns;      /* a request head must be in within it; default 10 s */
	uint64_t body_timeout_ns;        /* a request body must be in within it of its head; default 30 s */
	size_t max_body;                 /* default 64 KiB; larger bodies get 413 */
	struct faults faults;
	bool query_faults;
	uint64_t seed;
	bool quiet;                      /* no log lines on stderr */
	unsigned top_clients;            /* clients /stats, /metrics and /events name; the rest summed; default 50 */
	unsigned max_subscribers;        /* /events streams at once; default 32 */
	char admin_token[128];           /* --admin-token: admits non-loopback clients to admin endpoints; "" none */
	struct server_handler handlers[SERVER_MAX_HANDLERS];
	size_t nhandlers;
	server_store_fn store_new;       /* NULL: store_memory_new */
	void *store_ctx;
	/* When limited.fn is set, it answers every limited path instead of the
	 * limiter (scripted scenarios, server/handlers/scenario.h); req->key is set. */
	struct server_handler limited;
	const struct server_plugin *plugin;  /* the built-in handlers (server_config_defaults); NULL: none */
	/* --upstream: admitted requests on limited paths are proxied there ("" none; server/proxy/upstream.h) */
	char upstream[512];
	unsigned upstream_max_conns;     /* connections to it at once; default 64 */
	uint64_t upstream_connect_timeout_ns;  /* default 5 s */
	uint64_t upstream_timeout_ns;    /* the whole exchange; default 30 s */
	uint64_t upstream_max_body;      /* bytes of its answer's body; default 1 MiB */
};

/* Fill *c with the defaults above (one route "/", token-bucket 10/s). */
void server_config_defaults(struct server_config *c);

/*
 * Fit the in-process key tables into c->max_key_memory.  Every route holds
 * up to c->max_keys keys of store_memory_key_bytes each, so the tables can
 * grow to max_keys times the sum of the routes' key bytes.  When that is
 * over the budget, a --max-keys given by the user is refused; the default
 * cap is lowered to what fits, and msg says so (else msg is "").  A budget
 * over phys_bytes (the machine's memory; 0: unknown) is refused too.
 * Returns 0, or -1 with the one-line reason in msg.  Call after
 * server_config_from_args, only when the tables are in process.
 */
int server_config_fit_keys(struct server_config *c, uint64_t phys_bytes, char *msg, size_t len);

/*
 * Size the connection limits to nofile, the open-file limit (RLIMIT_NOFILE's
 * soft value): the server keeps 64 + 4 per listener descriptors for itself
 * and the rest may be connections.  An unset max_connections becomes that,
 * at most SERVER_CONNECTIONS_DEFAULT; an unset max_connections_per_ip three
 * quarters of max_connections (rounded up), so no single address can take
 * every slot of a big limit.  A max_connections given over what nofile allows is refused:
 * returns -1 with the one-line reason in msg; else 0 (msg "").  Pure.
 */
#define SERVER_CONNECTIONS_DEFAULT 16384
int server_config_fit_connections(struct server_config *c, uint64_t nofile, char *msg, size_t len);

/* Add a special handler for `path`.  Returns 0, or -1 when the table is full. */
int server_config_add_handler(struct server_config *c, const char *path, server_handler_fn fn, void *ctx);

/*
 * Add a special handler for `path` that keeps state under ctx: POST /reset
 * (server_reset) calls reset(ctx).  Returns 0, or -1 when the table is full.
 */
int server_config_add_stateful_handler(struct server_config *c, const char *path, server_handler_fn fn,
                                       server_reset_fn reset, void *ctx);

/*
 * Start listening and serving.  The config is copied.  Returns the server, or
 * NULL with a one-line reason in err (port in use, bad bind address, ...).
 */
struct server *server_start(const struct server_config *c, char *err, size_t errlen);

/* The bound port (useful with port 0). */
int server_port(const struct server *s);

/* Requests answered so far, and how many were rejected by a limiter (for the summary line). */
void server_counts(struct server *s, uint64_t *total, uint64_t *admitted, uint64_t *rejected);

/*
 * The modelled backend of route index `route` (--capacity, server/capacity.h):
 * its counters now into *out; false (nothing written) when the route has
 * none.  Thread-safe; valid until server_stop.
 */
bool server_backend_stats(struct server *s, size_t route, struct capacity_stats *out);

/* Its 100 ms series from its epoch (start or POST /reset) into out (max rows); the rows written, 0 for none. */
size_t server_backend_series(struct server *s, size_t route, struct capacity_bucket *out, size_t max);

/* /stats as JSON and /metrics as Prometheus text, now: malloc'd (the caller frees), NULL when out of memory. */
char *server_stats_json(struct server *s);
char *server_stats_metrics(struct server *s);

/*
 * The parts the live figures are made of (server/live.h), read now, with
 * the routes' infos in ri (room for SERVER_MAX_ROUTES; it must outlive *p).
 * Thread-safe.
 */
void server_live_parts(struct server *s, struct stats_route_info *ri, struct live_parts *p);

/*
 * Hand the event "event: NAME\ndata: JSON" to every /events stream at once
 * (the plugin's announce; the room herd's start).  Returns 0, or -1 (no
 * plugin that announces, a line break in name or json, out of memory).
 * Thread-safe.
 */
int server_announce(struct server *s, const char *name, const char *json);

/*
 * Clear limiter state and statistics, then call every special handler's reset
 * hook (the config's handlers in order, then limited's), as POST /reset does.
 * Thread-safe.
 */
void server_reset(struct server *s);

/*
 * Stop accepting, answer held (delayed) requests at once, let in-flight
 * requests finish (at most 5 s), and stop the threads.  Counts stay readable
 * (server_counts) until server_stop.  Idempotent; NULL is a no-op.
 */
void server_drain(struct server *s);

/* server_drain, then free everything.  NULL is a no-op. */
void server_stop(struct server *s);

#endif
