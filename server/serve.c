/* `ratelab serve`: parse, start, wait for SIGINT/SIGTERM/SIGHUP, drain, summarise. */
#include "server/serve.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/cli.h"
#include "common/clock.h"
#include "common/parse.h"
#include "server/server.h"
#include "server/server_args.h"
#include "server/handlers/occ.h"
#include "server/handlers/room.h"
#include "server/handlers/scenario.h"
#include "server/handlers/scenario_server.h"
#include "server/store/store_redis.h"

/* The exit code of a second SIGINT/SIGTERM during the drain (serve --help says it). */
#define SERVE_EXIT_FORCED 3

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
	{ "--scenario", CLI_STRING, CLI_FIELD(struct serve_opts, scenario), .values = scenario_builtin_names, .section = CLI_SEC_DOES, .arg = "NAME|FILE",
	  .help = "answer limited paths from a script instead of the limiter (client "
	          "conformance, see 'ratelab verify --help'); GET /scenario lists the arrivals; "
	          "built-ins: 'ratelab verify --list'.  With --upstream, its 2xx steps pass the "
	          "request to the upstream and relay the answer" },
	{ NULL },
};

#define SERVE_STR_(x) #x
#define SERVE_STR(x) SERVE_STR_(x)

static const struct cli_option *const SERVE_TABLES[] = {
	server_args_options, SERVE_OPTIONS, occ_route_options, store_redis_cli_options, NULL,
};

static const struct cli_help SERVE_HELP = {
	.usage = "ratelab serve [options]",
	.about = "A rate-limited HTTP lab server.  Every path is limited except /dashboard (the live "
	         "page for a projector), /play (the attendees' page: pick or write a retry policy, run "
	         "it against /, compare runs), /room (the room herd: GET, POST to arm it, admin), "
	         "/events (its figures as Server-Sent Events; ?only=announcements: only the room herd's), /stats (JSON), "
	         "/metrics (Prometheus), POST /reset (clear limiter state and stats; loopback or "
	         "--admin-token only), /occ (one versioned record: see --delay) and /healthz.  A client may name itself in the dashboard with "
	         "an X-Client-Name header.  Prints 'listening on http://ADDR:PORT' when ready, then "
	         "the dashboard's URL (with --bind 0.0.0.0 or ::, first one URL per LAN address for "
	         "the attendees, their /play page; the dashboard's on loopback, where its room herd "
	         "button, an admin action, works).",
	.tables = SERVE_TABLES,
	.notes = "SIGINT, SIGTERM or SIGHUP (the terminal closed) drains: no new connections,\n"
	         "requests in flight answered (a body still arriving gets 503), at most 5 s.\n",
	.exits = "0\tafter the drain\n"
	         "1\tthe server cannot start\n"
	         "2\ta bad flag or value\n"
	         SERVE_STR(SERVE_EXIT_FORCED) "\ta second signal cut the drain short\n"
	         CLI_EXIT_WRITE_LINE,
};

static const struct cli_command SERVE_CLI = { "serve", NULL, &SERVE_HELP };

/* What serve wires together: the server's config and the parts its flags configure. */
struct serve_parts {
	struct server_args args;        /* the server's own flags and config */
	struct occ_route occ;           /* /occ and --delay (server/handlers/occ.h) */
	struct store_redis_cli store;   /* --store, --store-prefix, --store-failure (server/store/store_redis.h) */
	struct scenario *scn;           /* --scenario (server/handlers/scenario.h) */
	struct room *room;              /* /room: the room herd (server/handlers/room.h) */
};

/*
 * Every serve flag, in one pass over the tables of the server, /occ, the
 * Redis store and the command itself; then the scenario it names.  Returns 0
 * to run, or -1 / 1 for cli_exit with err filled.
 */
