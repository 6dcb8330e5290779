/* The upstream client: one thread, one libcurl multi handle, calls handed over under a lock. */
#include "server/proxy/upstream.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "server/proxy/upstream_call_impl.h"

#define POLL_MS 200  /* the thread's poll bound: a lost wakeup costs at most this */
#define WATCH_MS 50  /* a call in flight for one to two of these has its client watched for a hang-up */

struct upstream {
	struct upstream_config cfg;
	struct upstream_hub hub;            /* its multi handle, the window budget, the resume and kick flags */
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;        /* pending, stopping */
	struct upstream_call *pending;
	bool stopping;
	struct upstream_call *active;       /* the thread's only */
	int epfd;                           /* the active calls' clients' sockets, for their hang-ups (the thread's) */
	uint64_t next_scan_ns;              /* when watch_slow next looks at the active calls (the thread's) */
	CURL *pool[64];                     /* idle easy handles, kept for reuse (the thread's only) */
	size_t npool;
	_Atomic unsigned in_flight;
	_Atomic uint64_t calls;
	_Atomic uint64_t results[UPSTREAM_RESULTS];
};

static const char *const RESULT_NAMES[UPSTREAM_RESULTS] = { "ok",         "connect", "timeout",    "too_big",
	                                                    "bad_answer", "busy",    "client_gone" };

const char *upstream_result_name(enum upstream_result r)
{
	return (unsigned)r < UPSTREAM_RESULTS ? RESULT_NAMES[r] : "?";
}

/*
 * Whether libcurl reads url with a host and a port it can connect to (one
 * it refuses would make every call a 502); false with the reason in why.
 */
static bool url_parts_ok(const char *url, char *why, size_t len)
{
	CURLU *h = curl_url();
	CURLUcode rc;
	char *port = NULL;
	bool ok;

	if (!h)
		return snprintf(why, len, "cannot be read: out of memory"), false;
	rc = curl_url_set(h, CURLUPART_URL, url, 0);
	if (rc == CURLUE_OK && curl_url_get(h, CURLUPART_PORT, &port, 0) == CURLUE_OK && strcmp(port, "0") == 0)
		snprintf(why, len, "has port 0, which no server listens on");
	else if (rc == CURLUE_NO_HOST)
		snprintf(why, len, "has no host");
	else if (rc != CURLUE_OK)
		snprintf(why, len, "is not a URL: %s", curl_url_strerror(rc));
	ok = rc == CURLUE_OK && !(port && strcmp(port, "0") == 0);
	curl_free(port);
	curl_url_cleanup(h);
	return ok;
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
	return url_parts_ok(url, why, len);
}

/* ---- the thread ---- */

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

/* Take c off the active list and the multi handle; its easy handle goes back to the pool (or is cleaned up). */
static void detach(struct upstream *u, struct upstream_call *c)
{
	active_unlink(u, c);
	if (curl_multi_remove_handle(u->hub.multi, c->easy) == CURLM_OK)
		easy_put(u, c->easy);
	else
		curl_easy_cleanup(c->easy);
	c->easy = NULL;
}

/* Stop watching c's client (its duplicate socket closed). */
static void unwatch(struct upstream *u, struct upstream_call *c)
{
	if (c->watch_fd < 0)
		return;
	/* Taken out first: the client's own descriptor keeps the socket, and so the watch, alive. */
	epoll_ctl(u->epfd, EPOLL_CTL_DEL, c->watch_fd, NULL);
	close(c->watch_fd);
	c->watch_fd = -1;
}

/* c's exchange is over: counted, its done function called (unless its caller left), the thread's hold dropped. */
static void finish(struct upstream *u, struct upstream_call *c, bool call_done)
{
	unwatch(u, c);
	atomic_fetch_add(&u->results[c->result], 1);
	atomic_fetch_sub(&u->in_flight, 1);
	pthread_mutex_lock(&c->lock);
	c->ended = true;
	/* A whole answer whose head never ended with a blank line: readable now. */
	if (c->result == UPSTREAM_OK)
		c->head = true;
	if (call_done)
		upstream_call_notify(c);
	pthread_mutex_unlock(&c->lock);
	upstream_call_drop(c);
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
	if (upstream_call_set_options(c, e, url, &u->cfg) != 0 || curl_multi_add_handle(u->hub.multi, e) != CURLM_OK) {
		curl_easy_cleanup(e);
		finish(u, c, true);
		return;
	}
	c->easy = e;
	c->scanned = false;
	active_link(u, c);
}

/*
 * Every WATCH_MS, watch the client of each call that was in flight at the
 * last scan too (so 50-100 ms): a hang-up matters to a call that goes on,
 * and a quick one (the most) costs no system call.  The socket is
 * duplicated under the call's lock, and only while its caller holds it:
 * after upstream_call_release the server may have closed it.
 */
