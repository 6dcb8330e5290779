#ifndef RATELAB_RESULT_TEXT_H
#define RATELAB_RESULT_TEXT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * A result's JSON text (hammer/result_codec.h), read from a file or from
 * pieces and parsed within bounds that are checked before the parser runs,
 * so a hostile or runaway result cannot take memory without limit.
 */

/*
 * What one result may hold, checked before it is parsed: at most
 * RESULT_TEXT_MAX_BYTES of JSON text, RESULT_TEXT_MAX_VALUES JSON values
 * (numbers, strings, arrays, objects; an object counts as
 * RESULT_TEXT_OBJECT_WEIGHT, it takes that much more memory),
 * RESULT_TEXT_MAX_STRINGS bytes inside strings and keys, and no number
 * (or other bare token) longer than RESULT_TEXT_MAX_TOKEN characters (the
 * parser copies a token whole; a count or a double fits in 25).  Reading one that
 * fits takes at most 4 times RESULT_TEXT_MAX_BYTES of peak RSS, the
 * process included (22 to 30 MB measured: tests/integration/check_hostile_*.c).
 * 150,000 values are about 21,000 timeline rows with two status codes: 35
 * minutes of hammer at the default 100 ms interval, or a herd round's 3 min
 * (its by_start rows are 10 ms); a longer --interval makes fewer rows.
 */
#define RESULT_TEXT_MAX_BYTES  (8u << 20)
#define RESULT_TEXT_MAX_VALUES 150000u
#define RESULT_TEXT_OBJECT_WEIGHT 3u
#define RESULT_TEXT_MAX_STRINGS (256u << 10)
#define RESULT_TEXT_MAX_TOKEN  32u

/*
 * Parse len bytes of text as one JSON object within the bounds above.  A new
 * reference, or NULL with a one-line reason in err (too large, too many
 * values or string bytes, not JSON, not an object).  Thread-safe.
 */
json_t *result_text_parse(const char *text, size_t len, char *err, size_t errlen);

/*
 * A result's text as it comes in pieces (a file, Redis): each run of
 * whitespace outside strings is kept as one space, which means the same
 * JSON, so that padding a result up to its bound costs no memory.  buf must
 * have room for every byte added (it never grows: the squeezed text is at
 * most as long); len is the text so far.  Start from all zeros and buf.
 */
struct result_text {
	char *buf;
	size_t len;
	bool in_str, esc, space;
};

void result_text_add(struct result_text *t, const char *piece, size_t n);

/*
 * Read the file at path (squeezed as result_text_add does) with
 * result_text_parse; its size is checked before it is read, and its bytes
 * as they are read.  A new reference, or NULL with a reason in err; *missing is set
 * when the file could not be opened (no such file, no permission).
 */
json_t *result_text_load_file(const char *path, bool *missing, char *err, size_t errlen);

/*
 * Before reading results: large blocks (a result's text, a timeline) are
 * always mapped, and unmapped when freed.  Otherwise glibc raises its
 * mapping threshold after the first large free and later large blocks stay
 * in the heap, resident, depending on the order of frees (twelve results at
 * the bound then took 30.5 MB or 22 MB).  Process-wide; call it from the
 * main thread, after any run's threads are done.
 */
void result_text_malloc_tune(void);

#endif
