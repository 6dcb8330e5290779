/* `ratelab serve` options: defaults, parsing and --help (the rest of server.h is in server.c). */
#include "server/server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "common/parse.h"
#include "server/store/store.h"

#define SERVER_MAX_KEYS_DEFAULT   100000
#define SERVER_KEY_MEMORY_DEFAULT (64ULL << 20)
#define SERVER_KEY_MEMORY_MAX     (1ULL << 50)

void server_config_defaults(struct server_config *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->bind, sizeof(c->bind), "127.0.0.1");
	c->port = 8080;
	config_route_defaults(&c->routes[0], "/");
	c->nroutes = 1;
	c->key = CONFIG_KEY_IP;
	c->reject_status = 429;
	c->retry_after = HEADERS_RA_SECONDS;
	c->headers = HEADERS_IETF;
	c->threads = 2;
	c->max_keys = SERVER_MAX_KEYS_DEFAULT;
	c->max_key_memory = SERVER_KEY_MEMORY_DEFAULT;
	c->max_connections = 1024;
	c->connection_timeout_ns = 30 * NS_PER_SEC;
	c->max_body = 64 * 1024;
	c->seed = 1;
}

int server_config_add_handler(struct server_config *c, const char *path, server_handler_fn fn, void *ctx)
{
	struct server_handler *h;

	if (c->nhandlers >= SERVER_MAX_HANDLERS || strlen(path) >= sizeof(h->path))
		return -1;
	h = &c->handlers[c->nhandlers++];
	snprintf(h->path, sizeof(h->path), "%s", path);
	h->fn = fn;
	h->ctx = ctx;
	return 0;
}

void server_usage(FILE *f)
{
	fprintf(f,
	        "usage: ratelab serve [options]\n"
	        "\n"
	        "A rate-limited HTTP lab server.  Every path is limited except /stats (JSON),\n"
	        "/metrics (Prometheus), POST /reset (clear limiter state and stats) and /healthz.\n"
	        "Prints 'listening on http://ADDR:PORT' when ready; SIGINT/SIGTERM drain and exit 0.\n"
	        "\n"
	        "  --bind ADDR               listen address (default 127.0.0.1)\n"
	        "  --port N                  port (default 8080; 0 picks a free one)\n"
	        "  --limiter NAME            %s (default token-bucket)\n"
	        "  --limit N                 requests per window (default 10)\n"
	        "  --window DUR              window, e.g. 1s, 250ms, 1m (default 1s)\n"
	        "  --burst N                 bucket capacity / allowed excess (default: the limit)\n"
	        "  --layer RATE              a layer of the layered limiter, e.g. 30/1m; repeatable\n"
	        "  --key global|ip|header:NAME  what is limited (default ip; a request without\n"
	        "                            the header falls back to its IP address)\n"
	        "  --status 429|503          rejection status (default 429)\n"
	        "  --retry-after seconds|http-date|none  (default seconds: the wait rounded up, never 0)\n"
	        "  --headers ietf|legacy|both|none  RateLimit headers (default ietf)\n"
	        "  --threads N               server threads (default 2)\n"
	        "  --max-keys N              cap of each route's per-key state table, LRU-evicted\n"
	        "                            (default 100000, or fewer when the limiter's state is\n"
	        "                            large: as many as fit --max-key-memory)\n"
	        "  --max-key-memory SIZE     memory the key tables may grow to, e.g. 64M, 1G; a\n"
	        "                            --max-keys that does not fit is refused (default 64M)\n"
	        "  --max-connections N       (default 1024)\n"
	        "  --connection-timeout DUR  idle connection timeout (default 30s)\n"
	        "  --max-body BYTES          larger request bodies get 413 (default 65536)\n"
	        "  --faults SPEC             e.g. 503:5,502:2,504:1,reset:1,no-retry-after:10,delay=50ms:20\n"
	        "                            (percent; statuses replace admitted answers, reset closes\n"
	        "                            the connection unanswered, no-retry-after drops the header\n"
	        "                            from rejections, delay holds the answer)\n"
	        "  --query-faults            accept ?status=503:50&delay=50ms on limited paths\n"
	        "  --seed N                  seed of the fault draws (default 1)\n"
	        "  --config FILE             JSON routes: {\"routes\":[{\"prefix\":\"/api\",\"limiter\":\"gcra\",\n"
	        "                            \"limit\":5,\"window\":\"1s\",\"burst\":10,\"key\":\"ip\"}]}\n"
	        "  --quiet                   no log lines on stderr\n"
	        "  --help                    this text\n",
	        limiter_names());
}

