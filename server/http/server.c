/* The lab server at run time: MHD daemon, routing, limiting, faults, special handlers. */
#include "server/server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/prng.h"
#include "server/http/delayq.h"
#include "server/stats.h"

#define SERVER_KEY_LEN 128
/*
 * libmicrohttpd 0.9.75 zeroes a connection's whole memory pool before every
 * request: at 32 KiB that memset was 13-15 % of the server's CPU.  8 KiB
 * holds any ordinary request (a 6 KB header block still parses); bigger
 * ones get 414/431 as before.
 */
#ifndef SERVER_MEMORY_LIMIT
#define SERVER_MEMORY_LIMIT (8 * 1024)
#endif
#define SERVER_MEMORY_INCREMENT 1024
#define SERVER_BUILTINS 4
#define SERVER_CACHE_SLOTS 64

/*
 * The last admitted response of one server thread.  Under steady load most
 * admitted answers say the same thing (same remaining, same t), so a thread
 * re-queues its previous response (MHD counts references) instead of building
 * one.  Only the owning thread touches its slot.
 */
struct resp_cache {
	_Alignas(64) struct MHD_Response *r;
	int route, layer;
	uint64_t remaining, reset_s;
};

/*
 * A connection's last rejection.  Its body points at `body`: the connection
 * sends one answer at a time, so the buffer is rewritten only once the
 * previous answer is out.  When the next rejection has the same headers and
 * body length, only the body text is rewritten and the response re-queued:
 * no allocation, no header building.  When it has the same route, layer,
 * quota, window and remaining, the body's head (headers_problem_head) is
 * already in `body`, and only the wait-dependent tail is written.
 */
struct rej_cache {
	struct MHD_Response *r;
	int route, layer;
	bool has_ra;
	uint64_t limit, remaining, reset_s, window_ns;
	size_t len, head_len;
	char ra[40];
	char body[HEADERS_BODY_LEN];
};

struct route_rt {
	const char *prefix;          /* points into cfg */
	size_t prefix_len;
	const char *limiter;
	const struct limiter_ops *ops;
	struct limiter_params params;
	bool layered;
	bool releases;
	enum config_key key;
	const char *key_header;
	struct store *store;
	bool stateless;              /* the none limiter on the memory store: decide without a key */
	bool async;                  /* the store queues decisions (Redis): suspend while it works */
	char policy[HEADERS_POLICY_LEN];
};

struct server {
	struct server_config cfg;
	struct MHD_Daemon *daemon;
	struct route_rt routes[SERVER_MAX_ROUTES];
	size_t nroutes;
	size_t order[SERVER_MAX_ROUTES];     /* route indexes, longest prefix first */
	struct server_handler handlers[SERVER_MAX_HANDLERS + SERVER_BUILTINS];
	size_t nhandlers;
	struct stats *stats;
	struct delayq *delays;
	uint64_t gen;
	/*
	 * Limiter time 0: limiters see monotonic time since the server started, so
	 * fixed windows (fixed-window, sliding-window, layered) start when the server
	 * does, not at the machine's boot-time multiples.  An experiment that runs
	 * within an hour of its server's start never sees an hour window roll over.
	 */
	uint64_t epoch_ns;
	_Atomic unsigned streams;
	_Atomic long inflight;
	_Atomic bool stopping;
	int port;
	struct resp_cache cache[SERVER_CACHE_SLOTS];
	_Atomic unsigned cache_next;
	struct MHD_Response *r_ok;           /* admitted, no RateLimit headers */
	struct MHD_Response *r_too_big;
	struct MHD_Response *r_unavailable;  /* fail-closed 503: the store failed */
	struct MHD_Response *r_no_route;     /* 404 */
};

/*
 * Where a request is.  MHD calls the access handler again after every
 * suspension, and the phase alone says what is left to do.
 */
enum request_phase {
	REQUEST_NEW,           /* headers in, maybe body chunks: nothing decided yet */
	REQUEST_TOO_BIG,       /* the body is over max_body: answer 413 (or close) */
	REQUEST_DECIDING,      /* suspended while an asynchronous store decides */
	REQUEST_DECIDED,       /* the decision is in d; a delay fault may still hold the answer */
	REQUEST_STORE_FAILED,  /* the store could not decide and fails closed: answer 503 */
	REQUEST_HELD,          /* suspended for a delay: answer when resumed (a handler's in `kept`) */
};

/*
 * One request's state.  It lives in its connection's socket context (one
 * allocation per connection, not per request) and is cleared up to `key` when
 * a request starts; `pooled` is false for the rare one allocated on its own.
 */
struct request {
	bool pooled;
	enum request_phase phase;
	const struct server_handler *handler;
	int route;
	bool holds_slot;             /* the store admitted it and counts it: release when it ends */
	struct MHD_Connection *conn; /* set while the store works on the decision */
	struct MHD_Response *kept;   /* a special handler's delayed answer, sent when resumed */
	unsigned kept_status;
	struct fault_pick fault;
	struct limiter_decision d;
	char *body;
	size_t body_len, body_cap;
	size_t keylen;
	char key[SERVER_KEY_LEN];
	/* Not cleared per request: kept for the connection's life (pooled requests only). */
	struct rej_cache rej;
};

static _Atomic uint64_t server_generation;
static _Thread_local struct prng tl_rng;
static _Thread_local uint64_t tl_gen;
static _Thread_local uint64_t tl_cache_gen;
static _Thread_local struct resp_cache *tl_cache;

static const char OK_BODY[] = "ok\n";
static const char TOO_BIG_BODY[] = "request body too large\n";
static const char UNAVAILABLE_BODY[] = "limiter store unavailable\n";
static const char NO_ROUTE_BODY[] = "no route\n";

