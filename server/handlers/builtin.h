#ifndef RATELAB_BUILTIN_H
#define RATELAB_BUILTIN_H

#include "server/server.h"

/*
 * The built-in special handlers: GET /dashboard (the live page,
 * server/handlers/dashboard.h), GET /play (the attendees' page,
 * server/handlers/play.h), GET /events (its figures as Server-Sent
 * Events, server/handlers/events.h), GET /stats (JSON), GET /metrics
 * (Prometheus), POST /reset, GET /healthz and GET /favicon.ico (204: no
 * icon, and a page's own request for one never counts as a client).  Each
 * acts on the server it is called with (ctx unused) and is thread-safe.
 */

#define BUILTIN_HANDLERS 8

/* The built-in handlers into out (room for BUILTIN_HANDLERS). */
void builtin_handlers(struct server_handler out[BUILTIN_HANDLERS]);

#endif