struct arg_ctx {
	struct server_config *c;
	char *err;
	size_t errlen;
	const char *config_path;
	bool limiter_set;
};

static int bad(struct arg_ctx *a, const char *flag, const char *value, const char *why)
{
	snprintf(a->err, a->errlen, "ratelab serve: %s '%s': %s", flag, value, why);
	return -1;
}

/* A parse_* message already quotes the value: name only the flag. */
static int bad_parsed(struct arg_ctx *a, const char *flag, const char *why)
{
	snprintf(a->err, a->errlen, "ratelab serve: %s: %s", flag, why);
	return -1;
}

static int num(struct arg_ctx *a, const char *flag, const char *v, uint64_t min, uint64_t max, uint64_t *out)
{
	char why[160];

	if (parse_u64(v, min, max, out, why, sizeof(why)) < 0)
		return bad_parsed(a, flag, why);
	return 0;
}

static int dur(struct arg_ctx *a, const char *flag, const char *v, uint64_t *out)
{
	char why[160];

	if (parse_duration(v, out, why, sizeof(why)) < 0)
		return bad_parsed(a, flag, why);
	if (*out == 0)
		return bad(a, flag, v, "must be more than 0");
	return 0;
}

static int pick(struct arg_ctx *a, const char *flag, const char *v, const char *const *names, int *out)
{
	char why[160];

	for (int i = 0; names[i]; i++)
		if (strcmp(v, names[i]) == 0) {
			*out = i;
			return 0;
		}
	snprintf(why, sizeof(why), "must be one of");
	for (int i = 0; names[i]; i++)
		snprintf(why + strlen(why), sizeof(why) - strlen(why), "%s %s", i ? "," : "", names[i]);
	return bad(a, flag, v, why);
}

static int opt_layer(struct arg_ctx *a, const char *v)
{
	struct limiter_params *p = &a->c->routes[0].params;
	char why[160];

	if (p->nlayers >= LIMITER_MAX_LAYERS)
		return bad(a, "--layer", v, "at most 8 layers");
	if (parse_rate(v, &p->layers[p->nlayers].limit, &p->layers[p->nlayers].window_ns, why, sizeof(why)) < 0)
		return bad_parsed(a, "--layer", why);
	p->nlayers++;
	return 0;
}

static int opt_limits(struct arg_ctx *a, const char *f, const char *v)
{
	struct config_route *r = &a->c->routes[0];
	uint64_t n;

	if (strcmp(f, "--limiter") == 0) {
		if (!limiter_find(v))
			return bad(a, f, v, "unknown limiter");
		snprintf(r->limiter, sizeof(r->limiter), "%s", v);
		a->limiter_set = true;
		return 0;
	}
	if (strcmp(f, "--limit") == 0)
		return num(a, f, v, 1, UINT32_MAX, &r->params.limit);
	if (strcmp(f, "--burst") == 0)
		return num(a, f, v, 1, UINT32_MAX, &r->params.burst);
	if (strcmp(f, "--window") == 0)
		return dur(a, f, v, &r->params.window_ns);
	if (strcmp(f, "--layer") == 0)
		return opt_layer(a, v);
	if (strcmp(f, "--status") == 0) {
		if (num(a, f, v, 429, 503, &n) < 0 || (n != 429 && n != 503))
			return bad(a, f, v, "must be 429 or 503");
		a->c->reject_status = (int)n;
		return 0;
	}
	return 1;
}

static int opt_modes(struct arg_ctx *a, const char *f, const char *v)
{
	static const char *const ra[] = { "seconds", "http-date", "none", NULL };
	static const char *const hd[] = { "none", "ietf", "legacy", "both", NULL };
	struct server_config *c = a->c;
	char why[160];
	int i;

	if (strcmp(f, "--key") == 0) {
		if (config_parse_key(v, &c->key, c->key_header, sizeof(c->key_header), why, sizeof(why)) < 0)
			return bad(a, f, v, "must be global, ip or header:NAME");
		return 0;
	}
	if (strcmp(f, "--retry-after") == 0) {
		if (pick(a, f, v, ra, &i) < 0)
			return -1;
		c->retry_after = (enum headers_retry_after)i;
		return 0;
	}
	if (strcmp(f, "--headers") == 0) {
		if (pick(a, f, v, hd, &i) < 0)
			return -1;
		c->headers = (enum headers_mode)i;
		return 0;
	}
	if (strcmp(f, "--faults") == 0) {
		if (faults_parse(v, &c->faults, why, sizeof(why)) < 0)
			return bad(a, f, v, why);
		return 0;
	}
	if (strcmp(f, "--bind") == 0) {
		struct in6_addr addr;

		if (strlen(v) >= sizeof(c->bind) ||
		    (inet_pton(AF_INET, v, &addr) != 1 && inet_pton(AF_INET6, v, &addr) != 1))
			return bad(a, f, v, "not an IPv4 or IPv6 address");
		snprintf(c->bind, sizeof(c->bind), "%s", v);
		return 0;
	}
	return 1;
}