static void watch_slow(struct upstream *u)
{
	uint64_t now = clock_monotonic_ns();

	if (now < u->next_scan_ns)
		return;
	u->next_scan_ns = now + (uint64_t)WATCH_MS * 1000000u;
	for (struct upstream_call *c = u->active; c; c = c->next) {
		if (c->client_fd < 0 || c->watch_fd >= 0)
			continue;
		if (!c->scanned) {
			c->scanned = true;
			continue;
		}
		pthread_mutex_lock(&c->lock);
		if (!c->released)
			c->watch_fd = fcntl(c->client_fd, F_DUPFD_CLOEXEC, 0);
		pthread_mutex_unlock(&c->lock);
		c->client_fd = -1;
		if (c->watch_fd >= 0) {
			/*
			 * Edge-triggered on the hang-up alone: bytes a client sends ahead (its next request) do not
			 * wake the thread.  A hang-up before this is reported too: adding a shut socket reports it.
			 */
			struct epoll_event ev = { .events = EPOLLRDHUP | EPOLLET, .data.ptr = c };

			if (epoll_ctl(u->epfd, EPOLL_CTL_ADD, c->watch_fd, &ev) != 0)
				unwatch(u, c);
		}
	}
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

	while ((m = curl_multi_info_read(u->hub.multi, &left))) {
		if (m->msg != CURLMSG_DONE || curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&c) != CURLE_OK)
			continue;
		/* Once the head is out its caller reads status unlocked: it is set then, and stays. */
		if (!c->head) {
			if (curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK)
				status = 0;
			c->status = (int)status;
		}
		c->result = classify(c, m->data.result);
		detach(u, c);
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

		detach(u, c);
		c->result = UPSTREAM_BUSY;
		finish(u, c, false);
	}
}

/* c's caller let go while its exchange was going: it ends now, as client_gone (its connection is closed). */
static void let_go(struct upstream *u, struct upstream_call *c)
{
	detach(u, c);
	c->gone = true;
	c->result = UPSTREAM_CLIENT_GONE;
	finish(u, c, false);
}

/*
 * End, as client_gone, every exchange whose client hung up (closed or
 * reset its socket; not one that sent bytes ahead), its request woken.
 */
static void hangups(struct upstream *u)
{
	struct epoll_event ev[64];
	int n = epoll_wait(u->epfd, ev, 64, 0);

	for (int i = 0; i < n; i++) {
		struct upstream_call *c = ev[i].data.ptr;
		char b;
		ssize_t r = recv(c->watch_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);

		if (r > 0 || (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)))
			continue;
		detach(u, c);
		c->gone = true;
		c->result = UPSTREAM_CLIENT_GONE;
		finish(u, c, true);
	}
}

/*
 * Resume every transfer whose reader made room (curl_easy_pause may hand
 * bytes to on_body at once), and end every one whose caller let go.
 */
static void resume_paused(struct upstream *u)
{
	struct upstream_call *next;

	if (!atomic_exchange(&u->hub.resume_any, false))
		return;
	for (struct upstream_call *c = u->active; c; c = next) {
		bool go, left;

		next = c->next;
		pthread_mutex_lock(&c->lock);
		go = c->resume;
		left = c->released;
		c->resume = false;
		if (go)
			c->paused = false;
		pthread_mutex_unlock(&c->lock);
		if (go && left)
			let_go(u, c);
		else if (go && curl_easy_pause(c->easy, CURLPAUSE_CONT) != CURLE_OK)
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
	if (!u->hub.kick_any)
		return;
	u->hub.kick_any = false;
	for (struct upstream_call *c = u->active; c; c = c->next) {
		if (!c->kick)
			continue;
		c->kick = false;
		pthread_mutex_lock(&c->lock);
		upstream_call_notify(c);
		pthread_mutex_unlock(&c->lock);
	}
}

static void *run(void *arg)
{
	struct upstream *u = arg;
	int running;

	struct curl_waitfd hup = { .fd = u->epfd, .events = CURL_WAIT_POLLIN };

	while (take_pending(u)) {
		watch_slow(u);
		hangups(u);
		resume_paused(u);
		/* A failed perform or poll leaves the exchanges to their timeouts; the loop goes on, bounded by POLL_MS. */
		if (curl_multi_perform(u->hub.multi, &running) != CURLM_OK)
			fprintf(stderr, "ratelab: upstream: curl_multi_perform failed\n");
		reap(u);
		notify_kicked(u);
		if (curl_multi_poll(u->hub.multi, &hup, 1, u->active ? WATCH_MS : POLL_MS, NULL) != CURLM_OK)
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

	if (!(u->hub.multi = curl_multi_init()))
		return false;
	ok &= curl_multi_setopt(u->hub.multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)u->cfg.max_conns) == CURLM_OK;
	ok &= curl_multi_setopt(u->hub.multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)u->cfg.max_conns) == CURLM_OK;
	ok &= curl_multi_setopt(u->hub.multi, CURLMOPT_MAXCONNECTS, (long)u->cfg.max_conns) == CURLM_OK;
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
	u->hub.max_buffered = u->cfg.max_buffered;
	pthread_mutex_init(&u->lock, NULL);
	if ((u->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0) {
		snprintf(err, errlen, "cannot watch the upstream's clients: %s", strerror(errno));
		goto fail;
	}
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
	upstream_hub_wakeup(&u->hub);
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
	if (u->hub.multi && curl_multi_cleanup(u->hub.multi) != CURLM_OK)
		fprintf(stderr, "ratelab: upstream: curl_multi_cleanup failed\n");
	if (u->epfd >= 0)
		close(u->epfd);
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
	c->hub = &u->hub;
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
	upstream_hub_wakeup(&u->hub);
	return 0;
}

void upstream_counts(struct upstream *u, struct upstream_counts *out)
{
	out->calls = atomic_load(&u->calls);
	for (int r = 0; r < UPSTREAM_RESULTS; r++)
		out->results[r] = atomic_load(&u->results[r]);
	out->in_flight = atomic_load(&u->in_flight);
	out->buffered = atomic_load(&u->hub.buffered);
}