/* This thread's fault PRNG for server s: a stream of the seed per thread. */
static struct prng *thread_rng(struct server *s)
{
	if (tl_gen != s->gen) {
		prng_seed(&tl_rng, prng_stream_seed(s->cfg.seed, atomic_fetch_add(&s->streams, 1)));
		tl_gen = s->gen;
	}
	return &tl_rng;
}

int server_port(const struct server *s)
{
	return s->port;
}

const char *server_request_header(const struct server_request *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

const char *server_request_query(const struct server_request *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

static enum MHD_Result send_owned(struct MHD_Connection *c, unsigned status, struct MHD_Response *r)
{
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static struct MHD_Response *text_response(const char *body, size_t len, const char *type)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);

	if (r)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	return r;
}

static const struct route_rt *match_route(const struct server *s, const char *url, int *idx)
{
	for (size_t k = 0; k < s->nroutes; k++) {
		const struct route_rt *r = &s->routes[s->order[k]];

		if (strncmp(url, r->prefix, r->prefix_len) == 0) {
			*idx = (int)s->order[k];
			return r;
		}
	}
	*idx = -1;
	return NULL;
}

static const struct server_handler *match_handler(const struct server *s, const char *url)
{
	for (size_t i = 0; i < s->nhandlers; i++)
		if (strcmp(url, s->handlers[i].path) == 0)
			return &s->handlers[i];
	return NULL;
}

/* tag + the value; a value too long to fit keeps its head and ends in 16 hex digits of its whole hash. */
static void set_key(struct request *rq, char tag, const void *p, size_t n)
{
	rq->key[0] = tag;
	if (n > SERVER_KEY_LEN - 1) {
		size_t head = SERVER_KEY_LEN - 1 - 16;
		char hex[17];

		snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)store_memory_hash(p, n, 0x9e3779b97f4a7c15ULL));
		memcpy(rq->key + 1, p, head);
		memcpy(rq->key + 1 + head, hex, 16);
		rq->keylen = SERVER_KEY_LEN;
		return;
	}
	memcpy(rq->key + 1, p, n);
	rq->keylen = n + 1;
}

/* The limiter key of a request: "*" (global), 'h'+header value, or 'i'+address bytes. */
static void request_key(const struct route_rt *r, struct MHD_Connection *c, struct request *rq)
{
	const union MHD_ConnectionInfo *ci;
	const char *v;

	if (r->key == CONFIG_KEY_GLOBAL) {
		set_key(rq, '*', "", 0);
		return;
	}
	if (r->key == CONFIG_KEY_HEADER && (v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, r->key_header))) {
		set_key(rq, 'h', v, strlen(v));
		return;
	}
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET)
		set_key(rq, 'i', &((const struct sockaddr_in *)(const void *)ci->client_addr)->sin_addr, 4);
	else if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET6)
		set_key(rq, 'i', &((const struct sockaddr_in6 *)(const void *)ci->client_addr)->sin6_addr, 16);
	else
		set_key(rq, 'i', "?", 1);
}

static void add_u64(struct MHD_Response *r, const char *name, uint64_t v)
{
	char buf[24];

	headers_format_u64(v, buf, sizeof(buf));
	MHD_add_response_header(r, name, buf);
}

static void add_ratelimit(const struct server *s, const struct route_rt *rt, const struct limiter_decision *d,
                          struct MHD_Response *r)
{
	char field[HEADERS_FIELD_LEN];

	if (s->cfg.headers & HEADERS_IETF) {
		MHD_add_response_header(r, "RateLimit-Policy", rt->policy);
		if (headers_ratelimit(&rt->params, rt->layered, d, field, sizeof(field)) == 0)
			MHD_add_response_header(r, "RateLimit", field);
	}
	if (s->cfg.headers & HEADERS_LEGACY) {
		add_u64(r, "X-RateLimit-Limit", d->limit);
		add_u64(r, "X-RateLimit-Remaining", d->remaining);
		add_u64(r, "X-RateLimit-Reset", headers_reset_secs(d));
	}
}

/* This thread's response cache slot for server s, or NULL past SERVER_CACHE_SLOTS threads. */
static struct resp_cache *thread_cache(struct server *s)
{
	if (tl_cache_gen != s->gen) {
		unsigned i = atomic_fetch_add(&s->cache_next, 1);

		tl_cache = i < SERVER_CACHE_SLOTS ? &s->cache[i] : NULL;
		tl_cache_gen = s->gen;
	}
	return tl_cache;
}

static enum MHD_Result send_admitted(struct server *s, struct MHD_Connection *c, int route,
                                     const struct request *rq)
{
	const struct limiter_decision *d = &rq->d;
	uint64_t reset_s = headers_reset_secs(d);
	struct resp_cache *rc;
	struct MHD_Response *r;

	if (s->cfg.headers == HEADERS_NONE)
		return MHD_queue_response(c, MHD_HTTP_OK, s->r_ok);
	rc = thread_cache(s);
	if (rc && rc->r && rc->route == route && rc->layer == d->layer && rc->remaining == d->remaining &&
	    rc->reset_s == reset_s)
		return MHD_queue_response(c, MHD_HTTP_OK, rc->r);
	r = MHD_create_response_from_buffer(sizeof(OK_BODY) - 1, (void *)OK_BODY, MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain");
	add_ratelimit(s, &s->routes[route], d, r);
	if (!rc)
		return send_owned(c, MHD_HTTP_OK, r);
	if (rc->r)
		MHD_destroy_response(rc->r);
	*rc = (struct resp_cache){ .r = r, .route = route, .layer = d->layer, .remaining = d->remaining,
	                           .reset_s = reset_s };
	return MHD_queue_response(c, MHD_HTTP_OK, r);
}

/* Retry-After of a rejection into ra; false when it is left out. */
static bool rejection_retry_after(const struct server *s, const struct request *rq, char *ra, size_t len)
{
	/* The wall clock is read only for the HTTP-date form. */
	return !rq->fault.no_retry_after &&
	       headers_retry_after(s->cfg.retry_after, rq->d.wait_ns,
	                           s->cfg.retry_after == HEADERS_RA_HTTPDATE ? (int64_t)(clock_wall_ns() / NS_PER_SEC) : 0,
	                           ra, len);
}

/* A rejection response over body (len bytes, kept or copied per mode), with its headers. */
static struct MHD_Response *rejection_new(const struct server *s, const struct route_rt *rt,
                                          const struct limiter_decision *d, char *body, size_t len,
                                          const char *ra, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);

	if (!r)
		return NULL;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/problem+json");
	if (ra)
		MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, ra);
	add_ratelimit(s, rt, d, r);
	return r;
}

