#ifndef RATELAB_SCENARIO_SERVER_H
#define RATELAB_SCENARIO_SERVER_H

/*
 * The server side of `ratelab serve --scenario NAME|FILE` (and of verify
 * --listen): a scenario (scenario.h) answering the server's limited paths,
 * its arrival log at GET /scenario, and POST /reset.
 */

#include "server/handlers/scenario.h"

struct server;
struct server_config;
struct server_request;
struct server_reply;

/*
 * A server_handler_fn answering a limited path from the scenario `ctx`
 * (holding the answer for its step's delay).  A step of status 2xx without
 * a fault is a SERVER_REPLY_PASS: with serve --upstream the request goes to
 * the upstream (after the step's delay; the step's extra headers are not
 * added) and its answer is relayed; without one, the step's answer goes
 * out.  Thread-safe.
 */
int scenario_server_handler(struct server *srv, void *ctx, const struct server_request *req,
                            struct server_reply *out);

/*
 * Make c answer every limited path from sc (passing 2xx steps to c's
 * upstream when it has one), GET /scenario list the arrivals
 * as JSON, and POST /reset start every client at the first step again (and
 * empty the log).  sc must outlive the server.  Returns 0, or -1 (no room).
 */
int scenario_server_register(struct server_config *c, struct scenario *sc);

#endif
