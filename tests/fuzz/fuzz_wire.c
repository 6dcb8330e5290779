/*
 * libFuzzer target: the hammer's own HTTP/1.1 path (hammer/wire.h), which
 * reads whatever a server sends.  Checks: the parser never reads past what
 * it is given, a complete answer has a 3-digit status, and feeding the same
 * bytes in two pieces (split where the first byte says) gives the same
 * verdict, status and header values (Retry-After, RateLimit, ETag) as
 * feeding them at once.  The input is also tried as a URL: a supported one
 * yields a request with a blank line.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hammer/wire.h"

static enum wire_parse feed(struct wire_resp *r, const uint8_t *d, size_t n, size_t cut, size_t *used)
{
	size_t u1 = 0, u2 = 0;
	enum wire_parse p = wire_resp_feed(r, (const char *)d, cut, &u1);

	if (u1 > cut)
		abort();
	if (p != WIRE_MORE || cut == n) {
		*used = u1;
		return p;
	}
	p = wire_resp_feed(r, (const char *)d + cut, n - cut, &u2);
	if (u2 > n - cut)
		abort();
	*used = u1 + u2;
	return p;
}

static void check_url(const uint8_t *d, size_t n)
{
	char url[512];
	struct wire_spec spec = { 0 };
	size_t len = 0;
	char *req;

	if (n >= sizeof(url))
		return;
	memcpy(url, d, n);
	url[n] = '\0';
	req = wire_request_new(url, &spec, &len);
	if (req == NULL)
		return;
	if (!wire_url_supported(url) || strlen(req) != len || strstr(req, "\r\n\r\n") == NULL ||
	    strncmp(req, "GET /", 5) != 0)
		abort();
	free(req);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct wire_resp a, b;
	size_t ua = 0, ub = 0, cut;
	enum wire_parse pa, pb;

	if (n == 0)
		return 0;
	cut = d[0] % (n + 1);
	wire_resp_init(&a, (d[0] & 0x80) != 0);
	wire_resp_init(&b, (d[0] & 0x80) != 0);
	pa = feed(&a, d, n, n, &ua);
	pb = feed(&b, d, n, cut, &ub);
	if (pa != pb || (pa == WIRE_DONE && (ua != ub || a.status != b.status)))
		abort();
	if (pa == WIRE_DONE && (a.status < 100 || a.status > 999 || strcmp(a.retry_after, b.retry_after) != 0 ||
	                        strcmp(a.ratelimit, b.ratelimit) != 0 || strcmp(a.etag, b.etag) != 0))
		abort();
	if (pa == WIRE_MORE && (wire_resp_eof(&a) != wire_resp_eof(&b)))
		abort();
	check_url(d, n);
	return 0;
}
