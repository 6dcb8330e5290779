/* `ratelab serve` options: defaults, parsing and --help (the rest of server.h is in server.c). */
#include "server/server_args.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cli.h"
#include "common/clock.h"
#include "common/parse.h"
#include "server/clients.h"
#include "server/handlers/builtin.h"
#include "server/proxy/upstream.h"
#include "server/store/store.h"

#define SERVER_MAX_KEYS_DEFAULT   100000
#define SERVER_KEY_MEMORY_DEFAULT (64ULL << 20)
#define SERVER_KEY_MEMORY_MAX     (1ULL << 50)
#define SERVER_SUBSCRIBERS_DEFAULT 32

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
	c->ipv6_prefix = 64;
	c->threads = 2;
	c->max_keys = SERVER_MAX_KEYS_DEFAULT;
	c->max_key_memory = SERVER_KEY_MEMORY_DEFAULT;
	c->connection_timeout_ns = 30 * NS_PER_SEC;
	c->header_timeout_ns = 10 * NS_PER_SEC;
	c->body_timeout_ns = 30 * NS_PER_SEC;
	c->max_body = 64 * 1024;
	c->upstream_max_conns = 64;
	c->upstream_connect_timeout_ns = 5 * NS_PER_SEC;
	c->upstream_timeout_ns = 30 * NS_PER_SEC;
	c->upstream_max_body = 1 << 20;
	c->seed = 1;
	c->top_clients = CLIENTS_TOP_DEFAULT;
	c->max_subscribers = SERVER_SUBSCRIBERS_DEFAULT;
	c->plugin = &builtin_plugin;
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

static int opt_bind(void *base, const struct cli_option *o, const char *v, char *why, size_t wl)
{
	struct server_args *a = base;
	struct in6_addr addr;

	(void)o;
	if (strlen(v) >= sizeof(a->cfg.bind) ||
	    (inet_pton(AF_INET, v, &addr) != 1 && inet_pton(AF_INET6, v, &addr) != 1))
		return snprintf(why, wl, "is not an IPv4 or IPv6 address"), -1;
	snprintf(a->cfg.bind, sizeof(a->cfg.bind), "%s", v);
	return 0;
}

static int opt_limiter(void *base, const struct cli_option *o, const char *v, char *why, size_t wl)
{
	struct config_route *r = &((struct server_args *)base)->cfg.routes[0];

	(void)o;
	if (!limiter_find(v))
		return snprintf(why, wl, "is not one of %s", limiter_names()), -1;
	snprintf(r->limiter, sizeof(r->limiter), "%s", v);
	return 0;
}

static int opt_layer(void *base, const struct cli_option *o, const char *v, char *why, size_t wl)
{
	struct limiter_params *p = &((struct server_args *)base)->cfg.routes[0].params;

	(void)o;
	if (p->nlayers >= LIMITER_MAX_LAYERS)
		return snprintf(why, wl, "is one too many (at most %d layers)", LIMITER_MAX_LAYERS), -1;
	if (parse_rate(v, &p->layers[p->nlayers].limit, &p->layers[p->nlayers].window_ns, NULL, 0) < 0)
		return snprintf(why, wl, "is not a rate such as 5/s or 30/1m"), -1;
	p->nlayers++;
	return 0;
}

static int opt_key(void *base, const struct cli_option *o, const char *v, char *why, size_t wl)
{
	struct server_config *c = &((struct server_args *)base)->cfg;

	(void)o;
	if (config_parse_key(v, &c->key, c->key_header, sizeof(c->key_header), NULL, 0) < 0)
		return snprintf(why, wl, "is not one of global, ip, header:NAME"), -1;
	return 0;
}

static int opt_status(void *base, const struct cli_option *o, const char *v, char *why, size_t wl)
{
	(void)o;
	if (strcmp(v, "429") != 0 && strcmp(v, "503") != 0)
		return snprintf(why, wl, "is not one of 429, 503"), -1;
	((struct server_args *)base)->cfg.reject_status = atoi(v);
	return 0;
}

static int opt_faults(void *base, const struct cli_option *o, const char *v, char *why, size_t wl)
{
	char inner[160];

	(void)o;
	if (faults_parse(v, &((struct server_args *)base)->cfg.faults, inner, sizeof(inner)) < 0)
		return snprintf(why, wl, "is not a fault list: %s", inner), -1;
	return 0;
}

