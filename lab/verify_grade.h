#ifndef RATELAB_VERIFY_GRADE_H
#define RATELAB_VERIFY_GRADE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/handlers/scenario.h"

/*
 * The grader of `ratelab verify`: a pure function from an arrival log (what
 * the scenario server saw and answered) plus the command's exit to one
 * verdict per expectation, each with its evidence.  No clock, no I/O.
 */

#define VERIFY_GRADE_MAX_EXPECT 16
#define VERIFY_GRADE_TOLERANCE_NS (50ULL * 1000000ULL)  /* honours-retry-after */
#define VERIFY_GRADE_MIN_GAP_NS (10ULL * 1000000ULL)    /* backs-off: "at once" is under this */
#define VERIFY_GRADE_JITTER_NS (10ULL * 1000000ULL)     /* jitter: spread across clients */
#define VERIFY_GRADE_STOP_ATTEMPTS 10                    /* stops-after-attempts: more is not stopping */

enum verify_grade_kind {
	VERIFY_SUCCEEDS,
	VERIFY_HONOURS_RETRY_AFTER,
	VERIFY_MAX_ATTEMPTS,
	VERIFY_GIVES_UP_WITHIN,
	VERIFY_NO_RETRY_NON_IDEMPOTENT,
	VERIFY_BACKS_OFF,
	VERIFY_JITTER,
	VERIFY_STOPS_AFTER_ATTEMPTS,
};

struct verify_grade_expect {
	enum verify_grade_kind kind;
	uint64_t arg;           /* N for max-attempts, ns for gives-up-within */
	char text[48];          /* as written, e.g. "max-attempts<=3" */
};

/* How the command ended. */
struct verify_grade_run {
	int exit_status;        /* exit code, or 128+signal */
	bool killed;            /* still running at the timeout, so killed */
	uint64_t wall_ns;       /* from start to exit (or to the kill) */
	uint64_t timeout_ns;
};

struct verify_grade_verdict {
	char name[48];
	bool pass;
	char evidence[1024];
};

/*
 * Parse a comma-separated expectation list ("succeeds,max-attempts<=3,
 * gives-up-within=5s").  Fills out[0..*n).  Returns 0, or -1 with a reason
 * naming the bad item in err.
 */
int verify_grade_parse(const char *list, struct verify_grade_expect *out, size_t max, size_t *n, char *err,
                       size_t errlen);

/*
 * Grade one expectation over log[0..n) (arrival order) and the run.  Fills
 * *out.  Pure and thread-safe.
 */
void verify_grade_one(const struct verify_grade_expect *e, const struct scenario_arrival *log, size_t n,
                      const struct verify_grade_run *run, struct verify_grade_verdict *out);

/* The expectation names, for --help: "succeeds, honours-retry-after, ...". */
const char *verify_grade_names(void);

#endif
