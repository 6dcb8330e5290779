#ifndef RATELAB_CASES_IMPL_H
#define RATELAB_CASES_IMPL_H

/*
 * Inside ratelab cases (cases.c: reading the file, running the rows, the
 * output and --junit; cases_row.c: reading one row of the JSON table).  Not
 * an interface: only those two files include it.
 */
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/retry/retry.h"

#define CASES_MAX_ROWS 100000u

struct case_row {
	unsigned id;
	const char *name, *seed, *rule;
	struct retry_policy policy;
	struct retry_input in;
	bool budget_given, tokens_given;
	double firsts, retries, tokens;
	uint64_t budget_at_ns;
	bool exp_retry, exp_wait;
	enum retry_reason exp_reason;
	double wait_lo_ms, wait_hi_ms;
};

/* Where each row object starts, by line, found by a small scan of the text. */
struct row_lines {
	unsigned *line;
	size_t n, cap;
};

/*
 * Record in rl the line of every '{' directly inside the rows array of the
 * table's text t: the root when it is an array, else the array under the
 * root's "cases" key.  0, or -1 out of memory (or past CASES_MAX_ROWS rows);
 * the caller frees rl->line.
 */
int cases_row_lines_scan(const char *t, struct row_lines *rl);

/* The row's error message: why = fmt with arg.  Always returns -1. */
int cases_row_err(char *why, size_t wl, const char *fmt, const char *arg);

/*
 * Read row (the index-th of the table) into c; its strings point into row.
 * 0, or -1 with the reason in why.
 */
int cases_row_parse(json_t *row, unsigned index, struct case_row *c, char *why, size_t wl);

#endif