static int opt_key_memory(void *base, const struct cli_option *o, const char *v, char *why, size_t wl)
{
	char lo[32], hi[32];

	(void)o;
	if (parse_bytes(v, 1 << 20, SERVER_KEY_MEMORY_MAX, &((struct server_args *)base)->cfg.max_key_memory, NULL,
	                0) == 0)
		return 0;
	parse_format_bytes(1 << 20, lo, sizeof(lo));
	parse_format_bytes(SERVER_KEY_MEMORY_MAX, hi, sizeof(hi));
	return snprintf(why, wl, "is not a size such as 64M or 1G from %s to %s", lo, hi), -1;
}

static int opt_upstream(void *base, const struct cli_option *o, const char *v, char *why, size_t wl)
{
	struct server_args *a = base;

	(void)o;
	if (!upstream_url_ok(v, why, wl))
		return -1;
	snprintf(a->cfg.upstream, sizeof(a->cfg.upstream), "%s", v);
	return 0;
}

static int opt_admin_token(void *base, const struct cli_option *o, const char *v, char *why, size_t wl)
{
	struct server_config *c = &((struct server_args *)base)->cfg;

	(void)o;
	if (v[0] == '\0' || strlen(v) >= sizeof(c->admin_token))
		return snprintf(why, wl, "is not a token of 1 to %zu characters", sizeof(c->admin_token) - 1), -1;
	for (const char *p = v; *p; p++)
		if (*p <= ' ' || *p > '~')
			return snprintf(why, wl, "has a space or a character that is not printable ASCII"), -1;
	snprintf(c->admin_token, sizeof(c->admin_token), "%s", v);
	return 0;
}

/* --capacity SPEC: a modelled backend behind route "/" (server/capacity.h). */
static int opt_capacity(void *base, const struct cli_option *o, const char *v, char *why, size_t wl)
{
	struct capacity_params *p = &((struct server_args *)base)->cfg.routes[0].capacity;
	char inner[200];

	(void)o;
	if (capacity_parse(v, p, inner, sizeof(inner)) < 0)
		return snprintf(why, wl, "is not a backend such as workers=4,service=10ms,queue=fifo:1000 (%s)", inner), -1;
	return 0;
}

/* --trigger F@START+LEN, repeatable: capacity down to F for LEN from START. */
static int opt_trigger(void *base, const struct cli_option *o, const char *v, char *why, size_t wl)
{
	struct capacity_params *p = &((struct server_args *)base)->cfg.routes[0].capacity;
	char inner[200];

	(void)o;
	if (p->ntriggers == CAPACITY_MAX_TRIGGERS)
		return snprintf(why, wl, "is one too many (at most %d triggers)", CAPACITY_MAX_TRIGGERS), -1;
	if (capacity_trigger_parse(v, &p->triggers[p->ntriggers], inner, sizeof(inner)) < 0)
		return snprintf(why, wl, "is not a trigger such as 25%%@5s+3s (%s)", inner), -1;
	p->ntriggers++;
	return 0;
}

static const char *key_words(void)
{
	return "global, ip, header:";
}

static const char *status_words(void)
{
	return "429, 503";
}

static const char *const RETRY_AFTER_WORDS[] = { "seconds", "http-date", "none", NULL };

static const char *headers_words(void)
{
	return "ietf, draft-03, x-ratelimit, github, legacy, both, retry-after-only, none";
}
/* --headers LIST: rate-limit dialects (headers.h), e.g. ietf or draft-03,github. */
static int opt_headers(void *base, const struct cli_option *o, const char *v, char *why, size_t wl)
{
	(void)o;
	return headers_parse_dialects(v, &((struct server_args *)base)->cfg.headers, why, wl);
}

#define SA(member) CLI_FIELD(struct server_args, member)
#define SERVER_STR_(x) #x
#define SERVER_STR(x) SERVER_STR_(x)

