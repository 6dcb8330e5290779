/* `ratelab serve --store/--store-prefix/--store-failure`: the Redis store's flags (store_redis.h). */
#include "server/store/store_redis.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/clock.h"

void store_redis_cli_usage(FILE *f)
{
	fprintf(f, "  --store URL               where limiter state lives: memory (default) or\n"
	           "                            redis://HOST:PORT[/DB], shared by every replica\n"
	           "  --store-prefix P          Redis key namespace (default %s)\n"
	           "  --store-failure MODE      Redis unreachable: open admits, closed answers 503\n"
	           "                            (default open)\n",
	           STORE_REDIS_DEFAULT_PREFIX);
}

/* The value of flag `name` at argv[*i] (as "--name V" or "--name=V"), or NULL when argv[*i] is not it. */
static const char *cli_flag(const char *name, int argc, char **argv, int *i, bool *missing)
{
	size_t n = strlen(name);

	if (strncmp(argv[*i], name, n) != 0)
		return NULL;
	if (argv[*i][n] == '=')
		return argv[*i] + n + 1;
	if (argv[*i][n] != '\0')
		return NULL;
	if (*i + 1 >= argc) {
		*missing = true;
		return NULL;
	}
	return argv[++*i];
}

static int cli_apply(struct store_redis_cli *c, const char *flag, const char *v, char *err, size_t errlen)
{
	char host[256];
	int port, db;

	if (strcmp(flag, "--store-failure") == 0)
		return store_redis_parse_failure(v, &c->o.fail_closed, err, errlen);
	if (strcmp(flag, "--store-prefix") == 0) {
		if (strlen(v) >= 100 || strpbrk(v, " \t\r\n") != NULL) {
			snprintf(err, errlen, "--store-prefix: bad value '%s' (at most 99 bytes, no spaces)", v);
			return -1;
		}
		c->o.prefix = v;
		return 0;
	}
	if (strcmp(v, "memory") == 0) {
		c->o.url = NULL;
		return 0;
	}
	if (store_redis_parse_url(v, host, sizeof(host), &port, &db, err, errlen) < 0)
		return -1;
	c->o.url = v;
	return 0;
}

int store_redis_cli_from_args(struct store_redis_cli *c, int *argc, char **argv, char *err, size_t errlen)
{
	static const char *const flags[] = { "--store-prefix", "--store-failure", "--store" };
	int out = 1;

	memset(c, 0, sizeof(*c));
	store_redis_options_init(&c->o);
	c->o.seed = clock_wall_ns();
	for (int i = 1; i < *argc; i++) {
		const char *v = NULL, *flag = NULL;
		bool missing = false;

		for (size_t f = 0; f < 3 && v == NULL && !missing; f++)
			if ((v = cli_flag(flags[f], *argc, argv, &i, &missing)) != NULL || missing)
				flag = flags[f];
		if (missing) {
			snprintf(err, errlen, "%s: missing value", flag);
			return -1;
		}
		if (v == NULL)
			argv[out++] = argv[i];
		else if (cli_apply(c, flag, v, err, errlen) < 0)
			return -1;
	}
	*argc = out;
	argv[out] = NULL;
	return 0;
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
