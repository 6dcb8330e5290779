#ifndef RATELAB_WIRECONN_H
#define RATELAB_WIRECONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/retry/retry.h"
#include "hammer/wire.h"

/*
 * One virtual client's connection on the hammer's own HTTP/1.1 path: a
 * small state machine in the manner of wrk's.  The socket is registered in
 * the caller's epoll set (level-triggered) with `tag` as its data, and its
 * mask changes only when the phase does, so a kept-alive request costs one
 * send and one recv.  Not thread-safe: each belongs to one event loop.
 */

enum wireconn_phase { WIRECONN_IDLE, WIRECONN_CONNECTING, WIRECONN_SENDING, WIRECONN_READING };

enum wireconn_result {
	WIRECONN_PENDING,    /* wait for the socket */
	WIRECONN_DONE,       /* an answer: resp.status, resp.retry_after, resp.ratelimit */
	WIRECONN_FAILED,     /* no answer: see *err */
};

struct wireconn {
	int fd;              /* -1: none */
	uint32_t mask;       /* epoll events registered; 0: not registered */
	uint8_t phase;
	bool reused;         /* the call began on a kept-alive connection */
	uint32_t sent;       /* request bytes written */
	uint32_t reqlen;
	uint32_t src;        /* IPv4 source to bind (host order) when the target is loopback; 0: the kernel's */
	const char *req;     /* the call's request bytes, borrowed from wireconn_begin's caller */
	struct wire_resp resp;
};

/* No connection yet, and no source address of its own (set c->src after this for one). */
void wireconn_init(struct wireconn *c);

/*
 * Begin a call: send req (len bytes, which must stay valid until the call
 * ends) on the kept-alive connection, or open one to t.  PENDING while the
 * socket must be waited on; FAILED with *err when the call ended at once
 * (no descriptor, connection refused).
 */
enum wireconn_result wireconn_begin(struct wireconn *c, const struct wire_target *t, const char *req,
                                    size_t len, int epfd, uint64_t tag, enum retry_error *err);

/*
 * The socket is ready (events from epoll).  buf is scratch for reading.
 * A kept-alive connection that closes before any byte of the answer is
 * reopened and the request sent again once, as libcurl does.
 */
enum wireconn_result wireconn_event(struct wireconn *c, const struct wire_target *t, int epfd,
                                    uint64_t tag, char *buf, size_t cap, enum retry_error *err);

/* True while the connection is waiting for its TCP handshake. */
bool wireconn_connecting(const struct wireconn *c);

/*
 * Hand over an idle kept-alive socket (-1: none) and forget it, so the
 * client can talk to another server meanwhile.  The socket stays in the
 * epoll set, readable-only, under the tag it was registered with.
 */
int wireconn_park(struct wireconn *c);

/* Take back a socket wireconn_park gave (or -1: none). */
void wireconn_adopt(struct wireconn *c, int fd);

/* Close the socket (an abandoned call, or an idle connection the peer closed). */
void wireconn_close(struct wireconn *c, int epfd);

/*
 * Close the socket with a reset instead, once the run is over: an orderly
 * close leaves the socket in TIME_WAIT for a minute on this side, holding
 * its port, and the next big run on the machine would search past them.
 */
void wireconn_abort(struct wireconn *c, int epfd);

/* The same for a socket wireconn_park gave out. */
void wireconn_abort_fd(int fd);

#endif
