/* The upstream client: one thread, one libcurl multi handle, calls handed over under a lock. */
#include "server/proxy/upstream.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/clock.h"

#define POLL_MS 200  /* the thread's poll bound: a lost wakeup costs at most this */

struct upstream_call {
	pthread_mutex_t lock;        /* the caller's side (release, read) against the thread's (notify, body) */
	_Atomic int refs;
	bool released;               /* under lock: done is not called from now on, and the exchange stops */
	void (*done)(void *arg);
	void *arg;
	struct upstream_call *prev, *next;  /* the pending or the active list (the thread's) */
	CURL *easy;
	char *method, *target, *req_body;
	size_t req_len;
	struct curl_slist *hdrs;
	enum upstream_result result;
	int status;
	char *hbuf;                  /* "name\0value\0" pairs */
	size_t hlen;
	char *body;                  /* bytes in and not yet read: body[body_head, body_head + body_len) */
	size_t body_head, body_len, body_cap;
	uint64_t body_total;         /* bytes of the body taken in so far (against max_body) */
	uint64_t max_body;
	int64_t content_length;      /* the answer's Content-Length, -1 when it sent none */
	struct upstream *u;          /* once submitted: its buffer budget */
	bool over;                   /* the answer went past a bound */
	bool gone;                   /* the thread's: on_body refused bytes because the caller let go */
	bool head;                   /* under lock: status and headers are in (readable from then on) */
	bool notified;               /* under lock: done was called for the head or the end */
	bool ended;                  /* under lock: the exchange is over, result set */
	bool waiting;                /* under lock: the reader waits for bytes; done wakes it */
	bool paused;                 /* under lock: the buffer was full, the thread paused the transfer */
	bool resume;                 /* under lock: the reader made room; the thread resumes the transfer */
	bool kick;                   /* the thread's: the head or bytes came this round; notify after it */
};

struct upstream {
	struct upstream_config cfg;
	CURLM *multi;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;        /* pending, stopping */
	struct upstream_call *pending;
	bool stopping;
	struct upstream_call *active;       /* the thread's only */
	CURL *pool[64];                     /* idle easy handles, kept for reuse (the thread's only) */
	size_t npool;
	_Atomic unsigned in_flight;
	_Atomic uint64_t calls;
	_Atomic uint64_t buffered;          /* the bodies' capacity held by live calls */
	_Atomic bool resume_any;            /* some call's reader made room: look for calls to resume */
	bool kick_any;                      /* the thread's: some active call has a kick */
	_Atomic uint64_t results[UPSTREAM_RESULTS];
};

static const char *const RESULT_NAMES[UPSTREAM_RESULTS] = { "ok",         "connect", "timeout",    "too_big",
	                                                    "bad_answer", "busy",    "client_gone" };

const char *upstream_result_name(enum upstream_result r)
{
	return (unsigned)r < UPSTREAM_RESULTS ? RESULT_NAMES[r] : "?";
}

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

bool upstream_url_ok(const char *url, char *why, size_t len)
{
	const char *host;

	if (strncmp(url, "http://", 7) == 0)
		host = url + 7;
	else if (strncmp(url, "https://", 8) == 0)
		host = url + 8;
	else
		return snprintf(why, len, "must start with http:// or https://"), false;
	if (strlen(url) >= UPSTREAM_URL_CAP)
		return snprintf(why, len, "is longer than %d bytes", UPSTREAM_URL_CAP - 1), false;
	if (*host == '\0' || *host == '/')
		return snprintf(why, len, "has no host"), false;
	if (strpbrk(url, "?# \t\r\n"))
		return snprintf(why, len, "may not hold a query, a fragment or white space"), false;
	return true;
}

/* ---- calls ---- */

