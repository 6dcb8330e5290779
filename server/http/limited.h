#ifndef RATELAB_LIMITED_H
#define RATELAB_LIMITED_H

#include <microhttpd.h>

/*
 * A limited path's request: its faults, the limiter's decision through the
 * route's store, a delay fault, the route's modelled backend (--capacity),
 * and the answer.  A request is suspended while
 * an asynchronous store decides and while a delay fault holds it; each time
 * it is resumed MHD calls limited_serve again, and rq->phase says what is
 * left.  Called from the server's threads; each request is on one at a time.
 */

struct server;
struct request;

/* Serve rq (a request on route rq->route) on the last call of the access handler, and after each resume. */
enum MHD_Result limited_serve(struct server *s, struct MHD_Connection *c, struct request *rq);

/* rq is over (answered, or its client went away): give back the slot its store counts, if any. */
void limited_end(struct server *s, struct request *rq);

#endif