/* Spaces a new rejection body gets before its closing brace, so the next, longer wait still fits. */
#define REJECTION_SLACK 16

/*
 * Widen a body of len bytes, which ends in "}\n", to `to` bytes with spaces
 * before the closing brace: still one JSON object, and still ending "}\n".
 */
static void rejection_pad(char *body, size_t len, size_t to)
{
	memset(body + len - 2, ' ', to - len);
	memcpy(body + to - 2, "}\n", 2);
}

/* The kept body's head still says what this rejection's head would. */
static bool rejection_head_kept(const struct rej_cache *rc, int route, const struct limiter_decision *d)
{
	return rc->r && rc->route == route && rc->layer == d->layer && rc->limit == d->limit &&
	       rc->remaining == d->remaining && rc->window_ns == d->window_ns;
}

/* The kept response can go out again: same head, same headers, same body length. */
static bool rejection_reusable(const struct rej_cache *rc, int route, const struct limiter_decision *d,
                               uint64_t reset_s, size_t len, bool has_ra, const char *ra)
{
	return rejection_head_kept(rc, route, d) && rc->reset_s == reset_s && rc->len == len &&
	       rc->has_ra == has_ra && (!has_ra || strcmp(rc->ra, ra) == 0);
}

/* Remember the connection's new rejection response and what it says. */
static void rejection_keep(struct rej_cache *rc, struct MHD_Response *r, const struct request *rq,
                           uint64_t reset_s, size_t len, bool has_ra, const char *ra)
{
	if (rc->r)
		MHD_destroy_response(rc->r);
	rc->r = r;
	rc->route = rq->route;
	rc->layer = rq->d.layer;
	rc->limit = rq->d.limit;
	rc->remaining = rq->d.remaining;
	rc->window_ns = rq->d.window_ns;
	rc->reset_s = reset_s;
	rc->len = len;
	rc->has_ra = has_ra;
	/* ra is at most an HTTP-date (29 bytes); both buffers are 40. */
	memcpy(rc->ra, has_ra ? ra : "", has_ra ? strlen(ra) + 1 : 1);
}

/* The body into rc->body: only the tail when the kept head fits, else all of it.  Returns its length or -1. */
static int rejection_body(const struct server *s, const struct route_rt *rt, struct request *rq)
{
	struct rej_cache *rc = &rq->rej;
	int head, tail;

	if (rejection_head_kept(rc, rq->route, &rq->d)) {
		tail = headers_problem_tail(&rq->d, rc->body + rc->head_len, HEADERS_BODY_LEN - rc->head_len);
		return tail < 0 ? -1 : (int)rc->head_len + tail;
	}
	head = headers_problem_head(s->cfg.reject_status, rt->limiter, &rt->params, rt->layered, &rq->d, rc->body,
	                            HEADERS_BODY_LEN);
	tail = head < 0 ? -1 : headers_problem_tail(&rq->d, rc->body + head, HEADERS_BODY_LEN - (size_t)head);
	if (tail < 0)
		return -1;
	rc->head_len = (size_t)head;
	return head + tail;
}

static enum MHD_Result send_rejected(struct server *s, struct MHD_Connection *c, const struct route_rt *rt,
                                     struct request *rq)
{
	char ra[40], own[HEADERS_BODY_LEN];
	bool has_ra = rejection_retry_after(s, rq, ra, sizeof(ra));
	uint64_t reset_s = headers_reset_secs(&rq->d);
	struct rej_cache *rc = &rq->rej;
	struct MHD_Response *r;
	int len;

	/* Only a pooled request's buffer outlives the answer; otherwise MHD copies the body. */
	if (!rq->pooled) {
		len = headers_problem_body(s->cfg.reject_status, rt->limiter, &rt->params, rt->layered, &rq->d, own,
		                           HEADERS_BODY_LEN);
		if (len < 0)
			return MHD_NO;
		return send_owned(c, (unsigned)s->cfg.reject_status,
		                  rejection_new(s, rt, &rq->d, own, (size_t)len, has_ra ? ra : NULL,
		                                MHD_RESPMEM_MUST_COPY));
	}
	len = rejection_body(s, rt, rq);
	if (len < 0)
		return MHD_NO;
	/*
	 * The exact wait changes the body's length from one rejection to the next, and a new
	 * length means a new response.  JSON allows whitespace before the closing brace, so
	 * pad to the kept response's length there, and leave some slack when making a new one.
	 */
	if (rc->r && (size_t)len < rc->len) {
		rejection_pad(rc->body, (size_t)len, rc->len);
		len = (int)rc->len;
	}
	if (!rejection_reusable(rc, rq->route, &rq->d, reset_s, (size_t)len, has_ra, ra)) {
		int slack = len + REJECTION_SLACK < HEADERS_BODY_LEN ? REJECTION_SLACK : 0;

		rejection_pad(rc->body, (size_t)len, (size_t)(len + slack));
		len += slack;
		r = rejection_new(s, rt, &rq->d, rc->body, (size_t)len, has_ra ? ra : NULL, MHD_RESPMEM_PERSISTENT);
		if (!r)
			return MHD_NO;
		rejection_keep(rc, r, rq, reset_s, (size_t)len, has_ra, ra);
	}
	return MHD_queue_response(c, (unsigned)s->cfg.reject_status, rc->r);
}

