/* One upstream call: the request as the proxy builds it, the answer as libcurl hands it over, and who frees it. */
#include "server/proxy/upstream_call.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/proxy/upstream_call_impl.h"

bool upstream_hop_by_hop(const char *name)
{
	static const char *const HOP[] = { "Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
		                           "Proxy-Connection", "TE", "Trailer", "Transfer-Encoding", "Upgrade", NULL };

	for (size_t i = 0; HOP[i]; i++)
		if (strcasecmp(name, HOP[i]) == 0)
			return true;
	return false;
}

bool upstream_connection_lists(const char *connection, const char *name)
{
	size_t nl = strlen(name);
	const char *p = connection;

	while (p && *p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		while (len && (*p == ' ' || *p == '\t')) {
			p++;
			len--;
		}
		while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
			len--;
		if (len == nl && strncasecmp(p, name, nl) == 0)
			return true;
		p = end ? end + 1 : NULL;
	}
	return false;
}

struct upstream_call *upstream_call_new(const char *method, const char *target, const char *body, size_t len)
{
	struct upstream_call *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	pthread_mutex_init(&c->lock, NULL);
	atomic_init(&c->refs, 1);
	c->method = strdup(method);
	c->target = strdup(target[0] == '/' ? target : "/");
	c->req_body = malloc(len + 1);
	c->result = UPSTREAM_BUSY;
	c->content_length = -1;
	/* "Expect:" with nothing after it: libcurl sends no Expect: 100-continue of its own. */
	if (!c->method || !c->target || !c->req_body || !(c->hdrs = curl_slist_append(NULL, "Expect:"))) {
		upstream_call_release(c);
		return NULL;
	}
	if (len)
		memcpy(c->req_body, body, len);
	c->req_len = len;
	return c;
}

int upstream_call_header(struct upstream_call *c, const char *name, const char *value)
{
	char line[8192];
	struct curl_slist *l;
	/* "Name;" is libcurl's way to send a header with an empty value ("Name:" would drop it). */
	int n = !value   ? snprintf(line, sizeof(line), "%s:", name)
	        : *value ? snprintf(line, sizeof(line), "%s: %s", name, value)
	                 : snprintf(line, sizeof(line), "%s;", name);

	/* A header too long to copy is left out rather than cut. */
	if (n < 0 || (size_t)n >= sizeof(line))
		return 0;
	if (!(l = curl_slist_append(c->hdrs, line)))
		return -1;
	c->hdrs = l;
	return 0;
}

void upstream_call_unref(struct upstream_call *c)
{
	if (atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	if (c->buffered)
		atomic_fetch_sub(c->buffered, c->body_cap);
	curl_slist_free_all(c->hdrs);
	free(c->method);
	free(c->target);
	free(c->req_body);
	free(c->hbuf);
	free(c->body);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

void upstream_call_release(struct upstream_call *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->released = true;
	pthread_mutex_unlock(&c->lock);
	upstream_call_unref(c);
}

enum upstream_result upstream_call_result(const struct upstream_call *c)
{
	return c->result;
}

int upstream_call_status(const struct upstream_call *c)
{
	return c->status;
}

void upstream_call_headers(const struct upstream_call *c, void (*fn)(void *ctx, const char *name, const char *value),
                           void *ctx)
{
	for (size_t i = 0; i < c->hlen;) {
		const char *name = c->hbuf + i;
		const char *value = name + strlen(name) + 1;

		fn(ctx, name, value);
		i = (size_t)(value + strlen(value) + 1 - c->hbuf);
	}
}

int64_t upstream_call_content_length(const struct upstream_call *c)
{
	return c->content_length;
}

const char *upstream_call_body(const struct upstream_call *c, size_t *len)
{
	*len = c->body_len;
	return c->body;
}

/* ---- the answer, as libcurl hands it over (the client thread's) ---- */

/* Keep one "Name: value" header line (without its CRLF) of n bytes; false when over the bound. */
static bool keep_header(struct upstream_call *c, const char *line, size_t n)
{
	const char *colon = memchr(line, ':', n);
	size_t nl, vl;
	const char *v;

	if (!colon || colon == line)
		return true;
	nl = (size_t)(colon - line);
	for (v = colon + 1; v < line + n && (*v == ' ' || *v == '\t'); v++)
		;
	vl = (size_t)(line + n - v);
	while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
		vl--;
	if (!c->hbuf && !(c->hbuf = malloc(UPSTREAM_HEADERS_CAP)))
		return false;
	if (c->hlen + nl + vl + 2 > UPSTREAM_HEADERS_CAP)
		return false;
	memcpy(c->hbuf + c->hlen, line, nl);
	c->hbuf[c->hlen + nl] = '\0';
	if (strcasecmp(c->hbuf + c->hlen, "Content-Length") == 0) {
		/* Kept aside, not among the headers: the answer to a HEAD says it (MHD writes the header). */
		c->content_length = vl && vl < 20 && v[0] >= '0' && v[0] <= '9' ? strtoll(v, NULL, 10) : -1;
		return true;
	}
	if (upstream_hop_by_hop(c->hbuf + c->hlen))
		return true;
	memcpy(c->hbuf + c->hlen + nl + 1, v, vl);
	c->hbuf[c->hlen + nl + 1 + vl] = '\0';
	c->hlen += nl + vl + 2;
	return true;
}

size_t upstream_call_on_header(char *buf, size_t size, size_t n, void *arg)
{
	struct upstream_call *c = arg;
	size_t len = size * n, l = len;

	while (l && (buf[l - 1] == '\n' || buf[l - 1] == '\r'))
		l--;
	/* A status line starts an answer (a 1xx came before it, or the first): its headers start afresh. */
	if (l >= 5 && memcmp(buf, "HTTP/", 5) == 0) {
		c->hlen = 0;
		return len;
	}
	if (l && !keep_header(c, buf, l)) {
		c->over = true;
		return 0;
	}
	return len;
}

size_t upstream_call_on_body(char *buf, size_t size, size_t n, void *arg)
{
	struct upstream_call *c = arg;
	size_t len = size * n;

	if (c->body_len + len > c->max_body) {
		c->over = true;
		return 0;
	}
	if (c->body_len + len > c->body_cap) {
		size_t cap = (c->body_len + len) * 2;
		char *nb;

		if (cap > c->max_body)
			cap = c->max_body;
		/* Reserved from the budget before it is taken: the sum never passes max_buffered. */
		if (atomic_fetch_add(c->buffered, cap - c->body_cap) + (cap - c->body_cap) > c->max_buffered) {
			atomic_fetch_sub(c->buffered, cap - c->body_cap);
			c->over = true;
			return 0;
		}
		if (!(nb = realloc(c->body, cap))) {
			atomic_fetch_sub(c->buffered, cap - c->body_cap);
			return 0;
		}
		c->body = nb;
		c->body_cap = cap;
	}
	memcpy(c->body + c->body_len, buf, len);
	c->body_len += len;
	return len;
}
