#ifndef RATELAB_FRAMING_H
#define RATELAB_FRAMING_H

#include <stdbool.h>
#include <stdint.h>

/*
 * How a request's head says its body is framed, read from its headers one
 * by one, and the heads that are refused for it: where a front and a back
 * could disagree on where the body ends, a second request can be smuggled
 * inside the first (RFC 9112, sections 6.1 and 6.3).  Pure.
 */

struct framing {
	unsigned te;                 /* Transfer-Encoding headers */
	bool te_other;               /* one of them is not exactly "chunked" */
	unsigned cl;                 /* Content-Length values (each of a comma list counts) */
	bool cl_conflict;            /* two of them differ */
	uint64_t length;             /* the first Content-Length value (0 when none or not a number) */
	bool bad_name;               /* a name with whitespace, or Transfer-Encoding/Content-Length run on */
};

/* An empty framing (no header seen). */
void framing_init(struct framing *f);

/*
 * Take one header (name case-insensitive; other headers are ignored, except
 * that a name holding a space or tab, or one that starts with
 * Transfer-Encoding or Content-Length and goes on, marks the head bad: MHD
 * hands `Transfer-Encoding : chunked` over as the name "Transfer-Encoding "
 * and an obs-folded `Transfer-Encoding:\r\n chunked` as "Transfer-Encodingchunked").
 */
void framing_add(struct framing *f, const char *name, const char *value);

/*
 * NULL when the framing is sound; else why the request is refused (400, and
 * the connection closes), one short phrase:
 *   "Transfer-Encoding and Content-Length together"
 *   "Content-Length values that differ"
 *   "a Transfer-Encoding other than one chunked"
 *   "Transfer-Encoding in an HTTP/1.0 request"   (http10: the request is HTTP/1.0)
 *   "whitespace before a header's colon, or a folded header line"
 */
const char *framing_refusal(const struct framing *f, bool http10);

/* True when a body follows the head: a Transfer-Encoding, or a Content-Length above 0. */
bool framing_has_body(const struct framing *f);

#endif
