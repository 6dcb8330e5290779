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
 * RESULT_CODEC_MAX_BYTES of JSON text, RESULT_CODEC_MAX_VALUES JSON values
 * (numbers, strings, arrays, objects; an object counts as
 * RESULT_CODEC_OBJECT_WEIGHT, it takes that much more memory),
 * RESULT_CODEC_MAX_STRINGS bytes inside strings and keys, and no number
 * (or other bare token) longer than RESULT_CODEC_MAX_TOKEN characters (the
 * parser copies a token whole; a count or a double fits in 25).  Reading one that
 * fits takes at most 4 times RESULT_CODEC_MAX_BYTES of peak RSS, the
 * process included (22 to 30 MB measured: tests/integration/check_hostile_*.c).
 * 150,000 values are about 21,000 timeline rows with two status codes: 35
 * minutes of hammer at the default 100 ms interval, or a herd round's 3 min
 * (its by_start rows are 10 ms); a longer --interval makes fewer rows.
 * Every count in it is at most RESULT_CODEC_MAX_COUNT (10^12: over three
 * years at 10,000 requests a second), so the sum of RESULT_CODEC_MAX_SUMMED
 * results never overflows.
 */
#define RESULT_CODEC_MAX_BYTES  (8u << 20)
#define RESULT_CODEC_MAX_VALUES 150000u
#define RESULT_CODEC_OBJECT_WEIGHT 3u
#define RESULT_CODEC_MAX_STRINGS (256u << 10)
#define RESULT_CODEC_MAX_TOKEN  32u
#define RESULT_CODEC_MAX_COUNT  1000000000000ULL
#define RESULT_CODEC_MAX_NS     (3650ULL * 86400 * 1000000000)  /* a duration or offset: ten years */
#define RESULT_CODEC_MAX_SUMMED 1000000u

/*
 * Parse len bytes of text as one JSON object within the bounds above.  A new
 * reference, or NULL with a one-line reason in err (too large, too many
 * values or string bytes, not JSON, not an object).  Thread-safe.
 */
json_t *result_codec_parse(const char *text, size_t len, char *err, size_t errlen);

/*
 * A result's text as it comes in pieces (a file, Redis): each run of
 * whitespace outside strings is kept as one space, which means the same
 * JSON, so that padding a result up to its bound costs no memory.  buf must
 * have room for every byte added (it never grows: the squeezed text is at
 * most as long); len is the text so far.  Start from all zeros and buf.
 */
struct result_codec_text {
	char *buf;
	size_t len;
	bool in_str, esc, space;
};

void result_codec_text_add(struct result_codec_text *t, const char *piece, size_t n);

/*
 * Read the file at path (squeezed as result_codec_text_add does) with
 * result_codec_parse; its size is checked before it is read, and its bytes
 * as they are read.  A new reference, or NULL with a reason in err; *missing is set
 * when the file could not be opened (no such file, no permission).
 */
json_t *result_codec_load_file(const char *path, bool *missing, char *err, size_t errlen);

/*
 * Before reading results: large blocks (a result's text, a timeline) are
 * always mapped, and unmapped when freed.  Otherwise glibc raises its
 * mapping threshold after the first large free and later large blocks stay
 * in the heap, resident, depending on the order of frees (twelve results at
 * the bound then took 30.5 MB or 22 MB).  Process-wide; call it from the
 * main thread, after any run's threads are done.
 */
void result_codec_malloc_tune(void);

/* The raw object of r (a new reference), or NULL when out of memory. */
json_t *result_codec_json(const struct hammer_result *r);

/*
 * Add the result raw describes into dst (initialised by hammer_result_init),
 * its timeline rows `shift` intervals later.  Returns 0, or -1 with a
 * one-line reason in err (not a raw object, a bad field, a count that is
 * negative or over RESULT_CODEC_MAX_COUNT, histogram buckets that do not add
 * up to its count, another interval than dst's or one under 1 ms, out of
 * memory).  raw is checked whole before anything is added: dst is untouched
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
