#ifndef RATELAB_DAEMON_H
#define RATELAB_DAEMON_H

#include <microhttpd.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "server/http/conns.h"
#include "server/http/lifecycle.h"
#include "server/http/sched.h"
#include "server/http/hooks.h"
#include "server/http/listeners.h"
#include "server/http/responses.h"
#include "server/http/routes.h"
#include "server/clients.h"
#include "server/live.h"
#include "server/server.h"
#include "server/stats.h"

/*
 * The server behind server/server.h: the MHD daemon and its callbacks, and
 * the parts a request goes through (routes, special handlers, responses,
 * statistics, the scheduler and the lifecycle).  Private to server/http/:
 * handlers see the server through server/server.h only.
 */

struct server {
	struct server_config cfg;
	struct listeners listeners;         /* the daemons, one polling thread each */
	bool running;                        /* listening (or draining): server_drain has work */
	struct routes routes;
	struct hooks hooks;
	struct responses resp;
	struct stats *stats;
	struct clients *clients;             /* the per-client figures (server/clients.h) */
	void *plugin;                        /* the plugin's state (cfg.plugin) */
	struct sched *sched;                 /* the one timer thread: delays, deadlines, ticks */
	struct lifecycle life;               /* requests in flight and parked; the drain */
	struct server_every *ticks;          /* server_every's timers */
	struct conns *conns;                 /* open connections: per-address counts, head deadlines */
	struct upstream *upstream;           /* --upstream: the proxy's client (server/proxy/upstream.h), else NULL */
	uint64_t gen;                        /* unique per server: keys the threads' PRNG and slots */
	/*
	 * Limiter time 0: limiters see monotonic time since the server started, so
	 * fixed windows (fixed-window, sliding-window, layered) start when the server
	 * does, not at the machine's boot-time multiples.  An experiment that runs
	 * within an hour of its server's start never sees an hour window roll over.
	 */
	uint64_t epoch_ns;
	_Atomic unsigned streams;            /* PRNG streams handed to threads so far */
	int port;
};

#endif
