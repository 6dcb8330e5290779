#ifndef RATELAB_HAMMER_HERD_H
#define RATELAB_HAMMER_HERD_H

#include <stddef.h>
#include <stdint.h>

#include "common/retry/retry.h"

enum herd_workload {
	HERD_WORKLOAD_REQUEST, /* GET path until 2xx */
	HERD_WORKLOAD_OCC,     /* GET /occ, then PUT /occ with If-Match, until the PUT is 200 (lab/herd_occ.h) */
};

/* Entry point of 'ratelab herd'.  argv[0] is "herd".  Returns the exit code:
 * 0 when every policy ran, 1 when a run could not be set up, 2 on a usage error. */
int herd_main(int argc, char **argv);

/* The herd's built-in policies, in their default order. */
#define HERD_DEFAULT_POLICIES "none,exponential,full,equal,decorrelated"

/* Knobs shared by the built-in policies. */
struct herd_knobs {
	uint64_t base_ns;       /* default 500 ms (request), 10 ms (occ) */
	uint64_t cap_ns;        /* default 2 s (request), 1 s (occ) */
	unsigned max_attempts;  /* default 10 (request), 100 (occ) */
};

/* The knobs' defaults for a workload. */
void herd_knobs_defaults(enum herd_workload w, struct herd_knobs *k);

/*
 * Build policy `name`: a built-in (none: retry at once; exponential: no
 * jitter; full, equal, decorrelated: AWS's jitters), which retry 429, 503,
 * 409 and connection errors and ignore Retry-After so that only the backoff
 * differs, or else a retry preset (retry_policy_preset), which keeps its own
 * rules but also retries 409 under the occ workload.  Returns 0, or -1 with
 * a reason naming the policy.  Pure.
 */
int herd_policy(const char *name, const struct herd_knobs *k, enum herd_workload w,
                struct retry_policy *out, char *err, size_t errlen);

#endif
