#ifndef RATELAB_VERIFY_NOISE_H
#define RATELAB_VERIFY_NOISE_H

#include <stdint.h>

/*
 * How late this machine wakes a sleeper while a verify run goes on: a
 * thread sleeps VERIFY_NOISE_SLEEP_NS at a time and records by how much each
 * wake-up overslept.  The grader widens its statistical margins (backs-off,
 * jitter) to a multiple of this figure, so a busy machine's scheduling
 * does not pass as jitter or growth.
 */

#define VERIFY_NOISE_SLEEP_NS (5ULL * 1000000ULL)
#define VERIFY_NOISE_SAMPLES 4096

struct verify_noise;

/* Start the probe thread.  NULL when it cannot start (the run then grades with noise 0). */
struct verify_noise *verify_noise_start(void);

/*
 * Stop the probe and free it; returns the 90th percentile of the oversleeps
 * in ns (0 for NULL or when no sample was taken).
 */
uint64_t verify_noise_stop(struct verify_noise *n);

#endif
