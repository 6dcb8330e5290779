#ifndef RATELAB_VERIFY_REPORT_H
#define RATELAB_VERIFY_REPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "common/junit.h"
#include "lab/verify_run.h"

/*
 * What `ratelab verify` prints and writes: one run's text (arrivals and
 * verdicts), its JSON, its JUnit suite, the --all table, and the exit code.
 * strict: a "not observed" verdict counts as a failure.  Pure formatting.
 */

#define VERIFY_EXIT_OK 0
#define VERIFY_EXIT_FAILED 1
#define VERIFY_EXIT_USAGE 2
#define VERIFY_EXIT_NOT_RUN 4            /* the command could not run or never reached the server */
#define VERIFY_EXIT_NOTHING_OBSERVED 5   /* none failed, but a scenario had no expectation observed at all */
#define VERIFY_EXIT_INTERRUPTED 130

/* One run as text: the header line, the arrivals (unless quiet), the verdicts, the closing line. */
void verify_report_text(FILE *f, const struct verify_result *r, bool quiet, bool strict);

/* One run as a JSON object (the caller decrefs); NULL when out of memory. */
json_t *verify_report_json(const struct verify_result *r, bool strict);

/* One run as a JUnit testsuite: one testcase per expectation.  0 or -1 (OOM). */
int verify_report_junit(struct junit *j, const struct verify_result *r, bool strict);

/* The --all table: one row per scenario, one column per kind of expectation, then the failures. */
void verify_report_table(FILE *f, const struct verify_result *rs, size_t n, bool strict);

/* The exit code of one run (VERIFY_EXIT_*). */
int verify_report_exit(const struct verify_result *r, bool strict);

/* The exit code of several runs: 130 interrupted, 4 when no scenario reached the server, else the worst of 1, 5, 0. */
int verify_report_exit_all(const struct verify_result *rs, size_t n, bool strict);

#endif
