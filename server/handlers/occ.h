#ifndef RATELAB_OCC_H
#define RATELAB_OCC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/cli.h"
#include "common/prng.h"
#include "server/server.h"

/*
 * The /occ route: one versioned record for the optimistic-concurrency
 * workload (AWS Architecture Blog, "Exponential Backoff And Jitter").
 * GET returns the version as a strong ETag ("\"7\""); PUT with a matching
 * If-Match writes and bumps the version (200); a stale If-Match is a
 * conflict (409); PUT without If-Match is 428.  The record is thread-safe.
 * The HTTP layer only translates an occ_reply into a response.
 */

struct occ;

struct occ_reply {
	int status;          /* 200, 409, 428 or 405 */
	uint64_t version;    /* the version after this request */
	char etag[32];       /* "\"<version>\"", quotes included */
	char body[128];      /* JSON, NUL-terminated */
	const char *allow;   /* "GET, PUT" on 405, else NULL */
};

/* A fresh record at version 0; NULL on allocation failure. */
struct occ *occ_new(void);
void occ_free(struct occ *o);

/* The current version.  Thread-safe. */
uint64_t occ_version(struct occ *o);

/* Back to version 0 with no writes (POST /reset).  Thread-safe. */
void occ_reset(struct occ *o);

/*
 * Answer one request: method ("GET", "HEAD", "PUT", ...) and the If-Match
 * header value or NULL.  Always fills *r.  Thread-safe: the compare and the
 * write are one step under the record's lock.
 */
void occ_handle(struct occ *o, const char *method, const char *if_match, struct occ_reply *r);

/* Network delay mimicked by the server: MEAN[±SD], e.g. "20ms", "20ms±5ms", "20ms+-5ms". */
struct occ_delay {
	uint64_t mean_ns;
	uint64_t sd_ns;
};

/* Parse a --delay value.  Returns 0, or -1 with a one-line reason naming the value. */
int occ_delay_parse(const char *s, struct occ_delay *d, char *err, size_t errlen);

/* One delay: normal(mean, sd) clamped to [0, mean + 4 sd].  Pure but for rng. */
uint64_t occ_delay_sample(const struct occ_delay *d, struct prng *rng);

/* /occ on the lab server: the record, the delay of each answer, and a seed for the delay. */
struct occ_route {
	struct occ *occ;
	struct occ_delay delay;
	uint64_t seed;
};

/* The special handler for /occ (ctx is a struct occ_route).  Thread-safe. */
int occ_route_handler(struct server *srv, void *ctx, const struct server_request *req, struct server_reply *out);

/* POST /reset hook: back to version 0 (ctx is a struct occ_route). */
void occ_route_reset(void *ctx);

/*
 * Add /occ and its reset hook to a server config; r must outlive the server.
 * Returns 0, or -1 when the handler table is full.
 */
int occ_route_register(struct server_config *c, struct occ_route *r);

/* `ratelab serve --delay MEAN[±SD]`: the flag table over a struct occ_route (common/cli.h). */
extern const struct cli_option occ_route_options[];

#endif
