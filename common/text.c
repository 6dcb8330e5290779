/* Outside text made fit to show: printable ASCII and whole UTF-8 letters, '?' for the rest. */
#include "common/text.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t text_utf8_char(const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t k = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 && s[0] <= 0xef ? 3 : s[0] >= 0xc2 && s[0] <= 0xdf ? 2 : 0;
	uint32_t c;

	if (k == 0 || k > n)
		return 0;
	c = s[0] & (0xffu >> (k + 1));
	for (size_t i = 1; i < k; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3fu);
	}
	if ((k == 3 && c < 0x800) || (k == 4 && (c < 0x10000 || c > 0x10ffff)) || (c >= 0xd800 && c <= 0xdfff) ||
	    c < 0xa0)
		return 0;
	return k;
}

void text_printable(const char *s, size_t n, char *buf, size_t len)
{
	size_t j = 0;

	if (len == 0)
		return;
	for (size_t i = 0; i < n && j + 1 < len;) {
		size_t k = (unsigned char)s[i] >= 0x80 ? text_utf8_char(s + i, n - i) : 0;

		if (k > 0 && j + k < len) {
			memcpy(buf + j, s + i, k);
			j += k;
			i += k;
			continue;
		}
		if (k > 0)
			break;
		buf[j++] = isprint((unsigned char)s[i]) ? s[i] : '?';
		i++;
	}
	buf[j] = '\0';
}

void text_label_value(const char *v, char *buf, size_t len)
{
	size_t j = 0;

	if (len == 0)
		return;
	for (; *v; v++) {
		bool esc = *v == '\\' || *v == '"' || *v == '\n';

		if (j + 1 + esc >= len)
			break;
		if (esc)
			buf[j++] = '\\';
		buf[j++] = *v == '\n' ? 'n' : *v;
	}
	buf[j] = '\0';
}

char *text_read_file(const char *path, size_t max, size_t *len, enum text_read_error *why)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL, *grown;
	size_t n = 0, cap = 0;

	if (f == NULL) {
		*why = TEXT_READ_OPEN;
		return NULL;
	}
	for (;;) {
		if (n == cap) {
			size_t want = cap ? 2 * cap : 16u << 10;

			if (cap == max + 1) {
				*why = TEXT_READ_TOO_BIG;
				goto fail;
			}
			cap = want > max + 1 ? max + 1 : want;
			if ((grown = realloc(buf, cap + 1)) == NULL) {
				*why = TEXT_READ_NOMEM;
				goto fail;
			}
			buf = grown;
		}
		n += fread(buf + n, 1, cap - n, f);
		if (ferror(f)) {
			*why = TEXT_READ_FAILED;
			goto fail;
		}
		if (feof(f))
			break;
	}
	if (n > max) {
		*why = TEXT_READ_TOO_BIG;
		goto fail;
	}
	buf[n] = '\0';
	fclose(f);
	if (len != NULL)
		*len = n;
	return buf;
fail:
	free(buf);
	fclose(f);
	return NULL;
}

size_t text_fit(const char *s, size_t max)
{
	size_t n = strnlen(s, max + 1);

	if (n <= max)
		return n;
	n = max;
	while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	return n;
}

size_t text_field_len(const char *v)
{
	size_t n = strlen(v);

	while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	return n;
}