static int opt_bounds(struct arg_ctx *a, const char *f, const char *v)
{
	struct server_config *c = a->c;
	uint64_t n;

	if (strcmp(f, "--port") == 0) {
		if (num(a, f, v, 0, 65535, &n) < 0)
			return -1;
		c->port = (unsigned)n;
	} else if (strcmp(f, "--threads") == 0) {
		if (num(a, f, v, 1, 64, &n) < 0)
			return -1;
		c->threads = (unsigned)n;
	} else if (strcmp(f, "--max-keys") == 0) {
		c->max_keys_set = true;
		return num(a, f, v, 1, 1ULL << 32, &c->max_keys);
	} else if (strcmp(f, "--max-key-memory") == 0) {
		char why[160];

		if (parse_bytes(v, 1 << 20, SERVER_KEY_MEMORY_MAX, &c->max_key_memory, why, sizeof(why)) < 0)
			return bad_parsed(a, f, why);
	} else if (strcmp(f, "--max-connections") == 0) {
		if (num(a, f, v, 1, 1000000, &n) < 0)
			return -1;
		c->max_connections = (unsigned)n;
	} else if (strcmp(f, "--max-body") == 0) {
		if (num(a, f, v, 0, 1ULL << 30, &n) < 0)
			return -1;
		c->max_body = (size_t)n;
	} else if (strcmp(f, "--connection-timeout") == 0) {
		return dur(a, f, v, &c->connection_timeout_ns);
	} else if (strcmp(f, "--seed") == 0) {
		return num(a, f, v, 0, UINT64_MAX, &c->seed);
	} else if (strcmp(f, "--config") == 0) {
		a->config_path = v;
	} else {
		return 1;
	}
	return 0;
}

/* Apply one "--flag value"; returns 0, -1 (error), or 1 when the flag is unknown. */
static int apply(struct arg_ctx *a, const char *f, const char *v)
{
	int rc = opt_limits(a, f, v);

	if (rc == 1)
		rc = opt_modes(a, f, v);
	if (rc == 1)
		rc = opt_bounds(a, f, v);
	return rc;
}

/* The route "/" from --limiter/--limit/--layer...: layers imply the layered limiter. */
static int finish_default_route(struct arg_ctx *a)
{
	struct config_route *r = &a->c->routes[0];
	char why[200], val[24];

	if (r->params.nlayers > 0 && !a->limiter_set)
		snprintf(r->limiter, sizeof(r->limiter), "layered");
	if (r->params.nlayers > 0 && strcmp(r->limiter, "layered") != 0)
		return bad(a, "--limiter", r->limiter, "--layer works only with --limiter layered");
	if (strcmp(r->limiter, "layered") == 0 && r->params.nlayers == 0)
		return bad(a, "--limiter", "layered", "needs at least one --layer RATE");
	/* A burst below the limit is legitimate (a bucket smaller than one window's quota): allowed. */
	if (limiter_params_check(limiter_find(r->limiter), &r->params, why, sizeof(why)) < 0) {
		bool burst = strstr(why, "--burst") != NULL;

		snprintf(val, sizeof(val), "%llu", (unsigned long long)(burst ? r->params.burst : r->params.limit));
		return bad(a, burst ? "--burst" : "--limit", val, why);
	}
	return 0;
}

