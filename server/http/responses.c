/* The answers of limited paths, the constant responses, and the caches that reuse them. */
#include "server/http/responses.h"

#include <stdio.h>
#include <string.h>

#include "common/clock.h"

/* Spaces a new rejection body gets before its closing brace, so the next, longer wait still fits. */
#define REJECTION_SLACK 16

static const char OK_BODY[] = "ok\n";
static const char TOO_BIG_BODY[] = "request body too large\n";
static const char UNAVAILABLE_BODY[] = "limiter store unavailable\n";
static const char NO_ROUTE_BODY[] = "no route\n";
static const char BAD_PATH_BODY[] = "bad request path: a NUL, or a %% without two hex digits\n";
static const char OVERLOADED_BODY[] = "overloaded: the backend shed this request\n";

static _Thread_local uint64_t tl_slot_gen;
static _Thread_local struct responses_slot *tl_slot;

enum MHD_Result responses_send(struct MHD_Connection *c, unsigned status, struct MHD_Response *r)
{
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* A response over a copy of body, with its Content-Type. */
static struct MHD_Response *text_response(const char *body, size_t len, const char *type)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);

	if (r)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	return r;
}

/* A text/plain response over a constant body; NULL when out of memory. */
static struct MHD_Response *constant_response(const char *body, size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_PERSISTENT);

	if (r)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain");
	return r;
}

int responses_init(struct responses *rs, const struct server_config *cfg, uint64_t gen)
{
	rs->headers = cfg->headers;
	rs->retry_after = cfg->headers & HEADERS_SILENT ? HEADERS_RA_NONE : cfg->retry_after;
	rs->reject_status = cfg->reject_status;
	rs->gen = gen;
	rs->ok = constant_response(OK_BODY, sizeof(OK_BODY) - 1);
	rs->too_big = constant_response(TOO_BIG_BODY, sizeof(TOO_BIG_BODY) - 1);
	rs->unavailable = constant_response(UNAVAILABLE_BODY, sizeof(UNAVAILABLE_BODY) - 1);
	rs->no_route = constant_response(NO_ROUTE_BODY, sizeof(NO_ROUTE_BODY) - 1);
	rs->bad_path = constant_response(BAD_PATH_BODY, sizeof(BAD_PATH_BODY) - 1);
	rs->overloaded = constant_response(OVERLOADED_BODY, sizeof(OVERLOADED_BODY) - 1);
	if (!rs->ok || !rs->too_big || !rs->unavailable || !rs->no_route || !rs->bad_path || !rs->overloaded)
		return -1;
	MHD_add_response_header(rs->bad_path, MHD_HTTP_HEADER_CONNECTION, "close");
	MHD_add_response_header(rs->too_big, MHD_HTTP_HEADER_CONNECTION, "close");
	return 0;
}

void responses_destroy(struct responses *rs)
{
	struct MHD_Response *constants[] = { rs->ok, rs->too_big, rs->unavailable, rs->no_route, rs->bad_path,
	                                     rs->overloaded };

	for (size_t i = 0; i < RESPONSES_CACHE_SLOTS; i++)
		if (rs->slots[i].r)
			MHD_destroy_response(rs->slots[i].r);
	for (size_t i = 0; i < sizeof(constants) / sizeof(constants[0]); i++)
		if (constants[i])
			MHD_destroy_response(constants[i]);
}

void responses_rejection_destroy(struct responses_rejection *rj)
{
	if (rj->r)
		MHD_destroy_response(rj->r);
	rj->r = NULL;
}

/* The wall clock for an epoch reset (github), else 0: the clock is read only when it is said. */
static uint64_t fields_wall_ns(const struct responses *rs)
{
	return rs->headers & HEADERS_GITHUB ? clock_wall_ns() : 0;
}

/* d's X-RateLimit-Reset at wall_ns when github is said, else 0: a kept response's key. */
static uint64_t github_reset(const struct responses *rs, const struct limiter_decision *d, uint64_t wall_ns)
{
	return rs->headers & HEADERS_GITHUB ? headers_github_reset(d, wall_ns) : 0;
}