static enum MHD_Result send_fault(struct MHD_Connection *c, int status)
{
	char body[64];
	int n = snprintf(body, sizeof(body), "injected fault: %d\n", status);

	return send_owned(c, (unsigned)status, text_response(body, (size_t)n, "text/plain"));
}

/* 400 for a bad ?status=/?delay= query: the reason as one line of text. */
static enum MHD_Result send_bad_query(struct server *s, struct MHD_Connection *c, int route, const char *why)
{
	char body[200];
	int n = snprintf(body, sizeof(body), "bad fault query: %s\n", why);

	if (n < 0 || (size_t)n >= sizeof(body))
		n = (int)sizeof(body) - 1;
	/* Decoded query text may hold control characters: keep the body one line. */
	for (int i = 0; i < n; i++)
		if ((unsigned char)body[i] < 0x20)
			body[i] = '?';
	body[n - 1] = '\n';
	stats_record(s->stats, route, MHD_HTTP_BAD_REQUEST, STATS_NONE, clock_monotonic_ns());
	return send_owned(c, MHD_HTTP_BAD_REQUEST, text_response(body, (size_t)n, "text/plain"));
}

/*
 * The faults of this request: --faults, or ?status=&delay= with --query-faults.
 * Returns 0, or -1 (reason in err) when the query does not parse.
 */
static int pick_faults(struct server *s, struct MHD_Connection *c, struct request *rq, char *err, size_t errlen)
{
	const struct faults *f = &s->cfg.faults;
	struct faults q = { 0 };

	if (s->cfg.query_faults) {
		const char *st = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "status");
		const char *dl = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "delay");

		if ((st || dl) && faults_parse_query(st, dl, &q, err, errlen) < 0)
			return -1;
		if (st || dl)
			f = &q;
	}
	if (faults_empty(f))
		memset(&rq->fault, 0, sizeof(rq->fault));
	else
		faults_pick(f, thread_rng(s), &rq->fault);
	return 0;
}

static void resume_connection(void *conn)
{
	MHD_resume_connection(conn);
}

/* What the store's answer rc (store_ops.decide) means for rq, whose decision is in rq->d. */
static void take_store_answer(struct request *rq, int rc)
{
	rq->phase = rc < 0 ? REQUEST_STORE_FAILED : REQUEST_DECIDED;
	/* A fail-open admission (STORE_UNHELD) took no slot, so it gives none back. */
	rq->holds_slot = rc == 0 && rq->d.admitted;
}

/* The store's thread is done with rq->d: wake the connection so the handler answers. */
static void on_decided(void *arg, int rc)
{
	struct request *rq = arg;

	take_store_answer(rq, rc);
	MHD_resume_connection(rq->conn);
}

/*
 * Decide once per request.  True when the connection was suspended until an
 * asynchronous store (Redis) answers; MHD calls the handler again then.
 */
static bool decide(const struct route_rt *rt, struct MHD_Connection *c, struct request *rq, uint64_t now)
{
	if (rt->stateless) {
		rt->ops->decide(&rt->params, NULL, now, 1, &rq->d);
		rq->phase = REQUEST_DECIDED;
		return false;
	}
	request_key(rt, c, rq);
	if (rt->async) {
		/* Before submit: the store's thread may answer (on_decided) before submit returns. */
		rq->phase = REQUEST_DECIDING;
		rq->conn = c;
		MHD_suspend_connection(c);
		if (rt->store->ops->submit(rt->store, rq->key, rq->keylen, now, 1, &rq->d, on_decided, rq) == 0)
			return true;
		/* Not queued (stopping): decide on this thread. */
		MHD_resume_connection(c);
	}
	take_store_answer(rq, rt->store->ops->decide(rt->store, rq->key, rq->keylen, now, 1, &rq->d));
	return false;
}

/*
 * Suspend c until deadline (monotonic ns); MHD calls the handler again once it
 * is resumed.  False (not suspended) when there is no delay queue or the
 * server is stopping.
 */
static bool suspend_until(struct server *s, struct MHD_Connection *c, uint64_t deadline)
{
	if (!s->delays || atomic_load(&s->stopping))
		return false;
	MHD_suspend_connection(c);
	/* Full or stopping: resume at once; MHD calls again and the answer goes out then. */
	if (delayq_push(s->delays, deadline, resume_connection, c) < 0)
		MHD_resume_connection(c);
	return true;
}

/* Once the decision is in: true when the answer must wait for a delay fault (connection suspended). */
static bool hold(struct server *s, struct MHD_Connection *c, struct request *rq, uint64_t now)
{
	if (rq->fault.delay_ns == 0 || !suspend_until(s, c, now + rq->fault.delay_ns))
		return false;
	rq->phase = REQUEST_HELD;
	return true;
}

/*
 * Make the close a TCP RST (linger 0).  A plain close (FIN) on a kept-alive
 * connection looks to libcurl like a stale connection, and it silently resends
 * the request on a fresh one: the client would never see the fault.
 */
