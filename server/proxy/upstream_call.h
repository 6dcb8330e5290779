#ifndef RATELAB_UPSTREAM_CALL_H
#define RATELAB_UPSTREAM_CALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * One call of the upstream client (upstream.h): a request the proxy
 * builds, sends with upstream_submit, reads the answer of as it streams
 * in (at most UPSTREAM_WINDOW bytes of it held at once), and releases.
 * The header rules the proxy applies both ways are here too.
 */

#define UPSTREAM_HEADERS_CAP 16384  /* an answer's header bytes kept; more is a bad answer */
#define UPSTREAM_WINDOW 65536        /* an answer's body bytes held per call; past it the transfer pauses */

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

struct upstream_call;

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
 * Watch fd, the socket of c's client, while c is in flight (before
 * upstream_submit): once c has gone on for 50-100 ms, the client closing
 * or resetting it ends the exchange as UPSTREAM_CLIENT_GONE (done is
 * called), not at its timeout.  A quicker call costs no system call.  fd
 * must stay open until upstream_call_release; the thread watches a
 * duplicate of it, taken under c's lock while c is not released.
 */
void upstream_call_watch(struct upstream_call *c, int fd);

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
 * headers (those its Connection header names too) and Content-Length left
 * out, in the order sent.
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

/* Whether header `name` is hop-by-hop (RFC 9110 7.6.1), not forwarded either way. */
bool upstream_hop_by_hop(const char *name);

/*
 * Whether `name` is one of the comma-separated options of a Connection
 * header's value (case-insensitive, spaces around them ignored): a header
 * the sender made hop-by-hop.  connection NULL: false.  Pure.
 */
bool upstream_connection_lists(const char *connection, const char *name);

#endif
