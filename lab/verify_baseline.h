#ifndef RATELAB_VERIFY_BASELINE_H
#define RATELAB_VERIFY_BASELINE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "lab/verify_run.h"

/*
 * `ratelab verify --baseline FILE`: the verdicts a team accepts today, so a
 * CI job fails only on what got worse.  The file is JSON, one outcome per
 * scenario and expectation:
 *
 *   {"ratelab_verify_baseline": 1,
 *    "verdicts": {"post-503": {"no-retry-non-idempotent": "fail"}, ...}}
 *
 * Outcomes rank pass > not observed > fail (with --strict, not observed
 * ranks as fail); a run that did not reach grading counts as fail.  A verdict
 * the baseline does not name is compared with "pass".
 */

/* What a comparison found. */
struct verify_baseline_diff {
	size_t worse, better, same;
};

/*
 * Read FILE; returns the baseline (json_decref it) or NULL with a one-line
 * reason in err ("cannot be read (...)", "is not a verify baseline").
 */
json_t *verify_baseline_load(const char *path, char *err, size_t errlen);

/* Write the verdicts of rs[0..n) to path; 0, or -1 when it cannot be written. */
int verify_baseline_write(const char *path, const struct verify_result *rs, size_t n);

/*
 * Compare rs[0..n) with base, print one line per verdict that changed
 * ("better  SCENARIO EXPECTATION: fail -> pass", "WORSE   ...") and a closing
 * line to f, and fill *d.  Pure but for the printing.
 */
void verify_baseline_compare(FILE *f, const char *path, json_t *base, const struct verify_result *rs, size_t n,
                             bool strict, struct verify_baseline_diff *d);

#endif
