#ifndef RATELAB_RESULT_CODEC_H
#define RATELAB_RESULT_CODEC_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "hammer/engine.h"

/*
 * A hammer result as JSON that another process can merge exactly: every
 * count, the histograms bucket by bucket (sparse [index, count] pairs with
 * the exact min, max and sum) and the timelines row by row.  Its size grows
 * with the run's length and the spread of its latencies, never with its
 * number of requests.  `--json` carries it as "raw"; a joined run's nodes
 * write it to Redis (hammer/join.h); `ratelab merge` reads it back.
 */

/* The raw object of r (a new reference), or NULL when out of memory. */
json_t *result_codec_json(const struct hammer_result *r);

/*
 * Add the result raw describes into dst (initialised by hammer_result_init),
 * its timeline rows `shift` intervals later.  Returns 0, or -1 with a
 * one-line reason in err (not a raw object, a bad field, another interval
 * than dst's, out of memory).  dst may be partly added to on -1.  The
 * server URLs dst takes from raw point into it: keep raw while dst lives.
 */
int result_codec_add(struct hammer_result *dst, const json_t *raw, uint32_t shift, char *err, size_t errlen);

/* raw's start instant (ns since 1970) and interval (ns); 0 when absent. */
uint64_t result_codec_start_ns(const json_t *raw);
uint64_t result_codec_interval_ns(const json_t *raw);

#endif
