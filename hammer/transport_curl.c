/*
 * The libcurl transport: an easy handle per client (reused, so connections
 * are kept alive), in multi handles of SHARD_CLIENTS clients driven by
 * curl_multi_socket_action on the loop's epoll set.
 */
#include "hammer/transport.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "common/clock.h"
#include "hammer/wire.h"

/*
 * Clients per multi handle: libcurl 7.88 scans a host's whole connection
 * bundle for every transfer it starts, so one multi of thousands of clients
 * spends a long time in one socket_action call; shards keep that scan
 * short.  A socket_action call also runs every expired transfer of its
 * multi, so the shard size bounds the work done between two timer checks.
 */
#define SHARD_CLIENTS 16
#define NO_URL UINT32_MAX

struct transport_run {
	const struct hammer_config *cfg;
	const struct workload_ops *wl;
	struct curl_slist *headers;    /* the run's header lines, shared by every handle */
	char **urls;                   /* server s, shape k: urls[s * nshapes + k] */
	bool *urls_owned;              /* built for a shape's path (curl_free) */
	uint32_t nurls, nshapes;
};

struct transport_loop;

/* One multi handle and its timeout. */
struct shard {
	CURLM *multi;
	struct transport_loop *t;
	uint32_t index;
	uint64_t due_ns;          /* libcurl's timeout; UINT64_MAX = none */
};

struct cclient {
	CURL *easy;
	struct shard *shard;
	uint32_t id;
	uint32_t url_set;         /* the URL index the handle holds */
	uint32_t shape;           /* the shape whose method the handle holds */
	struct curl_slist *own;   /* the run's headers plus the call's own lines, or NULL */
	struct wire_resp resp;    /* the headers the retry engine and workloads read */
};

struct transport_loop {
	const struct transport_run *run;
	struct transport_env env;
	struct shard *shards;
	uint32_t nshards;
	struct cclient *c;
};

static bool curl_supports(const char *url)
{
	(void)url;
	return true;
}

static uint64_t curl_fds_needed(uint32_t clients, uint32_t loops)
{
	/* a socket per client and libcurl's wake-up socketpair per multi handle */
	uint64_t shards = (uint64_t)clients / SHARD_CLIENTS + loops;

	return (uint64_t)clients + 2 * shards;
}