static void abort_connection(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct linger lg = { 1, 0 };

	if (ci) {
		if (send(ci->connect_fd, "HTTP/1.1 200 OK\r\n", 17, MSG_NOSIGNAL) < 0)
			return;
		setsockopt(ci->connect_fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
}

static enum MHD_Result serve_limited(struct server *s, struct MHD_Connection *c, struct request *rq)
{
	const struct route_rt *rt = &s->routes[rq->route];
	uint64_t now = clock_monotonic_ns();
	enum MHD_Result ret;
	char why[160];
	int status;

	if (rq->phase == REQUEST_NEW) {
		if (pick_faults(s, c, rq, why, sizeof(why)) < 0)
			return send_bad_query(s, c, rq->route, why);
		if (rq->fault.reset) {
			stats_record(s->stats, rq->route, STATS_STATUS_RESET, STATS_NONE, now);
			abort_connection(c);
			return MHD_NO;
		}
		if (decide(rt, c, rq, now - s->epoch_ns))
			return MHD_YES;
	}
	if (rq->phase == REQUEST_DECIDED && hold(s, c, rq, now))
		return MHD_YES;
	if (rq->phase == REQUEST_STORE_FAILED) {
		stats_record(s->stats, rq->route, MHD_HTTP_SERVICE_UNAVAILABLE, STATS_NONE, now);
		return MHD_queue_response(c, MHD_HTTP_SERVICE_UNAVAILABLE, s->r_unavailable);
	}
	if (!rq->d.admitted) {
		ret = send_rejected(s, c, rt, rq);
		status = s->cfg.reject_status;
	} else if (rq->fault.status) {
		ret = send_fault(c, rq->fault.status);
		status = rq->fault.status;
	} else {
		ret = send_admitted(s, c, rq->route, rq);
		status = MHD_HTTP_OK;
	}
	stats_record(s->stats, rq->route, status, rq->d.admitted ? STATS_ADMITTED : STATS_REJECTED, now);
	return ret;
}

static size_t route_infos(struct server *s, struct stats_route_info *ri)
{
	for (size_t i = 0; i < s->nroutes; i++) {
		ri[i].prefix = s->routes[i].prefix;
		ri[i].limiter = s->routes[i].limiter;
		s->routes[i].store->ops->stats(s->routes[i].store, &ri[i].store);
	}
	return s->nroutes;
}

static int reply_text(struct server_reply *out, int status, const char *type, char *body)
{
	if (!body)
		return -1;
	out->status = status;
	out->content_type = type;
	out->body = body;
	out->body_len = strlen(body);
	return 0;
}

/* 1 (a 405 in out) unless the method is GET or HEAD; 0 to go on. */
static int get_only(const struct server_request *req, struct server_reply *out)
{
	if (strcmp(req->method, "GET") == 0 || strcmp(req->method, "HEAD") == 0)
		return 0;
	snprintf(out->headers, sizeof(out->headers), "Allow: GET, HEAD\n");
	reply_text(out, 405, "text/plain", strdup("method not allowed\n"));
	return 1;
}

/* Renders the counters of s (stats_json or stats_metrics) into a malloc'd string. */
typedef char *(*stats_render_fn)(struct stats *st, uint64_t now_ns, const struct stats_route_info *ri, size_t n);

/* GET /stats and /metrics: the counters rendered by fn, as type. */
static int reply_stats(struct server *s, const struct server_request *req, struct server_reply *out,
                       stats_render_fn fn, const char *type)
{
	struct stats_route_info ri[SERVER_MAX_ROUTES];
	size_t n;

	if (get_only(req, out))
		return 0;
	n = route_infos(s, ri);
	return reply_text(out, 200, type, fn(s->stats, clock_monotonic_ns(), ri, n));
}

static int handle_stats(struct server *s, void *ctx, const struct server_request *req, struct server_reply *out)
{
	(void)ctx;
	return reply_stats(s, req, out, stats_json, "application/json");
}

static int handle_metrics(struct server *s, void *ctx, const struct server_request *req, struct server_reply *out)
{
	(void)ctx;
	return reply_stats(s, req, out, stats_metrics, "text/plain; version=0.0.4");
}

static int handle_reset(struct server *s, void *ctx, const struct server_request *req, struct server_reply *out)
{
	(void)ctx;
	if (strcmp(req->method, "POST") != 0) {
		snprintf(out->headers, sizeof(out->headers), "Allow: POST\n");
		return reply_text(out, 405, "text/plain", strdup("use POST /reset\n"));
	}
	server_reset(s);
	return reply_text(out, 200, "application/json", strdup("{\"reset\":true}\n"));
}

static int handle_healthz(struct server *s, void *ctx, const struct server_request *req, struct server_reply *out)
{
	(void)s;
	(void)ctx;
	if (get_only(req, out))
		return 0;
	return reply_text(out, 200, "text/plain", strdup("ok\n"));
}

/* Extra "Name: value\n" lines of a reply onto the response. */
static void add_reply_headers(struct MHD_Response *r, char *lines)
{
	char *save = NULL;

	for (char *l = strtok_r(lines, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *colon = strchr(l, ':');

		if (!colon)
			continue;
		*colon = '\0';
		MHD_add_response_header(r, l, colon + 1 + (colon[1] == ' '));
	}
}

/*
 * Keep a handler's answer r and suspend the connection for delay_ns; MHD calls
 * the handler again once resumed and the kept answer goes out then.  False
 * (nothing kept) when there is no delay queue or the server is stopping.
 */
static bool hold_reply(struct server *s, struct MHD_Connection *c, struct request *rq, struct MHD_Response *r,
                       unsigned status, uint64_t delay_ns)
{
	if (!suspend_until(s, c, clock_monotonic_ns() + delay_ns))
		return false;
	rq->phase = REQUEST_HELD;
	rq->kept = r;
	rq->kept_status = status;
	return true;
}

/* The kept (delayed) answer of a special handler, now due. */
static enum MHD_Result send_kept(struct server *s, struct MHD_Connection *c, struct request *rq)
{
	struct MHD_Response *r = rq->kept;

	rq->kept = NULL;
	stats_record(s->stats, -1, (int)rq->kept_status, STATS_NONE, clock_monotonic_ns());
	return send_owned(c, rq->kept_status, r);
}

static enum MHD_Result serve_handler(struct server *s, struct MHD_Connection *c, const char *url,
                                     const char *method, struct request *rq)
{
	struct server_request req = { method, url, rq->body ? rq->body : "", rq->body_len, c,
	                              rq->keylen ? rq->key : NULL, rq->keylen };
	struct server_reply out;
	struct MHD_Response *r;

	if (rq->phase == REQUEST_HELD)
		return send_kept(s, c, rq);
	memset(&out, 0, sizeof(out));
	if (rq->handler->fn(s, rq->handler->ctx, &req, &out) < 0) {
		free(out.body);
		stats_record(s->stats, -1, STATS_STATUS_RESET, STATS_NONE, clock_monotonic_ns());
		return MHD_NO;
	}
	r = MHD_create_response_from_buffer(out.body_len, out.body ? out.body : (void *)"",
	                                    out.body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	if (!r) {
		free(out.body);
		return MHD_NO;
	}
	if (out.content_type)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, out.content_type);
	add_reply_headers(r, out.headers);
	if (out.delay_ns && hold_reply(s, c, rq, r, (unsigned)out.status, out.delay_ns))
		return MHD_YES;
	stats_record(s->stats, -1, out.status, STATS_NONE, clock_monotonic_ns());
	return send_owned(c, (unsigned)out.status, r);
}

/* Keep a handler's upload (bounded by max_body); other paths' bodies are counted and dropped. */
static void take_upload(struct server *s, struct request *rq, const char *data, size_t n)
{
	if (rq->phase == REQUEST_TOO_BIG || rq->body_len + n > s->cfg.max_body) {
		rq->phase = REQUEST_TOO_BIG;
		return;
	}
	if (rq->handler && rq->body_len + n + 1 > rq->body_cap) {
		size_t cap = (rq->body_len + n + 1) * 2;
		char *nb = realloc(rq->body, cap);

		if (!nb) {
			rq->phase = REQUEST_TOO_BIG;
			return;
		}
		rq->body = nb;
		rq->body_cap = cap;
	}
	if (rq->handler) {
		memcpy(rq->body + rq->body_len, data, n);
		rq->body[rq->body_len + n] = '\0';
	}
	rq->body_len += n;
}

/* True when Content-Length already says the body is over the limit. */
static bool announced_too_big(const struct server *s, struct MHD_Connection *c, struct request *rq)
{
	const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);

	if (cl && strtoull(cl, NULL, 10) > s->cfg.max_body)
		rq->phase = REQUEST_TOO_BIG;
	return rq->phase == REQUEST_TOO_BIG;
}

/* 413 at once, before the body is read (MHD then closes the connection). */
static enum MHD_Result refuse_body(struct server *s, struct MHD_Connection *c)
{
	stats_record(s->stats, -1, 413, STATS_NONE, clock_monotonic_ns());
	return MHD_queue_response(c, 413, s->r_too_big);
}

/* A cleared request for connection c: its slot, or a fresh allocation when it has none. */
static struct request *request_begin(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct request *rq = ci ? ci->socket_context : NULL;

	if (!rq)
		return calloc(1, sizeof(*rq));
	/* The key is written before it is read; clearing 128 bytes a request is not free. */
	memset(rq, 0, offsetof(struct request, key));
	rq->pooled = true;
	return rq;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	struct server *s = cls;
	struct request *rq = *con_cls;

	(void)version;
	if (!rq) {
		/*
		 * Draining: a new request on a kept-alive connection is not taken in
		 * (closed unanswered, uncounted), so the drain ends once the requests
		 * already taken in are answered, and every one of those is.  Counted
		 * in flight before stopping is read, both sequentially consistent:
		 * either server_drain sees this request in flight and waits for it,
		 * or this request sees the drain.  (Read first, a request could slip
		 * past a drain that had seen none in flight and be suspended on a
		 * store or a delay after MHD_stop_daemon began, which aborts.)
		 */
		atomic_fetch_add(&s->inflight, 1);
		if (atomic_load(&s->stopping)) {
			atomic_fetch_sub(&s->inflight, 1);
			return MHD_NO;
		}
		/* First call: headers only.  Answering now would force Connection: close. */
		rq = request_begin(c);
		if (!rq) {
			atomic_fetch_sub(&s->inflight, 1);
			return MHD_NO;
		}
		rq->handler = match_handler(s, url);
		if (!rq->handler)
			match_route(s, url, &rq->route);
		if (!rq->handler && rq->route >= 0 && s->cfg.limited.fn) {
			rq->handler = &s->cfg.limited;
			request_key(&s->routes[rq->route], c, rq);
		}
		*con_cls = rq;
		return announced_too_big(s, c, rq) ? refuse_body(s, c) : MHD_YES;
	}
	if (*upload_size) {
		take_upload(s, rq, upload, *upload_size);
		*upload_size = 0;
		/* A body past the limit without Content-Length: close rather than read it all. */
		if (rq->phase == REQUEST_TOO_BIG)
			stats_record(s->stats, -1, STATS_STATUS_RESET, STATS_NONE, clock_monotonic_ns());
		return rq->phase == REQUEST_TOO_BIG ? MHD_NO : MHD_YES;
	}
	if (rq->phase == REQUEST_TOO_BIG)
		return refuse_body(s, c);
	if (rq->handler)
		return serve_handler(s, c, url, method, rq);
	if (rq->route < 0)
		return MHD_queue_response(c, MHD_HTTP_NOT_FOUND, s->r_no_route);
	return serve_limited(s, c, rq);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
	struct server *s = cls;
	struct request *rq = *con_cls;

	(void)c;
	(void)toe;
	if (!rq)
		return;
	/*
	 * Fires on completion and on a client that went away: give back a concurrency
	 * slot either way, also when it went away before the answer (hold() never ran).
	 */
	if (rq->holds_slot && s->routes[rq->route].releases)
		s->routes[rq->route].store->ops->release(s->routes[rq->route].store, rq->key, rq->keylen,
		                                          clock_monotonic_ns() - s->epoch_ns);
	atomic_fetch_sub_explicit(&s->inflight, 1, memory_order_relaxed);
	if (rq->kept)
		MHD_destroy_response(rq->kept);
	free(rq->body);
	if (!rq->pooled)
		free(rq);
	*con_cls = NULL;
}

/* A connection's request slot: made when it opens, freed when it closes. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
	(void)cls;
	(void)c;
	struct request *rq = *socket_context;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		*socket_context = calloc(1, sizeof(struct request));
		return;
	}
	if (rq && rq->rej.r)
		MHD_destroy_response(rq->rej.r);
	free(rq);
	*socket_context = NULL;
}

void server_reset(struct server *s)
{
	for (size_t i = 0; i < s->nroutes; i++)
		s->routes[i].store->ops->reset(s->routes[i].store);
	stats_reset(s->stats, clock_monotonic_ns());
	if (s->cfg.on_reset)
		s->cfg.on_reset(s->cfg.on_reset_ctx);
}

void server_counts(struct server *s, uint64_t *total, uint64_t *admitted, uint64_t *rejected)
{
	*total = stats_total(s->stats);
	*admitted = *rejected = 0;
	for (size_t i = 0; i < s->nroutes; i++) {
		*admitted += stats_decisions(s->stats, (int)i, STATS_ADMITTED);
		*rejected += stats_decisions(s->stats, (int)i, STATS_REJECTED);
	}
}

static int setup_route(struct server *s, size_t i, char *err, size_t errlen)
{
	const struct config_route *cr = &s->cfg.routes[i];
	struct route_rt *r = &s->routes[i];
	char why[200];

	r->prefix = cr->prefix;
	r->prefix_len = strlen(cr->prefix);
	r->limiter = cr->limiter;
	r->ops = limiter_find(cr->limiter);
	r->params = cr->params;
	if (!r->ops || limiter_params_check(r->ops, &r->params, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "route %s: %s", cr->prefix, r->ops ? why : "unknown limiter");
		return -1;
	}
	r->layered = r->ops->layered;
	r->releases = r->ops->release != NULL;
	r->stateless = r->ops->stateless && !s->cfg.store_new;
	r->key = cr->key_set ? cr->key : s->cfg.key;
	r->key_header = cr->key_set ? cr->key_header : s->cfg.key_header;
	headers_policy(&r->params, r->layered, r->policy, sizeof(r->policy));
	if (s->cfg.store_new)
		r->store = s->cfg.store_new(s->cfg.store_ctx, r->ops, &r->params, s->cfg.max_keys, err, errlen);
	else if (!(r->store = store_memory_new(r->ops, &r->params, s->cfg.max_keys, 0)))
		snprintf(err, errlen, "route %s: out of memory for the key table", cr->prefix);
	r->async = r->store && r->store->ops->submit != NULL && !s->cfg.limited.fn;
	return r->store ? 0 : -1;
}

static void order_routes(struct server *s)
{
	for (size_t i = 0; i < s->nroutes; i++)
		s->order[i] = i;
	for (size_t i = 1; i < s->nroutes; i++)
		for (size_t j = i; j > 0 && s->routes[s->order[j]].prefix_len > s->routes[s->order[j - 1]].prefix_len; j--) {
			size_t t = s->order[j];

			s->order[j] = s->order[j - 1];
			s->order[j - 1] = t;
		}
}

static void setup_handlers(struct server *s)
{
	static const struct {
		const char *path;
		server_handler_fn fn;
	} builtin[SERVER_BUILTINS] = {
		{ "/stats", handle_stats }, { "/metrics", handle_metrics },
		{ "/reset", handle_reset }, { "/healthz", handle_healthz },
	};

	/* Handlers added by the caller come first, so they can take over a built-in path. */
	for (size_t i = 0; i < s->cfg.nhandlers; i++)
		s->handlers[s->nhandlers++] = s->cfg.handlers[i];
	for (size_t i = 0; i < SERVER_BUILTINS; i++) {
		struct server_handler *h = &s->handlers[s->nhandlers++];

		snprintf(h->path, sizeof(h->path), "%s", builtin[i].path);
		h->fn = builtin[i].fn;
		h->ctx = NULL;
	}
}

/* Fill a socket address for cfg.bind:port; false when bind is not an IPv4/IPv6 literal. */
static bool bind_address(const struct server_config *c, struct sockaddr_storage *ss, bool *v6)
{
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	*v6 = false;
	if (inet_pton(AF_INET, c->bind, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons((uint16_t)c->port);
		return true;
	}
	if (inet_pton(AF_INET6, c->bind, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)c->port);
		*v6 = true;
		return true;
	}
	return false;
}

/* True when some answer may be held: delay faults, or special handlers (their replies' delay_ns). */
static bool needs_suspend(const struct server_config *c)
{
	if (c->query_faults || c->nhandlers > 0 || c->limited.fn)
		return true;
	for (size_t i = 0; i < c->faults.n; i++)
		if (c->faults.e[i].kind == FAULT_DELAY)
			return true;
	return false;
}

/* True when some route's store answers asynchronously (its connections are suspended meanwhile). */
static bool any_async(const struct server *s)
{
	for (size_t i = 0; i < s->nroutes; i++)
		if (s->routes[i].async)
			return true;
	return false;
}

static int start_daemon(struct server *s, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	bool v6;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC | MHD_USE_TURBO;
	uint64_t tmo = headers_ceil_secs(s->cfg.connection_timeout_ns);
	const union MHD_DaemonInfo *di;

	if (!bind_address(&s->cfg, &ss, &v6)) {
		snprintf(err, errlen, "--bind '%s': not an IPv4 or IPv6 address", s->cfg.bind);
		return -1;
	}
	if (v6)
		flags |= MHD_USE_IPv6;
	if (needs_suspend(&s->cfg) || any_async(s))
		flags |= MHD_ALLOW_SUSPEND_RESUME;
	s->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s,
	                             MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
	                             MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
	                             MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
	                             MHD_OPTION_THREAD_POOL_SIZE, (unsigned)(s->cfg.threads > 1 ? s->cfg.threads : 0),
	                             MHD_OPTION_CONNECTION_LIMIT, s->cfg.max_connections,
	                             MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)(tmo ? tmo : 1),
	                             MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)SERVER_MEMORY_LIMIT,
	                             MHD_OPTION_CONNECTION_MEMORY_INCREMENT, (size_t)SERVER_MEMORY_INCREMENT,
	                             MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u,
	                             MHD_OPTION_END);
	if (!s->daemon) {
		snprintf(err, errlen, "cannot listen on %s:%u (address in use or not available)", s->cfg.bind,
		         s->cfg.port);
		return -1;
	}
	di = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
	s->port = di ? (int)di->port : (int)s->cfg.port;
	return 0;
}

