/*
 * libFuzzer target: the flag parser (common/cli.h) over argv as users type
 * it, NUL-separated in the input.  Besides "no crash, no UB", it checks what
 * a caller relies on: the result is 0, 1 or -1; a mistake is one line that
 * starts "ratelab fuzz: " (a CR or LF the user typed is shown escaped); and a
 * success leaves every value inside its bounds.  It parses with a table of
 * every kind and with the real tables of `ratelab serve`.
 */
#include <stdint.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>

#include "common/cli.h"
#include "server/handlers/occ.h"
#include "server/server.h"
#include "server/server_args.h"
#include "server/store/store_redis.h"

#define FUZZ_MAX 1024
#define FUZZ_ARGS 32

struct opts {
	bool flag;
	const char *name;
	uint64_t count;
	uint16_t port;
	uint64_t wait_ns;
	double rate, ratio;
	int mode;
	const char *list[3];
	uint8_t nlist;
	char **rest;
	bool count_given;
};

static const char *const MODES[] = { "a", "bb", "", NULL };

static int odd(void *base, const struct cli_option *o, const char *v, char *why, size_t wl)
{
	(void)base;
	(void)o;
	/* a reason with a newline of its own would break the one-line rule: the caller owns that */
	return strlen(v) % 2 ? (snprintf(why, wl, "has an odd length"), -1) : 0;
}

static const struct cli_option OPTS[] = {
	{ "--flag", CLI_BOOL, CLI_FIELD(struct opts, flag) },
	{ "--name", CLI_STRING, CLI_FIELD(struct opts, name), .required = true },
	{ "--count", CLI_U64, CLI_FIELD(struct opts, count), .min = 3, .max = 1000, CLI_GIVEN(struct opts, count_given) },
	{ "--port", CLI_U64, CLI_FIELD(struct opts, port), .max = 65535 },
	{ "--wait", CLI_DURATION, CLI_FIELD(struct opts, wait_ns), .min = 1000, .max = 60000000000ULL },
	{ "--rate", CLI_RATE, CLI_FIELD(struct opts, rate), .dmin = 0.5, .dmax = 1e6 },
	{ "--ratio", CLI_DOUBLE, CLI_FIELD(struct opts, ratio), .dmin = -1, .dmax = 1 },
	{ "--mode", CLI_CHOICE, CLI_FIELD(struct opts, mode), .words = MODES },
	{ "--list", CLI_LIST, CLI_FIELD(struct opts, list), .max = 3, CLI_COUNT(struct opts, nlist) },
	{ "--even", CLI_CUSTOM, .fn = odd },
	{ "CMD", CLI_REST, CLI_FIELD(struct opts, rest) },
	{ NULL },
};

static void no_usage(FILE *f)
{
	(void)f;
}

static const struct cli_command CMD = { "fuzz", no_usage, NULL };

/* cli_parse's contract: 0, 1 (--help), -1 with one line, or 2 for `CMD --cli-options` alone. */
static void check_line(int rc, const char *err, int argc, char **argv)
{
	bool options = argc == 2 && strcmp(argv[1], "--cli-options") == 0;

	if (rc == 2 && !options)
		abort();
	if (options && rc != 2)
		abort();
	if (rc != 0 && rc != 1 && rc != -1 && rc != 2)
		abort();
	if (rc == -1 && (strncmp(err, "ratelab fuzz: ", 14) != 0 || strpbrk(err, "\r\n") != NULL))
		abort();
}

static void check_values(const struct opts *o, int argc, char **argv)
{
	if (o->count_given && (o->count < 3 || o->count > 1000))
		abort();
	if (o->wait_ns != 0 && (o->wait_ns < 1000 || o->wait_ns > 60000000000ULL))
		abort();
	if (o->rate != 0 && !(o->rate >= 0.5 && o->rate <= 1e6))
		abort();
	if (o->mode < 0 || o->mode > 2 || o->nlist > 3 || o->name == NULL)
		abort();
	if (o->rest != NULL && (o->rest < argv + 1 || o->rest > argv + argc))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct server_args sa;
	static char buf[FUZZ_MAX + 1];
	char *argv[FUZZ_ARGS + 2] = { "fuzz" }, err[256];
	struct opts o;
	struct occ_route occ;
	struct store_redis_cli store;
	struct cli_group g = { OPTS, &o };
	int argc = 1, rc;

	if (size > FUZZ_MAX)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	for (size_t i = 0; i <= size && argc <= FUZZ_ARGS; i += strlen(buf + i) + 1)
		argv[argc++] = buf + i;
	argv[argc] = NULL;
	memset(&o, 0, sizeof(o));
	rc = cli_parse(&CMD, &g, 1, argc, argv, err, sizeof(err));
	check_line(rc, err, argc, argv);
	if (rc == 0)
		check_values(&o, argc, argv);
	{
		const struct cli_group serve[] = {
			{ server_args_options, &sa }, { occ_route_options, &occ }, { store_redis_cli_options, &store },
		};

		server_args_init(&sa);
		memset(&occ, 0, sizeof(occ));
		store_redis_cli_init(&store);
		rc = cli_parse(&CMD, serve, 3, argc, argv, err, sizeof(err));
		check_line(rc, err, argc, argv);
		if (rc == 0 && (sa.cfg.threads < 1 || sa.cfg.threads > 64 || sa.cfg.port > 65535))
			abort();
	}
	return 0;
}