static void add_ratelimit(const struct responses *rs, const struct route *rt, const struct limiter_decision *d,
                          uint64_t wall_ns, struct MHD_Response *r)
{
	struct headers_field f[HEADERS_MAX_FIELDS];
	/* a limiter that admits everything (none) has no quota to tell: its 0 of 0 would stop a polite client */
	size_t n = rt->ops->stateless ? 0 : headers_fields(rs->headers, &rt->params, rt->ops->layered, rt->policy, d,
	                                                       wall_ns, f);

	for (size_t i = 0; i < n; i++)
		MHD_add_response_header(r, f[i].name, f[i].value);
}

void responses_add_ratelimit(const struct responses *rs, const struct route *rt, const struct limiter_decision *d,
                             struct MHD_Response *r)
{
	add_ratelimit(rs, rt, d, fields_wall_ns(rs), r);
}

/* This thread's admitted-response slot for rs, or NULL past RESPONSES_CACHE_SLOTS threads. */
static struct responses_slot *thread_slot(struct responses *rs)
{
	if (tl_slot_gen != rs->gen) {
		unsigned i = atomic_fetch_add(&rs->next_slot, 1);

		tl_slot = i < RESPONSES_CACHE_SLOTS ? &rs->slots[i] : NULL;
		tl_slot_gen = rs->gen;
	}
	return tl_slot;
}

enum MHD_Result responses_admitted(struct responses *rs, struct MHD_Connection *c, const struct route *rt,
                                   int route, const struct limiter_decision *d)
{
	uint64_t reset_s = headers_reset_secs(d), next_s = headers_next_secs(d), wall_ns, gh;
	struct responses_slot *sl;
	struct MHD_Response *r;

	if ((rs->headers & ~(unsigned)HEADERS_SILENT) == HEADERS_NONE || rt->ops->stateless)
		return MHD_queue_response(c, MHD_HTTP_OK, rs->ok);
	wall_ns = fields_wall_ns(rs);
	gh = github_reset(rs, d, wall_ns);
	sl = thread_slot(rs);
	if (sl && sl->r && sl->route == route && sl->layer == d->layer && sl->remaining == d->remaining &&
	    sl->reset_s == reset_s && sl->next_s == next_s && sl->github_reset == gh)
		return MHD_queue_response(c, MHD_HTTP_OK, sl->r);
	r = MHD_create_response_from_buffer(sizeof(OK_BODY) - 1, (void *)OK_BODY, MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain");
	add_ratelimit(rs, rt, d, wall_ns, r);
	if (!sl)
		return responses_send(c, MHD_HTTP_OK, r);
	if (sl->r)
		MHD_destroy_response(sl->r);
	*sl = (struct responses_slot){ .r = r, .route = route, .layer = d->layer, .remaining = d->remaining,
	                               .reset_s = reset_s, .next_s = next_s, .github_reset = gh };
	return MHD_queue_response(c, MHD_HTTP_OK, r);
}

/* Retry-After of a rejection into ra; false when it is left out. */
static bool rejection_retry_after(const struct responses *rs, const struct responses_verdict *v, char *ra,
                                  size_t len)
{
	/* The wall clock is read only for the HTTP-date form. */
	return !v->no_retry_after &&
	       headers_retry_after(rs->retry_after, v->d->wait_ns,
	                           rs->retry_after == HEADERS_RA_HTTPDATE ? clock_wall_ns() : 0, ra, len);
}

uint64_t responses_announced_ns(const struct responses *rs, const struct responses_verdict *v, uint64_t wall_ns)
{
	if (v->no_retry_after || rs->retry_after == HEADERS_RA_NONE)
		return 0;
	/* The date names the first whole second at or after the wait's end. */
	return rs->retry_after == HEADERS_RA_HTTPDATE ? headers_retry_after_date(v->d->wait_ns, wall_ns) * NS_PER_SEC - wall_ns
	                                              : headers_retry_after_secs(v->d->wait_ns) * NS_PER_SEC;
}

/* A rejection response over body (len bytes, kept or copied per mode), with its headers. */
static struct MHD_Response *rejection_new(const struct responses *rs, const struct route *rt,
                                          const struct limiter_decision *d, char *body, size_t len,
                                          const char *ra, uint64_t wall_ns, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);

	if (!r)
		return NULL;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/problem+json");
	if (ra)
		MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, ra);
	add_ratelimit(rs, rt, d, wall_ns, r);
	return r;
}

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
static bool rejection_head_kept(const struct responses_rejection *rj, int route, const struct limiter_decision *d)
{
	return rj->r && rj->route == route && rj->layer == d->layer && rj->limit == d->limit &&
	       rj->remaining == d->remaining && rj->window_ns == d->window_ns;
}

