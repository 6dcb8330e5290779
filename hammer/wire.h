#ifndef RATELAB_WIRE_H
#define RATELAB_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/*
 * The hammer's own HTTP/1.1 client for plain http:// URLs, in the manner of
 * wrk: a request is laid out once as bytes, and each answer is read by a
 * small incremental parser that keeps only what the retry engine and the
 * workloads need (status, Retry-After, RateLimit, ETag) and how the body
 * ends.  libcurl stays the path for everything else (https://, user:pass@
 * URLs, odd bytes).
 */

/* One server to send to: where, and the exact request bytes. */
struct wire_target {
	struct sockaddr_storage addr;
	socklen_t addrlen;
	char *request;      /* owned; reqlen bytes, not NUL-terminated on the wire */
	size_t reqlen;
	size_t head_len;    /* bytes before the blank line that ends the headers */
	bool head;          /* HEAD: answers carry no body */
	bool loopback;      /* an IPv4 address in 127.0.0.0/8: any 127.x.y.z may be the source */
};

/* What a request looks like, shared by every target of a run. */
struct wire_spec {
	const char *method;            /* NULL: GET */
	const char *const *headers;    /* "Name: value" lines, as for libcurl */
	size_t nheaders;
	const char *data;              /* body, or NULL */
	const char *path;              /* replaces the URL's path and query ("/occ"), or NULL */
};

/* True when url is plain http:// that this path sends exactly as libcurl would. */
bool wire_url_supported(const char *url);

/*
 * Build t for url: resolve the host (IPv4 preferred, as the lab's servers
 * bind 127.0.0.1) and lay out the request.  Returns 0, or -1 with a reason
 * in err (unsupported URL, unknown host, out of memory).
 */
int wire_target_init(struct wire_target *t, const char *url, const struct wire_spec *spec,
                     char *err, size_t errlen);
void wire_target_destroy(struct wire_target *t);

/*
 * The request for url as a NUL-terminated string (malloc'd, caller frees),
 * or NULL when the URL is unsupported or memory runs out.  *len gets its
 * length.  Exposed for tests; wire_target_init uses it.
 */
char *wire_request_new(const char *url, const struct wire_spec *spec, size_t *len);

enum wire_parse { WIRE_MORE, WIRE_DONE, WIRE_BAD };

#define WIRE_LINE_MAX 128
#define WIRE_HEADERS_MAX (64 * 1024)

/* An answer being read.  Fixed size, no allocation: one per virtual client. */
struct wire_resp {
	uint8_t state;
	bool head;           /* the request was HEAD */
	bool chunked, has_len, close;
	int status;          /* of the final (non-1xx) answer, once its status line is read */
	uint64_t remain;     /* body or chunk bytes still to come */
	uint32_t hdr_bytes;  /* bytes of the current header block, bounded */
	uint32_t seen;       /* bytes fed for this answer (0: nothing arrived yet) */
	uint16_t linelen;
	char line[WIRE_LINE_MAX];       /* the line being read, truncated */
	char retry_after[64];           /* value, or "" */
	char ratelimit[96];             /* value, or "" */
	char etag[64];                  /* value, or "" */
};

/* Ready for a new answer; head: the request was HEAD. */
void wire_resp_init(struct wire_resp *r, bool head);

/*
 * Feed len bytes.  Returns WIRE_DONE when the answer is complete (*used
 * bytes of buf belong to it), WIRE_MORE when it needs more (all of buf
 * used), WIRE_BAD for a malformed answer.  Interim 1xx answers are skipped.
 */
enum wire_parse wire_resp_feed(struct wire_resp *r, const char *buf, size_t len, size_t *used);

/*
 * Keep Retry-After, RateLimit or ETag from one raw header line ("Name:
 * value\r\n", as libcurl's header callback hands them over); other lines
 * are ignored.
 */
void wire_resp_capture(struct wire_resp *r, const char *line, size_t len);

/* The peer closed the connection: WIRE_DONE when that ends a body read to the close. */
enum wire_parse wire_resp_eof(const struct wire_resp *r);

#endif
