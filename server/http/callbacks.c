/* The MHD callbacks of one request and one connection: its slot, judge the head, route it, take the upload, end it. */
#include "server/http/callbacks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/clock.h"
#include "server/http/daemon.h"
#include "server/http/framing.h"
#include "server/http/limited.h"
#include "server/http/path.h"
#include "server/http/proxied.h"
#include "server/http/request.h"

/* A connection's request slot, allocated when it opens; NULL when memory is short. */
static struct request *request_slot_new(void)
{
	return calloc(1, sizeof(struct request));
}

/* Free a connection's slot, with its kept rejection, when it closes.  NULL is a no-op. */
static void request_slot_free(struct request *rq)
{
	if (rq)
		responses_rejection_destroy(&rq->rej);
	free(rq);
}

/* A cleared request for connection c: its slot, or a fresh allocation; NULL when out of memory. */
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

/* Free what rq holds (its upload, a kept answer), and rq itself when it is not its connection's slot. */
static void request_end(struct request *rq)
{
	if (rq->kept)
		MHD_destroy_response(rq->kept);
	free(rq->raw);
	free(rq->body);
	if (!rq->pooled)
		free(rq);
}

/*
 * Take n bytes of upload: kept when keep (a special handler's, or one the
 * proxy forwards), only counted otherwise.  Past max_body in all (or when memory is short) the phase becomes
 * REQUEST_TOO_BIG and later bytes are dropped.
 */
static void request_take_upload(struct request *rq, bool keep, size_t max_body, const char *data, size_t n)
{
	if (rq->phase == REQUEST_TOO_BIG || rq->body_len + n > max_body) {
		rq->phase = REQUEST_TOO_BIG;
		return;
	}
	if (keep && rq->body_len + n + 1 > rq->body_cap) {
		/* doubled, but never past what --max-body lets in */
		size_t cap = (rq->body_len + n + 1) * 2 < max_body + 1 ? (rq->body_len + n + 1) * 2 : max_body + 1;
		char *nb = realloc(rq->body, cap);

		if (!nb) {
			rq->phase = REQUEST_TOO_BIG;
			return;
		}
		rq->body = nb;
		rq->body_cap = cap;
	}
	if (keep) {
		memcpy(rq->body + rq->body_len, data, n);
		rq->body[rq->body_len + n] = '\0';
	}
	rq->body_len += n;
}

static enum MHD_Result framing_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	(void)kind;
	framing_add(cls, key, value);
	return MHD_YES;
}

/* What a request's head alone decides: go on, or one of the answers sent before any body. */
enum head_verdict {
	HEAD_OK,
	HEAD_SMUGGLING,    /* its body's framing is ambiguous: 400, close (framing.h) */
	HEAD_TOO_BIG,      /* Content-Length is over --max-body: 413 */
	HEAD_BAD_PATH,     /* a path path_normalize refuses: 400 */
};

/*
 * Judge the head of a request for url (HTTP version `version`); its path in
 * normal form into path (len bytes; "" for a target that is not a path),
 * whether a body follows into *body, a smuggling refusal's reason into *why.
 */
static enum head_verdict judge_head(const struct server *s, struct MHD_Connection *c, const char *url,
                                    const char *version, char path[SERVER_PATH_CAP], size_t *len, bool *body,
                                    const char **why)
{
	struct framing f;

	framing_init(&f);
	MHD_get_connection_values(c, MHD_HEADER_KIND, framing_header, &f);
	*body = framing_has_body(&f);
	*len = 0;
	path[0] = '\0';
	if ((*why = framing_refusal(&f, version && strcmp(version, MHD_HTTP_VERSION_1_0) == 0)))
		return HEAD_SMUGGLING;
	if (f.length > s->cfg.max_body)
		return HEAD_TOO_BIG;
	if (url[0] == '/' && path_normalize(url, strlen(url), path, SERVER_PATH_CAP, len) < 0)
		return HEAD_BAD_PATH;
	return HEAD_OK;
}

/* 413 at once, before the body is read (MHD then closes the connection). */
static enum MHD_Result refuse_body(struct server *s, struct MHD_Connection *c)
{
	stats_record(s->stats, -1, 413, STATS_NONE, clock_monotonic_ns());
	return MHD_queue_response(c, 413, s->resp.too_big);
}

/*
 * The head is in: tell the connection table, which may have closed the
 * connection for a late head already (false: close it unanswered).  A body
 * still to come can be answered by the drain.
 */
static bool head_in(struct request *rq, bool answer_now, bool body)
{
	if (!rq->pooled)
		return true;
	rq->body_pending = !answer_now && body;
	/* the clock only for a body's deadline: a GET's path reads none more */
	return conns_head_done(&rq->tracked, rq->body_pending, rq->body_pending ? clock_monotonic_ns() : 0);
}

