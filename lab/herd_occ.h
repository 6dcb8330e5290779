#ifndef RATELAB_HERD_OCC_H
#define RATELAB_HERD_OCC_H

#include "hammer/workload.h"

/*
 * The optimistic-concurrency workload of `ratelab herd --workload occ` (the
 * AWS Architecture Blog's "Exponential Backoff And Jitter"): each attempt
 * reads the record (GET /occ, which answers with its version as an ETag)
 * and writes it back (PUT /occ with If-Match: that ETag).  The PUT's answer
 * ends the attempt: 200 is done, a 409 (someone wrote first) goes to the
 * retry policy, and the next attempt reads again.  An attempt is therefore
 * two calls; a read that fails (429, a transport error) or carries no ETag
 * ends it at once.  Per-client state only: thread-safe as the engine uses it.
 */
extern const struct workload_ops HERD_OCC;

#endif