static uint64_t curl_fds_wanted(const struct hammer_config *cfg)
{
	(void)cfg;
	return 0;
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init_once(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static int curl_process_init(char *err, size_t errlen)
{
	pthread_once(&curl_once, curl_init_once);
	if (curl_init_rc == CURLE_OK)
		return 0;
	snprintf(err, errlen, "curl_global_init: %s", curl_easy_strerror(curl_init_rc));
	return -1;
}

/* What a libcurl result means to the retry engine (CURLE_OK: none). */
static enum retry_error curl_error(CURLcode rc)
{
	switch (rc) {
	case CURLE_OK:
		return RETRY_ERR_NONE;
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
		return RETRY_ERR_REFUSED;
	case CURLE_OPERATION_TIMEDOUT:
		return RETRY_ERR_TIMEOUT;
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
		return RETRY_ERR_RESET;
	default:
		return RETRY_ERR_OTHER;
	}
}

/* ---- the run ---- */

static void curl_run_free(struct transport_run *r)
{
	if (r == NULL)
		return;
	for (uint32_t i = 0; r->urls != NULL && i < r->nurls * r->nshapes; i++)
		if (r->urls_owned[i])
			curl_free(r->urls[i]);
	free(r->urls);
	free(r->urls_owned);
	curl_slist_free_all(r->headers);
	free(r);
}

/* url with its path and query replaced by path (curl_free it), or NULL. */
static char *url_with_path(const char *url, const char *path)
{
	CURLU *h = curl_url();
	char *out = NULL;

	if (h != NULL && curl_url_set(h, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    curl_url_set(h, CURLUPART_PATH, path, 0) == CURLUE_OK &&
	    curl_url_set(h, CURLUPART_QUERY, NULL, 0) == CURLUE_OK &&
	    curl_url_get(h, CURLUPART_URL, &out, 0) != CURLUE_OK)
		out = NULL;
	curl_url_cleanup(h);
	return out;
}

static int urls_setup(struct transport_run *r, const char *const *urls)
{
	size_t n = (size_t)r->nurls * r->nshapes;

	r->urls = calloc(n, sizeof(*r->urls));
	r->urls_owned = calloc(n, sizeof(*r->urls_owned));
	if (r->urls == NULL || r->urls_owned == NULL)
		return -1;
	for (uint32_t s = 0; s < r->nurls; s++)
		for (uint32_t k = 0; k < r->nshapes; k++) {
			const char *path = r->wl->shapes[k].path;
			size_t i = (size_t)s * r->nshapes + k;

			r->urls[i] = path ? url_with_path(urls[s], path) : (char *)urls[s];
			r->urls_owned[i] = path != NULL;
			if (r->urls[i] == NULL)
				return -1;
		}
	return 0;
}

static struct transport_run *curl_run_new(const struct hammer_config *cfg, const struct workload_ops *wl,
                                          char *err, size_t errlen)
{
	struct transport_run *r = calloc(1, sizeof(*r));
	const char *const *urls;

	if (r == NULL)
		goto oom;
	r->cfg = cfg;
	r->wl = wl;
	r->nshapes = wl->nshapes;
	urls = hammer_config_urls(cfg, &r->nurls);
	/* no "Expect: 100-continue" round trip for bodies */
	r->headers = curl_slist_append(NULL, "Expect:");
	for (size_t i = 0; r->headers != NULL && i < cfg->nheaders; i++) {
		struct curl_slist *h = curl_slist_append(r->headers, cfg->headers[i]);

		if (h == NULL)
			curl_slist_free_all(r->headers);
		r->headers = h;
	}
	if (r->headers == NULL || urls_setup(r, urls) != 0)
		goto oom;
	return r;
oom:
	curl_run_free(r);
	snprintf(err, errlen, "out of memory");
	return NULL;
}

/* ---- callbacks ---- */

static size_t on_body(char *ptr, size_t size, size_t n, void *ud)
{
	(void)ptr;
	(void)ud;
	return size * n;
}

static size_t on_header(char *buf, size_t size, size_t n, void *ud)
{
	struct cclient *c = ud;

	wire_resp_capture(&c->resp, buf, size * n);
	return size * n;
}

/*
 * The socket's registered epoll mask rides in libcurl's per-socket pointer
 * (one of SOCK_MASKS' addresses), so an unchanged mask costs no epoll_ctl:
 * libcurl repeats the callback with the same mask on most transfers.
 */
static char SOCK_MASKS[4];

static int on_socket(CURL *e, curl_socket_t s, int what, void *userp, void *socketp)
{
	struct shard *sh = userp;
	int epfd = sh->t->env.epfd;
	struct epoll_event ev = { 0 };
	char *want = &SOCK_MASKS[what & CURL_POLL_INOUT];

	(void)e;
	if (what == CURL_POLL_REMOVE) {
		epoll_ctl(epfd, EPOLL_CTL_DEL, s, NULL);
		return 0;
	}
	if (socketp == want)
		return 0;
	ev.events = ((what & CURL_POLL_IN) ? EPOLLIN : 0u) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0u);
	ev.data.u64 = ((uint64_t)sh->index << 32) | (uint32_t)s;
	if (socketp == NULL) {
		if (epoll_ctl(epfd, EPOLL_CTL_ADD, s, &ev) != 0 && errno == EEXIST)
			epoll_ctl(epfd, EPOLL_CTL_MOD, s, &ev);
	} else if (epoll_ctl(epfd, EPOLL_CTL_MOD, s, &ev) != 0 && errno == ENOENT) {
		epoll_ctl(epfd, EPOLL_CTL_ADD, s, &ev);
	}
	curl_multi_assign(sh->multi, s, want);
	return 0;
}

static int on_curl_timer(CURLM *m, long timeout_ms, void *userp)
{
	struct shard *sh = userp;

	(void)m;
	sh->due_ns = timeout_ms < 0 ? UINT64_MAX : clock_monotonic_ns() + (uint64_t)timeout_ms * NS_PER_MS;
	return 0;
}

/* ---- handles ---- */

#define SETOPT(e, opt, val) do { if (curl_easy_setopt((e), (opt), (val)) != CURLE_OK) goto fail; } while (0)

/* Set e up to send method m with body (or none). */
static int easy_method(CURL *e, const char *m, const char *body)
{
	if (body != NULL) {
		SETOPT(e, CURLOPT_POSTFIELDS, body);
		SETOPT(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
	} else if (strcmp(m, "POST") == 0) {
		SETOPT(e, CURLOPT_POSTFIELDS, "");
		SETOPT(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
	}
	if (strcmp(m, "HEAD") == 0)
		SETOPT(e, CURLOPT_NOBODY, 1L);
	else if (strcmp(m, "GET") != 0 && strcmp(m, "POST") != 0)
		SETOPT(e, CURLOPT_CUSTOMREQUEST, m);
	else if (strcmp(m, "GET") == 0 && body != NULL)
		SETOPT(e, CURLOPT_CUSTOMREQUEST, m);
	return 0;
fail:
	return -1;
}

/* Give c's handle the method and body of shape k (a NULL field takes the run's). */
static int easy_shape(const struct transport_run *r, struct cclient *c, uint32_t k)
{
	const struct workload_shape *sh = &r->wl->shapes[k];
	const char *m = sh->method ? sh->method : r->cfg->method ? r->cfg->method : "GET";

	/* back to a plain GET first: the previous shape's options must not linger */
	SETOPT(c->easy, CURLOPT_HTTPGET, 1L);
	SETOPT(c->easy, CURLOPT_CUSTOMREQUEST, (char *)NULL);
	SETOPT(c->easy, CURLOPT_NOBODY, 0L);
	if (easy_method(c->easy, m, sh->body ? sh->body : r->cfg->data) != 0)
		return -1;
	c->shape = k;
	return 0;
fail:
	return -1;
}

/* A configured easy handle for c, holding shape 0 and the first URL; NULL on failure. */
static CURL *easy_new(const struct transport_run *r, struct cclient *c)
{
	const struct hammer_config *cfg = r->cfg;
	const struct workload_shape *sh = &r->wl->shapes[0];
	CURL *e = curl_easy_init();

	if (e == NULL)
		return NULL;
	SETOPT(e, CURLOPT_URL, r->urls[0]);
	SETOPT(e, CURLOPT_NOSIGNAL, 1L);
	/* no proxy: also spares libcurl reading six environment variables per request */
	SETOPT(e, CURLOPT_PROXY, "");
	SETOPT(e, CURLOPT_NOPROXY, "*");
	SETOPT(e, CURLOPT_PRIVATE, c);
	SETOPT(e, CURLOPT_WRITEFUNCTION, on_body);
	SETOPT(e, CURLOPT_HEADERFUNCTION, on_header);
	SETOPT(e, CURLOPT_HEADERDATA, c);
	SETOPT(e, CURLOPT_HTTPHEADER, r->headers);
	SETOPT(e, CURLOPT_TIMEOUT_MS, (long)(cfg->timeout_ns / NS_PER_MS));
	if (cfg->connect_timeout_ns)
		SETOPT(e, CURLOPT_CONNECTTIMEOUT_MS, (long)(cfg->connect_timeout_ns / NS_PER_MS));
	if (cfg->concurrency > 1000)
		SETOPT(e, CURLOPT_BUFFERSIZE, 4096L);
	if (easy_method(e, sh->method ? sh->method : cfg->method ? cfg->method : "GET",
	                sh->body ? sh->body : cfg->data) == 0)
		return e;
fail:
	curl_easy_cleanup(e);
	return NULL;
}

/* ---- the loop ---- */

static int shard_init(struct transport_loop *t, struct shard *sh, uint32_t index)
{
	sh->t = t;
	sh->index = index;
	sh->due_ns = UINT64_MAX;
	sh->multi = curl_multi_init();
	if (sh->multi == NULL)
		return -1;
	if (curl_multi_setopt(sh->multi, CURLMOPT_SOCKETFUNCTION, on_socket) != CURLM_OK ||
	    curl_multi_setopt(sh->multi, CURLMOPT_SOCKETDATA, sh) != CURLM_OK ||
	    curl_multi_setopt(sh->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer) != CURLM_OK ||
	    curl_multi_setopt(sh->multi, CURLMOPT_TIMERDATA, sh) != CURLM_OK ||
	    curl_multi_setopt(sh->multi, CURLMOPT_MAXCONNECTS, (long)SHARD_CLIENTS + 4) != CURLM_OK)
		return -1;
	return 0;
}

static void curl_loop_free(struct transport_loop *t)
{
	if (t == NULL)
		return;
	for (uint32_t i = 0; t->c != NULL && i < t->env.clients; i++) {
		struct cclient *c = &t->c[i];

		if (c->easy != NULL) {
			curl_multi_remove_handle(c->shard->multi, c->easy);
			curl_easy_cleanup(c->easy);
		}
		curl_slist_free_all(c->own);
	}
	for (uint32_t i = 0; t->shards != NULL && i < t->nshards; i++)
		if (t->shards[i].multi != NULL)
			curl_multi_cleanup(t->shards[i].multi);
	free(t->shards);
	free(t->c);
	free(t);
}

static int clients_new(struct transport_loop *t)
{
	uint32_t n = t->env.clients;

	t->c = calloc(n ? n : 1, sizeof(*t->c));
	if (t->c == NULL)
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		struct cclient *c = &t->c[i];

		c->id = i;
		c->shard = &t->shards[i / SHARD_CLIENTS];
		c->url_set = 0;
		wire_resp_init(&c->resp, false);
		c->easy = easy_new(t->run, c);
		if (c->easy == NULL)
			return -1;
	}
	return 0;
}

static struct transport_loop *curl_loop_new(const struct transport_run *r, const struct transport_env *env)
{
	struct transport_loop *t = calloc(1, sizeof(*t));

	if (t == NULL)
		return NULL;
	t->run = r;
	t->env = *env;
	t->nshards = (env->clients + SHARD_CLIENTS - 1) / SHARD_CLIENTS;
	if (t->nshards == 0)
		t->nshards = 1;
	t->shards = calloc(t->nshards, sizeof(*t->shards));
	if (t->shards == NULL)
		goto fail;
	for (uint32_t i = 0; i < t->nshards; i++)
		if (shard_init(t, &t->shards[i], i) != 0)
			goto fail;
	if (clients_new(t) == 0)
		return t;
fail:
	curl_loop_free(t);
	return NULL;
}

/* The run's headers plus the call's own lines on c's handle. */
static int own_headers(const struct transport_run *r, struct cclient *c, const struct workload_call *call)
{
	struct curl_slist *l = NULL, *n;

	for (const struct curl_slist *h = r->headers; h != NULL; h = h->next, l = n)
		if ((n = curl_slist_append(l, h->data)) == NULL)
			goto fail;
	for (uint32_t i = 0; i < call->nextra; i++, l = n)
		if ((n = curl_slist_append(l, call->extra[i])) == NULL)
			goto fail;
	if (curl_easy_setopt(c->easy, CURLOPT_HTTPHEADER, l) != CURLE_OK)
		goto fail;
	curl_slist_free_all(c->own);
	c->own = l;
	return 0;
fail:
	curl_slist_free_all(l);
	return -1;
}

/* Point c's handle at the call: its shape, server and lines. */
static int easy_call(const struct transport_run *r, struct cclient *c, uint32_t server,
                     const struct workload_call *call)
{
	uint32_t u = server * r->nshapes + call->shape;

	if (c->shape != call->shape && easy_shape(r, c, call->shape) != 0)
		return -1;
	if (c->url_set != u) {
		if (curl_easy_setopt(c->easy, CURLOPT_URL, r->urls[u]) != CURLE_OK)
			return -1;
		c->url_set = u;
	}
	if (call->nextra > 0)
		return own_headers(r, c, call);
	if (c->own != NULL) {
		if (curl_easy_setopt(c->easy, CURLOPT_HTTPHEADER, r->headers) != CURLE_OK)
			return -1;
		curl_slist_free_all(c->own);
		c->own = NULL;
	}
	return 0;
}

static int curl_begin(struct transport_loop *t, uint32_t id, uint32_t server, const struct workload_call *call,
                      uint64_t now, enum retry_error *err)
{
	struct cclient *c = &t->c[id];

	(void)now;
	*err = RETRY_ERR_OTHER;
	if (easy_call(t->run, c, server, call) != 0)
		return -1;
	wire_resp_init(&c->resp, false);
	return curl_multi_add_handle(c->shard->multi, c->easy) == CURLM_OK ? 0 : -1;
}

/* Report the calls of sh that libcurl finished. */
static void drain_shard(struct transport_loop *t, struct shard *sh)
{
	CURLMsg *msg;
	int left;

	while ((msg = curl_multi_info_read(sh->multi, &left)) != NULL) {
		struct cclient *c = NULL;
		CURLcode rc = msg->data.result;
		struct workload_answer a = { curl_error(rc), 0, NULL, NULL, NULL };
		long code = 0;

		if (msg->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&c);
		curl_multi_remove_handle(sh->multi, c->easy);
		if (rc == CURLE_OK && curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &code) != CURLE_OK)
			code = 0;
		a.status = (int)code;
		if (rc == CURLE_OK) {
			a.retry_after = c->resp.retry_after[0] ? c->resp.retry_after : NULL;
			a.ratelimit = c->resp.ratelimit[0] ? c->resp.ratelimit : NULL;
			a.etag = c->resp.etag[0] ? c->resp.etag : NULL;
		}
		t->env.ended(t->env.ctx, c->id, &a, clock_monotonic_ns());
	}
}

static void curl_event(struct transport_loop *t, uint64_t tag, uint32_t events, uint64_t now)
{
	struct shard *sh = &t->shards[tag >> 32];
	int mask = 0, running;

	(void)now;
	mask |= (events & EPOLLIN) ? CURL_CSELECT_IN : 0;
	mask |= (events & EPOLLOUT) ? CURL_CSELECT_OUT : 0;
	mask |= (events & (EPOLLERR | EPOLLHUP)) ? CURL_CSELECT_ERR : 0;
	curl_multi_socket_action(sh->multi, (curl_socket_t)(uint32_t)tag, mask, &running);
	drain_shard(t, sh);
}

/* Transfers finish only inside socket_action, and each call drains its shard. */
static void curl_expire(struct transport_loop *t, uint64_t now)
{
	int running;

	for (uint32_t i = 0; i < t->nshards; i++) {
		struct shard *sh = &t->shards[i];

		if (sh->due_ns > now)
			continue;
		sh->due_ns = UINT64_MAX;
		curl_multi_socket_action(sh->multi, CURL_SOCKET_TIMEOUT, 0, &running);
		drain_shard(t, sh);
		t->env.timers(t->env.timers_ctx);
		now = clock_monotonic_ns();
	}
}

static uint64_t curl_next_due(const struct transport_loop *t)
{
	uint64_t due = UINT64_MAX;

	for (uint32_t i = 0; i < t->nshards; i++)
		if (t->shards[i].due_ns < due)
			due = t->shards[i].due_ns;
	return due;
}

const struct transport_ops TRANSPORT_CURL = {
	.name = "curl",
	.supports = curl_supports,
	.fds_needed = curl_fds_needed,
	.fds_wanted = curl_fds_wanted,
	.process_init = curl_process_init,
	.run_new = curl_run_new,
	.run_free = curl_run_free,
	.loop_new = curl_loop_new,
	.loop_free = curl_loop_free,
	.begin = curl_begin,
	.event = curl_event,
	.expire = curl_expire,
	.next_due = curl_next_due,
};
