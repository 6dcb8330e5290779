/* The limited routes: set-up, prefix matching, the client key, and their stores. */
#include "server/http/routes.h"

#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "common/prng.h"
#include "common/text.h"
#include "server/http/backend.h"
#include "server/http/path.h"

static int route_setup(struct route *r, const struct config_route *cr, const struct server_config *cfg,
                       size_t idx, char *err, size_t errlen)
{
	char why[200];

	r->prefix = cr->prefix;
	if (path_normalize(cr->prefix, strlen(cr->prefix), r->match, sizeof(r->match), &r->match_len) < 0) {
		snprintf(err, errlen, "route %s: not a path (a NUL, or a %% without two hex digits)", cr->prefix);
		return -1;
	}
	r->limiter = cr->limiter;
	r->ops = limiter_find(cr->limiter);
	r->params = cr->params;
	if (!r->ops || limiter_params_check(r->ops, &r->params, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "route %s: %s", cr->prefix, r->ops ? why : "unknown limiter");
		return -1;
	}
	r->releases = r->ops->release != NULL;
	r->stateless = r->ops->stateless && !cfg->store_new;
	r->key = cr->key_set ? cr->key : cfg->key;
	r->key_header = cr->key_set ? cr->key_header : cfg->key_header;
	r->v6_prefix = cfg->ipv6_prefix;
	headers_policy(&r->params, r->ops->layered, r->policy, sizeof(r->policy));
	if (r->key == CONFIG_KEY_HEADER)
		snprintf(r->key_name, sizeof(r->key_name), "header:%s", r->key_header);
	else
		snprintf(r->key_name, sizeof(r->key_name), "%s", r->key == CONFIG_KEY_GLOBAL ? "global" : "ip");
	if (cfg->store_new)
		r->store = cfg->store_new(cfg->store_ctx, r->ops, &r->params, cfg->max_keys, err, errlen);
	else if (!(r->store = store_memory_new(r->ops, &r->params, cfg->max_keys, 0)))
		snprintf(err, errlen, "route %s: out of memory for the key table", cr->prefix);
	r->async = r->store && r->store->ops->submit != NULL && !cfg->limited.fn;
	if (!r->store)
		return -1;
	r->backend = NULL;
	if (cr->capacity.workers > 0 &&
	    !(r->backend = backend_new(&cr->capacity, clock_monotonic_ns(), prng_stream_seed(cfg->seed, 1000 + idx)))) {
		snprintf(err, errlen, "route %s: out of memory for the backend model", cr->prefix);
		r->store->ops->free(r->store);
		return -1;
	}
	return 0;
}

/* Insertion sort of the indexes by prefix length, longest first (at most SERVER_MAX_ROUTES). */
static void routes_order(struct routes *rs)
{
	for (size_t i = 0; i < rs->n; i++)
		rs->order[i] = i;
	for (size_t i = 1; i < rs->n; i++)
		for (size_t j = i; j > 0 && rs->r[rs->order[j]].match_len > rs->r[rs->order[j - 1]].match_len; j--) {
			size_t t = rs->order[j];

			rs->order[j] = rs->order[j - 1];
			rs->order[j - 1] = t;
		}
}

int routes_setup(struct routes *rs, const struct server_config *cfg, char *err, size_t errlen)
{
	for (rs->n = 0; rs->n < cfg->nroutes; rs->n++)
		if (route_setup(&rs->r[rs->n], &cfg->routes[rs->n], cfg, rs->n, err, errlen) < 0)
			return -1;
	routes_order(rs);
	return 0;
}

void routes_free(struct routes *rs)
{
	/* After a failed set-up, n counts the routes before the one that failed: each has a store. */
	for (size_t i = 0; i < rs->n; i++) {
		rs->r[i].store->ops->free(rs->r[i].store);
		backend_free(rs->r[i].backend);
	}
	rs->n = 0;
}

int routes_match(const struct routes *rs, const char *path, size_t len)
{
	for (size_t k = 0; k < rs->n; k++) {
		const struct route *r = &rs->r[rs->order[k]];

		if (path_prefix_covers(r->match, r->match_len, path, len))
			return (int)rs->order[k];
	}
	return -1;
}

size_t routes_client_key(const struct route *rt, struct MHD_Connection *c, char key[CLIENT_KEY_LEN])
{
	const char *v;

	if (rt->key == CONFIG_KEY_GLOBAL)
		return client_key_global(key);
	if (rt->key == CONFIG_KEY_HEADER && (v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, rt->key_header)))
		return client_key_header(key, v, text_field_len(v));
	return routes_client_address(c, rt->v6_prefix, key);
}

size_t routes_client_address(struct MHD_Connection *c, unsigned v6_prefix, char key[CLIENT_KEY_LEN])
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);

	return client_key_address(key, ci ? ci->client_addr : NULL, v6_prefix);
}

bool routes_any_async(const struct routes *rs)
{
	for (size_t i = 0; i < rs->n; i++)
		if (rs->r[i].async)
			return true;
	return false;
}

size_t routes_infos(const struct routes *rs, struct stats_route_info ri[SERVER_MAX_ROUTES])
{
	for (size_t i = 0; i < rs->n; i++) {
		ri[i].prefix = rs->r[i].prefix;
		ri[i].limiter = rs->r[i].limiter;
		ri[i].policy = rs->r[i].policy;
		ri[i].key = rs->r[i].key_name;
		rs->r[i].store->ops->stats(rs->r[i].store, &ri[i].store);
		ri[i].has_backend = rs->r[i].backend != NULL;
		if (ri[i].has_backend)
			backend_stats(rs->r[i].backend, &ri[i].backend);
	}
	return rs->n;
}

void routes_reset(struct routes *rs)
{
	for (size_t i = 0; i < rs->n; i++) {
		rs->r[i].store->ops->reset(rs->r[i].store);
		if (rs->r[i].backend)
			backend_reset(rs->r[i].backend);
	}
}

void routes_quiesce(struct routes *rs)
{
	for (size_t i = 0; i < rs->n; i++)
		if (rs->r[i].store->ops->quiesce)
			rs->r[i].store->ops->quiesce(rs->r[i].store);
}

void routes_start_backends(struct routes *rs, struct lifecycle *lc)
{
	for (size_t i = 0; i < rs->n; i++)
		if (rs->r[i].backend)
			backend_start(rs->r[i].backend, lc);
}

void routes_close_backends(struct routes *rs)
{
	for (size_t i = 0; i < rs->n; i++)
		if (rs->r[i].backend)
			backend_close(rs->r[i].backend);
}

size_t routes_backend_timer_slots(const struct routes *rs)
{
	size_t n = 0;

	for (size_t i = 0; i < rs->n; i++)
		if (rs->r[i].backend)
			n += backend_timer_slots(backend_params(rs->r[i].backend));
	return n;
}