/* A text/plain response over a constant body; NULL when out of memory. */
static struct MHD_Response *constant_response(const char *body, size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_PERSISTENT);

	if (r)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain");
	return r;
}

static int build_constants(struct server *s)
{
	s->r_ok = constant_response(OK_BODY, sizeof(OK_BODY) - 1);
	s->r_too_big = constant_response(TOO_BIG_BODY, sizeof(TOO_BIG_BODY) - 1);
	s->r_unavailable = constant_response(UNAVAILABLE_BODY, sizeof(UNAVAILABLE_BODY) - 1);
	s->r_no_route = constant_response(NO_ROUTE_BODY, sizeof(NO_ROUTE_BODY) - 1);
	if (!s->r_ok || !s->r_too_big || !s->r_unavailable || !s->r_no_route)
		return -1;
	MHD_add_response_header(s->r_too_big, MHD_HTTP_HEADER_CONNECTION, "close");
	return 0;
}

static void free_parts(struct server *s)
{
	for (size_t i = 0; i < SERVER_CACHE_SLOTS; i++)
		if (s->cache[i].r)
			MHD_destroy_response(s->cache[i].r);
	for (size_t i = 0; i < s->nroutes; i++)
		if (s->routes[i].store)
			s->routes[i].store->ops->free(s->routes[i].store);
	if (s->r_ok)
		MHD_destroy_response(s->r_ok);
	if (s->r_too_big)
		MHD_destroy_response(s->r_too_big);
	if (s->r_unavailable)
		MHD_destroy_response(s->r_unavailable);
	if (s->r_no_route)
		MHD_destroy_response(s->r_no_route);
	stats_free(s->stats);
	free(s);
}

