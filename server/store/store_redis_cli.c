/* `ratelab serve --store/--store-prefix/--store-failure/--store-timeout`: the Redis store's flags (store_redis.h). */
#include "server/store/store_redis.h"

#include <stdio.h>
#include <string.h>

#include "common/clock.h"

/* --store memory | redis://HOST:PORT[/DB]; a URL is checked now, connected to at start. */
static int opt_store(void *base, const struct cli_option *o, const char *v, char *why, size_t wl)
{
	struct store_redis_cli *c = base;
	char host[256], inner[200];
	int port, db;

	(void)o;
	if (strcmp(v, "memory") == 0) {
		c->o.url = NULL;
		return 0;
	}
	if (store_redis_parse_url(v, host, sizeof(host), &port, &db, inner, sizeof(inner)) < 0)
		return snprintf(why, wl, "is not memory or redis://HOST:PORT[/DB]"), -1;
	c->o.url = v;
	return 0;
}

static int opt_prefix(void *base, const struct cli_option *o, const char *v, char *why, size_t wl)
{
	(void)o;
	if (strlen(v) >= 100 || strpbrk(v, " \t\r\n") != NULL)
		return snprintf(why, wl, "is not a key prefix (at most 99 bytes, no spaces)"), -1;
	((struct store_redis_cli *)base)->o.prefix = v;
	return 0;
}

static const char *const FAILURE_MODES[] = { "open", "closed", NULL };  /* o.fail_closed */

const struct cli_option store_redis_cli_options[] = {
	{ "--store", CLI_CUSTOM, .fn = opt_store, .section = CLI_SEC_ADVANCED, .arg = "URL",
	  .help = "where limiter state lives: memory (default) or redis://HOST:PORT[/DB], shared "
	          "by every replica" },
	{ "--store-prefix", CLI_CUSTOM, .fn = opt_prefix, .section = CLI_SEC_ADVANCED, .arg = "P",
	  .help = "Redis key namespace (default " STORE_REDIS_DEFAULT_PREFIX ")" },
	{ "--store-failure", CLI_CHOICE, CLI_FIELD(struct store_redis_cli, o.fail_closed), .words = FAILURE_MODES, .section = CLI_SEC_ADVANCED, .arg = "open|closed",
	  .help = "Redis unreachable: open admits (default), closed answers 503" },
	{ "--store-timeout", CLI_DURATION, CLI_FIELD(struct store_redis_cli, o.timeout_ns), .min = NS_PER_MS,
	  .max = 10 * NS_PER_SEC, .section = CLI_SEC_ADVANCED, .arg = "DUR",
	  .help = "how long a decision waits for Redis before --store-failure applies (default 50ms; 1ms..10s): "
	          "raise it for a Redis across a network" },
	{ NULL },
};

void store_redis_cli_init(struct store_redis_cli *c)
{
	memset(c, 0, sizeof(*c));
	store_redis_options_init(&c->o);
	c->o.seed = clock_wall_ns();
}

struct store *store_redis_cli_store(void *ctx, const struct limiter_ops *ops, const struct limiter_params *p,
                                    size_t max_keys, char *err, size_t errlen)
{
	struct store_redis_cli *c = ctx;
	struct store_redis_options o = c->o;
	char prefix[128];

	(void)max_keys;
	if (c->routes > 0) {
		snprintf(prefix, sizeof(prefix), "%sr%u:", o.prefix ? o.prefix : STORE_REDIS_DEFAULT_PREFIX, c->routes);
		o.prefix = prefix;
	}
	c->routes++;
	return store_redis_new(ops, p, &o, err, errlen);
}
