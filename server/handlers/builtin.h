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
 * acts on the server it is called with through server/server.h and is
 * thread-safe.  They plug into every server as one plugin (struct
 * server_plugin), which owns the /events hub; server_config_defaults sets it.
 */

#define BUILTIN_HANDLERS 8

extern const struct server_plugin builtin_plugin;

#endif