/* The kept response can go out again: same head, same headers, same body length. */
static bool rejection_reusable(const struct responses_rejection *rj, int route, const struct limiter_decision *d,
                               uint64_t reset_s, uint64_t gh, size_t len, bool has_ra, const char *ra)
{
	/* An epoch reset (github) changes with the wall clock: compare it too. */
	return rejection_head_kept(rj, route, d) && rj->reset_s == reset_s && rj->github_reset == gh && rj->len == len &&
	       rj->has_ra == has_ra && (!has_ra || strcmp(rj->ra, ra) == 0);
}

/* Remember the connection's new rejection response and what it says. */
static void rejection_keep(struct responses_rejection *rj, struct MHD_Response *r, const struct responses_verdict *v,
                           uint64_t reset_s, size_t len, bool has_ra, const char *ra)
{
	if (rj->r)
		MHD_destroy_response(rj->r);
	rj->r = r;
	rj->route = v->route;
	rj->layer = v->d->layer;
	rj->limit = v->d->limit;
	rj->remaining = v->d->remaining;
	rj->window_ns = v->d->window_ns;
	rj->reset_s = reset_s;
	rj->len = len;
	rj->has_ra = has_ra;
	/* ra is at most an HTTP-date (29 bytes); both buffers are 40. */
	memcpy(rj->ra, has_ra ? ra : "", has_ra ? strlen(ra) + 1 : 1);
}

/* The body into rj->body: only the tail when the kept head fits, else all of it.  Returns its length or -1. */
static int rejection_body(const struct responses *rs, const struct route *rt, const struct responses_verdict *v)
{
	struct responses_rejection *rj = v->kept;
	int head, tail;

	if (rejection_head_kept(rj, v->route, v->d)) {
		tail = headers_problem_tail(v->d, rj->body + rj->head_len, HEADERS_BODY_LEN - rj->head_len);
		return tail < 0 ? -1 : (int)rj->head_len + tail;
	}
	head = headers_problem_head(rs->reject_status, rt->limiter, &rt->params, rt->ops->layered, v->d, rj->body,
	                            HEADERS_BODY_LEN);
	tail = head < 0 ? -1 : headers_problem_tail(v->d, rj->body + head, HEADERS_BODY_LEN - (size_t)head);
	if (tail < 0)
		return -1;
	rj->head_len = (size_t)head;
	return head + tail;
}

/* A rejection of a request that is not its connection's slot: a body of its own, copied by MHD. */
static enum MHD_Result rejected_alone(struct responses *rs, struct MHD_Connection *c, const struct route *rt,
                                      const struct responses_verdict *v, const char *ra)
{
	char own[HEADERS_BODY_LEN];
	int len = headers_problem_body(rs->reject_status, rt->limiter, &rt->params, rt->ops->layered, v->d, own,
	                               HEADERS_BODY_LEN);

	if (len < 0)
		return MHD_NO;
	return responses_send(c, (unsigned)rs->reject_status,
	                      rejection_new(rs, rt, v->d, own, (size_t)len, ra, fields_wall_ns(rs),
	                                    MHD_RESPMEM_MUST_COPY));
}