static int parse(struct serve_parts *p, int argc, char **argv, char *err, size_t errlen)
{
	struct serve_opts o = { NULL };
	const struct cli_group groups[] = {
		{ server_args_options, &p->args }, { occ_route_options, &p->occ },
		{ store_redis_cli_options, &p->store }, { SERVE_OPTIONS, &o },
	};
	char why[400];
	int rc;

	server_args_init(&p->args);
	store_redis_cli_init(&p->store);
	rc = cli_parse(&SERVE_CLI, groups, sizeof(groups) / sizeof(groups[0]), argc, argv, err, errlen);
	if (rc == 0)
		rc = server_args_finish(&p->args, err, errlen);
	if (rc == 0 && o.scenario != NULL && !(p->scn = scenario_new(o.scenario, why, sizeof(why))))
		rc = cli_fail(err, errlen, "serve", "--scenario: %s", why);
	return rc;
}

/*
 * Raise the open-file limit to its hard value (connections are descriptors)
 * and size the connection limits to it; 0, or 2 after the message when
 * --max-connections does not fit.
 */
static int fit_connections(struct server_config *cfg)
{
	struct rlimit rl;
	uint64_t nofile = 1024;
	char msg[320];

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		if (rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
			getrlimit(RLIMIT_NOFILE, &rl);
		}
		nofile = rl.rlim_cur == RLIM_INFINITY ? (1ULL << 20) : (uint64_t)rl.rlim_cur;
	}
	if (server_config_fit_connections(cfg, nofile, msg, sizeof(msg)) == 0)
		return 0;
	fprintf(stderr, "%s\n", msg);
	return 2;
}

/* Hook /occ, the store and the scenario into the config; 0, or the exit code after a message. */
static int wire(struct serve_parts *p)
{
	struct server_config *cfg = &p->args.cfg;
	char msg[512];

	if (fit_connections(cfg) != 0)
		return 2;

	p->occ.seed = cfg->seed;
	if (!(p->occ.occ = occ_new()) || occ_route_register(cfg, &p->occ) != 0) {
		fprintf(stderr, "ratelab serve: cannot add /occ\n");
		return 1;
	}
	if (p->store.o.url != NULL) {
		p->store.o.quiet = cfg->quiet;
		cfg->store_new = store_redis_cli_store;
		cfg->store_ctx = &p->store;
	} else if (server_config_fit_keys(cfg, phys_memory(), msg, sizeof(msg)) != 0) {
		fprintf(stderr, "%s\n", msg);
		return 2;
	} else if (msg[0] != '\0' && !cfg->quiet) {
		fprintf(stderr, "%s\n", msg);
	}
	if (!(p->room = room_new()) || room_register(cfg, p->room) != 0) {
		fprintf(stderr, "ratelab serve: cannot add /room\n");
		return 1;
	}
	if (p->scn && scenario_server_register(cfg, p->scn) != 0) {
		fprintf(stderr, "ratelab serve: cannot add the scenario\n");
		return 1;
	}
	return 0;
}

/* An interface address a browser on the LAN can use: up, not loopback, not IPv6 link-local; its text into buf. */
static bool lan_address(const struct ifaddrs *a, bool v6, char *buf, size_t len)
{
	const void *addr;

	if (!a->ifa_addr || !(a->ifa_flags & IFF_UP) || (a->ifa_flags & IFF_LOOPBACK))
		return false;
	if (a->ifa_addr->sa_family == AF_INET) {
		addr = &((const struct sockaddr_in *)(const void *)a->ifa_addr)->sin_addr;
	} else if (v6 && a->ifa_addr->sa_family == AF_INET6) {
		const struct in6_addr *in6 = &((const struct sockaddr_in6 *)(const void *)a->ifa_addr)->sin6_addr;

		if (IN6_IS_ADDR_LINKLOCAL(in6))
			return false;
		addr = in6;
	} else {
		return false;
	}
	return inet_ntop(a->ifa_addr->sa_family, addr, buf, (socklen_t)len) != NULL;
}