const struct cli_option server_args_options[] = {
	{ "--bind", CLI_CUSTOM, .fn = opt_bind, .section = CLI_SEC_RUN, .arg = "ADDR",
	  .help = "listen address (default 127.0.0.1; 0.0.0.0 or :: for a room: every address, "
	          ":: IPv4 ones too)" },
	{ "--port", CLI_U64, SA(cfg.port), .max = 65535, .section = CLI_SEC_RUN, .arg = "N",
	  .help = "port (default 8080; 0 picks a free one)" },
	{ "--limiter", CLI_CUSTOM, .fn = opt_limiter, .values = limiter_names, CLI_GIVEN(struct server_args, limiter_set), .section = CLI_SEC_DOES, .arg = "NAME",
	  .help = "the algorithm (default token-bucket)." },
	{ "--limit", CLI_U64, SA(cfg.routes[0].params.limit), .min = 1, .max = UINT32_MAX, .section = CLI_SEC_DOES, .arg = "N",
	  .help = "requests per window (default 10)" },
	{ "--window", CLI_DURATION, SA(cfg.routes[0].params.window_ns), .min = 1, .max = UINT64_MAX, .section = CLI_SEC_DOES, .arg = "DUR",
	  .help = "window, e.g. 1s, 250ms, 1m (default 1s)" },
	{ "--burst", CLI_U64, SA(cfg.routes[0].params.burst), .min = 1, .max = UINT32_MAX, .section = CLI_SEC_DOES, .arg = "N",
	  .help = "bucket capacity / allowed excess (default: the limit)" },
	{ "--layer", CLI_CUSTOM, .fn = opt_layer, .section = CLI_SEC_DOES, .arg = "RATE",
	  .help = "a layer of the layered limiter, e.g. 30/1m; repeatable" },
	{ "--key", CLI_CUSTOM, .fn = opt_key, .values = key_words, .section = CLI_SEC_DOES, .arg = "global|ip|header:NAME",
	  .help = "what is limited (default ip; a request without the header falls back to its "
	          "IP address)" },
	{ "--status", CLI_CUSTOM, .fn = opt_status, .values = status_words, .section = CLI_SEC_DOES, .arg = "429|503",
	  .help = "rejection status (default 429)" },
	{ "--retry-after", CLI_CHOICE, SA(cfg.retry_after), .words = RETRY_AFTER_WORDS, .section = CLI_SEC_DOES, .arg = "seconds|http-date|none",
	  .help = "the Retry-After of a rejection (default seconds: the wait rounded up, never 0; "
	          "http-date: the first whole second at or after the wait ends)" },
	{ "--headers", CLI_CUSTOM, .fn = opt_headers, .values = headers_words, .section = CLI_SEC_DOES, .arg = "LIST",
	  .help = "rate-limit fields, a comma list of ietf (RateLimit-Policy and RateLimit, t = "
	          "seconds until more quota), draft-03 (RateLimit-Limit/-Remaining/-Reset), "
	          "x-ratelimit (Envoy's lowercase x-ratelimit-*), github (X-RateLimit-* with -Used, "
	          "-Resource and -Reset in epoch seconds), legacy (X-RateLimit-Limit/-Remaining/-Reset, "
	          "delta seconds), both (ietf,legacy); or retry-after-only, or none (not even "
	          "Retry-After) (default ietf)" },
	{ "--threads", CLI_U64, SA(cfg.threads), .min = 1, .max = 64, .section = CLI_SEC_ADVANCED, .arg = "N",
	  .help = "listeners, one thread each, sharing the port (default 2)" },
	{ "--max-keys", CLI_U64, SA(cfg.max_keys), .min = 1, .max = 1ULL << 32,
	  CLI_GIVEN(struct server_args, cfg.max_keys_set), .section = CLI_SEC_ADVANCED, .arg = "N",
	  .help = "cap of each route's per-key state table, LRU-evicted (default 100000, or "
	          "fewer when the limiter's state is large: as many as fit --max-key-memory)" },
	{ "--max-key-memory", CLI_CUSTOM, .fn = opt_key_memory, .section = CLI_SEC_ADVANCED, .arg = "SIZE",
	  .help = "memory the key tables may grow to, e.g. 64M, 1G (K, M, G are 1024-based; KB "
	          "and KiB read the same); a --max-keys that does not fit is refused (default "
	          "64M)" },
	{ "--max-connections", CLI_U64, SA(cfg.max_connections), .min = 1, .max = 1000000, .section = CLI_SEC_ADVANCED, .arg = "N",
	  .help = "connections open at once; past it a new one is closed (default: what the "
	          "open-file limit allows, raised to its hard value, at most "
	          SERVER_STR(SERVER_CONNECTIONS_DEFAULT) ")" },
	{ "--max-connections-per-ip", CLI_U64, SA(cfg.max_connections_per_ip), .min = 1, .max = 1000000, .section = CLI_SEC_ADVANCED, .arg = "N",
	  .help = "connections one client address may hold (default: three quarters of "
	          "--max-connections)" },
	{ "--ipv6-prefix", CLI_U64, SA(cfg.ipv6_prefix), .min = 1, .max = 128, .section = CLI_SEC_ADVANCED, .arg = "N",
	  .help = "an IPv6 client is its first N bits, for --key ip, the per-address connection "
	          "cap and /events' share (default 64: one host's /64 is one client; 128: every "
	          "address)" },
	{ "--connection-timeout", CLI_DURATION, SA(cfg.connection_timeout_ns), .min = 1, .max = UINT64_MAX, .section = CLI_SEC_ADVANCED, .arg = "DUR",
	  .help = "idle connection timeout (default 30s)" },
	{ "--header-timeout", CLI_DURATION, SA(cfg.header_timeout_ns), .min = NS_PER_MS, .max = 24 * 3600 * NS_PER_SEC, .section = CLI_SEC_ADVANCED, .arg = "DUR",
	  .help = "a request head (request line and headers) must be in within DUR of the "
	          "connection opening or of its previous answer, else the connection closes "
	          "(default 10s)" },
	{ "--body-timeout", CLI_DURATION, SA(cfg.body_timeout_ns), .min = NS_PER_MS, .max = 24 * 3600 * NS_PER_SEC, .section = CLI_SEC_ADVANCED, .arg = "DUR",
	  .help = "a request body must be in within DUR of its head, else it gets 408 and the "
	          "connection closes (default 30s)" },
	{ "--max-body", CLI_BYTES, SA(cfg.max_body), .max = 1ULL << 30, .section = CLI_SEC_ADVANCED, .arg = "SIZE",
	  .help = "larger request bodies get 413, e.g. 64K, 1M (default 64K); a chunked body is cut "
	          "where it passes the limit: the connection closes unanswered" },
	{ "--faults", CLI_CUSTOM, .fn = opt_faults, .section = CLI_SEC_DOES, .arg = "SPEC",
	  .help = "faults in percent of answers, e.g. 503:5,502:2,reset:1,delay=50ms:20 "
	          "(statuses replace admitted answers, reset closes the connection unanswered, "
	          "no-retry-after drops the header from rejections, delay holds the answer)" },
	{ "--query-faults", CLI_BOOL, SA(cfg.query_faults), .section = CLI_SEC_DOES,
	  .help = "accept ?status=503:50&delay=50ms on limited paths" },
	{ "--seed", CLI_U64, SA(cfg.seed), .max = UINT64_MAX, .section = CLI_SEC_ADVANCED, .arg = "N",
	  .help = "seed of the fault draws (default 1)" },
	{ "--admin-token", CLI_CUSTOM, .fn = opt_admin_token, .section = CLI_SEC_ADVANCED, .arg = "T",
	  .help = "admin endpoints (POST /reset) also answer clients that are not on loopback "
	          "when they send Authorization: Bearer T (by default they answer loopback "
	          "clients only; a form or text/plain body or a foreign Origin is refused either "
	          "way); the dashboard's room herd button sends T when the page's address ends in "
	          "#token=T" },
	{ "--config", CLI_STRING, SA(config_path), .section = CLI_SEC_RUN, .arg = "FILE",
	  .help = "JSON routes, e.g. {\"routes\":[{\"prefix\":\"/api\", \"limiter\":\"gcra\", "
	          "\"limit\":5, \"window\":\"1s\", \"burst\":10, \"key\":\"ip\"}]}" },
	{ "--capacity", CLI_CUSTOM, .fn = opt_capacity, .section = CLI_SEC_DOES, .arg = "SPEC",
	  .help = "a modelled backend behind the limiter, e.g. "
	          "workers=4,service=10ms,queue=fifo:1000: virtual workers, a service time "
	          "(10ms, 10ms±2ms or exp:10ms) and a queue (fifo or lifo[:N]); "
	          "queue-timeout=DUR drops requests that waited longer, reject-cost=F makes a "
	          "refusal cost F service times.  A request whose client has gone is still "
	          "served; /stats counts that work apart" },
	{ "--trigger", CLI_CUSTOM, .fn = opt_trigger, .section = CLI_SEC_DOES, .arg = "F@START+LEN",
	  .help = "with --capacity: only F of the workers (25% or 0.25) from START for LEN, "
	          "counted from the start or POST /reset; repeatable" },
	{ "--upstream", CLI_CUSTOM, .fn = opt_upstream, .section = CLI_SEC_DOES, .arg = "URL",
	  .help = "a rate-limiting reverse proxy: admitted requests on limited paths go to URL "
	          "(http:// or https://, maybe with a path prefix) and get its answer plus the "
	          "RateLimit headers; rejections get the limiter's answer.  Its failures are 502, "
	          "its timeouts 504 (/stats \"upstream\")" },
	{ "--upstream-connections", CLI_U64, SA(cfg.upstream_max_conns), .min = 1, .max = 4096, .needs = "--upstream", .section = CLI_SEC_ADVANCED, .arg = "N",
	  .help = "connections to the upstream at once (default 64)" },
	{ "--upstream-connect-timeout", CLI_DURATION, SA(cfg.upstream_connect_timeout_ns), .min = NS_PER_MS, .needs = "--upstream",
	  .max = 3600 * NS_PER_SEC, .section = CLI_SEC_ADVANCED, .arg = "DUR",
	  .help = "the upstream's connection set-up (default 5s)" },
	{ "--upstream-timeout", CLI_DURATION, SA(cfg.upstream_timeout_ns), .min = NS_PER_MS, .max = 3600 * NS_PER_SEC, .needs = "--upstream", .section = CLI_SEC_ADVANCED, .arg = "DUR",
	  .help = "the whole exchange with the upstream, then 504 (default 30s)" },
	{ "--upstream-max-body", CLI_BYTES, SA(cfg.upstream_max_body), .min = 1, .max = 1ULL << 30, .needs = "--upstream", .section = CLI_SEC_ADVANCED, .arg = "SIZE",
	  .help = "largest upstream answer body, e.g. 8M; larger is 502 (default 1M; request "
	          "bodies are bounded by --max-body); one announced larger is 502, one that grows past "
	          "it is cut.  Answers are streamed: 64 KiB of each is held while its client is behind" },
	{ "--quiet", CLI_BOOL, SA(cfg.quiet), .section = CLI_SEC_OUTPUT,
	  .help = "no log lines on stderr" },
	{ "--top-clients", CLI_U64, SA(cfg.top_clients), .min = 1, .max = 1000, .section = CLI_SEC_OUTPUT, .arg = "N",
	  .help = "clients /dashboard, /stats and /metrics show by name, the most active first; "
	          "the rest in one row (default 50)" },
	{ "--max-subscribers", CLI_U64, SA(cfg.max_subscribers), .min = 1, .max = 1024, .section = CLI_SEC_ADVANCED, .arg = "N",
	  .help = "/events streams (open dashboards) at once (default 32), a quarter of them from "
	          "one address; an eighth kept for admin clients (the projector's dashboard)" },
	{ NULL },
};

