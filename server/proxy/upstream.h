#ifndef RATELAB_UPSTREAM_H
#define RATELAB_UPSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * The client side of `serve --upstream URL`: one thread with one libcurl
 * multi handle sends every proxied request to the upstream and streams its
 * answer back: the call's done function is called on that thread once the
 * status and headers are in (or the exchange failed before), and the body
 * is then read with upstream_call_read as it arrives.  Bounded: at most
 * max_conns connections to the upstream, at most UPSTREAM_MAX_CALLS calls
 * at once (more are refused), a connect and a total timeout on each (a
 * transfer paused for a slow reader included), max_body bytes of each
 * answer's body, UPSTREAM_WINDOW bytes of it held per call (the transfer
 * is paused while the reader is behind), and max_buffered bytes of those
 * windows held by all calls not yet released (a call past it fails as too big).
 * Easy handles are kept and reused, so kept-alive connections are too.
 * Thread-safe.
 */

#define UPSTREAM_URL_CAP 512
#define UPSTREAM_HEADERS_CAP 16384  /* an answer's header bytes kept; more is a bad answer */
#define UPSTREAM_WINDOW 65536        /* an answer's body bytes held per call; past it the transfer pauses */

struct upstream_config {
	char url[UPSTREAM_URL_CAP];   /* http:// or https://, maybe with a path prefix */
	unsigned max_conns;           /* connections to the upstream at once */
	uint64_t connect_timeout_ns;
	uint64_t timeout_ns;          /* the whole exchange */
	uint64_t max_body;            /* bytes of an answer's body */
	uint64_t max_buffered;        /* bytes of all calls' windows held at once */
};

/* How a call ended. */
enum upstream_result {
	UPSTREAM_OK,           /* an answer, whole: status, headers, body */
	UPSTREAM_CONNECT,      /* no connection (refused, unreachable): 502 */
	UPSTREAM_TIMEOUT,      /* the connect or the total timeout passed: 504 */
	UPSTREAM_TOO_BIG,      /* the answer's body or headers were over the bounds: 502 */
	UPSTREAM_BAD_ANSWER,   /* closed early, not HTTP, any other failure: 502 */
	UPSTREAM_BUSY,         /* refused: UPSTREAM_MAX_CALLS were in flight, or stopping: 502 */
	UPSTREAM_CLIENT_GONE,  /* its client went away before the answer's end: the transfer was stopped */
	UPSTREAM_RESULTS
};

#define UPSTREAM_MAX_CALLS 4096

/* The counters /stats shows as "upstream". */
struct upstream_counts {
	uint64_t calls;                    /* calls submitted */
	uint64_t results[UPSTREAM_RESULTS];
	unsigned in_flight;
	uint64_t buffered;                 /* bytes of calls' windows held now */
};

struct upstream;
struct upstream_call;

/* The name of result r as /stats shows it ("ok", "connect", "timeout", ...). */
const char *upstream_result_name(enum upstream_result r);

/*
 * Whether url is one the proxy takes (http:// or https://, a host, no
 * query or fragment, under UPSTREAM_URL_CAP bytes); false with the reason in why.
 */
bool upstream_url_ok(const char *url, char *why, size_t len);

/* A started upstream client for c (copied); NULL with a one-line reason in err. */
struct upstream *upstream_new(const struct upstream_config *c, char *err, size_t errlen);

/*
 * Stop the thread (joined): every call still in flight ends as
 * UPSTREAM_BUSY without its done function being called.  Idempotent.
 */
void upstream_stop(struct upstream *u);

/* upstream_stop, then free.  NULL is a no-op. */
void upstream_free(struct upstream *u);

/*
 * A call of method on target (the request target as sent: path and query,
 * appended to the upstream's URL) with body (copied; may be NULL when
 * len is 0); NULL when out of memory.  The caller owns it until
 * upstream_submit, and releases it with upstream_call_release after.
 */
struct upstream_call *upstream_call_new(const char *method, const char *target, const char *body, size_t len);

/*
 * Add a request header to c (before upstream_submit); value NULL: libcurl
 * sends no header `name` of its own (Accept).  Returns 0, or -1 when out of memory.
 */
int upstream_call_header(struct upstream_call *c, const char *name, const char *value);

/*
 * Send c.  done(arg) is called on the upstream's thread, under c's lock
 * (it must not call back into c), unless the caller released c before:
 * once when the answer's head is in (upstream_call_head) or the exchange
 * ended without one (upstream_call_result), and after that each time a
 * reader that upstream_call_read made wait can go on.  Returns 0, or -1
 * (done never called; c's result is UPSTREAM_BUSY) when full or stopping.
 * Either way the caller releases c once.
 */
int upstream_submit(struct upstream *u, struct upstream_call *c, void (*done)(void *arg), void *arg);

/*
 * The caller is done with c: after this returns, its done function is not
 * running and will not be called, and an exchange still going is stopped
 * (its client went away).  Frees c when the thread and every hold are
 * done too.  NULL is a no-op.
 */
void upstream_call_release(struct upstream_call *c);

/* Another reference to c (a response streaming its body), given back with upstream_call_drop; returns c. */
struct upstream_call *upstream_call_hold(struct upstream_call *c);
void upstream_call_drop(struct upstream_call *c);

/* Whether c's head (status, headers, Content-Length) is in and readable (from the first done call on, when it came). */
bool upstream_call_head(struct upstream_call *c);

/* Its result (valid once done was called without a head, or submit failed). */
enum upstream_result upstream_call_result(const struct upstream_call *c);

/* The answer's status (once the head is in). */
int upstream_call_status(const struct upstream_call *c);

/*
 * Call fn(ctx, name, value) for each header of the answer, hop-by-hop
 * headers and Content-Length left out, in the order sent.
 */
void upstream_call_headers(const struct upstream_call *c, void (*fn)(void *ctx, const char *name, const char *value),
                           void *ctx);

/* The answer's Content-Length (once the head is in), -1 when it sent none. */
int64_t upstream_call_content_length(const struct upstream_call *c);

#define UPSTREAM_READ_END (-1)     /* the whole body was read */
#define UPSTREAM_READ_ERROR (-2)   /* the exchange failed after its head (or wait refused): the body is cut */

/*
 * Up to max bytes of the answer's body (once the head is in) into buf:
 * returns their count; UPSTREAM_READ_END or UPSTREAM_READ_ERROR at the
 * end; or 0 when no byte is in yet and wait(arg), called under c's lock,
 * parked the reader (true): done is called once bytes come or the
 * exchange ends.  Taking bytes lets a paused transfer go on.  One reader at a time.
 */
ssize_t upstream_call_read(struct upstream_call *c, char *buf, size_t max, bool (*wait)(void *arg), void *arg);

/* The counters now. */
void upstream_counts(struct upstream *u, struct upstream_counts *out);

/* Whether header `name` is hop-by-hop (RFC 9110 7.6.1), not forwarded either way. */
bool upstream_hop_by_hop(const char *name);

/*
 * Whether `name` is one of the comma-separated options of a Connection
 * header's value (case-insensitive, spaces around them ignored): a header
 * the sender made hop-by-hop.  connection NULL: false.  Pure.
 */
bool upstream_connection_lists(const char *connection, const char *name);

#endif
