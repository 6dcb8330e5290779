#ifndef RATELAB_HOOKS_H
#define RATELAB_HOOKS_H

#include <microhttpd.h>
#include <stddef.h>

#include "server/server.h"

/*
 * The special handlers of a server: those of its config, then the built-in
 * ones (a config's handler can take over a built-in path), and the limited
 * handler that answers limited paths instead of the limiter.  hooks_serve
 * turns a handler's server_reply into the response, holding it for its delay.
 */

struct hooks {
	struct server_handler h[SERVER_MAX_HANDLERS + SERVER_MAX_PLUGIN_HANDLERS];
	size_t n;
	const struct server_handler *limited;   /* cfg->limited when its fn is set, else NULL */
};

struct request;

/* Fill hk from cfg (which must outlive it): cfg's handlers, then the plugin's n in plugin (copied). */
void hooks_setup(struct hooks *hk, const struct server_config *cfg, const struct server_handler *plugin, size_t n);

/* The handler of path url (exact match), or NULL. */
const struct server_handler *hooks_match(const struct hooks *hk, const char *url);

/* Call every handler's reset hook, then the limited handler's (POST /reset).  Thread-safe. */
void hooks_reset(const struct hooks *hk);

/*
 * Answer rq (target url as sent) with its handler (rq->handler), which sees
 * the path in normal form: call it, or send the answer it left held, or
 * (SERVER_REPLY_PASS with an upstream) send rq to the upstream and relay its
 * answer.  The last call of a request, and again once a held or passed one
 * is woken.
 */
enum MHD_Result hooks_serve(struct server *s, struct MHD_Connection *c, const char *url, const char *method,
                            struct request *rq);

#endif