enum MHD_Result responses_rejected(struct responses *rs, struct MHD_Connection *c, const struct route *rt,
                                   const struct responses_verdict *v)
{
	char ra[40];
	bool has_ra = rejection_retry_after(rs, v, ra, sizeof(ra));
	uint64_t wall_ns = fields_wall_ns(rs), gh = github_reset(rs, v->d, wall_ns);
	uint64_t reset_s = headers_reset_secs(v->d);
	struct responses_rejection *rj = v->kept;
	struct MHD_Response *r;
	int len;

	/* Only a connection's kept buffer outlives the answer. */
	if (!rj)
		return rejected_alone(rs, c, rt, v, has_ra ? ra : NULL);
	len = rejection_body(rs, rt, v);
	if (len < 0)
		return MHD_NO;
	/*
	 * The exact wait changes the body's length from one rejection to the next, and a new
	 * length means a new response.  JSON allows whitespace before the closing brace, so
	 * pad to the kept response's length there, and leave some slack when making a new one.
	 */
	if (rj->r && (size_t)len < rj->len) {
		rejection_pad(rj->body, (size_t)len, rj->len);
		len = (int)rj->len;
	}
	if (!rejection_reusable(rj, v->route, v->d, reset_s, gh, (size_t)len, has_ra, ra)) {
		int slack = len + REJECTION_SLACK < HEADERS_BODY_LEN ? REJECTION_SLACK : 0;

		rejection_pad(rj->body, (size_t)len, (size_t)(len + slack));
		len += slack;
		r = rejection_new(rs, rt, v->d, rj->body, (size_t)len, has_ra ? ra : NULL, wall_ns,
		                  MHD_RESPMEM_PERSISTENT);
		if (!r)
			return MHD_NO;
		rejection_keep(rj, r, v, reset_s, (size_t)len, has_ra, ra);
		rj->github_reset = gh;
	}
	return MHD_queue_response(c, (unsigned)rs->reject_status, rj->r);
}

enum MHD_Result responses_fault(struct MHD_Connection *c, int status)
{
	char body[64];
	int n = snprintf(body, sizeof(body), "injected fault: %d\n", status);

	return responses_send(c, (unsigned)status, text_response(body, (size_t)n, "text/plain"));
}

enum MHD_Result responses_bad_query(struct MHD_Connection *c, const char *why)
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
	return responses_send(c, MHD_HTTP_BAD_REQUEST, text_response(body, (size_t)n, "text/plain"));
}

const char *responses_draining_raw(size_t *len)
{
	static const char raw[] = "HTTP/1.1 503 Service Unavailable\r\n"
	                          "Connection: close\r\n"
	                          "Retry-After: 1\r\n"
	                          "Content-Type: text/plain\r\n"
	                          "Content-Length: 25\r\n"
	                          "\r\n"
	                          "server is shutting down\r\n";

	*len = sizeof(raw) - 1;
	return raw;
}

const char *responses_body_late_raw(size_t *len)
{
	static const char raw[] = "HTTP/1.1 408 Request Timeout\r\n"
	                          "Connection: close\r\n"
	                          "Content-Type: text/plain\r\n"
	                          "Content-Length: 40\r\n"
	                          "\r\n"
	                          "request body not in within its timeout\r\n";

	*len = sizeof(raw) - 1;
	return raw;
}

enum MHD_Result responses_bad_framing(struct MHD_Connection *c, const char *why)
{
	char body[160];
	int n = snprintf(body, sizeof(body), "bad framing: %s\n", why);
	struct MHD_Response *r = text_response(body, n > 0 && (size_t)n < sizeof(body) ? (size_t)n : 0, "text/plain");

	if (r)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	return responses_send(c, MHD_HTTP_BAD_REQUEST, r);
}