/*
 * The banner.  The first line says where the server listens, as it always
 * has (scripts read it).  Bound to every address (0.0.0.0 or ::), one line
 * per LAN address for the attendees (their page, /play) follows; then the dashboard's URL, on
 * loopback then: the instructor opens it on the server's machine, and only there (or with
 * --admin-token) does its room herd button, an admin action, work; a browser on that machine
 * that opened a LAN address connects from that address, not from loopback.
 */
static void banner(const struct server_config *cfg, int port)
{
	bool v6 = strchr(cfg->bind, ':') != NULL, any = strcmp(cfg->bind, "0.0.0.0") == 0 || strcmp(cfg->bind, "::") == 0;
	char addr[64];
	struct ifaddrs *ifs = NULL;
	const char *at = any ? (v6 ? "::1" : "127.0.0.1") : cfg->bind;

	/* An IPv6 address goes in brackets in a URL. */
	printf("listening on http://%s%s%s:%d\n", v6 ? "[" : "", cfg->bind[0] == '0' && cfg->bind[1] == '.' ? "127.0.0.1" : cfg->bind,
	       v6 ? "]" : "", port);
	if (any && getifaddrs(&ifs) == 0) {
		for (const struct ifaddrs *a = ifs; a; a = a->ifa_next) {
			bool br;

			if (!lan_address(a, v6, addr, sizeof(addr)))
				continue;
			br = strchr(addr, ':') != NULL;
			printf("attendees:   http://%s%s%s:%d/play\n", br ? "[" : "", addr, br ? "]" : "", port);
		}
		freeifaddrs(ifs);
	}
	printf("dashboard:   http://%s%s%s:%d/dashboard\n", v6 ? "[" : "", at, v6 ? "]" : "", port);
	fflush(stdout);
}

/* True from the first signal until the drain is done: a second signal then forces the exit. */
static _Atomic bool draining;

/* During the drain: a second SIGINT, SIGTERM or SIGHUP ends the process at once.  After it, one is ignored. */
static void *second_signal(void *arg)
{
	static const char msg[] = "ratelab serve: second signal, exiting without waiting for the drain\n";
	sigset_t set;   /* its own: the thread is detached and outlives run()'s frame */
	int sig = 0;

	(void)arg;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigwait(&set, &sig);
	if (!atomic_load(&draining))
		return NULL;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(SERVE_EXIT_FORCED);
	_exit(SERVE_EXIT_FORCED);
}

/* Start, say where, wait for SIGINT/SIGTERM/SIGHUP, drain and summarise; the exit code. */
static int run(const struct server_config *cfg)
{
	struct server *srv;
	char err[512];
	sigset_t set;
	pthread_t forced;
	int sig = 0;
	uint64_t t0;

	/* Block the signals before MHD starts its threads, so only sigwait sees them. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	srv = server_start(cfg, err, sizeof(err));
	if (!srv) {
		fprintf(stderr, "ratelab serve: %s\n", err);
		return 1;
	}
	t0 = clock_monotonic_ns();
	banner(cfg, server_port(srv));
	sigwait(&set, &sig);
	atomic_store(&draining, true);
	if (pthread_create(&forced, NULL, second_signal, NULL) == 0)
		pthread_detach(forced);
	server_drain(srv);
	atomic_store(&draining, false);
	summary(srv, clock_monotonic_ns() - t0, sig);
	server_stop(srv);
	return 0;
}

int serve_main(int argc, char **argv)
{
	struct serve_parts *p = calloc(1, sizeof(*p));
	char err[1024];
	int rc;

	if (!p)
		return 1;
	rc = parse(p, argc, argv, err, sizeof(err));
	if (rc != 0)
		rc = cli_exit(&SERVE_CLI, rc, err);
	else if ((rc = wire(p)) == 0)
		rc = run(&p->args.cfg);
	occ_free(p->occ.occ);
	scenario_free(p->scn);
	room_free(p->room);
	free(p);
	return rc;
}
