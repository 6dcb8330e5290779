#ifndef RATELAB_RESULT_CODEC_H
#define RATELAB_RESULT_CODEC_H

#include <jansson.h>
#include <stdbool.h>
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

/*
 * Every count in a result is at most RESULT_CODEC_MAX_COUNT (10^12: over three
 * years at 10,000 requests a second), so the sum of RESULT_CODEC_MAX_SUMMED
 * results never overflows.
 */
#define RESULT_CODEC_MAX_COUNT  1000000000000ULL
#define RESULT_CODEC_MAX_NS     (3650ULL * 86400 * 1000000000)  /* a duration or offset: ten years */
#define RESULT_CODEC_MAX_SUMMED 1000000u

/* The raw object of r (a new reference), or NULL when out of memory. */
json_t *result_codec_json(const struct hammer_result *r);

/*
 * Add the result raw describes into dst (initialised by hammer_result_init),
 * its timeline rows `shift` intervals later.  Returns 0, or -1 with a
 * one-line reason in err (not a raw object, a bad field, a count that is
 * negative or over RESULT_CODEC_MAX_COUNT, histogram buckets that do not add
 * up to its count, another interval than dst's or one under 1 ms, more than
 * HAMMER_MAX_URLS servers with dst's, out of memory).  raw is checked whole before anything is added: dst is untouched
 * on -1, but when memory ran out on the way.  The server URLs dst takes from
 * raw point into it: keep raw (or result_codec_kept) while dst lives.
 */
int result_codec_add(struct hammer_result *dst, const json_t *raw, uint32_t shift, char *err, size_t errlen);

/*
 * What dst points into after result_codec_add(dst, raw, ...): the strings of
 * raw's server URLs that dst took (a server takes its URL from the first
 * result that has one).  A new array holding them, so that the rest of raw
 * (and of the document around it) can be dropped; NULL when out of memory.
 */
json_t *result_codec_kept(const json_t *raw, const struct hammer_result *dst);

/* raw's start instant (ns since 1970) and interval (ns); 0 when absent. */
uint64_t result_codec_start_ns(const json_t *raw);
uint64_t result_codec_interval_ns(const json_t *raw);

#endif
