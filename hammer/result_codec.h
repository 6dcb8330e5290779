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
 * What one result may hold, checked before it is parsed: at most
 * RESULT_CODEC_MAX_BYTES of JSON text and RESULT_CODEC_MAX_VALUES JSON values
 * (numbers, strings, arrays, objects), so that reading one takes at most a
 * few tens of MB whatever it claims.  Every count in it is at most
 * RESULT_CODEC_MAX_COUNT (10^12: over three years at 10,000 requests a
 * second), so the sum of RESULT_CODEC_MAX_SUMMED results never overflows.
 */
#define RESULT_CODEC_MAX_BYTES  (8u << 20)
#define RESULT_CODEC_MAX_VALUES 1000000u
#define RESULT_CODEC_MAX_COUNT  1000000000000ULL
#define RESULT_CODEC_MAX_NS     (3650ULL * 86400 * 1000000000)  /* a duration or offset: ten years */
#define RESULT_CODEC_MAX_SUMMED 1000000u

/*
 * Parse len bytes of text as one JSON object within the bounds above.  A new
 * reference, or NULL with a one-line reason in err (too large, too many
 * values, not JSON, not an object).  Thread-safe.
 */
json_t *result_codec_parse(const char *text, size_t len, char *err, size_t errlen);

/*
 * Read the file at path with result_codec_parse; its size is checked before
 * it is read.  A new reference, or NULL with a reason in err; *missing is set
 * when the file could not be opened (no such file, no permission).
 */
json_t *result_codec_load_file(const char *path, bool *missing, char *err, size_t errlen);

/* The raw object of r (a new reference), or NULL when out of memory. */
json_t *result_codec_json(const struct hammer_result *r);

/*
 * Add the result raw describes into dst (initialised by hammer_result_init),
 * its timeline rows `shift` intervals later.  Returns 0, or -1 with a
 * one-line reason in err (not a raw object, a bad field, a count that is
 * negative or over RESULT_CODEC_MAX_COUNT, histogram buckets that do not add
 * up to its count, another interval than dst's, out of memory).  dst may be partly added to on -1.  The
 * server URLs dst takes from raw point into it: keep raw while dst lives.
 */
int result_codec_add(struct hammer_result *dst, const json_t *raw, uint32_t shift, char *err, size_t errlen);

/* raw's start instant (ns since 1970) and interval (ns); 0 when absent. */
uint64_t result_codec_start_ns(const json_t *raw);
uint64_t result_codec_interval_ns(const json_t *raw);

#endif