/* Wake the thread out of curl_multi_poll (its POLL_MS bound covers a failed wakeup). */
static void wakeup(struct upstream *u)
{
	if (u->multi && curl_multi_wakeup(u->multi) != CURLM_OK)
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

static void call_unref(struct upstream_call *c)
{
	if (atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	if (c->u)
		atomic_fetch_sub(&c->u->buffered, c->body_cap);
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
	struct upstream *u = NULL;

	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->released = true;
	/* A transfer paused for this caller goes on to its end at once (on_body refuses it), not at its timeout. */
	if (c->paused && !c->resume) {
		c->resume = true;
		u = c->u;
	}
	pthread_mutex_unlock(&c->lock);
	if (u) {
		atomic_store(&u->resume_any, true);
		wakeup(u);
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
		atomic_store(&c->u->resume_any, true);
		wakeup(c->u);
	}
	return n;
}

/*
 * Tell c's caller (done) that the head, more bytes or the end came: once
 * for the head or the end, then each time its reader waits.  Locked.
 */
static void notify(struct upstream_call *c)
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
	if (upstream_hop_by_hop(c->hbuf + c->hlen))
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
	c->u->kick_any = true;
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
	if (atomic_fetch_add(&c->u->buffered, n) + n > c->u->cfg.max_buffered) {
		atomic_fetch_sub(&c->u->buffered, n);
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
		atomic_fetch_sub(&c->u->buffered, cap - c->body_cap);
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
 * spent, or once the caller let go (its client went away).
 */
static size_t on_body(char *buf, size_t size, size_t n, void *arg)
{
	struct upstream_call *c = arg;
	size_t len = size * n, ret = len;

	pthread_mutex_lock(&c->lock);
	if (c->released) {
		c->gone = true;
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
		c->u->kick_any = true;
	}
	pthread_mutex_unlock(&c->lock);
	return ret;
}

/* ---- the thread ---- */

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

/* Every option of c's exchange on e (a fresh or reset handle); false when one was refused. */
static bool set_options(struct upstream *u, CURL *e, struct upstream_call *c, const char *url)
{
	bool ok = true;

	ok &= curl_easy_setopt(e, CURLOPT_URL, url) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) == CURLE_OK;
	/* The upstream itself, never a proxy that http_proxy or all_proxy in the environment names. */
	ok &= curl_easy_setopt(e, CURLOPT_PROXY, "") == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)(u->cfg.connect_timeout_ns / NS_PER_MS + 1)) ==
	      CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)(u->cfg.timeout_ns / NS_PER_MS + 1)) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->hdrs) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_HEADERDATA, c) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_WRITEDATA, c) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_PRIVATE, c) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)u->cfg.max_body) == CURLE_OK;
	return ok && set_method(e, c);
}

/* An easy handle: a kept one (reset: its connection stays in the multi's cache) or a new one; NULL when out of memory. */
static CURL *easy_get(struct upstream *u)
{
	CURL *e;

	if (u->npool == 0)
		return curl_easy_init();
	e = u->pool[--u->npool];
	curl_easy_reset(e);
	return e;
}

static void easy_put(struct upstream *u, CURL *e)
{
	if (u->npool < sizeof(u->pool) / sizeof(u->pool[0]))
		u->pool[u->npool++] = e;
	else
		curl_easy_cleanup(e);
}

static void active_link(struct upstream *u, struct upstream_call *c)
{
	c->prev = NULL;
	c->next = u->active;
	if (u->active)
		u->active->prev = c;
	u->active = c;
}

static void active_unlink(struct upstream *u, struct upstream_call *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		u->active = c->next;
	if (c->next)
		c->next->prev = c->prev;
}

/* c's exchange is over: counted, its done function called (unless its caller left), the thread's hold dropped. */
static void finish(struct upstream *u, struct upstream_call *c, bool call_done)
{
	atomic_fetch_add(&u->results[c->result], 1);
	atomic_fetch_sub(&u->in_flight, 1);
	pthread_mutex_lock(&c->lock);
	c->ended = true;
	/* A whole answer whose head never ended with a blank line: readable now. */
	if (c->result == UPSTREAM_OK)
		c->head = true;
	if (call_done)
		notify(c);
	pthread_mutex_unlock(&c->lock);
	call_unref(c);
}

/* Start c on the multi handle; when it cannot start, it ends at once as a bad answer. */
static void start(struct upstream *u, struct upstream_call *c)
{
	char url[UPSTREAM_URL_CAP + 8192];
	size_t bl = strlen(u->cfg.url);
	CURL *e;

	while (bl && u->cfg.url[bl - 1] == '/')
		bl--;
	c->max_body = u->cfg.max_body;
	c->result = UPSTREAM_BAD_ANSWER;
	if (snprintf(url, sizeof(url), "%.*s%s", (int)bl, u->cfg.url, c->target) >= (int)sizeof(url) ||
	    !(e = easy_get(u))) {
		finish(u, c, true);
		return;
	}
	if (!set_options(u, e, c, url) || curl_multi_add_handle(u->multi, e) != CURLM_OK) {
		curl_easy_cleanup(e);
		finish(u, c, true);
		return;
	}
	c->easy = e;
	active_link(u, c);
}

