#ifndef RATELAB_VERIFY_NOISE_H
#define RATELAB_VERIFY_NOISE_H

#include <stddef.h>
#include <stdint.h>

#include "lab/verify_grade.h"

/*
 * How late this machine wakes a sleeper while a verify run goes on: a
 * thread sleeps VERIFY_NOISE_SLEEP_NS at a time and records by how much each
 * wake-up overslept.  The grader widens its statistical margins (backs-off,
 * jitter) to a multiple of the typical oversleep, and knows when the
 * machine stalled (a wake-up VERIFY_NOISE_STALL_NS or more late): a client
 * that should have woken then was held up with it.
 */

#define VERIFY_NOISE_SLEEP_NS (5ULL * 1000000ULL)
#define VERIFY_NOISE_STALL_NS (50ULL * 1000000ULL)
#define VERIFY_NOISE_SAMPLES 4096

struct verify_noise;

/* What the probe saw. */
struct verify_noise_report {
	uint64_t p90_ns;                    /* the 90th percentile of the oversleeps (0: no sample) */
	struct verify_grade_stall stalls[VERIFY_GRADE_MAX_STALLS];
	size_t nstalls;                     /* the first VERIFY_GRADE_MAX_STALLS stalls */
};

/* Start the probe thread.  NULL when it cannot start (the run then grades with no noise). */
struct verify_noise *verify_noise_start(void);

/* Stop the probe, fill *out (zeroed for NULL) and free it. */
void verify_noise_stop(struct verify_noise *n, struct verify_noise_report *out);

#endif
