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
	double rate;
	bool herd;
	json_t *join;     /* a joined run's "join" object (borrowed), or NULL */
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