/* The answer a head gets before its body (judge_head's verdict v), counted. */
static enum MHD_Result answer_head(struct server *s, struct MHD_Connection *c, struct request *rq,
                                   enum head_verdict v, const char *why)
{
	uint64_t now = clock_monotonic_ns();

	if (v == HEAD_TOO_BIG) {
		rq->phase = REQUEST_TOO_BIG;
		return refuse_body(s, c);
	}
	stats_record(s->stats, -1, MHD_HTTP_BAD_REQUEST, STATS_NONE, now);
	if (v == HEAD_BAD_PATH)
		return MHD_queue_response(c, MHD_HTTP_BAD_REQUEST, s->resp.bad_path);
	stats_refused(s->stats, STATS_REFUSED_SMUGGLING);
	return responses_bad_framing(c, why);
}

/*
 * Match rq's handler or route on its normalised path.  A target that is not
 * a path (absolute-form "http://...", CONNECT's "host:port", OPTIONS's "*")
 * matches nothing: 404.
 */
static void match(struct server *s, struct MHD_Connection *c, const char *path, size_t len, struct request *rq)
{
	rq->route = -1;
	if (path[0] != '/')
		return;
	rq->handler = hooks_match(&s->hooks, path);
	rq->route = rq->handler ? -1 : routes_match(&s->routes, path, len);
	if (rq->route >= 0 && s->hooks.limited) {
		rq->handler = s->hooks.limited;
		rq->keylen = routes_client_key(&s->routes.r[rq->route], c, rq->key);
	}
}

/*
 * The first call of a request (headers only: answering now would force
 * Connection: close): take it in, match its handler or route.  rq is the
 * request the URI callback began (NULL when memory was short then).
 */
static enum MHD_Result request_start(struct server *s, struct MHD_Connection *c, const char *url,
                                     const char *version, void **con_cls)
{
	struct request *rq = *con_cls;
	char path[SERVER_PATH_CAP];
	const char *why;
	enum head_verdict v;
	size_t len;
	bool body;

	/*
	 * Draining: a new request on a kept-alive connection is not taken in
	 * (closed unanswered, uncounted), so the drain ends once the requests
	 * already taken in are answered, and every one of those is.
	 */
	if (!lifecycle_begin(&s->life))
		return MHD_NO;
	if (!rq && !(rq = request_begin(c))) {
		lifecycle_end(&s->life);
		return MHD_NO;
	}
	*con_cls = rq;
	rq->phase = REQUEST_NEW;
	v = judge_head(s, c, url, version, path, &len, &body, &why);
	if (!head_in(rq, v != HEAD_OK, body))
		return MHD_NO;
	if (v != HEAD_OK)
		return answer_head(s, c, rq, v, why);
	match(s, c, url[0] == '/' ? path : url, len, rq);
	return MHD_YES;
}

enum MHD_Result callbacks_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	struct server *s = cls;
	struct request *rq = *con_cls;

	if (!rq || rq->phase == REQUEST_LINE)
		return request_start(s, c, url, version, con_cls);
	if (*upload_size) {
		request_take_upload(rq, rq->handler || proxied_wants(s), s->cfg.max_body, upload, *upload_size);
		*upload_size = 0;
		if (rq->phase != REQUEST_TOO_BIG)
			return MHD_YES;
		/* A body past the limit without Content-Length: close rather than read it all. */
		stats_record(s->stats, -1, STATS_STATUS_RESET, STATS_NONE, clock_monotonic_ns());
		return MHD_NO;
	}
	/* The body is in; the drain may have answered it first (503). */
	if (rq->body_pending) {
		rq->body_pending = false;
		if (!conns_body_done(&rq->tracked))
			return MHD_NO;
	}
	if (rq->phase == REQUEST_TOO_BIG)
		return refuse_body(s, c);
	if (rq->handler)
		return hooks_serve(s, c, url, method, rq);
	if (rq->route < 0) {
		stats_record(s->stats, -1, MHD_HTTP_NOT_FOUND, STATS_NONE, clock_monotonic_ns());
		return MHD_queue_response(c, MHD_HTTP_NOT_FOUND, s->resp.no_route);
	}
	rq->method = method;
	return limited_serve(s, c, rq);
}

/*
 * MHD_OPTION_URI_LOG_CALLBACK, once the request line is read: the request
 * begins here (MHD hands the result to the access handler and to
 * callbacks_completed), and the target is noted as sent, for callbacks_unescape.
 */
void *callbacks_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
	struct request *rq = request_begin(c);

	if (rq) {
		rq->phase = REQUEST_LINE;
		rq->raw_uri = uri;
		/* The proxy forwards the target as sent; MHD cuts and decodes its query in place later. */
		if (proxied_wants(cls))
			rq->target = strdup(uri);
	}
	return rq;
}

