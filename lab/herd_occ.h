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
 * two calls, unless the read ends it: one that fails (429, a transport
 * error) goes to the retry policy, and a 2xx without an ETag is taken as
 * done, there being no version to write against.  Per-client state only.
 */
extern const struct workload_ops HERD_OCC;

#endif
