/*
 * One pass over the input, segment by segment, with the output as a stack of
 * segments: each segment is decoded onto the end of out, right after a '/';
 * then "." and "" are taken back off, ".." takes back the segment before it
 * too, and any other segment stays, followed by '/' when the input has one.
 * Decoding first means "%2e%2e" is a ".." segment, as in nginx.
 */
#include "server/http/path.h"

#include <string.h>

struct path_out {
	char *buf;
	size_t len, cap;                 /* bytes in buf; room for cap - 1 and a NUL */
};

static int path_hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool path_unreserved(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
	       c == '.' || c == '_' || c == '~';
}

static int path_put(struct path_out *o, char c)
{
	if (o->len + 1 >= o->cap)
		return -1;
	o->buf[o->len++] = c;
	return 0;
}

/* The escape at in[0..2] ('%' and two hex digits, checked): decoded when unreserved, else upper-cased. */
static int path_put_escape(struct path_out *o, const char *in)
{
	static const char hex[] = "0123456789ABCDEF";
	int hi = path_hex(in[1]), lo = path_hex(in[2]);
	unsigned char c = (unsigned char)(hi << 4 | lo);

	if (path_unreserved(c))
		return path_put(o, (char)c);
	if (path_put(o, '%') != 0 || path_put(o, hex[hi]) != 0)
		return -1;
	return path_put(o, hex[lo]);
}

static bool path_ends(char c)
{
	return c == '/' || c == '?' || c == '#';
}

/* Decode the segment at in[*i..] (up to '/', '?', '#' or the end) onto o; *i moves past it. */
static int path_segment(struct path_out *o, const char *in, size_t len, size_t *i)
{
	while (*i < len && !path_ends(in[*i])) {
		if (in[*i] == '\0')
			return -1;
		if (in[*i] != '%') {
			if (path_put(o, in[*i]) != 0)
				return -1;
			(*i)++;
			continue;
		}
		if (*i + 2 >= len || path_hex(in[*i + 1]) < 0 || path_hex(in[*i + 2]) < 0)
			return -1;
		if (path_put_escape(o, in + *i) != 0)
			return -1;
		*i += 3;
	}
	return 0;
}

/* Take back the segment before the one that starts at start (which follows a '/'), not the root. */
static size_t path_pop(const struct path_out *o, size_t start)
{
	size_t j = start - 1;

	if (j == 0)
		return start;
	while (j > 0 && o->buf[j - 1] != '/')
		j--;
	return j;
}

int path_normalize(const char *in, size_t len, char *out, size_t cap, size_t *outlen)
{
	struct path_out o = { out, 0, cap };
	size_t i = 0;

	if (path_put(&o, '/') != 0)
		return -1;
	while (i < len && in[i] != '?' && in[i] != '#') {
		size_t start = o.len, n;

		if (in[i] == '/') {
			i++;
			continue;
		}
		if (path_segment(&o, in, len, &i) != 0)
			return -1;
		n = o.len - start;
		if (n == 1 && out[start] == '.')
			o.len = start;
		else if (n == 2 && out[start] == '.' && out[start + 1] == '.')
			o.len = path_pop(&o, start);
		else if (i < len && in[i] == '/' && path_put(&o, '/') != 0)
			return -1;
	}
	out[o.len] = '\0';
	*outlen = o.len;
	return 0;
}

bool path_prefix_covers(const char *prefix, size_t plen, const char *path, size_t len)
{
	if (plen == 0 || plen > len || memcmp(prefix, path, plen) != 0)
		return false;
	return plen == len || prefix[plen - 1] == '/' || path[plen] == '/';
}
