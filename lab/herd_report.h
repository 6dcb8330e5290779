#ifndef RATELAB_HERD_REPORT_H
#define RATELAB_HERD_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lab/herd_run.h"

/*
 * What `ratelab herd` shows: the table on the terminal, and with --report
 * DIR an offline report.html (one SVG lane per policy on a shared time axis,
 * attempts per 100 ms coloured by outcome, plus the table), results.json
 * (every table figure, one object per policy) and DIR/<policy>.csv.
 */

struct herd_report_info {
	const char *workload;    /* "request" or "occ" */
	uint32_t clients;
	uint64_t seed;
	const char *limiter;     /* in-process server's limiter, or NULL (--url) */
	uint64_t limit, burst;
	uint64_t base_ns, cap_ns;
	unsigned max_attempts;
};

/* Print one table row, with the header line first when `header`. */
void herd_report_row(FILE *f, const struct herd_result *r, bool header);

/* Attempts by outcome in 100 ms row `row` (sums of ten fine bins); false past the end. */
bool herd_report_row100(const struct herd_result *r, uint32_t row, struct herd_bin *out);

/* Rows of 100 ms in r (rounded up). */
uint32_t herd_report_rows100(const struct herd_result *r);

/*
 * Write DIR (created if missing) with report.html, results.json and one CSV
 * per policy.  Returns 0, or -1 with a one-line reason naming the file.
 */
int herd_report_write(const char *dir, const struct herd_report_info *info, const struct herd_result *res,
                      size_t n, char *err, size_t errlen);

#endif
