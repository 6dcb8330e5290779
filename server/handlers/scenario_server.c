/* A scenario served: the handler for limited paths, GET /scenario and the hooks (scenario_server.h). */
#include "server/handlers/scenario_server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "server/server.h"

/* How each scripted fault goes out (server/server.h). */
static const enum server_reply_kind REPLY_KIND[] = {
	[SCENARIO_FAULT_NONE] = SERVER_REPLY_ANSWER,
	[SCENARIO_FAULT_RESET] = SERVER_REPLY_RESET,
	[SCENARIO_FAULT_CUT] = SERVER_REPLY_CUT,
	[SCENARIO_FAULT_MALFORMED] = SERVER_REPLY_RAW,
};

int scenario_server_handler(struct server *srv, void *ctx, const struct server_request *req,
                            struct server_reply *out)
{
	struct scenario_request sr = {
		req->method, req->path, req->key, req->keylen,
		server_request_header(req, "Idempotency-Key"), server_request_header(req, "traceparent"),
		clock_monotonic_ns(), clock_wall_ns(), req->conn,
	};
	struct scenario_answer a;

	(void)srv;
	scenario_answer(ctx, &sr, &a);
	/* Scripted slowness (bounded by SCENARIO_MAX_DELAY_NS): the server holds the
	 * answer on its timer without blocking this thread. */
	out->delay_ns = a.delay_ns;
	out->status = a.status;
	out->kind = REPLY_KIND[a.fault];
	/* A scripted success is the real service's answer when there is one. */
	if (a.fault == SCENARIO_FAULT_NONE && a.status >= 200 && a.status <= 299)
		out->kind = SERVER_REPLY_PASS;
	out->token = a.token;
	out->content_type = "text/plain";
	out->body = strdup(a.body);
	out->body_len = out->body ? strlen(out->body) : 0;
	snprintf(out->headers, sizeof(out->headers), "%s", a.headers);
	return out->body ? 0 : -1;
}

static int handle_log(struct server *srv, void *ctx, const struct server_request *req, struct server_reply *out)
{
	(void)srv;
	(void)req;
	out->status = 200;
	out->content_type = "application/json";
	out->body = scenario_arrivals_json(ctx);
	out->body_len = out->body ? strlen(out->body) : 0;
	return out->body ? 0 : -1;
}

/* POST /reset: every client starts the script again, and the log is empty. */
static void reset_hook(void *ctx)
{
	scenario_reset(ctx);
}

static void done_hook(void *ctx, uint64_t token, bool sent, uint64_t now_ns)
{
	scenario_done(ctx, token, sent, now_ns);
}

static void relayed_hook(void *ctx, uint64_t token, int status)
{
	scenario_relayed(ctx, token, status);
}

int scenario_server_register(struct server_config *c, struct scenario *sc)
{
	snprintf(c->limited.path, sizeof(c->limited.path), "*");
	c->limited.fn = scenario_server_handler;
	c->limited.reset = reset_hook;
	c->limited.done = done_hook;
	c->limited.relayed = relayed_hook;
	c->limited.ctx = sc;
	return server_config_add_handler(c, "/scenario", handle_log, sc);
}
