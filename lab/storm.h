#ifndef RATELAB_STORM_H
#define RATELAB_STORM_H

#include <stddef.h>
#include <stdint.h>

#include "common/retry/retry.h"

/*
 * `ratelab storm`: the metastable retry storm.  For each client policy a
 * fresh in-process server with a modelled backend (serve --capacity) meets
 * the same open-loop load and the same trigger (a capacity drop, or a
 * spike in the --rate schedule); the table and the report show goodput
 * before, during and after it, whether it came back, the retry
 * amplification and the work done for clients that had gone.
 */

/* Entry point of 'ratelab storm'.  argv[0] is "storm".  Returns the exit code:
 * 0 when every policy ran, 1 when a run could not be set up, 2 on a usage
 * error, 130 when interrupted (what finished is still shown and written). */
int storm_main(int argc, char **argv);

#define STORM_DEFAULT_POLICIES "naive,backoff,budget,adaptive"

/* The knobs of the built-in policies. */
struct storm_knobs {
	uint64_t throttle_window_ns;   /* adaptive: the throttle's window (500 ms) */
	double throttle_k;             /* adaptive: K (2) */
};

/*
 * Build policy `name`: naive (the preset: 5 attempts, no wait), backoff
 * (naive's rules with exponential backoff and full jitter, 100 ms to 2 s),
 * budget (naive with seed 001's retry budget: 20 % of first attempts plus
 * 10 a second over 10 s), adaptive (the sre-adaptive preset with the
 * knobs' window and K), or any retry preset as it is.  Returns 0, or -1
 * with a reason naming the policy.  Pure.
 */
int storm_policy(const char *name, const struct storm_knobs *k, struct retry_policy *out, char *err, size_t errlen);

#endif
