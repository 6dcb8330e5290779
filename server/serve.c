/* `ratelab serve`: parse, start, wait for SIGINT/SIGTERM, drain, summarise. */
#include "server/serve.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cli.h"
#include "common/clock.h"
#include "common/parse.h"
#include "server/server.h"
#include "server/handlers/occ.h"
#include "server/handlers/scenario.h"
#include "server/store/store_redis.h"

/* The machine's memory in bytes; 0 when unknown. */
static uint64_t phys_memory(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);

	return pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : 0;
}

static void summary(struct server *srv, uint64_t ran_ns, int sig)
{
	uint64_t total, admitted, rejected;
	char dur[32];

	server_counts(srv, &total, &admitted, &rejected);
	parse_format_duration(ran_ns, dur, sizeof(dur));
	printf("ratelab serve: %s after %s: %llu requests, %llu admitted, %llu rejected\n",
	       sig == SIGINT ? "interrupted" : "stopped", dur, (unsigned long long)total,
	       (unsigned long long)admitted, (unsigned long long)rejected);
	fflush(stdout);
}

/* serve's flags that belong to no other module. */
struct serve_opts {
	const char *scenario;  /* --scenario NAME|FILE (server/handlers/scenario.h) */
};

static const struct cli_option SERVE_OPTIONS[] = {
	{ "--scenario", CLI_STRING, CLI_FIELD(struct serve_opts, scenario) },
	{ NULL },
};

static void usage(FILE *f)
{
	server_usage(f);
	occ_route_usage(f);
	store_redis_cli_usage(f);
	scenario_usage(f);
}

static const struct cli_command SERVE_CLI = { "serve", usage };

/*
 * Every serve flag, in one pass over the tables of the server, /occ and the
 * command itself; then the scenario it names.  Returns 0 to run, or -1 / 1
 * for cli_exit with err filled.
 */
static int parse(struct server_args *a, struct occ_route *occ, struct scenario **scn, int argc, char **argv,
                 char *err, size_t errlen)
{
	struct serve_opts o = { NULL };
	const struct cli_group groups[] = { { server_args_options, a }, { occ_route_options, occ }, { SERVE_OPTIONS, &o } };
	char why[400];
	int rc;

	server_args_init(a);
	rc = cli_parse(&SERVE_CLI, groups, sizeof(groups) / sizeof(groups[0]), argc, argv, err, errlen);
	if (rc == 0)
		rc = server_args_finish(a, err, errlen);
	if (rc == 0 && o.scenario != NULL && !(*scn = scenario_new(o.scenario, why, sizeof(why))))
		rc = cli_fail(err, errlen, "serve", "--scenario: %s", why);
	return rc;
}

int serve_main(int argc, char **argv)
{
	struct server_args *args = malloc(sizeof(*args));
	struct server_config *cfg = args ? &args->cfg : NULL;
	struct server *srv;
	struct occ_route occ = { 0 };  /* /occ and --delay (server/handlers/occ.h) */
	struct store_redis_cli store;  /* --store, --store-prefix, --store-failure (server/store/store_redis.h) */
	struct scenario *scn = NULL;   /* --scenario (server/handlers/scenario.h) */
	char err[512], why[400];
	sigset_t set;
	int rc = 2, sig = 0;
	uint64_t t0;

	if (!args)
		return 1;
	if (store_redis_cli_from_args(&store, &argc, argv, why, sizeof(why)) != 0) {
		fprintf(stderr, "ratelab serve: %s\n", why);
		goto free_cfg;
	}
	rc = parse(args, &occ, &scn, argc, argv, err, sizeof(err));
	if (rc != 0) {
		rc = cli_exit(&SERVE_CLI, rc, err);
		goto free_cfg;
	}
	/* Block the signals before MHD starts its threads, so only sigwait sees them. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	occ.seed = cfg->seed;
	if (!(occ.occ = occ_new()) || occ_route_register(cfg, &occ) != 0) {
		fprintf(stderr, "ratelab serve: cannot add /occ\n");
		rc = 1;
		goto free_cfg;
	}
	if (store.o.url != NULL) {
		store.o.quiet = cfg->quiet;
		cfg->store_new = store_redis_cli_store;
		cfg->store_ctx = &store;
	} else if (server_config_fit_keys(cfg, phys_memory(), err, sizeof(err)) != 0) {
		fprintf(stderr, "%s\n", err);
		rc = 2;
		goto free_cfg;
	} else if (err[0] != '\0' && !cfg->quiet) {
		fprintf(stderr, "%s\n", err);
	}
	if (scn && scenario_register(cfg, scn) != 0) {
		fprintf(stderr, "ratelab serve: cannot add the scenario\n");
		rc = 1;
		goto free_cfg;
	}
	srv = server_start(cfg, err, sizeof(err));
	if (!srv) {
		fprintf(stderr, "ratelab serve: %s\n", err);
		rc = 1;
		goto free_cfg;
	}
	t0 = clock_monotonic_ns();
	/* An IPv6 address goes in brackets in a URL. */
	printf("listening on http://%s%s%s:%d\n", strchr(cfg->bind, ':') ? "[" : "",
	       cfg->bind[0] == '0' && cfg->bind[1] == '.' ? "127.0.0.1" : cfg->bind, strchr(cfg->bind, ':') ? "]" : "",
	       server_port(srv));
	fflush(stdout);
	sigwait(&set, &sig);
	server_drain(srv);
	summary(srv, clock_monotonic_ns() - t0, sig);
	server_stop(srv);
	rc = 0;
free_cfg:
	occ_free(occ.occ);
	scenario_free(scn);
	free(args);
	return rc;
}
