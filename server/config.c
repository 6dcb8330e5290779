#include "server/config.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/parse.h"
#include "common/text.h"
#include "server/http/path.h"

int config_parse_key(const char *s, enum config_key *key, char *header, size_t hlen, char *err, size_t errlen)
{
	if (strcmp(s, "global") == 0) {
		*key = CONFIG_KEY_GLOBAL;
		return 0;
	}
	if (strcmp(s, "ip") == 0) {
		*key = CONFIG_KEY_IP;
		return 0;
	}
	if (strncmp(s, "header:", 7) == 0 && s[7] && strlen(s + 7) < hlen && !strpbrk(s + 7, " :\r\n")) {
		*key = CONFIG_KEY_HEADER;
		snprintf(header, hlen, "%s", s + 7);
		return 0;
	}
	snprintf(err, errlen, "'%s' is not global, ip or header:NAME", s);
	return -1;
}

void config_route_defaults(struct config_route *r, const char *prefix)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->prefix, sizeof(r->prefix), "%s", prefix);
	snprintf(r->limiter, sizeof(r->limiter), "token-bucket");
	r->params.limit = 10;
	r->params.window_ns = NS_PER_SEC;
}

/*
 * Line of field `field` of the i-th object of the array at depth 1 (or of
 * the object itself when field is NULL); 1 when not found.  A small scanner
 * because jansson keeps no positions of values.
 */
static int field_line(const char *text, size_t idx, const char *field)
{
	int depth = 0, line = 1, obj_line = 1;
	long obj = -1;
	size_t flen = field ? strlen(field) : 0;

	for (const char *p = text; *p; p++) {
		if (*p == '\n')
			line++;
		else if (*p == '{' || *p == '[') {
			if (++depth == 3 && *p == '{' && (size_t)++obj == idx)
				obj_line = line;
		} else if (*p == '}' || *p == ']')
			depth--;
		else if (*p == '"') {
			const char *start = p + 1;

			for (p++; *p && *p != '"'; p++)
				if (*p == '\\' && p[1])
					p++;
			if (!*p)
				break;
			if (field && depth == 3 && obj == (long)idx && (size_t)(p - start) == flen &&
			    strncmp(start, field, flen) == 0)
				return line;
		}
	}
	return obj_line;
}

struct cfg_ctx {
	const char *text, *name;
	size_t idx;
	char *err;
	size_t errlen;
};

static int fail(struct cfg_ctx *c, const char *field, const char *what)
{
	snprintf(c->err, c->errlen, "%s:%d: routes[%zu]%s%s: %s", c->name, field_line(c->text, c->idx, field),
	         c->idx, field ? "." : "", field ? field : "", what);
	return -1;
}

/* A count from 1 to UINT32_MAX, the bounds of --limit and --burst. */
static int get_u64(struct cfg_ctx *c, json_t *o, const char *field, uint64_t *out)
{
	json_t *v = json_object_get(o, field);

	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > (json_int_t)UINT32_MAX)
		return fail(c, field, "must be a whole number from 1 to 4294967295");
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

static int get_layers(struct cfg_ctx *c, json_t *o, struct config_route *r)
{
	json_t *arr = json_object_get(o, "layers"), *v;
	size_t i;
	char why[160], msg[256];

	if (!arr)
		return 0;
	if (!json_is_array(arr) || json_array_size(arr) == 0 || json_array_size(arr) > LIMITER_MAX_LAYERS)
		return fail(c, "layers", "must be a list of 1 to 8 rates like \"30/1m\"");
	json_array_foreach(arr, i, v) {
		struct limiter_layer *l = &r->params.layers[i];

		if (!json_is_string(v) || parse_rate(json_string_value(v), &l->limit, &l->window_ns, why, sizeof(why)) < 0) {
			snprintf(msg, sizeof(msg), "layer %zu: %s", i, json_is_string(v) ? why : "not a string");
			return fail(c, "layers", msg);
		}
	}
	r->params.nlayers = json_array_size(arr);
	if (!json_object_get(o, "limiter"))
		snprintf(r->limiter, sizeof(r->limiter), "layered");
	return 0;
}

