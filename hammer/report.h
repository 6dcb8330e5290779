#ifndef RATELAB_REPORT_H
#define RATELAB_REPORT_H

#include <jansson.h>
#include <stdio.h>

#include "hammer/engine.h"

/* How a run was set up, echoed in the JSON. */
struct report_info {
	const char *url;
	const char *method;
	const char *policy;
	uint32_t concurrency;
	uint32_t threads;
	uint64_t seed;
	double rate;                             /* a schedule's peak */
	bool herd;
	json_t *join;                            /* a joined run's "join" object (borrowed), or NULL */
	const struct rate_schedule *schedule;    /* --rate as a schedule, or NULL */
};

/*
 * The human summary, starting in the lab guide's format:
 *   200  x37
 *   429  x3
 *   40 requests in 7.59s
 * then calls and retries, give-up reasons, transport errors, latency
 * percentiles and the peak attempts per interval.
 */
void report_text(FILE *f, const struct hammer_result *r);

/*
 * The same figures as a JSON object (new reference), or NULL when out of
 * memory.  Its "raw" member is the result in mergeable form
 * (hammer/result_codec.h), what `ratelab merge` reads back.
 */
json_t *report_json(const struct hammer_result *r, const struct report_info *info);

/* The "config" object of report_json (a new reference), or NULL when out of memory. */
json_t *report_config_json(const struct report_info *info, const struct hammer_result *r);

/*
 * Fill info back from a "config" object (its strings borrowed from config;
 * missing fields "?" or 0): what a merge of written results reports.
 */
void report_info_from_json(struct report_info *info, const json_t *config);

/*
 * What report_info_from_json reads of config, and nothing more: a new object
 * with those of its members that are strings or numbers (the same strings),
 * so that the rest of a result read from outside can be dropped.  NULL when
 * config is no object or memory ran out.
 */
json_t *report_config_kept(const json_t *config);

/* Open path for writing ("-": stdout), or NULL with "cannot write PATH: why" in err. */
FILE *report_open_out(const char *path, char *err, size_t errlen);

/* Close what report_open_out gave (stdout is flushed, not closed); -1 with err on any write error. */
int report_close_out(FILE *f, const char *path, char *err, size_t errlen);

/* Write report_json to path ("-" = stdout).  Returns 0, or -1 with err. */
int report_write_json(const char *path, const struct hammer_result *r, const struct report_info *info,
                      char *err, size_t errlen);

/* Write the timeline CSV to path ("-" = stdout).  Returns 0, or -1 with err. */
int report_write_timeline(const char *path, const struct timeline *t, char *err, size_t errlen);

#endif
