#ifndef RATELAB_JUNIT_H
#define RATELAB_JUNIT_H

#include <stddef.h>

/*
 * JUnit XML, the report format CI systems read: <testsuites> holding one
 * <testsuite> per group, each holding <testcase>s that passed, failed (with
 * a message and the evidence), were skipped, or met an error.  Built in
 * memory, written at once.  Text is escaped for XML (control characters
 * other than tab and newline are dropped).  Not thread-safe per report.
 */

enum junit_result {
	JUNIT_PASS,
	JUNIT_FAILURE,       /* the check ran and did not hold */
	JUNIT_SKIPPED,       /* the check could not be decided */
	JUNIT_ERROR,         /* the check could not run */
};

struct junit;

/* A new report named `name` (the <testsuites> name).  NULL when out of memory. */
struct junit *junit_new(const char *name);

/* Free a report; NULL is a no-op. */
void junit_free(struct junit *j);

/* Start a <testsuite> (the cases added next belong to it); time_s is its duration.  0 or -1 (OOM). */
int junit_suite(struct junit *j, const char *name, double time_s);

/*
 * Add a <testcase> to the current suite (junit_suite first).  message is the
 * one-line reason of a failure, skip or error, detail its longer text (both
 * may be NULL).  0 or -1 (OOM).
 */
int junit_case(struct junit *j, const char *classname, const char *name, double time_s, enum junit_result r,
               const char *message, const char *detail);

/* Write the report to path ("-": stdout).  0, or -1 with errno when it cannot be written. */
int junit_write(const struct junit *j, const char *path);

#endif
