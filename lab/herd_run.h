#ifndef RATELAB_HERD_RUN_H
#define RATELAB_HERD_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "common/retry/retry.h"

/*
 * One herd run: `clients` virtual clients start at the same instant against
 * one server and retry under one policy until they succeed or give up.  One
 * thread, one curl multi handle, a timer heap of clients waiting to retry;
 * each client has its own seeded PRNG stream, so a seed fixes every wait.
 * Attempts are counted in 10 ms bins by their start time and outcome.
 */

enum herd_workload {
	HERD_WORKLOAD_REQUEST, /* GET path until 2xx */
	HERD_WORKLOAD_OCC,     /* GET /occ, then PUT /occ with If-Match, until the PUT is 200 */
};

#define HERD_BIN_NS (10ULL * 1000 * 1000)    /* fine bins: 10 ms */
#define HERD_PEAK_NS (100ULL * 1000 * 1000)  /* the peak window: 100 ms */

struct herd_bin {
	uint32_t ok;        /* 2xx */
	uint32_t rejected;  /* 429 and 503 */
	uint32_t conflict;  /* 409 */
	uint32_t other;     /* any other status or a transport error */
	uint32_t retries;   /* attempts that were retries (all outcomes) */
};

struct herd_result {
	char policy[32];
	uint64_t clients;
	uint64_t successes;
	uint64_t failures;       /* gave up */
	uint64_t calls;          /* every HTTP request, GETs and PUTs alike */
	uint64_t retries;
	uint64_t completion_ns;  /* last success, from the herd start */
	uint64_t wall_ns;        /* the whole run */
	uint64_t peak_attempts;  /* most attempts in any 100 ms window (sliding, 10 ms steps) */
	uint64_t peak_retries;   /* most retries in any 100 ms window: the herd's echo */
	uint32_t nbins;
	struct herd_bin *bins;   /* malloc'd, nbins entries of HERD_BIN_NS */
};

struct herd_run_config {
	const char *url;               /* base, "http://127.0.0.1:PORT" */
	const char *path;              /* REQUEST workload path, e.g. "/" */
	enum herd_workload workload;
	uint32_t clients;
	const struct retry_policy *policy;
	uint64_t seed;
	uint64_t max_ns;               /* hard bound on the run; clients still waiting then fail */
};

/*
 * Run one herd.  Fills *out (free its bins with herd_result_destroy).
 * Returns 0, or -1 with a reason in err (setup failure; HTTP failures are
 * results, not errors).  Call curl_global_init first.  Not thread-safe
 * against itself only through curl_global_init.
 */
int herd_run(const struct herd_run_config *c, struct herd_result *out, char *err, size_t errlen);

void herd_result_destroy(struct herd_result *r);

/* Attempts of any outcome in fine bin i. */
uint32_t herd_bin_attempts(const struct herd_bin *b);

/* Fill the peak fields of r from its bins (exposed for the tests). */
void herd_result_peaks(struct herd_result *r);

#endif
