/* /dashboard, /play, /events, /stats, /metrics, /reset, /healthz and /favicon.ico. */
#include "server/handlers/builtin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/handlers/dashboard.h"
#include "server/handlers/events.h"
#include "server/handlers/play.h"
#include "server/http/daemon.h"

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

static int handle_stats(struct server *s, void *ctx, const struct server_request *req, struct server_reply *out)
{
	(void)ctx;
	if (get_only(req, out))
		return 0;
	return reply_text(out, 200, "application/json", daemon_stats_json(s));
}

static int handle_metrics(struct server *s, void *ctx, const struct server_request *req, struct server_reply *out)
{
	(void)ctx;
	if (get_only(req, out))
		return 0;
	return reply_text(out, 200, "text/plain; version=0.0.4", daemon_stats_metrics(s));
}

static int handle_reset(struct server *s, void *ctx, const struct server_request *req, struct server_reply *out)
{
	(void)ctx;
	if (server_admin_refused(s, req, out))
		return 0;
	if (strcmp(req->method, "POST") != 0) {
		snprintf(out->headers, sizeof(out->headers), "Allow: POST\n");
		return reply_text(out, 405, "text/plain", strdup("use POST /reset\n"));
	}
	server_reset(s);
	return reply_text(out, 200, "application/json", strdup("{\"reset\":true}\n"));
}

static int handle_dashboard(struct server *s, void *ctx, const struct server_request *req, struct server_reply *out)
{
	(void)s;
	(void)ctx;
	if (get_only(req, out))
		return 0;
	snprintf(out->headers, sizeof(out->headers), "Cache-Control: no-store\n");
	return reply_text(out, 200, "text/html; charset=utf-8", dashboard_page());
}

static int handle_play(struct server *s, void *ctx, const struct server_request *req, struct server_reply *out)
{
	(void)s;
	(void)ctx;
	if (get_only(req, out))
		return 0;
	snprintf(out->headers, sizeof(out->headers), "Cache-Control: no-store\n");
	return reply_text(out, 200, "text/html; charset=utf-8", play_page());
}

static int handle_events(struct server *s, void *ctx, const struct server_request *req, struct server_reply *out)
{
	(void)ctx;
	if (get_only(req, out))
		return 0;
	return events_subscribe(s->events, req, out);
}

/* The icon a browser asks for with every page: none, and not a limited request that would count as a client. */
static int handle_favicon(struct server *s, void *ctx, const struct server_request *req, struct server_reply *out)
{
	(void)s;
	(void)ctx;
	if (get_only(req, out))
		return 0;
	snprintf(out->headers, sizeof(out->headers), "Cache-Control: max-age=86400\n");
	return reply_text(out, 204, "text/plain", strdup(""));
}

static int handle_healthz(struct server *s, void *ctx, const struct server_request *req, struct server_reply *out)
{
	(void)s;
	(void)ctx;
	if (get_only(req, out))
		return 0;
	return reply_text(out, 200, "text/plain", strdup("ok\n"));
}

void builtin_handlers(struct server_handler out[BUILTIN_HANDLERS])
{
	static const struct {
		const char *path;
		server_handler_fn fn;
	} table[BUILTIN_HANDLERS] = {
		{ "/dashboard", handle_dashboard }, { "/play", handle_play }, { "/events", handle_events },
		{ "/stats", handle_stats }, { "/metrics", handle_metrics },
		{ "/reset", handle_reset }, { "/healthz", handle_healthz }, { "/favicon.ico", handle_favicon },
	};

	for (size_t i = 0; i < BUILTIN_HANDLERS; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		snprintf(out[i].path, sizeof(out[i].path), "%s", table[i].path);
		out[i].fn = table[i].fn;
	}
}
