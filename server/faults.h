#ifndef RATELAB_FAULTS_H
#define RATELAB_FAULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/prng.h"

/*
 * Fault injection, fortio-style: "503:5,502:2,504:1,reset:1,no-retry-after:10,delay=50ms:20".
 * Each entry is KIND:PERCENT (PERCENT defaults to 100 when omitted).
 * - STATUS (200-599) and `reset` form one exclusive group: one draw picks at
 *   most one of them; their percentages add up to at most 100.
 * - `delay=DUR` entries form a second exclusive group (at most 100 in all).
 * - `no-retry-after` is drawn on its own, for rejections only.
 * Parsing is pure; picking draws from the caller's PRNG (one per thread).
 */

#define FAULTS_MAX 16

enum fault_kind { FAULT_STATUS, FAULT_RESET, FAULT_DELAY, FAULT_NO_RETRY_AFTER };

struct fault_entry {
	enum fault_kind kind;
	int status;          /* FAULT_STATUS */
	uint64_t delay_ns;   /* FAULT_DELAY */
	double percent;
};

struct faults {
	size_t n;
	struct fault_entry e[FAULTS_MAX];
};

struct fault_pick {
	int status;          /* 0: none */
	bool reset;
	bool no_retry_after;
	uint64_t delay_ns;   /* 0: none */
};

/*
 * Parse a spec into *f (appending to what is there).  Returns 0, or -1 with a
 * one-line reason naming the bad entry.
 */
int faults_parse(const char *spec, struct faults *f, char *err, size_t errlen);

/*
 * Parse query-parameter faults: `status` ("503" or "503:50,429:10") and
 * `delay` ("50ms" or "50ms:20,1s:5"); either may be NULL.  Returns 0 or -1.
 */
int faults_parse_query(const char *status, const char *delay, struct faults *f, char *err, size_t errlen);

/* True when no entry is set. */
bool faults_empty(const struct faults *f);

/* Draw this request's faults.  Uses a fixed number of draws (3) per call, so runs replay. */
void faults_pick(const struct faults *f, struct prng *rng, struct fault_pick *out);

#endif