/* What a finished exchange's CURLcode means. */
static enum upstream_result classify(const struct upstream_call *c, CURLcode rc)
{
	if (rc == CURLE_OK)
		return c->status >= 100 && c->status <= 999 ? UPSTREAM_OK : UPSTREAM_BAD_ANSWER;
	if (rc == CURLE_OPERATION_TIMEDOUT)
		return UPSTREAM_TIMEOUT;
	if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST)
		return UPSTREAM_CONNECT;
	if (c->over || rc == CURLE_FILESIZE_EXCEEDED)
		return UPSTREAM_TOO_BIG;
	if (c->gone)
		return UPSTREAM_CLIENT_GONE;
	return UPSTREAM_BAD_ANSWER;
}

/* Take every finished exchange off the multi handle and end it. */
static void reap(struct upstream *u)
{
	struct upstream_call *c;
	CURLMsg *m;
	int left;
	long status = 0;

	while ((m = curl_multi_info_read(u->multi, &left))) {
		if (m->msg != CURLMSG_DONE || curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&c) != CURLE_OK)
			continue;
		if (curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK)
			status = 0;
		c->status = (int)status;
		c->result = classify(c, m->data.result);
		active_unlink(u, c);
		if (curl_multi_remove_handle(u->multi, c->easy) == CURLM_OK)
			easy_put(u, c->easy);
		else
			curl_easy_cleanup(c->easy);
		c->easy = NULL;
		finish(u, c, true);
	}
}

/* A pending list (newest first) in submission order. */
static struct upstream_call *reversed(struct upstream_call *list)
{
	struct upstream_call *out = NULL, *next;

	for (; list; list = next) {
		next = list->next;
		list->next = out;
		out = list;
	}
	return out;
}

/* The calls submitted since the last look, started in the order they came; false once stopping. */
static bool take_pending(struct upstream *u)
{
	struct upstream_call *list, *next;
	bool stopping;

	pthread_mutex_lock(&u->lock);
	list = u->pending;
	u->pending = NULL;
	stopping = u->stopping;
	pthread_mutex_unlock(&u->lock);
	list = reversed(list);
	for (; list; list = next) {
		next = list->next;
		if (stopping)
			finish(u, list, false);
		else
			start(u, list);
	}
	return !stopping;
}

/* Stopping: every exchange still on the multi handle ends unanswered. */
static void abandon_active(struct upstream *u)
{
	while (u->active) {
		struct upstream_call *c = u->active;

		active_unlink(u, c);
		if (curl_multi_remove_handle(u->multi, c->easy) == CURLM_OK)
			easy_put(u, c->easy);
		else
			curl_easy_cleanup(c->easy);
		c->result = UPSTREAM_BUSY;
		finish(u, c, false);
	}
}

/* Resume every transfer whose reader made room (curl_easy_pause may hand bytes to on_body at once). */
static void resume_paused(struct upstream *u)
{
	if (!atomic_exchange(&u->resume_any, false))
		return;
	for (struct upstream_call *c = u->active; c; c = c->next) {
		bool go;

		pthread_mutex_lock(&c->lock);
		go = c->resume;
		c->resume = false;
		if (go)
			c->paused = false;
		pthread_mutex_unlock(&c->lock);
		if (go && curl_easy_pause(c->easy, CURLPAUSE_CONT) != CURLE_OK)
			fprintf(stderr, "ratelab: upstream: curl_easy_pause failed\n");
	}
}

/*
 * Tell the callers of the calls whose head or bytes came this round (after
 * the finished ones were reaped, so a small answer wakes its request once,
 * whole).
 */
static void notify_kicked(struct upstream *u)
{
	if (!u->kick_any)
		return;
	u->kick_any = false;
	for (struct upstream_call *c = u->active; c; c = c->next) {
		if (!c->kick)
			continue;
		c->kick = false;
		pthread_mutex_lock(&c->lock);
		notify(c);
		pthread_mutex_unlock(&c->lock);
	}
}

