/* "Did you mean": the closest word by edit distance (a swap of neighbours counts one). */
#include "common/suggest.h"

#include <stdio.h>
#include <string.h>

/*
 * Edits from a[0..n) to b[0..m) (insert, delete, replace, swap of neighbours); both <=
 * SUGGEST_WORD_MAX.  Three rows of the table: the one being filled and the two before it.
 */
static size_t edit_distance(const char *a, size_t n, const char *b, size_t m)
{
	unsigned char rows[3][SUGGEST_WORD_MAX + 1];

	for (size_t j = 0; j <= m; j++)
		rows[0][j] = (unsigned char)j;
	for (size_t i = 1; i <= n; i++) {
		unsigned char *d = rows[i % 3], *up = rows[(i - 1) % 3], *up2 = rows[(i + 1) % 3];

		d[0] = (unsigned char)i;
		for (size_t j = 1; j <= m; j++) {
			unsigned best = up[j - 1] + (a[i - 1] != b[j - 1]);

			if (up[j] + 1u < best)
				best = up[j] + 1u;
			if (d[j - 1] + 1u < best)
				best = d[j - 1] + 1u;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && up2[j - 2] + 1u < best)
				best = up2[j - 2] + 1u;
			d[j] = (unsigned char)best;
		}
	}
	return rows[n % 3][m];
}

static size_t allowed_distance(const char *typed)
{
	size_t n = strlen(typed), skip = strspn(typed, "-");

	return (n - skip) / 3 > 0 ? (n - skip) / 3 : 1;
}

void suggest_init(struct suggest *s, const char *typed, char *out, size_t outlen)
{
	s->typed = typed;
	s->best = s->limit = allowed_distance(typed) + 1;
	s->out = out;
	s->outlen = outlen;
	out[0] = '\0';
}

void suggest_consider(struct suggest *s, const char *word, size_t len)
{
	size_t tl = strlen(s->typed), d;

	if (tl > SUGGEST_WORD_MAX || len > SUGGEST_WORD_MAX || len == 0)
		return;
	d = edit_distance(s->typed, tl, word, len);
	if (d == 0 || d >= s->best)
		return;
	s->best = d;
	snprintf(s->out, s->outlen, "%.*s", (int)len, word);
}

bool suggest_found(const struct suggest *s)
{
	return s->best < s->limit;
}

bool suggest_closest(const char *typed, const char *list, char *out, size_t outlen)
{
	struct suggest s;

	if (outlen == 0 || list == NULL)
		return false;
	suggest_init(&s, typed, out, outlen);
	for (const char *p = list; *p != '\0';) {
		size_t len;

		p += strspn(p, ", ");
		len = strcspn(p, ", ");
		suggest_consider(&s, p, len);
		p += len;
	}
	return suggest_found(&s);
}
