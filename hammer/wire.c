#include "hammer/wire.h"

#include <ctype.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- URLs ---- */

struct wire_url {
	const char *auth;    /* host[:port] as written: the Host header */
	size_t authlen;
	char host[256];      /* without brackets */
	char port[6];
	const char *path;    /* from the first '/' or '?', up to '#'; may be empty */
	size_t pathlen;
};

static bool plain_bytes(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
			return false;
	return true;
}

static bool port_ok(const char *p, size_t n, char out[6])
{
	unsigned long v = 0;

	if (n == 0 || n > 5)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)p[i]))
			return false;
		v = v * 10 + (unsigned long)(p[i] - '0');
	}
	if (v == 0 || v > 65535)
		return false;
	snprintf(out, 6, "%lu", v);
	return true;
}

/* Split host[:port] or [v6][:port] into u->host and u->port. */
static bool split_authority(struct wire_url *u)
{
	const char *a = u->auth, *end = a + u->authlen, *colon;
	size_t hl;

	if (u->authlen == 0)
		return false;
	if (*a == '[') {
		const char *rb = memchr(a, ']', u->authlen);

		if (rb == NULL)
			return false;
		hl = (size_t)(rb - a - 1);
		colon = rb + 1 < end ? rb + 1 : NULL;
		if (colon != NULL && *colon != ':')
			return false;
		a++;
	} else {
		colon = memchr(a, ':', u->authlen);
		hl = (size_t)((colon ? colon : end) - a);
	}
	if (hl == 0 || hl >= sizeof(u->host))
		return false;
	memcpy(u->host, a, hl);
	u->host[hl] = '\0';
	if (colon == NULL) {
		memcpy(u->port, "80", 3);
		return true;
	}
	return port_ok(colon + 1, (size_t)(end - colon - 1), u->port);
}

static bool url_parse(const char *url, struct wire_url *u)
{
	const char *p, *hash;
	size_t n;

	if (url == NULL || strncasecmp(url, "http://", 7) != 0)
		return false;
	p = url + 7;
	n = strlen(p);
	hash = memchr(p, '#', n);
	if (hash != NULL)
		n = (size_t)(hash - p);
	if (!plain_bytes(p, n))
		return false;
	u->auth = p;
	u->authlen = strcspn(p, "/?#");
	if (u->authlen > n)
		u->authlen = n;
	if (memchr(u->auth, '@', u->authlen) != NULL || !split_authority(u))
		return false;
	u->path = p + u->authlen;
	u->pathlen = n - u->authlen;
	return true;
}

bool wire_url_supported(const char *url)
{
	struct wire_url u;

	return url_parse(url, &u);
}

/* ---- the request ---- */

/* "Name: value" -> name length, or 0 when there is no colon or semicolon. */
static size_t header_name_len(const char *h)
{
	size_t n = strcspn(h, ":;");

	return h[n] ? n : 0;
}

/* Whether the user's headers mention name (to drop or replace a default). */
static bool user_has(const struct wire_spec *s, const char *name)
{
	size_t nl = strlen(name);

	for (size_t i = 0; i < s->nheaders; i++)
		if (header_name_len(s->headers[i]) == nl && strncasecmp(s->headers[i], name, nl) == 0)
			return true;
	return false;
}