void server_args_init(struct server_args *a)
{
	memset(a, 0, sizeof(*a));
	server_config_defaults(&a->cfg);
}

/* The route "/" from --limiter/--limit/--layer...: layers imply the layered limiter. */
static int finish_default_route(struct server_args *a, char *err, size_t errlen)
{
	struct config_route *r = &a->cfg.routes[0];
	char why[200];

	if (r->params.nlayers > 0 && !a->limiter_set)
		snprintf(r->limiter, sizeof(r->limiter), "layered");
	if (r->params.nlayers > 0 && strcmp(r->limiter, "layered") != 0)
		return cli_bad_value(err, errlen, "serve", "--limiter", r->limiter, "does not take --layer (only layered does)");
	if (strcmp(r->limiter, "layered") == 0 && r->params.nlayers == 0)
		return cli_bad_value(err, errlen, "serve", "--limiter", "layered", "needs at least one --layer RATE");
	if (r->params.burst != 0 && limiter_find(r->limiter) && !limiter_find(r->limiter)->burst)
		return cli_bad_value(err, errlen, "serve", "--limiter", r->limiter,
		                     "takes no --burst (token-bucket, leaky-bucket and gcra do)");
	if (r->capacity.ntriggers > 0 && r->capacity.workers == 0)
		return cli_fail(err, errlen, "serve", "--trigger needs --capacity (a trigger takes capacity away)");
	/* A burst below the limit is legitimate (a bucket smaller than one window's quota): allowed. */
	if (limiter_params_check(limiter_find(r->limiter), &r->params, why, sizeof(why)) < 0)
		return cli_fail(err, errlen, "serve", "%s", why);
	return 0;
}

