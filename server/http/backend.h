#ifndef RATELAB_BACKEND_H
#define RATELAB_BACKEND_H

#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

#include "server/capacity.h"
#include "server/http/lifecycle.h"

/*
 * The modelled backend of a route (`serve --capacity`): the capacity model
 * (server/capacity.h) under a lock, driven by real requests.  An admitted
 * request is parked and handed to the model; when a virtual worker takes
 * it, a timer ends its service and wakes it
 * (REQUEST_SERVED: the normal 200); a request the model sheds is resumed at
 * once (REQUEST_SHED: 503).  When a service ends, the client counts as gone
 * when its socket has been closed or reset (a peek reads end-of-file or an
 * error): the work was done for nobody.  Thread-safe.
 */

struct backend;
struct request;

/* A backend for params p at now, drawing service times from seed; NULL when out of memory. */
struct backend *backend_new(const struct capacity_params *p, uint64_t now, uint64_t seed);
void backend_free(struct backend *b);

/* One-shot timers (sched_at) the backend may hold at once besides its requests' (rejection work, pokes). */
size_t backend_timer_slots(const struct capacity_params *p);

/* Park requests with lc, time services on its scheduler, and poke the model at each trigger boundary.  Once, before any request. */
void backend_start(struct backend *b, struct lifecycle *lc);

/*
 * Hand rq (admitted on the backend's route, connection c) to the model: rq
 * is parked (lifecycle.h) and woken with rq->phase REQUEST_SERVED or
 * REQUEST_SHED (or, woken by the drain, still REQUEST_QUEUED/SERVING).
 * False when the server drains (not parked; rq->phase REQUEST_SHED).
 * Called on the server thread of the request's last access-handler call.
 */
bool backend_enter(struct backend *b, struct lifecycle *lc, struct MHD_Connection *c, struct request *rq);

/* Shed every waiting request (the server is draining): before the drain wakes the rest. */
void backend_close(struct backend *b);

/* Zero the counts and the series, and restart the triggers' clock (POST /reset). */
void backend_reset(struct backend *b);

/* The model's counters now. */
void backend_stats(struct backend *b, struct capacity_stats *out);

/* The model's series (capacity_series). */
size_t backend_series(struct backend *b, struct capacity_bucket *out, size_t max);

/* The parameters it models. */
const struct capacity_params *backend_params(const struct backend *b);

#endif
