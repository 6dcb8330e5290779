#ifndef RATELAB_UPSTREAM_H
#define RATELAB_UPSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "server/proxy/upstream_call.h"

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

struct upstream_config {
	char url[UPSTREAM_URL_CAP];   /* http:// or https://, maybe with a path prefix */
	unsigned max_conns;           /* connections to the upstream at once */
	uint64_t connect_timeout_ns;
	uint64_t timeout_ns;          /* the whole exchange */
	uint64_t max_body;            /* bytes of an answer's body */
	uint64_t max_buffered;        /* bytes of all calls' windows held at once */
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

/* The name of result r as /stats shows it ("ok", "connect", "timeout", ...). */
const char *upstream_result_name(enum upstream_result r);

/*
 * Whether url is one the proxy takes (http:// or https://, a host and a
 * port, not 0, that libcurl reads, no query or fragment, under
 * UPSTREAM_URL_CAP bytes); false with the reason in why.
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
 * Send c.  done(arg) is called on the upstream's thread, under c's lock
 * (it must not call back into c), unless the caller released c before:
 * once when the answer's head is in (upstream_call_head) or the exchange
 * ended without one (upstream_call_result), and after that each time a
 * reader that upstream_call_read made wait can go on.  Returns 0, or -1
 * (done never called; c's result is UPSTREAM_BUSY) when full or stopping.
 * Either way the caller releases c once.
 */
int upstream_submit(struct upstream *u, struct upstream_call *c, void (*done)(void *arg), void *arg);

/* The counters now. */
void upstream_counts(struct upstream *u, struct upstream_counts *out);

#endif
