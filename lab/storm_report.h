#ifndef RATELAB_STORM_REPORT_H
#define RATELAB_STORM_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/rate_schedule.h"
#include "hammer/engine.h"
#include "server/capacity.h"

/*
 * What `ratelab storm` shows of one policy's run: 100 ms rows of the
 * offered load, the attempts, the goodput (2xx answers the clients got, all
 * within their per-attempt deadline, since a later answer is never read)
 * and the server's queue; then goodput before, during and after the
 * trigger, whether and when it came back to 90 % of its level before for
 * good (every second from then to the end of the run), the
 * retry amplification and the work done for clients that had gone.  With
 * --report DIR: report.html (one lane per policy), results.json and one
 * CSV per policy.
 */

#define STORM_ROW_NS (100ULL * 1000 * 1000)
#define STORM_RECOVERED 0.9       /* recovered: every second's goodput back to 90 % of the level before */
#define STORM_WARMUP_NS (1000ULL * 1000 * 1000)   /* the first second is the ramp: not in "before" */

/* One 100 ms row: counts in the row, the queue at its fullest. */
struct storm_row {
	double offered;       /* arrivals the schedule made */
	uint32_t attempts;    /* calls sent */
	uint32_t retries;     /* of them, by a retry */
	uint32_t goodput;     /* 2xx answers received */
	uint32_t queue;       /* requests waiting in the backend, at most */
	uint32_t workers;     /* workers the trigger left */
	uint32_t wasted;      /* services ended for clients that had gone */
};

/* When the trigger acts, from the run's start. */
struct storm_window {
	uint64_t start_ns, end_ns;
};

struct storm_result {
	char policy[48];
	bool triggered;                /* false: the counterfactual, same load and no trigger */
	uint64_t requests;             /* logical requests started (finished or not) */
	uint64_t ok, attempts, retries, throttled, unsent;
	double amplification;          /* attempts per request */
	double before, during, after;  /* goodput per second in the three phases */
	double best_after;             /* the best second of goodput after the trigger's end */
	bool recovered;
	uint64_t recovered_ns;         /* from the trigger's end to the start of the first second from which
	                                * every second to the end of the run has 90 % of before */
	uint64_t served, served_gone;  /* the server's services, and those for gone clients */
	double work_s, work_gone_s;
	uint32_t queue_peak;
	uint64_t duration_ns;
	uint32_t nrows;
	struct storm_row *rows;        /* malloc'd, nrows of STORM_ROW_NS */
};

/* What one run left: the hammer's result, the schedule it followed, the server's series and counters. */
struct storm_run {
	const struct hammer_result *hammer;
	const struct rate_schedule *schedule;
	const struct capacity_bucket *series;
	size_t nseries;
	const struct capacity_stats *backend;
	uint64_t duration_ns;
};

/*
 * Fill *out from one run (policy's name, triggered or not) and compute its
 * phases against w.  Returns 0, or -1 when out of memory; free with
 * storm_result_destroy.
 */
int storm_result_from_run(struct storm_result *out, const char *policy, bool triggered, const struct storm_run *run,
                          const struct storm_window *w);
void storm_result_destroy(struct storm_result *r);

/*
 * From r's rows: before (from the warm-up's end, at most 5 s back, to the
 * trigger), during, after (to the end), best_after, recovered and
 * recovered_ns, goodput over whole seconds starting on row boundaries.
 * Recovered needs at least one whole second after the trigger with every
 * second from it on at 90 %.  Pure.
 */
void storm_phases(struct storm_result *r, const struct storm_window *w);

/* One table row, the header line first when `header`. */
void storm_report_row(FILE *f, const struct storm_result *r, bool header);

struct storm_report_info {
	const char *capacity;          /* capacity_describe */
	const char *trigger;           /* what the trigger is, or the spike's description */
	const char *rate;              /* rate_schedule_describe */
	uint64_t timeout_ns;
	uint64_t duration_ns;
	uint32_t clients;
	uint64_t seed;
	uint32_t queue_max;
	struct storm_window window;
};

/*
 * Write DIR (created if missing) with report.html, results.json and
 * DIR/<policy>.csv.  Returns 0, or -1 with a one-line reason naming the file.
 */
int storm_report_write(const char *dir, const struct storm_report_info *info, const struct storm_result *res,
                       size_t n, char *err, size_t errlen);

#endif
