/* A result's JSON text, read and parsed within bounds (result_text.h). */
#include "hammer/result_text.h"

#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void result_text_malloc_tune(void)
{
	/* glibc's default; setting it at all stops the dynamic raise */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
}

/* What a text would take to parse: its JSON values (an object weighted), the bytes inside its strings, its longest number. */
struct text_cost {
	size_t values;
	size_t string_bytes;
	size_t longest_token;
};

/*
 * An upper bound of the JSON values in text: every value but the first of
 * an array or object follows a comma, so commas plus containers plus one
 * (outside strings) bound them for any text.  An object counts
 * RESULT_TEXT_OBJECT_WEIGHT times (its hash table).  A token is a run of
 * other bytes outside strings (a number, true, false, null, or junk).
 */
static struct text_cost text_cost(const char *text, size_t len)
{
	struct text_cost c = { 1, 0, 0 };
	bool in_str = false, esc = false;
	size_t token = 0;

	for (size_t i = 0; i < len; i++) {
		char ch = text[i];

		if (in_str) {
			in_str = esc || ch != '"';
			esc = !esc && ch == '\\';
			c.string_bytes += in_str;
			continue;
		}
		in_str = ch == '"';
		c.values += ch == ',' || ch == '[';
		c.values += ch == '{' ? RESULT_TEXT_OBJECT_WEIGHT : 0;
		token = strchr("\"[]{}:, \t\r\n", ch) != NULL ? 0 : token + 1;
		c.longest_token = token > c.longest_token ? token : c.longest_token;
	}
	return c;
}

json_t *result_text_parse(const char *text, size_t len, char *err, size_t errlen)
{
	json_error_t je;
	struct text_cost c;
	json_t *o;

	if (len > RESULT_TEXT_MAX_BYTES) {
		snprintf(err, errlen, "larger than %u MiB", RESULT_TEXT_MAX_BYTES >> 20);
		return NULL;
	}
	c = text_cost(text, len);
	if (c.values > RESULT_TEXT_MAX_VALUES) {
		snprintf(err, errlen, "more than %u JSON values (a shorter run, or a longer --interval)",
		         RESULT_TEXT_MAX_VALUES);
		return NULL;
	}
	if (c.string_bytes > RESULT_TEXT_MAX_STRINGS) {
		snprintf(err, errlen, "more than %u KiB in strings", RESULT_TEXT_MAX_STRINGS >> 10);
		return NULL;
	}
	if (c.longest_token > RESULT_TEXT_MAX_TOKEN) {
		snprintf(err, errlen, "a number longer than %u characters", RESULT_TEXT_MAX_TOKEN);
		return NULL;
	}
	o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (o == NULL) {
		snprintf(err, errlen, "not JSON: %s", je.text);
		return NULL;
	}
	if (!json_is_object(o)) {
		snprintf(err, errlen, "not a JSON object");
		json_decref(o);
		return NULL;
	}
	return o;
}

void result_text_add(struct result_text *t, const char *piece, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char ch = piece[i];

		if (t->in_str) {
			t->in_str = t->esc || ch != '"';
			t->esc = !t->esc && ch == '\\';
		} else if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
			if (t->space)
				continue;
			t->space = true;
			ch = ' ';
		} else {
			t->space = false;
			t->in_str = ch == '"';
		}
		t->buf[t->len++] = ch;
	}
}

#define READ_PIECE ((size_t)64 << 10)

json_t *result_text_load_file(const char *path, bool *missing, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	struct result_text t = { 0 };
	char *piece = NULL;
	size_t n, raw = 0;
	json_t *o = NULL;

	*missing = f == NULL;
	if (f == NULL)
		return snprintf(err, errlen, "unable to open %s: %s", path, strerror(errno)), NULL;
	if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size > RESULT_TEXT_MAX_BYTES) {
		snprintf(err, errlen, "larger than %u MiB", RESULT_TEXT_MAX_BYTES >> 20);
		goto close;
	}
	/* a pipe or a file still growing is read to one piece past the bound at most */
	if ((t.buf = malloc(RESULT_TEXT_MAX_BYTES + READ_PIECE)) == NULL || (piece = malloc(READ_PIECE)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto close;
	}
	while (raw <= RESULT_TEXT_MAX_BYTES && (n = fread(piece, 1, READ_PIECE, f)) > 0) {
		result_text_add(&t, piece, n);
		raw += n;
	}
	if (ferror(f))
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
	else if (raw > RESULT_TEXT_MAX_BYTES)
		snprintf(err, errlen, "larger than %u MiB", RESULT_TEXT_MAX_BYTES >> 20);
	else
		o = result_text_parse(t.buf, t.len, err, errlen);
close:
	free(piece);
	free(t.buf);
	fclose(f);
	return o;
}
