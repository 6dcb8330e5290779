/*
 * libFuzzer target: the request-path normaliser and prefix match
 * (server/http/path.h), which every request's route goes through.  Checks,
 * for any bytes: a buffer of len + 2 always fits, and only a NUL byte or a
 * malformed escape is refused; the normal form starts with '/', has no empty, "." or
 * ".." segment, no '?' or '#', is a fixed point, and covers itself; "/"
 * covers it; a shorter buffer either fails or gives the same result.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/http/path.h"

#define FUZZ_MAX 4096

static bool hexdigit(uint8_t c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Whether the path part (before '?' or '#') has a NUL byte, or a '%' without two hex digits after it. */
static bool refusable(const uint8_t *d, size_t n)
{
	for (size_t i = 0; i < n && d[i] != '?' && d[i] != '#'; i++)
		if (d[i] == '\0' || (d[i] == '%' && (i + 2 >= n || !hexdigit(d[i + 1]) || !hexdigit(d[i + 2]))))
			return true;
	return false;
}

static bool has_dot_segment(const char *p, size_t n)
{
	return strstr(p, "//") || strstr(p, "/./") || strstr(p, "/../") ||
	       (n >= 2 && memcmp(p + n - 2, "/.", 2) == 0) || (n >= 3 && memcmp(p + n - 3, "/..", 3) == 0);
}

static void check_form(const char *out, size_t n, size_t size)
{
	static char again[FUZZ_MAX + 2];
	size_t m = 0;

	if (n > size + 1 || n != strlen(out) || out[0] != '/' || has_dot_segment(out, n) ||
	    memchr(out, '?', n) || memchr(out, '#', n))
		abort();
	if (path_normalize(out, n, again, sizeof(again), &m) != 0 || m != n || memcmp(out, again, n) != 0)
		abort();
	if (!path_prefix_covers(out, n, out, n) || !path_prefix_covers("/", 1, out, n))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char out[FUZZ_MAX + 2], part[FUZZ_MAX + 2];
	size_t n = 0, k = 0, cap;
	int rc;

	if (size > FUZZ_MAX)
		return 0;
	rc = path_normalize((const char *)data, size, out, size + 2, &n);
	if ((rc != 0) != refusable(data, size))
		abort();
	if (rc != 0)
		return 0;
	check_form(out, n, size);
	/* The same input into a smaller buffer: refused, or the very same result. */
	cap = size > 0 ? 1 + data[0] % (size + 1) : 1;
	if (path_normalize((const char *)data, size, part, cap, &k) == 0 && (k != n || memcmp(part, out, n) != 0))
		abort();
	return 0;
}