struct server *server_start(const struct server_config *c, char *err, size_t errlen)
{
	struct server *s = aligned_alloc(64, (sizeof(*s) + 63) / 64 * 64);

	if (s)
		memset(s, 0, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->cfg = *c;
	s->gen = atomic_fetch_add(&server_generation, 1) + 1;
	s->epoch_ns = clock_monotonic_ns();
	for (s->nroutes = 0; s->nroutes < c->nroutes; s->nroutes++)
		if (setup_route(s, s->nroutes, err, errlen) < 0)
			goto fail;
	order_routes(s);
	setup_handlers(s);
	s->stats = stats_new(s->nroutes, s->epoch_ns);
	if (!s->stats || build_constants(s) < 0) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (needs_suspend(c) && !(s->delays = delayq_new(c->max_connections))) {
		snprintf(err, errlen, "cannot start the delay timer thread");
		goto fail;
	}
	if (start_daemon(s, err, errlen) < 0)
		goto stop_delays;
	return s;
stop_delays:
	delayq_free(s->delays);
fail:
	free_parts(s);
	return NULL;
}

void server_drain(struct server *s)
{
	uint64_t deadline;
	MHD_socket fd;

	if (!s || !s->daemon)
		return;
	atomic_store(&s->stopping, true);
	/*
	 * Known hazard: libmicrohttpd 0.9.75's quiesce can abort the process when
	 * a pool thread drops the listening socket from its epoll set first
	 * ("Failed to remove listen FD from epoll set", daemon.c:5531): once in 12
	 * runs of the redis suite here.  bench/README ("Server, fifth pass") says
	 * what was tried instead and why it did not land.
	 */
	fd = MHD_quiesce_daemon(s->daemon);
	/* Held answers go out now rather than after their delay. */
	delayq_stop(s->delays);
	deadline = clock_monotonic_ns() + 5 * NS_PER_SEC;
	while (atomic_load(&s->inflight) > 0 && clock_monotonic_ns() < deadline) {
		struct timespec ts = { 0, 5 * 1000000L };

		nanosleep(&ts, NULL);
	}
	/* No connection may stay suspended on a store past this: MHD_stop_daemon would abort. */
	for (size_t i = 0; i < s->nroutes; i++)
		if (s->routes[i].store->ops->quiesce)
			s->routes[i].store->ops->quiesce(s->routes[i].store);
	MHD_stop_daemon(s->daemon);
	s->daemon = NULL;
	if (fd != MHD_INVALID_SOCKET)
		close(fd);
}

void server_stop(struct server *s)
{
	if (!s)
		return;
	server_drain(s);
	delayq_free(s->delays);
	free_parts(s);
}
