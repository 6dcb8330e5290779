#ifndef RATELAB_SIMSERVER_H
#define RATELAB_SIMSERVER_H

#include <stddef.h>
#include <stdint.h>

#include "hammer/sim.h"
#include "server/handlers/occ.h"
#include "server/server.h"

/*
 * The server model of a run in virtual time (hammer/sim.h): serve's own
 * parts without the HTTP: route "/" of a server config decided by its
 * limiter (server/limit), an admitted request served by its capacity model
 * (server/capacity.c) when the route has one, a rejection answered with the
 * config's status, Retry-After and RateLimit fields (server/http/headers.h);
 * and /occ, the versioned record (server/handlers/occ.h) with its --delay.
 * Every client shares one limiter key: in the model all of them come from
 * one address.  Not thread-safe: the run's one loop drives it.
 */

struct simserver;

/*
 * A model of cfg's first route (cfg->nroutes must be 1: one route is
 * modelled) and /occ answering after delay (NULL: at once), drawing from
 * seed.  NULL with a one-line reason in err (a key by header, a scenario,
 * several routes, out of memory).
 */
struct simserver *simserver_new(const struct server_config *cfg, const struct occ_delay *delay, uint64_t seed,
                                char *err, size_t errlen);
void simserver_free(struct simserver *m);

/* The table the hammer drives it through, with m as its model_state. */
extern const struct sim_model_ops SIMSERVER_OPS;

/*
 * Build a model from serve's own flags in one string ("--limiter gcra
 * --limit 5 --capacity workers=2"): serve's flag tables parse it.  NULL with
 * a one-line reason in err.
 */
struct simserver *simserver_from_flags(const char *flags, uint64_t seed, char *err, size_t errlen);

/* The capacity model's counters (zero when the route has none). */
void simserver_capacity_stats(struct simserver *m, struct capacity_stats *out);

/* Its series as capacity_series copies it (0 rows when the route has none). */
size_t simserver_capacity_series(struct simserver *m, struct capacity_bucket *out, size_t max);

/* `ratelab hammer` with --sim against this model (--serve FLAGS): hammer_main wired to it. */
int simserver_hammer_main(int argc, char **argv);

#endif
