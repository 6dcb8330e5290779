/* /dashboard, /play, /events, /stats, /metrics, /reset, /healthz and /favicon.ico. */
#include "server/handlers/builtin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/handlers/dashboard.h"
#include "server/handlers/events.h"
#include "server/handlers/play.h"

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
	return reply_text(out, 200, "application/json", server_stats_json(s));
}

static int handle_metrics(struct server *s, void *ctx, const struct server_request *req, struct server_reply *out)
{
	(void)ctx;
	if (get_only(req, out))
		return 0;
	return reply_text(out, 200, "text/plain; version=0.0.4", server_stats_metrics(s));
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
	(void)s;
	if (get_only(req, out))
		return 0;
	return events_subscribe(ctx, req, out);
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

/* The plugin's start: the /events hub (its state), its ticks, and the handlers (ctx: the hub). */
static int builtin_start(struct server *srv, const struct server_config *cfg, struct server_handler *out, size_t max,
                         void **state)
{
	static const struct {
		const char *path;
		server_handler_fn fn;
	} table[BUILTIN_HANDLERS] = {
		{ "/dashboard", handle_dashboard }, { "/play", handle_play }, { "/events", handle_events },
		{ "/stats", handle_stats }, { "/metrics", handle_metrics },
		{ "/reset", handle_reset }, { "/healthz", handle_healthz }, { "/favicon.ico", handle_favicon },
	};
	struct events *ev;

	if (max < BUILTIN_HANDLERS || !(ev = events_new(srv, cfg->max_subscribers, cfg->ipv6_prefix)))
		return -1;
	/* Set before the first tick is armed: the tick reads it (server_live_parts) on the timer thread. */
	*state = ev;
	if (events_start(ev) < 0) {
		*state = NULL;
		events_free(ev);
		return -1;
	}
	for (size_t i = 0; i < BUILTIN_HANDLERS; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		snprintf(out[i].path, sizeof(out[i].path), "%s", table[i].path);
		out[i].fn = table[i].fn;
		out[i].ctx = ev;
	}
	return BUILTIN_HANDLERS;
}

static void builtin_stop(void *state)
{
	events_stop(state);
}

static void builtin_free(void *state)
{
	events_free(state);
}

static unsigned builtin_streams(void *state)
{
	return events_subscribers(state);
}

static int builtin_announce(void *state, const char *name, const char *json)
{
	return events_announce(state, name, json);
}

const struct server_plugin builtin_plugin = { builtin_start, builtin_stop, builtin_free, builtin_streams,
	                                      builtin_announce };