struct buf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void put(struct buf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t ncap = (b->len + n + 1) * 2;
		char *np = realloc(b->p, ncap);

		if (np == NULL) {
			b->oom = true;
			return;
		}
		b->p = np;
		b->cap = ncap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void puts_(struct buf *b, const char *s)
{
	put(b, s, strlen(s));
}

/*
 * The user's header lines, with libcurl's conventions: "Name:" with no
 * value removes a default header and sends nothing, "Name;" sends an
 * empty "Name:".
 */
static void put_user_headers(struct buf *b, const struct wire_spec *s)
{
	for (size_t i = 0; i < s->nheaders; i++) {
		const char *h = s->headers[i];
		size_t nl = header_name_len(h);
		const char *v;

		if (nl == 0)
			continue;
		v = h + nl + 1;
		if (h[nl] == ';') {
			put(b, h, nl);
			puts_(b, ":\r\n");
			continue;
		}
		while (*v == ' ' || *v == '\t')
			v++;
		if (*v == '\0')
			continue;
		puts_(b, h);
		puts_(b, "\r\n");
	}
}

char *wire_request_new(const char *url, const struct wire_spec *s, size_t *len)
{
	struct wire_url u;
	struct buf b = { 0 };
	const char *m = s->method ? s->method : "GET";
	char num[32];

	if (!url_parse(url, &u))
		return NULL;
	if (s->path != NULL) {
		u.path = s->path;
		u.pathlen = strlen(s->path);
	}
	puts_(&b, m);
	puts_(&b, " ");
	if (u.pathlen == 0 || u.path[0] != '/')
		puts_(&b, "/");
	put(&b, u.path, u.pathlen);
	puts_(&b, " HTTP/1.1\r\n");
	if (!user_has(s, "Host")) {
		puts_(&b, "Host: ");
		put(&b, u.auth, u.authlen);
		puts_(&b, "\r\n");
	}
	if (!user_has(s, "Accept"))
		puts_(&b, "Accept: */*\r\n");
	if (s->data != NULL || strcmp(m, "POST") == 0) {
		snprintf(num, sizeof(num), "%zu", s->data ? strlen(s->data) : (size_t)0);
		if (!user_has(s, "Content-Length")) {
			puts_(&b, "Content-Length: ");
			puts_(&b, num);
			puts_(&b, "\r\n");
		}
		/* No body, no Content-Type (a form type on an empty POST is what a web page's form sends). */
		if (s->data != NULL && !user_has(s, "Content-Type"))
			puts_(&b, "Content-Type: application/x-www-form-urlencoded\r\n");
	}
	put_user_headers(&b, s);
	puts_(&b, "\r\n");
	if (s->data != NULL)
		puts_(&b, s->data);
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	*len = b.len;
	return b.p;
}

static int resolve(struct wire_target *t, const struct wire_url *u, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res = NULL, *pick;
	int rc = getaddrinfo(u->host, u->port, &hints, &res);

	if (rc != 0 || res == NULL) {
		snprintf(err, errlen, "cannot resolve %s: %s", u->host, gai_strerror(rc));
		return -1;
	}
	pick = res;
	for (struct addrinfo *a = res; a != NULL; a = a->ai_next)
		if (a->ai_family == AF_INET) {
			pick = a;
			break;
		}
	memcpy(&t->addr, pick->ai_addr, pick->ai_addrlen);
	t->addrlen = pick->ai_addrlen;
	t->loopback = pick->ai_family == AF_INET &&
	              (ntohl(((const struct sockaddr_in *)pick->ai_addr)->sin_addr.s_addr) >> 24) == 127;
	freeaddrinfo(res);
	return 0;
}

int wire_target_init(struct wire_target *t, const char *url, const struct wire_spec *spec,
                     char *err, size_t errlen)
{
	struct wire_url u;

	memset(t, 0, sizeof(*t));
	if (!url_parse(url, &u)) {
		snprintf(err, errlen, "%s: not a plain http:// URL", url ? url : "(null)");
		return -1;
	}
	if (resolve(t, &u, err, errlen) != 0)
		return -1;
	t->request = wire_request_new(url, spec, &t->reqlen);
	if (t->request == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* the first blank line ends the headers: the user's lines cannot hold one */
	t->head_len = (size_t)(strstr(t->request, "\r\n\r\n") - t->request) + 2;
	t->head = spec->method != NULL && strcmp(spec->method, "HEAD") == 0;
	return 0;
}

void wire_target_destroy(struct wire_target *t)
{
	free(t->request);
	t->request = NULL;
}

/* ---- answers ---- */

enum {
	ST_STATUS, ST_HEADER, ST_BODY, ST_BODY_EOF, ST_CHUNK_SIZE, ST_CHUNK_DATA, ST_CHUNK_END,
	ST_TRAILER, ST_DONE
};

void wire_resp_init(struct wire_resp *r, bool head)
{
	r->state = ST_STATUS;
	r->head = head;
	r->chunked = r->has_len = r->close = false;
	r->status = 0;
	r->remain = 0;
	r->hdr_bytes = 0;
	r->seen = 0;
	r->linelen = 0;
	r->retry_after[0] = '\0';
	r->ratelimit[0] = '\0';
	r->etag[0] = '\0';
}

/* Append up to the end of a line; true once the line is whole (in r->line, no CR/LF). */
static bool take_line(struct wire_resp *r, const char *buf, size_t len, size_t *used, bool *bad)
{
	const char *nl = memchr(buf, '\n', len);
	size_t n = nl ? (size_t)(nl - buf) + 1 : len;
	size_t room = WIRE_LINE_MAX - 1 - r->linelen;

	*used = n;
	r->hdr_bytes += (uint32_t)n;
	if (r->hdr_bytes > WIRE_HEADERS_MAX) {
		*bad = true;
		return false;
	}
	memcpy(r->line + r->linelen, buf, n < room ? n : room);
	r->linelen += (uint16_t)(n < room ? n : room);
	if (nl == NULL)
		return false;
	while (r->linelen > 0 && (r->line[r->linelen - 1] == '\n' || r->line[r->linelen - 1] == '\r'))
		r->linelen--;
	r->line[r->linelen] = '\0';
	return true;
}

static void copy_value(char *dst, size_t cap, const char *v)
{
	size_t n;

	while (*v == ' ' || *v == '\t')
		v++;
	n = strlen(v);
	while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, v, n);
	dst[n] = '\0';
}

/* Whether the comma-separated value v lists token (case-insensitive). */
static bool has_token(const char *v, const char *token)
{
	size_t tl = strlen(token);

	while (*v) {
		size_t n;

		while (*v == ' ' || *v == '\t' || *v == ',')
			v++;
		n = strcspn(v, ",");
		while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
			n--;
		if (n == tl && strncasecmp(v, token, tl) == 0)
			return true;
		v += strcspn(v, ",");
	}
	return false;
}

static bool parse_u64(const char *s, int base, uint64_t *out)
{
	uint64_t v = 0;
	int any = 0;

	while (*s == ' ' || *s == '\t')
		s++;
	for (; *s; s++, any++) {
		int d = isdigit((unsigned char)*s) ? *s - '0' :
		        (base == 16 && isxdigit((unsigned char)*s)) ? (tolower((unsigned char)*s) - 'a' + 10) : -1;

		if (d < 0)
			break;
		if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
			return false;
		v = v * (uint64_t)base + (uint64_t)d;
	}
	*out = v;
	return any > 0;
}

static bool status_line(struct wire_resp *r)
{
	const char *l = r->line;

	if (strncmp(l, "HTTP/1.", 7) != 0 || !isdigit((unsigned char)l[7]) || l[8] != ' ')
		return false;
	if (!isdigit((unsigned char)l[9]) || !isdigit((unsigned char)l[10]) ||
	    !isdigit((unsigned char)l[11]) || (l[12] != ' ' && l[12] != '\0'))
		return false;
	r->status = (l[9] - '0') * 100 + (l[10] - '0') * 10 + (l[11] - '0');
	if (r->status < 100)
		return false;
	/* HTTP/1.0 closes unless it says keep-alive */
	r->close = l[7] == '0';
	return true;
}

/* Keep the value of the headers the retry engine and the workloads read. */
static void capture(struct wire_resp *r, const char *name, const char *v)
{
	if (strcasecmp(name, "retry-after") == 0)
		copy_value(r->retry_after, sizeof(r->retry_after), v);
	else if (strcasecmp(name, "ratelimit") == 0)
		copy_value(r->ratelimit, sizeof(r->ratelimit), v);
	else if (strcasecmp(name, "etag") == 0)
		copy_value(r->etag, sizeof(r->etag), v);
}

/* A Content-Length or Connection line (a name starting with c); false when its value is malformed. */
static bool c_header(struct wire_resp *r, const char *name, const char *v)
{
	if (strcasecmp(name, "content-length") == 0) {
		if (!parse_u64(v, 10, &r->remain))
			return false;
		r->has_len = true;
	} else if (strcasecmp(name, "connection") == 0) {
		if (has_token(v, "close"))
			r->close = true;
		else if (has_token(v, "keep-alive"))
			r->close = false;
	}
	return true;
}

static bool header_line(struct wire_resp *r)
{
	char *l = r->line, *colon = strchr(l, ':');
	const char *v;

	if (colon == NULL)
		return false;
	*colon = '\0';
	v = colon + 1;
	while (*v == ' ' || *v == '\t')
		v++;
	/* the first letter picks the few names worth comparing */
	switch (l[0] | 0x20) {
	case 'c':
		return c_header(r, l, v);
	case 't':
		if (strcasecmp(l, "transfer-encoding") == 0)
			r->chunked = has_token(v, "chunked");
		return true;
	case 'r': case 'e':
		capture(r, l, v);
		return true;
	default:
		return true;
	}
}

void wire_resp_capture(struct wire_resp *r, const char *line, size_t len)
{
	char *colon;

	/* the names kept start with an r or an e: most lines stop here */
	if (len == 0 || ((line[0] | 0x20) != 'r' && (line[0] | 0x20) != 'e'))
		return;
	if (len > WIRE_LINE_MAX - 1)
		len = WIRE_LINE_MAX - 1;
	memcpy(r->line, line, len);
	while (len > 0 && (r->line[len - 1] == '\n' || r->line[len - 1] == '\r'))
		len--;
	r->line[len] = '\0';
	colon = strchr(r->line, ':');
	if (colon == NULL)
		return;
	*colon = '\0';
	capture(r, r->line, colon + 1);
}

/* The blank line after the headers: how does the body end? */
static enum wire_parse headers_end(struct wire_resp *r)
{
	if (r->status < 200 && r->status != 101) {
		/* an interim answer: the real one follows */
		bool head = r->head;
		uint32_t seen = r->seen;

		wire_resp_init(r, head);
		r->seen = seen;
		return WIRE_MORE;
	}
	if (r->head || r->status == 204 || r->status == 304 || r->status == 101)
		r->state = ST_DONE;
	else if (r->chunked)
		r->state = ST_CHUNK_SIZE;
	else if (r->has_len)
		r->state = r->remain ? ST_BODY : ST_DONE;
	else
		r->state = ST_BODY_EOF;
	if (r->state == ST_BODY_EOF || r->status == 101)
		r->close = true;
	return r->state == ST_DONE ? WIRE_DONE : WIRE_MORE;
}

/* One complete line in r->line, in a line state. */
static enum wire_parse on_line(struct wire_resp *r)
{
	uint64_t size;

	r->linelen = 0;
	switch (r->state) {
	case ST_STATUS:
		if (!status_line(r))
			return WIRE_BAD;
		r->state = ST_HEADER;
		return WIRE_MORE;
	case ST_HEADER:
		if (r->line[0] == '\0')
			return headers_end(r);
		return header_line(r) ? WIRE_MORE : WIRE_BAD;
	case ST_CHUNK_SIZE:
		if (!parse_u64(r->line, 16, &size))
			return WIRE_BAD;
		r->remain = size;
		r->hdr_bytes = 0;
		r->state = size ? ST_CHUNK_DATA : ST_TRAILER;
		return WIRE_MORE;
	case ST_CHUNK_END:
		if (r->line[0] != '\0')
			return WIRE_BAD;
		r->state = ST_CHUNK_SIZE;
		return WIRE_MORE;
	case ST_TRAILER:
		if (r->line[0] != '\0')
			return WIRE_MORE;
		r->state = ST_DONE;
		return WIRE_DONE;
	default:
		return WIRE_BAD;
	}
}

enum wire_parse wire_resp_feed(struct wire_resp *r, const char *buf, size_t len, size_t *used)
{
	size_t off = 0;

	r->seen = len < UINT32_MAX - r->seen ? r->seen + (uint32_t)len : UINT32_MAX;
	while (off < len && r->state != ST_DONE) {
		size_t n, take;
		bool bad = false;
		enum wire_parse p;

		switch (r->state) {
		case ST_BODY:
		case ST_CHUNK_DATA:
			take = len - off < r->remain ? len - off : (size_t)r->remain;
			r->remain -= take;
			off += take;
			if (r->remain == 0)
				r->state = r->state == ST_BODY ? ST_DONE : ST_CHUNK_END;
			if (r->state == ST_DONE) {
				*used = off;
				return WIRE_DONE;
			}
			continue;
		case ST_BODY_EOF:
			off = len;
			continue;
		default:
			break;
		}
		if (!take_line(r, buf + off, len - off, &n, &bad)) {
			if (bad)
				return WIRE_BAD;
			off += n;
			continue;
		}
		off += n;
		p = on_line(r);
		if (p != WIRE_MORE) {
			*used = off;
			return p;
		}
	}
	*used = off;
	return r->state == ST_DONE ? WIRE_DONE : WIRE_MORE;
}

enum wire_parse wire_resp_eof(const struct wire_resp *r)
{
	return r->state == ST_BODY_EOF ? WIRE_DONE : WIRE_BAD;
}