static void *run(void *arg)
{
	struct upstream *u = arg;
	int running;

	while (take_pending(u)) {
		resume_paused(u);
		/* A failed perform or poll leaves the exchanges to their timeouts; the loop goes on, bounded by POLL_MS. */
		if (curl_multi_perform(u->multi, &running) != CURLM_OK)
			fprintf(stderr, "ratelab: upstream: curl_multi_perform failed\n");
		reap(u);
		notify_kicked(u);
		if (curl_multi_poll(u->multi, NULL, 0, POLL_MS, NULL) != CURLM_OK)
			fprintf(stderr, "ratelab: upstream: curl_multi_poll failed\n");
	}
	abandon_active(u);
	return NULL;
}

/* ---- the client ---- */

/* The multi handle's bounds: max_conns connections, all to the one upstream. */
static bool setup_multi(struct upstream *u)
{
	bool ok = true;

	if (!(u->multi = curl_multi_init()))
		return false;
	ok &= curl_multi_setopt(u->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)u->cfg.max_conns) == CURLM_OK;
	ok &= curl_multi_setopt(u->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)u->cfg.max_conns) == CURLM_OK;
	ok &= curl_multi_setopt(u->multi, CURLMOPT_MAXCONNECTS, (long)u->cfg.max_conns) == CURLM_OK;
	return ok;
}

struct upstream *upstream_new(const struct upstream_config *c, char *err, size_t errlen)
{
	struct upstream *u = calloc(1, sizeof(*u));

	if (!u) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	u->cfg = *c;
	if (u->cfg.max_conns == 0)
		u->cfg.max_conns = 1;
	if (u->cfg.max_buffered < u->cfg.max_body)
		u->cfg.max_buffered = u->cfg.max_body;
	pthread_mutex_init(&u->lock, NULL);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK || !setup_multi(u)) {
		snprintf(err, errlen, "cannot set up libcurl for the upstream");
		goto fail;
	}
	if (pthread_create(&u->thread, NULL, run, u) != 0) {
		snprintf(err, errlen, "cannot start the upstream thread");
		goto fail;
	}
	u->started = true;
	return u;
fail:
	upstream_free(u);
	return NULL;
}

void upstream_stop(struct upstream *u)
{
	if (!u)
		return;
	pthread_mutex_lock(&u->lock);
	u->stopping = true;
	pthread_mutex_unlock(&u->lock);
	if (!u->started)
		return;
	wakeup(u);
	pthread_join(u->thread, NULL);
	u->started = false;
	/* Submitted after the thread's last look. */
	take_pending(u);
}

void upstream_free(struct upstream *u)
{
	if (!u)
		return;
	upstream_stop(u);
	while (u->npool)
		curl_easy_cleanup(u->pool[--u->npool]);
	if (u->multi && curl_multi_cleanup(u->multi) != CURLM_OK)
		fprintf(stderr, "ratelab: upstream: curl_multi_cleanup failed\n");
	pthread_mutex_destroy(&u->lock);
	free(u);
}

int upstream_submit(struct upstream *u, struct upstream_call *c, void (*done)(void *arg), void *arg)
{
	atomic_fetch_add(&u->calls, 1);
	if (atomic_fetch_add(&u->in_flight, 1) >= UPSTREAM_MAX_CALLS) {
		atomic_fetch_sub(&u->in_flight, 1);
		atomic_fetch_add(&u->results[UPSTREAM_BUSY], 1);
		c->result = UPSTREAM_BUSY;
		return -1;
	}
	c->done = done;
	c->arg = arg;
	c->u = u;
	atomic_fetch_add(&c->refs, 1);
	pthread_mutex_lock(&u->lock);
	if (u->stopping) {
		pthread_mutex_unlock(&u->lock);
		c->result = UPSTREAM_BUSY;
		finish(u, c, false);
		return -1;
	}
	c->next = u->pending;
	u->pending = c;
	pthread_mutex_unlock(&u->lock);
	wakeup(u);
	return 0;
}

void upstream_counts(struct upstream *u, struct upstream_counts *out)
{
	out->calls = atomic_load(&u->calls);
	for (int r = 0; r < UPSTREAM_RESULTS; r++)
		out->results[r] = atomic_load(&u->results[r]);
	out->in_flight = atomic_load(&u->in_flight);
	out->buffered = atomic_load(&u->buffered);
}