/*
 * Routes of --config go after "/"; a "/" route in the file replaces the
 * command line's, which must then have been left as it was: a --capacity or
 * --limit given too would be dropped without a word.
 */
static int load_config(struct server_args *a, bool root_flags, char *err, size_t errlen)
{
	struct config_route routes[CONFIG_MAX_ROUTES];
	struct server_config *c = &a->cfg;
	char why[400];
	size_t n = 0;

	if (config_load(a->config_path, routes, CONFIG_MAX_ROUTES, &n, why, sizeof(why)) < 0)
		return cli_fail(err, errlen, "serve", "--config: %s", why);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(routes[i].prefix, "/") == 0 && root_flags)
			return cli_fail(err, errlen, "serve", "--config: %s has a \"/\" route, which replaces the flags "
			                "given for \"/\" (--limiter, --limit, --window, --burst, --layer, --capacity, "
			                "--trigger): put them in that route, or leave it out", a->config_path);
		if (strcmp(routes[i].prefix, "/") == 0)
			c->routes[0] = routes[i];
		else
			c->routes[c->nroutes++] = routes[i];
	}
	return 0;
}

int server_args_finish(struct server_args *a, char *err, size_t errlen)
{
	struct config_route untouched;
	bool root_flags;

	/* whether a flag set the route "/", before its defaults are filled in */
	config_route_defaults(&untouched, "/");
	root_flags = memcmp(&a->cfg.routes[0], &untouched, sizeof(untouched)) != 0;
	if (finish_default_route(a, err, errlen) < 0)
		return -1;
	return a->config_path ? load_config(a, root_flags, err, errlen) : 0;
}