/*
 * MHD_OPTION_UNESCAPE_CALLBACK: query arguments are decoded as MHD's own
 * callback does; the path (the string callbacks_uri noted, its query already cut
 * off) is left as sent, so path_normalize sees "%2F" apart from "/".
 */
size_t callbacks_unescape(void *cls, struct MHD_Connection *c, char *s)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	const struct request *rq = ci ? ci->socket_context : NULL;

	(void)cls;
	if (rq && rq->raw_uri == s)
		return strlen(s);
	return MHD_http_unescape(s);
}

/*
 * An answer libmicrohttpd sent itself after the request line (a bad,
 * oversized or missing header, Content-Length or chunk: 400, 413, 431,
 * 500): the access handler has not answered this request (it is still at
 * its line, or its body is still arriving), yet a response is queued.  Its
 * status is counted here, except 400, which the log counts (daemon.c): it
 * cannot tell those from the 400 libmicrohttpd sends before the line.
 */
static void count_own_answer(struct server *s, struct MHD_Connection *c, const struct request *rq)
{
	const union MHD_ConnectionInfo *ci;

	if (rq->phase != REQUEST_LINE && !rq->body_pending)
		return;
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_HTTP_STATUS);
	if (ci && ci->http_status != MHD_HTTP_BAD_REQUEST)
		stats_record(s->stats, -1, (int)ci->http_status, STATS_NONE, clock_monotonic_ns());
}

void callbacks_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
	struct server *s = cls;
	struct request *rq = *con_cls;

	if (!rq)
		return;
	count_own_answer(s, c, rq);
	if (rq->notify)
		rq->handler->done(rq->handler->ctx, rq->token, toe == MHD_REQUEST_TERMINATED_COMPLETED_OK,
		                  clock_monotonic_ns());
	/*
	 * Fires on completion and on a client that went away: give back a concurrency
	 * slot either way, also when it went away before the answer.  A request still
	 * at its line never reached the access handler (MHD answered it, or the client
	 * left): it was never in flight.
	 */
	limited_end(s, rq);
	/* Only a proxying server gives a request an upstream call or a kept target (callbacks_uri). */
	if (proxied_wants(s))
		proxied_end(rq);
	if (rq->phase != REQUEST_LINE)
		lifecycle_end(&s->life);
	if (rq->pooled && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		conns_wait_head(&rq->tracked, clock_monotonic_ns());
	request_end(rq);
	*con_cls = NULL;
}

/* A connection opens (its slot, its entry in the table) or closes. */
void callbacks_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
	struct server *s = cls;
	struct request *rq = *socket_context;
	const union MHD_ConnectionInfo *fd, *peer;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		if (!(rq = request_slot_new()))
			return;
		fd = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		peer = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		conns_open(s->conns, &rq->tracked, peer ? peer->client_addr : NULL, fd ? fd->connect_fd : -1,
		           clock_monotonic_ns());
		*socket_context = rq;
		return;
	}
	if (rq)
		conns_close(s->conns, &rq->tracked);
	request_slot_free(rq);
	*socket_context = NULL;
}

/* The sweep's actions (conns.h), with the table locked: the socket is still this connection's. */
void callbacks_close_late(void *ctx, int fd)
{
	struct server *s = ctx;

	/* Counted before the close: a client that sees its connection end finds it in /stats. */
	stats_refused(s->stats, STATS_REFUSED_HEADER_TIMEOUT);
	shutdown(fd, SHUT_RDWR);
}

/*
 * Answer a request whose body is still arriving with raw (status, counted
 * as refused for r) and close.  Counted before the answer goes: a client
 * that has it finds it in /stats.  Only the request's head and part of its
 * body came in: nothing of ours is on the wire yet.
 */
static void answer_raw(struct server *s, int fd, int status, enum stats_refusal r, const char *raw, size_t len)
{
	stats_record(s->stats, -1, status, STATS_NONE, clock_monotonic_ns());
	stats_refused(s->stats, r);
	send(fd, raw, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	shutdown(fd, SHUT_RDWR);
}

void callbacks_answer_body_late(void *ctx, int fd)
{
	size_t len;
	const char *raw = responses_body_late_raw(&len);

	answer_raw(ctx, fd, MHD_HTTP_REQUEST_TIMEOUT, STATS_REFUSED_BODY_TIMEOUT, raw, len);
}

void callbacks_answer_drained(void *ctx, int fd)
{
	size_t len;
	const char *raw = responses_draining_raw(&len);

	answer_raw(ctx, fd, MHD_HTTP_SERVICE_UNAVAILABLE, STATS_REFUSED_DRAINING, raw, len);
}
