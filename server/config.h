#ifndef RATELAB_CONFIG_H
#define RATELAB_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "server/capacity.h"
#include "server/limit/limiter.h"

/*
 * Routes of `ratelab serve --config FILE`: several path prefixes, each with
 * its own limiter.  The file is JSON:
 *
 *   {"routes": [
 *     {"prefix": "/api", "limiter": "token-bucket", "limit": 5, "window": "1s", "burst": 10, "key": "ip"},
 *     {"prefix": "/login", "limiter": "layered", "layers": ["30/1m", "500/1h", "2000/1d"]}
 *   ]}
 *
 * Every field but "prefix" is optional (limiter token-bucket, limit 10,
 * window 1s, key as on the command line).  Errors name the file, the line and
 * what is wrong.
 */

#define CONFIG_MAX_ROUTES 15
#define CONFIG_PREFIX_LEN 128
#define CONFIG_HEADER_LEN 64

enum config_key { CONFIG_KEY_GLOBAL, CONFIG_KEY_IP, CONFIG_KEY_HEADER };

struct config_route {
	char prefix[CONFIG_PREFIX_LEN];
	char limiter[32];
	struct limiter_params params;
	bool key_set;                 /* false: the command line's --key applies */
	enum config_key key;
	char key_header[CONFIG_HEADER_LEN];
	struct capacity_params capacity;  /* workers 0: no modelled backend (server/capacity.h) */
};

/* Parse a --key value: global, ip or header:NAME.  Returns 0, or -1 with a reason. */
int config_parse_key(const char *s, enum config_key *key, char *header, size_t hlen, char *err, size_t errlen);

/* Fill a route with the defaults (token-bucket, 10 per 1s, burst = limit, key unset). */
void config_route_defaults(struct config_route *r, const char *prefix);

/*
 * Parse the routes in `text` (named `name` in messages) into routes[0..max).
 * Returns 0 and *n, or -1 with "NAME:LINE: what is wrong" in err.  Checks each
 * limiter's params with limiter_params_check.  Pure.
 */
int config_parse(const char *text, const char *name, struct config_route *routes, size_t max, size_t *n,
                 char *err, size_t errlen);

/* config_parse on the contents of file `path`.  Returns 0 or -1 as config_parse. */
int config_load(const char *path, struct config_route *routes, size_t max, size_t *n, char *err, size_t errlen);

#endif