static void serve_usage_only(FILE *f)
{
	(void)f;  /* server_config_from_args returns 1 for --help; its caller writes the usage */
}

int server_config_from_args(struct server_config *c, int argc, char **argv, char *err, size_t errlen)
{
	static const struct cli_command SERVE = { "serve", serve_usage_only, NULL };
	struct server_args *a = malloc(sizeof(*a));
	struct cli_group g = { server_args_options, a };
	int rc;

	if (a == NULL)
		return cli_fail(err, errlen, "serve", "out of memory");
	server_args_init(a);
	rc = cli_parse(&SERVE, &g, 1, argc, argv, err, errlen);
	if (rc == 0)
		rc = server_args_finish(a, err, errlen);
	*c = a->cfg;
	free(a);
	return rc;
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

int server_config_fit_connections(struct server_config *c, uint64_t nofile, char *msg, size_t len)
{
	uint64_t keep = 64 + 4 * (uint64_t)(c->threads ? c->threads : 1);
	uint64_t room = nofile > keep + 1 ? nofile - keep : 1;

	msg[0] = '\0';
	if (c->max_connections > room) {
		snprintf(msg, len, "ratelab serve: --max-connections %u: the open-file limit is %llu and the server "
		         "keeps %llu for itself; use --max-connections %llu or less, or raise the limit (ulimit -n)",
		         c->max_connections, (unsigned long long)nofile, (unsigned long long)keep,
		         (unsigned long long)room);
		return -1;
	}
	if (c->max_connections == 0)
		c->max_connections = (unsigned)(room < SERVER_CONNECTIONS_DEFAULT ? room : SERVER_CONNECTIONS_DEFAULT);
	if (c->max_connections_per_ip == 0)
		c->max_connections_per_ip = c->max_connections - c->max_connections / 4;
	return 0;
}
