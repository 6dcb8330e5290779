#ifndef RATELAB_PROXIED_H
#define RATELAB_PROXIED_H

#include <microhttpd.h>
#include <stdbool.h>

/*
 * An admitted request under `serve --upstream`: instead of the built-in
 * answer it goes to the upstream (server/proxy/upstream.h), parked
 * (LIFECYCLE_UPSTREAM) until the upstream's answer is in whole, and is then
 * answered with the upstream's status, headers and body plus ratelab's
 * RateLimit headers; an upstream failure is 502, its timeout 504.  Called
 * from the server's threads; each request is on one at a time.
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

/* Whether rq's admitted answer is the upstream's (the server proxies). */
bool proxied_wants(const struct server *s);

/* The answer of admitted rq on route rt: the upstream's, or 502/503/504; its status into *status. */
enum MHD_Result proxied_answer(struct server *s, struct MHD_Connection *c, const struct route *rt,
                               struct request *rq, int *status);

/* rq ended (answered, or its client went away): the upstream call it holds is let go. */
void proxied_end(struct request *rq);

#endif
