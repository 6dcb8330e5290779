#ifndef RATELAB_HERD_REPORT_H
#define RATELAB_HERD_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hammer/engine.h"

/*
 * What `ratelab herd` shows: the table on the terminal, and with --report
 * DIR an offline report.html (one SVG lane per policy on a shared time axis
 * and one shared log scale, calls per 100 ms split by outcome, the first
 * volley whole, filling the window; plus the table and the server that
 * ran), results.json (every table figure, one object per policy) and
 * DIR/<policy>.csv.  The figures of one policy are read from the engine's
 * result of its run.
 */

#define HERD_BIN_NS (10ULL * 1000 * 1000)    /* fine bins: 10 ms */
#define HERD_PEAK_NS (100ULL * 1000 * 1000)  /* the peak window: 100 ms */

/* The calls that started in one fine bin, by outcome. */
struct herd_bin {
	uint32_t ok;        /* 2xx */
	uint32_t rejected;  /* 429 and 503 */
	uint32_t conflict;  /* 409 */
	uint32_t other;     /* any other status or a transport error */
	uint32_t retries;   /* calls made by retries (all outcomes) */
};

struct herd_result {
	char policy[32];
	uint64_t clients;
	uint64_t successes;
	uint64_t failures;       /* clients that gave up or were still trying at --max-time */
	uint64_t calls;          /* every HTTP request, GETs and PUTs alike */
	uint64_t retries;        /* calls made by retries */
	uint64_t completion_ns;  /* last success, from the herd start */
	uint64_t wall_ns;        /* the whole run */
	uint64_t peak_attempts;  /* most calls in any 100 ms window (sliding, 10 ms steps) */
	uint64_t peak_retries;   /* most retries in any 100 ms window: the herd's echo */
	uint32_t nbins;
	struct herd_bin *bins;   /* malloc'd, nbins entries of HERD_BIN_NS */
};

/*
 * Fill *out from the engine's result of one policy's run of `clients`
 * clients (run with by_start_ns = HERD_BIN_NS).  Returns 0, or -1 when out
 * of memory; free out's bins with herd_result_destroy.
 */
int herd_result_from_run(struct herd_result *out, const char *policy, uint32_t clients,
                         const struct hammer_result *r);

void herd_result_destroy(struct herd_result *r);

/* Calls of any outcome in a bin. */
uint32_t herd_bin_attempts(const struct herd_bin *b);

/* Fill the peak fields of r from its bins. */
void herd_result_peaks(struct herd_result *r);

struct herd_report_info {
	const char *workload;    /* "request" or "occ" */
	uint32_t clients;
	uint64_t seed;
	const char *limiter;     /* in-process server's limiter, or NULL (--url) */
	const char *url;         /* --url: the external server, else NULL */
	const char *server_policy;  /* --url: the RateLimit-Policy it sent, or NULL */
	uint64_t limit, burst;
	uint64_t base_ns, cap_ns;
	unsigned max_attempts;
	size_t planned;          /* policies asked for; more than the results when interrupted */
	bool interrupted;        /* Ctrl-C stopped the run: the results are the policies that finished */
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
