/* One upstream call: its request, its answer as libcurl hands it over, and the window its reader takes bytes from. */
#include "server/proxy/upstream_call.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/clock.h"
#include "server/proxy/upstream_call_impl.h"

/* ---- the header rules ---- */

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

/* ---- calls ---- */

void upstream_hub_wakeup(struct upstream_hub *h)
{
	if (h->multi && curl_multi_wakeup(h->multi) != CURLM_OK)
		fprintf(stderr, "ratelab: upstream: curl_multi_wakeup failed\n");
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
	c->watch_fd = -1;
	c->client_fd = -1;
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

void upstream_call_watch(struct upstream_call *c, int fd)
{
	c->client_fd = fd;
}

/* Drop one hold on c; the last frees it and gives its window back to the budget. */
static void call_unref(struct upstream_call *c)
{
	if (atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	if (c->hub)
		atomic_fetch_sub(&c->hub->buffered, c->body_cap);
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
	struct upstream_hub *h = NULL;

	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->released = true;
	/*
	 * An exchange still going (paused for this caller, or waiting on a slow
	 * upstream) is ended by its thread at once, not at its timeout: the
	 * thread looks at calls with resume set.
	 */
	if (!c->ended && !c->resume && c->hub) {
		c->resume = true;
		h = c->hub;
	}
	pthread_mutex_unlock(&c->lock);
	if (h) {
		atomic_store(&h->resume_any, true);
		upstream_hub_wakeup(h);
	}
	call_unref(c);
}

struct upstream_call *upstream_call_hold(struct upstream_call *c)
{
	atomic_fetch_add(&c->refs, 1);
	return c;
}

void upstream_call_drop(struct upstream_call *c)
{
	if (c)
		call_unref(c);
}

bool upstream_call_head(struct upstream_call *c)
{
	bool head;

	pthread_mutex_lock(&c->lock);
	head = c->head;
	pthread_mutex_unlock(&c->lock);
	return head;
}

enum upstream_result upstream_call_result(const struct upstream_call *c)
{
	return c->result;
}

int upstream_call_status(const struct upstream_call *c)
{
	return c->status;
}

/* The next header of c's kept ones after offset *i: its name and value; false past the last. */
static bool next_header(const struct upstream_call *c, size_t *i, const char **name, const char **value)
{
	if (*i >= c->hlen)
		return false;
	*name = c->hbuf + *i;
	*value = *name + strlen(*name) + 1;
	*i = (size_t)(*value + strlen(*value) + 1 - c->hbuf);
	return true;
}

/* Whether one of the answer's Connection headers names `name` (or it is Connection itself). */
static bool connection_option(const struct upstream_call *c, const char *name)
{
	const char *n, *v;

	if (strcasecmp(name, "Connection") == 0)
		return true;
	for (size_t i = 0; next_header(c, &i, &n, &v);)
		if (strcasecmp(n, "Connection") == 0 && upstream_connection_lists(v, name))
			return true;
	return false;
}

void upstream_call_headers(const struct upstream_call *c, void (*fn)(void *ctx, const char *name, const char *value),
                           void *ctx)
{
	const char *name, *value;

	for (size_t i = 0; next_header(c, &i, &name, &value);)
		if (!connection_option(c, name))
			fn(ctx, name, value);
}

int64_t upstream_call_content_length(const struct upstream_call *c)
{
	return c->content_length;
}

/* Take up to max bytes out of c's buffer into buf; when the transfer waits for room, ask for it to go on.  Locked. */
static size_t take_bytes(struct upstream_call *c, char *buf, size_t max, bool *resume)
{
	size_t n = c->body_len < max ? c->body_len : max;

	memcpy(buf, c->body + c->body_head, n);
	c->body_head += n;
	c->body_len -= n;
	if (c->body_len == 0)
		c->body_head = 0;
	*resume = c->paused && !c->resume;
	if (*resume)
		c->resume = true;
	return n;
}

ssize_t upstream_call_read(struct upstream_call *c, char *buf, size_t max, bool (*wait)(void *arg), void *arg)
{
	bool resume = false;
	ssize_t n;

	pthread_mutex_lock(&c->lock);
	if (c->body_len > 0)
		n = (ssize_t)take_bytes(c, buf, max, &resume);
	else if (c->ended)
		n = c->result == UPSTREAM_OK ? UPSTREAM_READ_END : UPSTREAM_READ_ERROR;
	else if (wait(arg))
		n = 0, c->waiting = true;
	else
		n = UPSTREAM_READ_ERROR;
	pthread_mutex_unlock(&c->lock);
	if (resume) {
		atomic_store(&c->hub->resume_any, true);
		upstream_hub_wakeup(c->hub);
	}
	return n;
}

void upstream_call_notify(struct upstream_call *c)
{
	if (c->released || !c->done || (c->notified && !c->waiting))
		return;
	c->notified = true;
	c->waiting = false;
	c->done(c->arg);
}

/* ---- the answer, as libcurl hands it over (the thread's) ---- */

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
	/* Connection is kept, unsent: the headers it names are hop-by-hop too (upstream_call_headers). */
	if (upstream_hop_by_hop(c->hbuf + c->hlen) && strcasecmp(c->hbuf + c->hlen, "Connection") != 0)
		return true;
	memcpy(c->hbuf + c->hlen + nl + 1, v, vl);
	c->hbuf[c->hlen + nl + 1 + vl] = '\0';
	c->hlen += nl + vl + 2;
	return true;
}

/* The blank line after a head: a final status (not 1xx) makes the head readable, and its caller is told. */
static void head_end(struct upstream_call *c)
{
	long status = 0;

	if (curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK || status < 200 || status > 999)
		return;
	c->status = (int)status;
	pthread_mutex_lock(&c->lock);
	c->head = true;
	pthread_mutex_unlock(&c->lock);
	c->kick = true;
	c->hub->kick_any = true;
}

static size_t on_header(char *buf, size_t size, size_t n, void *arg)
{
	struct upstream_call *c = arg;
	size_t len = size * n, l = len;

	/* Trailers after a chunked body are not passed on (the head is out, and its caller reads hbuf). */
	if (c->head)
		return len;
	while (l && (buf[l - 1] == '\n' || buf[l - 1] == '\r'))
		l--;
	if (l == 0) {
		head_end(c);
		return len;
	}
	/* A status line starts an answer (a 1xx came before it, or the first): its headers start afresh. */
	if (l >= 5 && memcmp(buf, "HTTP/", 5) == 0) {
		c->hlen = 0;
		c->content_length = -1;
		return len;
	}
	if (l && !keep_header(c, buf, l)) {
		c->over = true;
		return 0;
	}
	return len;
}

/* Reserve n more bytes of the budget for c's buffer; false when it would pass max_buffered. */
static bool budget_take(struct upstream_call *c, uint64_t n)
{
	/* Reserved before it is taken: the sum never passes max_buffered. */
	if (atomic_fetch_add(&c->hub->buffered, n) + n > c->hub->max_buffered) {
		atomic_fetch_sub(&c->hub->buffered, n);
		return false;
	}
	return true;
}

/*
 * Room in c's buffer for len more bytes once it is empty: the buffer is
 * the announced length (when under UPSTREAM_WINDOW), else the window, and
 * grows to the window when an answer is longer than it said; its bytes are
 * reserved from the budget.  False when over the budget or out of memory.
 * Locked.
 */
static bool body_buffer(struct upstream_call *c, size_t len)
{
	size_t cap = UPSTREAM_WINDOW;
	char *nb;

	if (c->content_length >= 0 && c->content_length < UPSTREAM_WINDOW)
		cap = (size_t)c->content_length;
	if (cap < len)
		cap = UPSTREAM_WINDOW;
	if (cap <= c->body_cap)
		return true;
	if (!budget_take(c, cap - c->body_cap))
		return false;
	if (!(nb = realloc(c->body, cap))) {
		atomic_fetch_sub(&c->hub->buffered, cap - c->body_cap);
		return false;
	}
	c->body = nb;
	c->body_cap = cap;
	return true;
}

/*
 * Body bytes as libcurl hands them over (at most CURL_MAX_WRITE_SIZE at a
 * time): kept until the reader takes them, the transfer paused while the
 * buffer is full.  0 (the exchange fails) past max_body, when the budget is
 * spent, before a final status (not 1xx), or once the caller let go (its
 * client went away).
 */
static size_t on_body(char *buf, size_t size, size_t n, void *arg)
{
	struct upstream_call *c = arg;
	size_t len = size * n, ret = len;

	pthread_mutex_lock(&c->lock);
	if (c->released) {
		c->gone = true;
		ret = 0;
	} else if (!c->head) {
		/* Bytes after a 1xx alone (a 101's other protocol): no final answer, a bad one. */
		ret = 0;
	} else if (c->body_total + len > c->max_body || len > UPSTREAM_WINDOW || !body_buffer(c, c->body_len + len)) {
		c->over = true;
		ret = 0;
	} else if (c->body_len + len > c->body_cap) {
		c->paused = true;
		ret = CURL_WRITEFUNC_PAUSE;
	} else {
		if (c->body_head + c->body_len + len > c->body_cap) {
			memmove(c->body, c->body + c->body_head, c->body_len);
			c->body_head = 0;
		}
		memcpy(c->body + c->body_head + c->body_len, buf, len);
		c->body_len += len;
		c->body_total += len;
		c->kick = true;
		c->hub->kick_any = true;
	}
	pthread_mutex_unlock(&c->lock);
	return ret;
}

/* ---- the request ---- */

static bool has_body(const struct upstream_call *c)
{
	return c->req_len > 0 || strcmp(c->method, "POST") == 0 || strcmp(c->method, "PUT") == 0 ||
	       strcmp(c->method, "PATCH") == 0;
}

/* The method and body options of c on e; false when one was refused. */
static bool set_method(CURL *e, struct upstream_call *c)
{
	bool ok = true;

	if (strcmp(c->method, "HEAD") == 0)
		return curl_easy_setopt(e, CURLOPT_NOBODY, 1L) == CURLE_OK;
	if (has_body(c)) {
		ok &= curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)c->req_len) == CURLE_OK;
		ok &= curl_easy_setopt(e, CURLOPT_POSTFIELDS, c->req_body) == CURLE_OK;
	} else {
		ok &= curl_easy_setopt(e, CURLOPT_HTTPGET, 1L) == CURLE_OK;
	}
	if (strcmp(c->method, "GET") != 0 && strcmp(c->method, "POST") != 0)
		ok &= curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, c->method) == CURLE_OK;
	return ok;
}

int upstream_call_set_options(struct upstream_call *c, CURL *e, const char *url, const struct upstream_config *cfg)
{
	bool ok = true;

	ok &= curl_easy_setopt(e, CURLOPT_URL, url) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) == CURLE_OK;
	/* The upstream itself, never a proxy that http_proxy or all_proxy in the environment names. */
	ok &= curl_easy_setopt(e, CURLOPT_PROXY, "") == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)(cfg->connect_timeout_ns / NS_PER_MS + 1)) ==
	      CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)(cfg->timeout_ns / NS_PER_MS + 1)) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->hdrs) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_HEADERDATA, c) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_WRITEDATA, c) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_PRIVATE, c) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)cfg->max_body) == CURLE_OK;
	return ok && set_method(e, c) ? 0 : -1;
}
