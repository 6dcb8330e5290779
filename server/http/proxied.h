#ifndef RATELAB_PROXIED_H
#define RATELAB_PROXIED_H

#include <microhttpd.h>
#include <stdbool.h>

/*
 * An admitted request under `serve --upstream`: instead of the built-in
 * answer it goes to the upstream (server/proxy/upstream.h), parked
 * (LIFECYCLE_UPSTREAM) until the upstream's status and headers are in, and is
 * then answered with them plus ratelab's RateLimit headers, the body streamed
 * as it comes (the request parks again while no byte is in); a failure before
 * the head is 502, a timeout 504, one after it cuts the body.  Called from
 * the server's threads; each request is on one at a time.
 */

struct server;
struct request;
struct route;

/*
 * Send admitted rq to the upstream and park it: true when parked (MHD
 * calls the handler again once the answer is in, with rq->phase
 * REQUEST_UPSTREAM).  False when there is nothing to send (no upstream,
 * not admitted, a fault's status, sent already) or it could not park
 * (draining): then proxied_answer answers.
 */
bool proxied_start(struct server *s, struct MHD_Connection *c, struct request *rq);

/*
 * Send rq (method, target as sent, headers, body) to the upstream and park
 * it, whatever its route or handler: true when parked (MHD calls the
 * handler again once the answer is in, with rq->phase REQUEST_UPSTREAM).
 * False when there is no upstream, rq was sent already, memory is short
 * or it could not park (draining): proxied_answer answers then (503).
 */
bool proxied_send(struct server *s, struct MHD_Connection *c, struct request *rq);

/* Whether rq's admitted answer is the upstream's (the server proxies). */
bool proxied_wants(const struct server *s);

/*
 * The answer of rq that proxied_start or proxied_send sent (or could not):
 * the upstream's, with ratelab's RateLimit headers for route rt (NULL: none
 * added, the upstream's own kept), or 502/503/504; its status into *status.
 */
enum MHD_Result proxied_answer(struct server *s, struct MHD_Connection *c, const struct route *rt,
                               struct request *rq, int *status);

/* rq ended (answered, or its client went away): the upstream call it holds is let go. */
void proxied_end(struct request *rq);

#endif
