/* A request head's body framing, and the heads refused for it. */
#include "server/http/framing.h"

#include <string.h>
#include <strings.h>

void framing_init(struct framing *f)
{
	memset(f, 0, sizeof(*f));
}

/* The length of v without leading and trailing spaces and tabs, from *start. */
static size_t trimmed(const char *v, size_t n, const char **start)
{
	while (n > 0 && (*v == ' ' || *v == '\t'))
		v++, n--;
	while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	*start = v;
	return n;
}

/* One Content-Length value (a member of a comma list); -1 when it is not all digits. */
static int64_t length_of(const char *v, size_t n)
{
	uint64_t x = 0;

	if (n == 0 || n > 18)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -1;
		x = x * 10 + (uint64_t)(v[i] - '0');
	}
	return (int64_t)x;
}

static void add_length(struct framing *f, const char *value)
{
	const char *p = value;

	for (;;) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		const char *v;
		int64_t len;

		n = trimmed(p, n, &v);
		len = length_of(v, n);
		/* A value that is not a number differs from any other (MHD answers a lone one with 400). */
		if (f->cl > 0 && (len < 0 || (uint64_t)len != f->length))
			f->cl_conflict = true;
		if (f->cl++ == 0)
			f->length = len < 0 ? 0 : (uint64_t)len;
		if (!comma)
			return;
		p = comma + 1;
	}
}

void framing_add(struct framing *f, const char *name, const char *value)
{
	const char *v;
	size_t n;

	if (strcasecmp(name, "Content-Length") == 0) {
		add_length(f, value ? value : "");
	} else if (strcasecmp(name, "Transfer-Encoding") == 0) {
		n = trimmed(value ? value : "", value ? strlen(value) : 0, &v);
		f->te++;
		if (n != 7 || strncasecmp(v, "chunked", 7) != 0)
			f->te_other = true;
	} else if (strpbrk(name, " \t") || strncasecmp(name, "Transfer-Encoding", 17) == 0 ||
	           strncasecmp(name, "Content-Length", 14) == 0) {
		/* RFC 9112 5.1 and 5.2: refuse rather than guess which framing the sender meant. */
		f->bad_name = true;
	}
}

const char *framing_refusal(const struct framing *f, bool http10)
{
	if (f->bad_name)
		return "whitespace before a header's colon, or a folded header line";
	if (f->te > 0 && f->cl > 0)
		return "Transfer-Encoding and Content-Length together";
	if (f->cl_conflict)
		return "Content-Length values that differ";
	if (f->te > 0 && http10)
		return "Transfer-Encoding in an HTTP/1.0 request";
	if (f->te_other || f->te > 1)
		return "a Transfer-Encoding other than one chunked";
	return NULL;
}

bool framing_has_body(const struct framing *f)
{
	return f->te > 0 || f->length > 0;
}
