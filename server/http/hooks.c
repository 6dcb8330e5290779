/* Special handlers: the table, the reset hooks, and a handler's reply as a response. */
#include "server/http/hooks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/clock.h"
#include "server/http/admin.h"
#include "server/http/callbacks.h"
#include "server/http/path.h"
#include "server/http/daemon.h"
#include "server/http/proxied.h"
#include "server/http/request.h"
#include "server/http/responses.h"

const char *server_request_header(const struct server_request *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

const char *server_request_query(const struct server_request *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

bool server_admin_allowed(struct server *srv, const struct server_request *req, char *why, size_t len)
{
	struct admin_request a = {
		req->client, server_request_header(req, MHD_HTTP_HEADER_AUTHORIZATION),
		server_request_header(req, MHD_HTTP_HEADER_CONTENT_TYPE), server_request_header(req, "Origin"),
		server_request_header(req, MHD_HTTP_HEADER_HOST),
	};
	const char *no = admin_refusal(&a, srv->cfg.admin_token);

	if (no)
		snprintf(why, len, "%s", no);
	return no == NULL;
}

bool server_admin_refused(struct server *srv, const struct server_request *req, struct server_reply *out)
{
	char why[160], body[320];
	int n;

	if (server_admin_allowed(srv, req, why, sizeof(why)))
		return false;
	n = snprintf(body, sizeof(body), "{\"type\":\"about:blank\",\"title\":\"Forbidden\",\"status\":403,"
	             "\"detail\":\"admin endpoint refused: %s\"}\n", why);
	stats_refused(srv->stats, STATS_REFUSED_ADMIN);
	out->status = 403;
	out->content_type = "application/problem+json";
	out->body = strdup(body);
	out->body_len = out->body && n > 0 ? strlen(out->body) : 0;
	return true;
}

void hooks_setup(struct hooks *hk, const struct server_config *cfg, const struct server_handler *plugin, size_t n)
{
	/* The config's handlers come first, so they can take over a built-in path. */
	for (size_t i = 0; i < cfg->nhandlers; i++)
		hk->h[hk->n++] = cfg->handlers[i];
	for (size_t i = 0; i < n && i < SERVER_MAX_PLUGIN_HANDLERS; i++)
		hk->h[hk->n++] = plugin[i];
	hk->limited = cfg->limited.fn ? &cfg->limited : NULL;
}

int server_config_add_stateful_handler(struct server_config *c, const char *path, server_handler_fn fn,
                                       server_reset_fn reset, void *ctx)
{
	if (server_config_add_handler(c, path, fn, ctx) < 0)
		return -1;
	c->handlers[c->nhandlers - 1].reset = reset;
	return 0;
}

const struct server_handler *hooks_match(const struct hooks *hk, const char *url)
{
	for (size_t i = 0; i < hk->n; i++)
		if (strcmp(url, hk->h[i].path) == 0)
			return &hk->h[i];
	return NULL;
}

void hooks_reset(const struct hooks *hk)
{
	for (size_t i = 0; i < hk->n; i++)
		if (hk->h[i].reset)
			hk->h[i].reset(hk->h[i].ctx);
	if (hk->limited && hk->limited->reset)
		hk->limited->reset(hk->limited->ctx);
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
 * Keep a handler's answer r (or, r NULL, its scripted failure or its pass to the upstream, by `kind`) and
 * suspend the connection for delay_ns; MHD calls the handler again once
 * woken and the kept answer goes out then (at once when the server
 * drains).  False (nothing kept) when the server drains.
 */
static bool hold_reply(struct server *s, struct MHD_Connection *c, struct request *rq, struct MHD_Response *r,
                       const struct server_reply *out)
{
	if (!lifecycle_park_until(&s->life, &rq->park, c, LIFECYCLE_DELAY, clock_monotonic_ns() + out->delay_ns))
		return false;
	rq->phase = REQUEST_HELD;
	rq->kept = r;
	rq->kept_status = (unsigned)out->status;
	rq->kept_kind = out->kind;
	return true;
}

/*
 * A scripted transport failure: a reset (linger 0, so the close is a TCP RST)
 * or raw bytes followed by a FIN.  MHD_NO then closes the connection.
 */
static enum MHD_Result fail_connection(struct server *s, struct MHD_Connection *c, enum server_reply_kind kind,
                                       const char *raw, size_t len)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct linger lg = { 1, 0 };

	stats_record(s->stats, -1, STATS_STATUS_RESET, STATS_NONE, clock_monotonic_ns());
	if (!ci)
		return MHD_NO;
	if (kind == SERVER_REPLY_RESET) {
		setsockopt(ci->connect_fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		return MHD_NO;
	}
	/* A short write only shortens the malformed answer. */
	if (len > 0 && send(ci->connect_fd, raw, len, MSG_NOSIGNAL) < 0)
		return MHD_NO;
	shutdown(ci->connect_fd, SHUT_WR);
	return MHD_NO;
}

/* A SERVER_REPLY_PASS's answer: the upstream's (or 502/503/504), its status told to the handler and counted. */
static enum MHD_Result pass_answer(struct server *s, struct MHD_Connection *c, struct request *rq)
{
	int status;
	enum MHD_Result ret = proxied_answer(s, c, NULL, rq, &status);

	if (rq->handler->relayed)
		rq->handler->relayed(rq->handler->ctx, rq->token, status);
	stats_record(s->stats, -1, status, STATS_NONE, clock_monotonic_ns());
	return ret;
}

/* A SERVER_REPLY_PASS goes to the upstream now: parked until its answer, or answered when it cannot go. */
static enum MHD_Result pass_start(struct server *s, struct MHD_Connection *c, struct request *rq)
{
	if (proxied_send(s, c, rq))
		return MHD_YES;
	return pass_answer(s, c, rq);
}

/* The kept (delayed) answer of a special handler, now due. */
static enum MHD_Result send_kept(struct server *s, struct MHD_Connection *c, struct request *rq)
{
	struct MHD_Response *r = rq->kept;

	rq->kept = NULL;
	if (!r && rq->kept_kind == SERVER_REPLY_PASS)
		return pass_start(s, c, rq);
	if (!r)
		return fail_connection(s, c, rq->kept_kind, rq->raw, rq->raw_len);
	stats_record(s->stats, -1, (int)rq->kept_status, STATS_NONE, clock_monotonic_ns());
	return responses_send(c, rq->kept_status, r);
}

/* A SERVER_REPLY_CUT body: Content-Length says all of it, the reader gives the first half. */
struct cut_body {
	char *data;
	size_t half;
};

static ssize_t cut_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct cut_body *cb = cls;
	size_t n;

	if (pos >= cb->half)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	n = cb->half - (size_t)pos < max ? cb->half - (size_t)pos : max;
	memcpy(buf, cb->data + pos, n);
	return (ssize_t)n;
}

static void cut_free(void *cls)
{
	struct cut_body *cb = cls;

	free(cb->data);
	free(cb);
}

/* The response over out's body (handed over): whole, or cut after half of it; NULL when out of memory. */
static struct MHD_Response *body_response(struct server_reply *out)
{
	struct cut_body *cb;
	struct MHD_Response *r;

	if (out->kind != SERVER_REPLY_CUT)
		return MHD_create_response_from_buffer(out->body_len, out->body ? out->body : (void *)"",
		                                       out->body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	if (!(cb = malloc(sizeof(*cb))))
		return NULL;
	*cb = (struct cut_body){ out->body, out->body_len / 2 };
	r = MHD_create_response_from_callback(out->body_len, 1024, cut_read, cb, cut_free);
	if (!r)
		free(cb);
	return r;
}

/* A reply's stream as a response of unknown length; NULL (the stream freed) when out of memory. */
static struct MHD_Response *stream_response(struct server_reply *out)
{
	struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, out->stream_read,
	                                                           out->stream_ctx, out->stream_free);

	if (!r && out->stream_free)
		out->stream_free(out->stream_ctx);
	return r;
}

/* A reply's body (or stream) and headers as a response (the body is handed over); NULL when out of memory. */
static struct MHD_Response *reply_response(struct server_reply *out)
{
	struct MHD_Response *r;

	if (out->stream_read) {
		free(out->body);
		r = stream_response(out);
	} else if (!(r = body_response(out))) {
		free(out->body);
	}
	if (!r)
		return NULL;
	if (out->content_type)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, out->content_type);
	add_reply_headers(r, out->headers);
	return r;
}

/* A scripted reset or raw answer, at once or held for its delay (the raw bytes kept in rq). */
static enum MHD_Result serve_failure(struct server *s, struct MHD_Connection *c, struct request *rq,
                                     struct server_reply *out)
{
	rq->raw = out->body;
	rq->raw_len = out->body_len;
	if (out->delay_ns && hold_reply(s, c, rq, NULL, out))
		return MHD_YES;
	return fail_connection(s, c, out->kind, rq->raw, rq->raw_len);
}

/* A SERVER_REPLY_PASS with an upstream: to it at once, or held for its delay first (the reply's body unused). */
static enum MHD_Result serve_pass(struct server *s, struct MHD_Connection *c, struct request *rq,
                                  struct server_reply *out)
{
	free(out->body);
	out->body = NULL;
	if (out->delay_ns && hold_reply(s, c, rq, NULL, out))
		return MHD_YES;
	return pass_start(s, c, rq);
}

enum MHD_Result hooks_serve(struct server *s, struct MHD_Connection *c, const char *url, const char *method,
                            struct request *rq)
{
	const union MHD_ConnectionInfo *peer = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	char path[SERVER_PATH_CAP];
	struct server_request req = { method, path, rq->body ? rq->body : "", rq->body_len, c,
	                              rq->keylen ? rq->key : NULL, rq->keylen, peer ? peer->client_addr : NULL };
	struct server_reply out;
	struct MHD_Response *r;
	size_t len;

	rq->method = method;
	if (rq->phase == REQUEST_HELD)
		return send_kept(s, c, rq);
	if (rq->phase == REQUEST_UPSTREAM)
		return pass_answer(s, c, rq);
	/* The handler sees the path in normal form; a target that is not one, as sent. */
	if (path_normalize(url, strlen(url), path, sizeof(path), &len) < 0)
		snprintf(path, sizeof(path), "%s", url);
	memset(&out, 0, sizeof(out));
	if (rq->handler->fn(s, rq->handler->ctx, &req, &out) < 0) {
		free(out.body);
		stats_record(s->stats, -1, STATS_STATUS_RESET, STATS_NONE, clock_monotonic_ns());
		return MHD_NO;
	}
	rq->token = out.token;
	rq->notify = rq->handler->done != NULL;
	if (out.kind == SERVER_REPLY_RESET || out.kind == SERVER_REPLY_RAW)
		return serve_failure(s, c, rq, &out);
	if (out.kind == SERVER_REPLY_PASS && proxied_wants(s))
		return serve_pass(s, c, rq, &out);
	if (!(r = reply_response(&out)))
		return MHD_NO;
	if (out.delay_ns && hold_reply(s, c, rq, r, &out))
		return MHD_YES;
	stats_record(s->stats, -1, out.status, STATS_NONE, clock_monotonic_ns());
	return responses_send(c, (unsigned)out.status, r);
}