static int get_strings(struct cfg_ctx *c, json_t *o, struct config_route *r)
{
	const char *s;
	char why[160], norm[sizeof(r->prefix)];
	size_t nlen;
	json_t *v;

	if (!json_is_string(v = json_object_get(o, "prefix")) || (s = json_string_value(v))[0] != '/' ||
	    strlen(s) >= sizeof(r->prefix))
		return fail(c, json_object_get(o, "prefix") ? "prefix" : NULL,
		            "needs \"prefix\": a path starting with '/' (under 128 bytes)");
	/* kept in the form request paths are matched in, so "//api" meets "/api" and "/api/../x" is "/x" */
	if (path_normalize(s, strlen(s), norm, sizeof(norm), &nlen) < 0)
		return fail(c, "prefix", "is not a path (a '%' without two hex digits, or a NUL)");
	config_route_defaults(r, norm);
	if ((v = json_object_get(o, "limiter"))) {
		if (!json_is_string(v) || !limiter_find(json_string_value(v)))
			return fail(c, "limiter", "unknown limiter");
		snprintf(r->limiter, sizeof(r->limiter), "%s", json_string_value(v));
	}
	if ((v = json_object_get(o, "window"))) {
		if (!json_is_string(v) || parse_duration(json_string_value(v), &r->params.window_ns, why, sizeof(why)) < 0 ||
		    r->params.window_ns == 0)
			return fail(c, "window", "must be a duration like \"1s\" or \"250ms\"");
	}
	if ((v = json_object_get(o, "key"))) {
		if (!json_is_string(v) || config_parse_key(json_string_value(v), &r->key, r->key_header,
		                                           sizeof(r->key_header), why, sizeof(why)) < 0)
			return fail(c, "key", "must be global, ip or header:NAME");
		r->key_set = true;
	}
	return 0;
}

static int parse_route(struct cfg_ctx *c, json_t *o, struct config_route *r)
{
	static const char *known[] = { "prefix", "limiter", "limit", "window", "burst", "key", "layers" };
	const char *k;
	json_t *v;
	char why[200];

	if (!json_is_object(o))
		return fail(c, NULL, "must be an object");
	json_object_foreach(o, k, v) {
		size_t i = 0;

		while (i < sizeof(known) / sizeof(known[0]) && strcmp(k, known[i]) != 0)
			i++;
		if (i == sizeof(known) / sizeof(known[0]))
			return fail(c, k, "unknown field (prefix, limiter, limit, window, burst, key, layers)");
	}
	if (get_strings(c, o, r) < 0 || get_u64(c, o, "limit", &r->params.limit) < 0 ||
	    get_u64(c, o, "burst", &r->params.burst) < 0 || get_layers(c, o, r) < 0)
		return -1;
	/* as on the command line: layers alone mean the layered limiter, a burst only where it means something */
	if (r->params.nlayers > 0 && json_object_get(o, "limiter") == NULL)
		snprintf(r->limiter, sizeof(r->limiter), "layered");
	if (r->params.burst != 0 && limiter_find(r->limiter) && !limiter_find(r->limiter)->burst)
		return fail(c, "burst", "goes with token-bucket, leaky-bucket and gcra only");
	if (limiter_params_check(limiter_find(r->limiter), &r->params, why, sizeof(why)) < 0)
		return fail(c, NULL, why);
	return 0;
}

static int parse_root(struct cfg_ctx *c, json_t *root, struct config_route *routes, size_t max, size_t *n)
{
	json_t *arr = json_object_get(root, "routes"), *o;

	if (!json_is_object(root) || !json_is_array(arr) || json_array_size(arr) == 0) {
		snprintf(c->err, c->errlen, "%s:1: needs an object with a non-empty \"routes\" list", c->name);
		return -1;
	}
	if (json_object_size(root) != 1 || json_array_size(arr) > max) {
		snprintf(c->err, c->errlen, "%s:1: only \"routes\" is allowed at the top, with at most %zu routes",
		         c->name, max);
		return -1;
	}
	json_array_foreach(arr, c->idx, o) {
		if (parse_route(c, o, &routes[c->idx]) < 0)
			return -1;
		for (size_t j = 0; j < c->idx; j++)
			if (strcmp(routes[j].prefix, routes[c->idx].prefix) == 0)
				return fail(c, "prefix", "duplicate prefix");
	}
	*n = json_array_size(arr);
	return 0;
}

int config_parse(const char *text, const char *name, struct config_route *routes, size_t max, size_t *n,
                 char *err, size_t errlen)
{
	json_error_t je;
	json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &je);
	struct cfg_ctx c = { text, name, 0, err, errlen };
	int rc;

	if (!root) {
		snprintf(err, errlen, "%s:%d: %s", name, je.line > 0 ? je.line : 1, je.text);
		return -1;
	}
	rc = parse_root(&c, root, routes, max, n);
	json_decref(root);
	return rc;
}

int config_load(const char *path, struct config_route *routes, size_t max, size_t *n, char *err, size_t errlen)
{
	enum text_read_error why;
	char *text = text_read_file(path, 1 << 20, NULL, &why);
	int rc;

	if (!text) {
		snprintf(err, errlen, "%s: %s", path,
		         why == TEXT_READ_OPEN ? "cannot open" : why == TEXT_READ_TOO_BIG ? "over 1 MiB"
		         : why == TEXT_READ_NOMEM ? "out of memory" : "unreadable");
		return -1;
	}
	rc = config_parse(text, path, routes, max, n, err, errlen);
	free(text);
	return rc;
}