/* Routes of --config go after "/"; a "/" route in the file replaces the command line's. */
static int load_config(struct arg_ctx *a)
{
	struct config_route routes[CONFIG_MAX_ROUTES];
	struct server_config *c = a->c;
	size_t n = 0;

	if (config_load(a->config_path, routes, CONFIG_MAX_ROUTES, &n, a->err, a->errlen) < 0) {
		char msg[512];

		snprintf(msg, sizeof(msg), "ratelab serve: --config %s", a->err);
		snprintf(a->err, a->errlen, "%s", msg);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		if (strcmp(routes[i].prefix, "/") == 0)
			c->routes[0] = routes[i];
		else
			c->routes[c->nroutes++] = routes[i];
	}
	return 0;
}

int server_config_from_args(struct server_config *c, int argc, char **argv, char *err, size_t errlen)
{
	struct arg_ctx a = { c, err, errlen, NULL, false };

	server_config_defaults(c);
	for (int i = 1; i < argc; i++) {
		char flag[64];
		const char *arg = argv[i], *eq = strchr(arg, '='), *v;
		int rc;

		if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)
			return 1;
		if (strcmp(arg, "--query-faults") == 0 || strcmp(arg, "--quiet") == 0) {
			if (strcmp(arg, "--quiet") == 0)
				c->quiet = true;
			else
				c->query_faults = true;
			continue;
		}
		if (strncmp(arg, "--", 2) != 0 || (eq && (size_t)(eq - arg) >= sizeof(flag)))
			return bad(&a, arg, "", "unknown option (see --help)");
		snprintf(flag, sizeof(flag), "%.*s", eq ? (int)(eq - arg) : (int)strlen(arg), arg);
		v = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
		if (!v)
			return bad(&a, flag, "", "needs a value");
		rc = apply(&a, flag, v);
		if (rc == 1)
			return bad(&a, flag, v, "unknown option (see --help)");
		if (rc < 0)
			return -1;
	}
	if (finish_default_route(&a) < 0)
		return -1;
	return a.config_path ? load_config(&a) : 0;
}

/* Bytes one key takes across every route's table; "what" names the costliest route's limiter. */
static uint64_t key_bytes_all(const struct server_config *c, char *what, size_t len)
{
	uint64_t sum = 0, top = 0;

	for (size_t i = 0; i < c->nroutes; i++) {
		const struct config_route *r = &c->routes[i];
		const struct limiter_ops *ops = limiter_find(r->limiter);
		uint64_t b = ops ? store_memory_key_bytes(ops, &r->params) : 0;

		sum += b;
		if (b > top) {
			top = b;
			snprintf(what, len, "%s --limit %llu", r->limiter, (unsigned long long)r->params.limit);
		}
	}
	if (c->nroutes > 1)
		snprintf(what, len, "%zu routes", c->nroutes);
	return sum;
}

int server_config_fit_keys(struct server_config *c, uint64_t phys_bytes, char *msg, size_t len)
{
	char what[96] = "", budget[32], need[32];
	uint64_t per = key_bytes_all(c, what, sizeof(what)), fit;

	msg[0] = '\0';
	parse_format_bytes(c->max_key_memory, budget, sizeof(budget));
	if (phys_bytes > 0 && c->max_key_memory > phys_bytes) {
		parse_format_bytes(phys_bytes, need, sizeof(need));
		snprintf(msg, len, "ratelab serve: --max-key-memory %s: more than this machine's %s", budget, need);
		return -1;
	}
	fit = per > 0 ? c->max_key_memory / per : UINT64_MAX;
	if (c->max_keys <= fit)
		return 0;
	if (fit == 0) {
		snprintf(msg, len, "ratelab serve: --max-key-memory %s holds no key: %s take%s %llu bytes a key",
		         budget, what, c->nroutes > 1 ? "" : "s", (unsigned long long)per);
		return -1;
	}
	parse_format_bytes(c->max_keys * per, need, sizeof(need));
	if (c->max_keys_set) {
		snprintf(msg, len, "ratelab serve: --max-keys %llu: %s take%s %llu bytes a key, so the key tables "
		         "could grow to %s, over --max-key-memory %s; use --max-keys %llu or less, or raise "
		         "--max-key-memory", (unsigned long long)c->max_keys, what, c->nroutes > 1 ? "" : "s",
		         (unsigned long long)per, need, budget, (unsigned long long)fit);
		return -1;
	}
	snprintf(msg, len, "ratelab serve: keys per route capped at %llu (%s take%s %llu bytes a key; "
	         "--max-key-memory %s)", (unsigned long long)fit, what, c->nroutes > 1 ? "" : "s",
	         (unsigned long long)per, budget);
	c->max_keys = fit;
	return 0;
}
