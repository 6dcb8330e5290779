#ifndef RATELAB_UPSTREAM_CALL_H
#define RATELAB_UPSTREAM_CALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * One call of the upstream client (upstream.h): a request the proxy
 * builds, sends with upstream_submit, then reads the answer of, and
 * releases.  The header rules the proxy applies both ways are here too.
 */

#define UPSTREAM_HEADERS_CAP 16384  /* an answer's header bytes kept; more is a bad answer */

/* How a call ended. */
enum upstream_result {
	UPSTREAM_OK,           /* an answer, whole: status, headers, body */
	UPSTREAM_CONNECT,      /* no connection (refused, unreachable): 502 */
	UPSTREAM_TIMEOUT,      /* the connect or the total timeout passed: 504 */
	UPSTREAM_TOO_BIG,      /* the answer's body or headers were over the bounds: 502 */
	UPSTREAM_BAD_ANSWER,   /* closed early, not HTTP, any other failure: 502 */
	UPSTREAM_BUSY,         /* refused: UPSTREAM_MAX_CALLS were in flight, or stopping: 502 */
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
 * The caller is done with c: after this returns, its done function is not
 * running and will not be called.  Frees c when the thread is done too.
 * NULL is a no-op.
 */
void upstream_call_release(struct upstream_call *c);

/* Its result (valid once done was called, or submit failed). */
enum upstream_result upstream_call_result(const struct upstream_call *c);

/* The answer's status (UPSTREAM_OK only). */
int upstream_call_status(const struct upstream_call *c);

/*
 * Call fn(ctx, name, value) for each header of the answer, hop-by-hop
 * headers and Content-Length left out, in the order sent.
 */
void upstream_call_headers(const struct upstream_call *c, void (*fn)(void *ctx, const char *name, const char *value),
                           void *ctx);

/* The answer's Content-Length (UPSTREAM_OK only), -1 when it sent none. */
int64_t upstream_call_content_length(const struct upstream_call *c);

/* The answer's body (c's, valid until c is released), its length in *len; NULL when empty. */
const char *upstream_call_body(const struct upstream_call *c, size_t *len);

/* Whether header `name` is hop-by-hop (RFC 9110 7.6.1), not forwarded either way. */
bool upstream_hop_by_hop(const char *name);

/*
 * Whether `name` is one of the comma-separated options of a Connection
 * header's value (case-insensitive, spaces around them ignored): a header
 * the sender made hop-by-hop.  connection NULL: false.  Pure.
 */
bool upstream_connection_lists(const char *connection, const char *name);

#endif
