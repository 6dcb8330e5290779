/* ratelab storm: the metastable retry storm, one row per client policy. */
#include "lab/storm.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cli.h"
#include "common/clock.h"
#include "common/parse.h"
#include "common/rate_schedule.h"
#include "hammer/engine.h"
#include "lab/simserver.h"
#include "lab/storm_report.h"
#include "lab/storm_sweep.h"
#include "server/capacity.h"
#include "server/server.h"

#define STORM_MAX_POLICIES 12
#define ERRLEN 512
#define DEFAULT_CAPACITY "workers=4,service=10ms,queue=fifo:400"
#define DEFAULT_TRIGGER "25%@3s+2s"

struct storm_opts {
	char policies[STORM_MAX_POLICIES][32];
	size_t npolicies;
	bool control;
	struct rate_schedule schedule;
	uint64_t duration_ns;
	uint64_t timeout_ns;
	struct capacity_params capacity;
	const char *capacity_spec;
	struct capacity_trigger trigger;
	const char *trigger_spec;
	bool no_trigger;
	struct storm_knobs knobs;
	uint32_t clients;
	uint64_t seed;
	const char *report_dir;
	struct storm_window window;    /* settled after parsing */
	char window_what[160];
	bool sim;                      /* --sim: virtual time against a model of the server */
	struct sim_net net;            /* --sim-delay, --sim-loss, --sim-connect */
	bool compare;                  /* --compare: each run real, then in virtual time, and the gap */
	bool sweep;                    /* --sweep: a grid of runs per policy instead of one run */
	struct sweep_grid *grid;       /* its axes (--sweep-loads, --sweep-lengths) and cells */
};

static atomic_int cancel_flag;

static void on_sigint(int sig)
{
	(void)sig;
	atomic_store(&cancel_flag, 1);
}

/* ---- the policies ---- */

int storm_policy(const char *name, const struct storm_knobs *k, struct retry_policy *out, char *err, size_t errlen)
{
	char v[64], ms[32];

	if (strcmp(name, "backoff") == 0 || strcmp(name, "budget") == 0) {
		retry_policy_preset("naive", out);
		if (strcmp(name, "backoff") == 0) {
			retry_policy_set(out, "backoff", "full", NULL, 0);
			retry_policy_set(out, "base", "100ms", NULL, 0);
			retry_policy_set(out, "cap", "2s", NULL, 0);
		} else {
			retry_policy_set(out, "budget", "ratio=0.2,min=10,window=10s", NULL, 0);
		}
	} else if (strcmp(name, "adaptive") == 0) {
		retry_policy_preset("sre-adaptive", out);
		parse_format_exact_duration(k->throttle_window_ns, ms, sizeof(ms));
		snprintf(v, sizeof(v), "sre,k=%g,window=%s", k->throttle_k, ms);
		if (retry_policy_set(out, "budget", v, err, errlen) != 0)
			return -1;
	} else if (retry_policy_preset(name, out) != 0) {
		snprintf(err, errlen, "--policies: unknown policy '%s' (%s, or a preset: %s)", name,
		         STORM_DEFAULT_POLICIES, retry_preset_names());
		return -1;
	}
	snprintf(out->name, sizeof(out->name), "%s", name);
	return 0;
}

/* ---- options ---- */

static int opt_policies(void *base, const struct cli_option *opt, const char *v, char *why, size_t wl)
{
	struct storm_opts *o = base;
	struct storm_knobs k = { NS_PER_SEC, 2 };
	struct retry_policy probe;
	char buf[512], *save = NULL, inner[300];

	(void)opt;
	if (strlen(v) >= sizeof(buf))
		return snprintf(why, wl, "is too long"), -1;
	strcpy(buf, v);
	o->npolicies = 0;
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (o->npolicies == STORM_MAX_POLICIES)
			return snprintf(why, wl, "is one too many (at most %d policies)", STORM_MAX_POLICIES), -1;
		if (strlen(tok) >= sizeof(o->policies[0]) || storm_policy(tok, &k, &probe, inner, sizeof(inner)) != 0)
			return snprintf(why, wl, "names an unknown policy '%.31s' (%s, or a preset: %s)", tok,
			                STORM_DEFAULT_POLICIES, retry_preset_names()), -1;
		strcpy(o->policies[o->npolicies++], tok);
	}
	if (o->npolicies == 0)
		return snprintf(why, wl, "is not a list of policies such as naive,budget"), -1;
	return 0;
}

static int opt_rate(void *base, const struct cli_option *opt, const char *v, char *why, size_t wl)
{
	char inner[300];

	(void)opt;
	if (rate_schedule_parse(v, 1e6, &((struct storm_opts *)base)->schedule, inner, sizeof(inner)) != 0)
		return snprintf(why, wl, "is not a rate or a schedule such as 200/s or 200/s,600/s@3s+1s,200/s (%s)",
		                inner), -1;
	return 0;
}

static int opt_capacity(void *base, const struct cli_option *opt, const char *v, char *why, size_t wl)
{
	struct storm_opts *o = base;
	char inner[300];

	(void)opt;
	if (capacity_parse(v, &o->capacity, inner, sizeof(inner)) != 0)
		return snprintf(why, wl, "is not a backend such as %s (%s)", DEFAULT_CAPACITY, inner), -1;
	o->capacity_spec = v;
	return 0;
}

static int opt_trigger(void *base, const struct cli_option *opt, const char *v, char *why, size_t wl)
{
	struct storm_opts *o = base;
	char inner[300];

	(void)opt;
	o->no_trigger = strcmp(v, "none") == 0;
	o->trigger_spec = v;
	if (!o->no_trigger && capacity_trigger_parse(v, &o->trigger, inner, sizeof(inner)) != 0)
		return snprintf(why, wl, "is not a trigger such as %s or none (%s)", DEFAULT_TRIGGER, inner), -1;
	return 0;
}

static int opt_sim_delay(void *base, const struct cli_option *opt, const char *v, char *why, size_t wl)
{
	char inner[300];

	(void)opt;
	if (sim_net_parse_delay(v, &((struct storm_opts *)base)->net, inner, sizeof(inner)) != 0)
		return snprintf(why, wl, "is not a delay such as 10ms or 10ms\xc2\xb1" "2ms"), -1;
	return 0;
}

static int opt_sweep_loads(void *base, const struct cli_option *opt, const char *v, char *why, size_t wl)
{
	(void)opt;
	return sweep_parse_loads(v, ((struct storm_opts *)base)->grid, why, wl);
}

static int opt_sweep_lengths(void *base, const struct cli_option *opt, const char *v, char *why, size_t wl)
{
	(void)opt;
	return sweep_parse_lengths(v, ((struct storm_opts *)base)->grid, why, wl);
}

static int opt_sweep_after(void *base, const struct cli_option *opt, const char *v, char *why, size_t wl)
{
	uint64_t ns;

	(void)opt;
	if (parse_duration(v, &ns, NULL, 0) != 0 || ns < NS_PER_SEC || ns > 60 * NS_PER_SEC)
		return snprintf(why, wl, "is not a duration from 1s to 60s"), -1;
	((struct storm_opts *)base)->grid->after_ns = ns;
	return 0;
}

#define SO(member) CLI_FIELD(struct storm_opts, member)

static char policy_list[512];
static pthread_once_t policy_list_once = PTHREAD_ONCE_INIT;

static void build_policy_list(void)
{
	snprintf(policy_list, sizeof(policy_list), "%s, %s", STORM_DEFAULT_POLICIES, retry_preset_names());
}

/* The policies --policies takes (for completion and "did you mean"). */
static const char *policy_words(void)
{
	pthread_once(&policy_list_once, build_policy_list);
	return policy_list;
}

static const struct cli_option STORM_OPTIONS[] = {
	{ "--policies", CLI_CUSTOM, .fn = opt_policies, .values = policy_words, .section = CLI_SEC_DOES, .arg = "LIST",
	  .help = "comma-separated (default " STORM_DEFAULT_POLICIES "): naive: 5 attempts, no "
	          "wait; backoff: the same with full-jitter backoff (100ms..2s); budget: naive "
	          "within seed 001's retry budget (20% + 10/s over 10s); adaptive: sre-adaptive "
	          "with the throttle below; or a retry preset." },
	{ "--control", CLI_BOOL, SO(control), .section = CLI_SEC_DOES,
	  .help = "also run the first policy without the trigger (the counterfactual)" },
	{ "--rate", CLI_CUSTOM, .fn = opt_rate, .section = CLI_SEC_RUN, .arg = "R|SCHEDULE",
	  .help = "offered load (default 200/s); a schedule such as 200/s,600/s@3s+1s,200/s is a "
	          "load-spike trigger" },
	{ "--duration", CLI_DURATION, SO(duration_ns), .min = NS_PER_SEC, .max = 120 * NS_PER_SEC, .section = CLI_SEC_RUN, .arg = "DUR",
	  .help = "each policy's run (default 10s)" },
	{ "--timeout", CLI_DURATION, SO(timeout_ns), .min = NS_PER_MS, .max = 60 * NS_PER_SEC, .section = CLI_SEC_RUN, .arg = "DUR",
	  .help = "the client's deadline for one attempt (default 500ms)" },
	{ "--capacity", CLI_CUSTOM, .fn = opt_capacity, .section = CLI_SEC_RUN, .arg = "SPEC",
	  .help = "the backend, as serve takes it (default " DEFAULT_CAPACITY ")" },
	{ "--trigger", CLI_CUSTOM, .fn = opt_trigger, .section = CLI_SEC_RUN, .arg = "F@S+L|none",
	  .help = "capacity down to F from S for L (default " DEFAULT_TRIGGER "); none: the "
	          "spike of a --rate schedule is the trigger" },
	{ "--throttle-window", CLI_DURATION, SO(knobs.throttle_window_ns), .min = 10 * NS_PER_MS,
	  .max = 3600 * NS_PER_SEC, .section = CLI_SEC_ADVANCED, .arg = "DUR",
	  .help = "adaptive: the throttle's window (default 500ms)" },
	{ "--throttle-k", CLI_DOUBLE, SO(knobs.throttle_k), .dmin = 1, .dmax = 100, .section = CLI_SEC_ADVANCED, .arg = "K",
	  .help = "adaptive: the throttle's K (default 2)" },
	{ "--clients", CLI_U64, SO(clients), .min = 1, .max = 100000, .section = CLI_SEC_RUN, .arg = "N",
	  .help = "virtual clients (default 2000)" },
	{ "--seed", CLI_U64, SO(seed), .max = INT64_MAX, .section = CLI_SEC_ADVANCED, .arg = "N",
	  .help = "fixes every random draw (default 1)" },
	{ "--report", CLI_STRING, SO(report_dir), .section = CLI_SEC_OUTPUT, .arg = "DIR",
	  .help = "write DIR/report.html, DIR/results.json, DIR/<policy>.csv" },
	{ "--sim", CLI_BOOL, SO(sim), .section = CLI_SEC_ADVANCED,
	  .help = "exact virtual time: the same engine, policies and capacity model against an "
	          "in-process model of the server, no sockets; the same --seed gives the same bytes" },
	{ "--sim-delay", CLI_CUSTOM, .fn = opt_sim_delay, .section = CLI_SEC_ADVANCED, .arg = "MEAN[±SD]",
	  .help = "with --sim: each message's one-way network delay (default 100us)" },
	{ "--sim-loss", CLI_DOUBLE, SO(net.loss), .dmin = 0, .dmax = 1, .section = CLI_SEC_ADVANCED, .arg = "P",
	  .help = "with --sim: each message lost with probability P (0..1)" },
	{ "--sim-connect", CLI_DURATION, SO(net.connect_ns), .min = 0, .max = 3600 * NS_PER_SEC, .section = CLI_SEC_ADVANCED, .arg = "DUR",
	  .help = "with --sim: a new connection's set-up before its first request (default 0)" },
	{ "--compare", CLI_BOOL, SO(compare), .section = CLI_SEC_ADVANCED,
	  .help = "each run on the in-process server, then in virtual time (the --sim-* flags "
	          "apply): the two rows and the gap per column (virtual minus real); --report "
	          "keeps the real runs" },
	{ "--sweep", CLI_BOOL, SO(sweep), .section = CLI_SEC_ADVANCED,
	  .help = "with --sim: where the storm turns metastable: for each policy a grid of runs "
	          "over offered load and trigger length, each cell the time to recover after the "
	          "trigger (or no); --report DIR writes sweep.csv, sweep.json and sweep.svg" },
	{ "--sweep-loads", CLI_CUSTOM, .fn = opt_sweep_loads, .section = CLI_SEC_ADVANCED, .arg = "LIST",
	  .help = "offered load in % of the backend's capacity (default 50,60,70,80,90,95)" },
	{ "--sweep-lengths", CLI_CUSTOM, .fn = opt_sweep_lengths, .section = CLI_SEC_ADVANCED, .arg = "LIST",
	  .help = "trigger lengths (default 500ms,1s,2s,3s,5s)" },
	{ "--sweep-after", CLI_CUSTOM, .fn = opt_sweep_after, .section = CLI_SEC_ADVANCED, .arg = "DUR",
	  .help = "how long each run goes on after its trigger (default 10s)" },
	{ NULL },
};

static const struct cli_option *const STORM_TABLES[] = { STORM_OPTIONS, NULL };

static const struct cli_help STORM_HELP = {
	.usage = "ratelab storm [options]",
	.about = "The metastable retry storm.  For each policy, a fresh in-process server whose "
	         "backend has a fixed capacity (virtual workers, a service time, a bounded queue) "
	         "meets the same open-loop load and the same trigger.  Retries of requests that "
	         "timed out are work the backend still does for clients that have gone: with naive "
	         "retries it stays overloaded after the trigger is over.  One row per policy.",
	.tables = STORM_TABLES,
	.notes = "Columns: goodput per second (2xx answers within the deadline) from 1s (at most\n"
	         "5s back) to the trigger, during it and after it; best-after: the best second\n"
	         "after it; recovered: from when every second's goodput stays at 90% of before;\n"
	         "attempts per request; the work the server did for clients that had gone\n"
	         "(seconds, share of all work).  Ctrl-C stops the run: the runs that finished are\n"
	         "reported.\n",
	.exits = "0\tevery policy ran\n"
	         "1\ta run could not be set up, or --report could not be written\n"
	         "2\ta bad flag or value\n"
	         "130\tCtrl-C (the runs that finished are reported)\n",
};

static const struct cli_command STORM_CLI = { "storm", NULL, &STORM_HELP };

static void opts_defaults(struct storm_opts *o, struct sweep_grid *grid)
{
	char why[128];

	memset(o, 0, sizeof(*o));
	memset(grid, 0, sizeof(*grid));
	o->grid = grid;
	sweep_parse_loads("50,60,70,80,90,95", grid, why, sizeof(why));
	sweep_parse_lengths("500ms,1s,2s,3s,5s", grid, why, sizeof(why));
	grid->after_ns = 10 * NS_PER_SEC;
	opt_policies(o, NULL, STORM_DEFAULT_POLICIES, why, sizeof(why));
	rate_schedule_constant(&o->schedule, 200);
	o->duration_ns = 10 * NS_PER_SEC;
	o->timeout_ns = 500 * NS_PER_MS;
	capacity_parse(DEFAULT_CAPACITY, &o->capacity, NULL, 0);
	o->capacity_spec = DEFAULT_CAPACITY;
	capacity_trigger_parse(DEFAULT_TRIGGER, &o->trigger, NULL, 0);
	o->trigger_spec = DEFAULT_TRIGGER;
	o->knobs.throttle_window_ns = 500 * NS_PER_MS;
	o->knobs.throttle_k = 2;
	o->clients = 2000;
	o->seed = 1;
	sim_net_defaults(&o->net);
}

/* The highest segment of a schedule that is not the whole run: the spike.  False when there is none. */
static bool schedule_spike(const struct rate_schedule *s, uint64_t duration_ns, struct storm_window *w)
{
	const struct rate_segment *top = NULL;

	for (unsigned i = 0; i < s->n; i++)
		if (!(s->seg[i].start_ns == 0 && s->seg[i].end_ns >= duration_ns) &&
		    (top == NULL || s->seg[i].rate > top->rate))
			top = &s->seg[i];
	if (top == NULL || top->rate <= rate_schedule_rate(s, 0))
		return false;
	w->start_ns = top->start_ns;
	w->end_ns = top->end_ns;
	return true;
}

/* When the trigger acts: the capacity drop, or else the schedule's spike; one line in err when it is no good. */
static int settle_window(struct storm_opts *o, char *err, size_t errlen)
{
	char end[32], dur[32];

	parse_format_exact_duration(o->duration_ns, dur, sizeof(dur));
	if (!o->no_trigger) {
		o->window.start_ns = o->trigger.start_ns;
		o->window.end_ns = o->trigger.start_ns + o->trigger.len_ns;
		capacity_trigger_describe(&o->trigger, o->window_what, sizeof(o->window_what));
		parse_format_exact_duration(o->window.end_ns, end, sizeof(end));
		if (o->window.end_ns > o->duration_ns)
			return cli_bad_value(err, errlen, "storm", "--trigger", o->trigger_spec,
			                     "ends at %s, past the run (--duration %s)", end, dur);
		return 0;
	}
	if (!schedule_spike(&o->schedule, o->duration_ns, &o->window))
		return cli_fail(err, errlen, "storm", "--trigger none needs a --rate schedule with a spike, such as "
		                "200/s,600/s@3s+1s,200/s (or use --control for a run without a trigger)");
	parse_format_exact_duration(o->window.end_ns == RATE_SCHEDULE_OPEN ? UINT64_MAX : o->window.end_ns, end,
	                            sizeof(end));
	if (o->window.end_ns > o->duration_ns)
		return cli_fail(err, errlen, "storm", "--rate: the spike ends at %s, past the run (--duration %s)",
		                o->window.end_ns == RATE_SCHEDULE_OPEN ? "the end of time" : end, dur);
	snprintf(o->window_what, sizeof(o->window_what), "a load spike to %g/s", rate_schedule_peak(&o->schedule));
	return 0;
}

/* --report DIR: an existing directory, or one its parent lets us make. */
static int check_report_dir(const char *dir, char *err, size_t errlen)
{
	struct stat st;

	if (dir == NULL)
		return 0;
	if (dir[0] == '\0')
		return cli_bad_value(err, errlen, "storm", "--report", dir, "cannot be made (an empty path)");
	if (stat(dir, &st) == 0)
		return S_ISDIR(st.st_mode) ? 0 : cli_bad_value(err, errlen, "storm", "--report", dir,
		                                                "cannot be made (a file is in the way)");
	if (mkdir(dir, 0777) != 0)
		return cli_bad_value(err, errlen, "storm", "--report", dir, "cannot be made (%s)", strerror(errno));
	return 0;
}

/* Parse argv: 0 to run, or the exit code (0 after --help, 2 after a message). */
static int opts_parse(struct storm_opts *o, struct sweep_grid *grid, int argc, char **argv, int *exit_code)
{
	struct cli_group g = { STORM_OPTIONS, o };
	char err[2 * ERRLEN];
	int rc;

	opts_defaults(o, grid);
	rc = cli_parse(&STORM_CLI, &g, 1, argc, argv, err, sizeof(err));
	if (rc == 0 && o->sweep && (!o->sim || o->no_trigger || o->control))
		rc = cli_fail(err, sizeof(err), "storm", "--sweep needs --sim and a --trigger (and no --control)");
	if (rc == 0 && o->compare && (o->sim || o->sweep))
		rc = cli_fail(err, sizeof(err), "storm", "--compare runs each storm both ways: no --sim or --sweep");
	if (rc == 0)
		rc = settle_window(o, err, sizeof(err));
	if (rc == 0)
		rc = check_report_dir(o->report_dir, err, sizeof(err));
	if (rc != 0) {
		*exit_code = cli_exit(&STORM_CLI, rc, err);
		return -1;
	}
	return 0;
}

/* ---- one policy's run ---- */

/* The server of one run: no limiter, the backend, and the trigger when the run has one. */
static void server_config(const struct storm_opts *o, bool triggered, struct server_config *c)
{
	struct config_route *r;

	server_config_defaults(c);
	c->port = 0;
	c->quiet = true;
	c->key = CONFIG_KEY_GLOBAL;
	c->threads = 2;
	c->seed = o->seed;
	/* a timed-out client reconnects while its old connection still waits in the queue */
	c->max_connections = o->clients + o->capacity.queue_max + o->capacity.workers + 256;
	r = &c->routes[0];
	snprintf(r->limiter, sizeof(r->limiter), "none");
	r->capacity = o->capacity;
	r->capacity.ntriggers = 0;
	if (triggered && !o->no_trigger) {
		r->capacity.triggers[0] = o->trigger;
		r->capacity.ntriggers = 1;
	}
}

static void hammer_setup(const struct storm_opts *o, const char *url, const struct retry_policy *pol,
                         struct hammer_config *c)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);

	memset(c, 0, sizeof(*c));
	c->url = url;
	c->method = "GET";
	c->concurrency = o->clients;
	c->duration_ns = o->duration_ns;
	c->rate = rate_schedule_peak(&o->schedule);
	c->schedule = rate_schedule_is_constant(&o->schedule) ? NULL : &o->schedule;
	c->threads = cores > 0 ? (uint32_t)cores : 1;
	c->timeout_ns = o->timeout_ns;
	c->connect_timeout_ns = o->timeout_ns;
	c->seed = o->seed;
	c->policy = pol;
	c->interval_ns = STORM_ROW_NS;
	c->progress = isatty(STDERR_FILENO) ? stderr : NULL;
	c->cancel = &cancel_flag;
}

/* Where a run's backend is: the in-process server, or the model (--sim). */
struct storm_target {
	struct server *srv;
	struct simserver *model;
	struct sim_config sim;
};

/* The backend's side of the run, then the figures; 0, or -1 with err. */
static int collect(const struct storm_target *t, const struct storm_opts *o, const char *label, bool triggered,
                   const struct hammer_result *h, struct storm_result *out, char *err, size_t errlen)
{
	struct capacity_bucket *series = calloc(CAPACITY_BUCKETS, sizeof(*series));
	struct capacity_stats st;
	struct storm_run run = { h, &o->schedule, series, 0, &st, o->duration_ns };
	int rc = -1;

	if (series == NULL)
		goto fail;
	if (t->model != NULL) {
		run.nseries = simserver_capacity_series(t->model, series, CAPACITY_BUCKETS);
		simserver_capacity_stats(t->model, &st);
	} else {
		run.nseries = server_backend_series(t->srv, 0, series, CAPACITY_BUCKETS);
		if (!server_backend_stats(t->srv, 0, &st))
			memset(&st, 0, sizeof(st));
	}
	rc = storm_result_from_run(out, label, triggered, &run, &o->window);
fail:
	if (rc != 0)
		snprintf(err, errlen, "out of memory");
	free(series);
	return rc;
}

/* The backend of one run: a server on a free port, or (--sim) its model; its URL in url.  0, or -1 with err. */
static int target_start(const struct storm_opts *o, bool triggered, struct storm_target *t, char *url, size_t len,
                        char *err, size_t errlen)
{
	struct server_config c;

	server_config(o, triggered, &c);
	memset(t, 0, sizeof(*t));
	if (o->sim) {
		t->sim.net = o->net;
		t->sim.model = &SIMSERVER_OPS;
		t->sim.model_state = t->model = simserver_new(&c, NULL, o->seed, err, errlen);
		snprintf(url, len, "http://sim/");
		return t->model != NULL ? 0 : -1;
	}
	if (!(t->srv = server_start(&c, err, errlen)))
		return -1;
	snprintf(url, len, "http://127.0.0.1:%d/", server_port(t->srv));
	return 0;
}

static void target_stop(struct storm_target *t)
{
	server_stop(t->srv);
	simserver_free(t->model);
}

/* One policy, triggered or not: server, load, figures.  0; 1 when interrupted; -1 with err. */
static int run_one(const struct storm_opts *o, const struct retry_policy *pol, bool triggered,
                   struct storm_result *out, char *err, size_t errlen)
{
	struct hammer_config cfg;
	struct hammer_result h;
	struct storm_target t;
	char url[96], label[48];
	int rc = -1;

	snprintf(label, sizeof(label), "%s%s", pol->name, triggered ? "" : ":no-trigger");
	if (target_start(o, triggered, &t, url, sizeof(url), err, errlen) != 0)
		goto stop;
	if (hammer_result_init(&h, STORM_ROW_NS) != 0) {
		snprintf(err, errlen, "out of memory");
		goto stop;
	}
	hammer_setup(o, url, pol, &cfg);
	cfg.sim = o->sim ? &t.sim : NULL;
	if (cfg.progress != NULL)
		fprintf(stderr, "storm: %s\n", label);
	/* the trigger's clock starts with the load (the model's starts with the run) */
	if (t.srv != NULL)
		server_reset(t.srv);
	if (hammer_run(&cfg, &h, err, errlen) == 0)
		rc = h.interrupted ? 1 : collect(&t, o, label, triggered, &h, out, err, errlen);
	hammer_result_destroy(&h);
stop:
	target_stop(&t);
	return rc;
}

/* ---- the command ---- */

static int build_policies(const struct storm_opts *o, struct retry_policy *pol)
{
	char err[ERRLEN];

	for (size_t i = 0; i < o->npolicies; i++)
		if (storm_policy(o->policies[i], &o->knobs, &pol[i], err, sizeof(err)) != 0) {
			fprintf(stderr, "ratelab storm: %s\n", err);
			return 2;
		}
	return 0;
}

static int write_report(const struct storm_opts *o, const struct storm_result *res, size_t n)
{
	char err[ERRLEN], cap[200], rate[300];
	struct storm_report_info info = {
		.capacity = cap, .trigger = o->window_what, .rate = rate, .timeout_ns = o->timeout_ns,
		.duration_ns = o->duration_ns, .clients = o->clients, .seed = o->seed,
		.queue_max = o->capacity.queue_max, .window = o->window,
	};

	capacity_describe(&o->capacity, cap, sizeof(cap));
	rate_schedule_describe(&o->schedule, rate, sizeof(rate));
	if (storm_report_write(o->report_dir, &info, res, n, err, sizeof(err)) != 0) {
		fprintf(stderr, "ratelab storm: %s\n", err);
		return 1;
	}
	printf("report: %s/report.html (results.json, one CSV per policy)\n", o->report_dir);
	return 0;
}

/* --compare's gap row: virtual minus real, column by column. */
static void gap_row(const struct storm_result *real, const struct storm_result *virt)
{
	char rec[32];

	if (real->recovered && virt->recovered)
		snprintf(rec, sizeof(rec), "%+.1fs", ((double)virt->recovered_ns - (double)real->recovered_ns) / 1e9);
	else
		snprintf(rec, sizeof(rec), "%s", real->recovered == virt->recovered ? "same" : "differs");
	printf("%-20s %+8.1f %+8.1f %+8.1f %+10.1f %10s %+9.2f %+7.1fs\n", "  gap", virt->before - real->before,
	       virt->during - real->during, virt->after - real->after, virt->best_after - real->best_after, rec,
	       virt->amplification - real->amplification, virt->work_gone_s - real->work_gone_s);
}

/* One run both ways (--compare): the real row (kept in *out), the virtual row, the gap.  As run_one. */
static int compare_one(const struct storm_opts *o, const struct retry_policy *pol, bool triggered, bool header,
                       struct storm_result *out, char *err, size_t errlen)
{
	struct storm_opts v = *o;
	struct storm_result virt = { 0 };
	int rc;

	v.sim = true;
	if ((rc = run_one(o, pol, triggered, out, err, errlen)) != 0)
		return rc;
	if ((rc = run_one(&v, pol, triggered, &virt, err, errlen)) != 0) {
		storm_result_destroy(out);
		return rc;
	}
	storm_report_row(stdout, out, header);
	snprintf(virt.policy, sizeof(virt.policy), "  virtual");
	storm_report_row(stdout, &virt, false);
	gap_row(out, &virt);
	storm_result_destroy(&virt);
	return 0;
}

/* The runs in order (the control first), each row printed as it ends; *n gets the rows done. */
static int run_all(const struct storm_opts *o, const struct retry_policy *pol, struct storm_result *res, size_t *n)
{
	size_t runs = o->npolicies + (o->control ? 1 : 0);
	char err[ERRLEN];

	*n = 0;
	for (size_t k = 0; k < runs; k++) {
		bool control = o->control && k == 0;
		const struct retry_policy *p = &pol[o->control && k > 0 ? k - 1 : k];
		int rc = o->compare ? compare_one(o, p, !control, *n == 0, &res[*n], err, sizeof(err))
		                    : run_one(o, p, !control, &res[*n], err, sizeof(err));

		if (rc < 0) {
			fprintf(stderr, "ratelab storm: %s\n", err);
			return 1;
		}
		if (rc > 0)
			return 130;
		if (!o->compare)
			storm_report_row(stdout, &res[*n], *n == 0);
		fflush(stdout);
		(*n)++;
	}
	return 0;
}

/* One cell of the sweep: policy p at load i of capacity with a trigger of length j.  0, or -1 with err. */
static int sweep_cell(const struct storm_opts *o, const struct retry_policy *pol, size_t p, size_t i, size_t j,
                      char *err, size_t errlen)
{
	struct sweep_grid *g = o->grid;
	struct storm_opts c = *o;
	struct storm_result res = { 0 };
	double capacity = (double)o->capacity.workers * 1e9 / (double)o->capacity.service_ns;
	int rc;

	rate_schedule_constant(&c.schedule, g->loads[i] * capacity);
	c.trigger.len_ns = g->lens[j];
	c.window.start_ns = c.trigger.start_ns;
	c.window.end_ns = c.trigger.start_ns + c.trigger.len_ns;
	c.duration_ns = c.window.end_ns + g->after_ns;
	if ((rc = run_one(&c, pol, true, &res, err, errlen)) != 0)
		return rc;
	g->cells[p][i][j].recovered = res.recovered;
	g->cells[p][i][j].recovered_ns = res.recovered_ns;
	g->cells[p][i][j].before = res.before;
	g->cells[p][i][j].after = res.after;
	storm_result_destroy(&res);
	return 0;
}

/* --sweep: every policy's grid, printed as each is done; --report writes them.  The exit code. */
static int sweep_main(const struct storm_opts *o, const struct retry_policy *pol)
{
	struct sweep_grid *g = o->grid;
	char err[ERRLEN], cap[200], title[300];

	capacity_describe(&o->capacity, cap, sizeof(cap));
	snprintf(title, sizeof(title), "storm sweep: %s; trigger %.0f%% of the workers from %.1fs", cap,
	         o->trigger.fraction * 100, (double)o->trigger.start_ns / 1e9);
	printf("%s\n", title);
	g->npolicies = o->npolicies;
	for (size_t p = 0; p < o->npolicies; p++) {
		snprintf(g->policies[p], sizeof(g->policies[p]), "%s", o->policies[p]);
		for (size_t i = 0; i < g->nloads; i++)
			for (size_t j = 0; j < g->nlens; j++)
				if (sweep_cell(o, &pol[p], p, i, j, err, sizeof(err)) != 0) {
					fprintf(stderr, "ratelab storm: %s\n", err);
					return 1;
				}
		sweep_print(stdout, g, p);
		fflush(stdout);
	}
	if (o->report_dir != NULL && sweep_write(o->report_dir, g, title, err, sizeof(err)) != 0) {
		fprintf(stderr, "ratelab storm: %s\n", err);
		return 1;
	}
	if (o->report_dir != NULL)
		printf("report: %s/sweep.svg (sweep.csv, sweep.json)\n", o->report_dir);
	return 0;
}

static void print_setup(const struct storm_opts *o)
{
	char cap[200], rate[300], tmo[32];

	capacity_describe(&o->capacity, cap, sizeof(cap));
	rate_schedule_describe(&o->schedule, rate, sizeof(rate));
	parse_format_exact_duration(o->timeout_ns, tmo, sizeof(tmo));
	printf("backend: %s; load: %s; deadline %s per attempt; trigger: %s\n", cap, rate, tmo, o->window_what);
}

int storm_main(int argc, char **argv)
{
	static struct storm_opts o;
	static struct sweep_grid grid;
	struct retry_policy pol[STORM_MAX_POLICIES];
	struct storm_result res[STORM_MAX_POLICIES + 1];
	struct sigaction sa = { 0 }, old_sa;
	char err[ERRLEN] = "";
	size_t done = 0;
	int rc = 0;

	if (opts_parse(&o, &grid, argc, argv, &rc) != 0)
		return rc;
	if ((rc = build_policies(&o, pol)) != 0)
		return rc;
	if (o.sweep)
		return sweep_main(&o, pol);
	/* the in-process server holds the other end of every client's connection, and the queue's */
	if ((!o.sim && hammer_raise_nofile(2 * o.clients + o.capacity.queue_max + o.capacity.workers, 1, err, sizeof(err)) != 0) ||
	    curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fprintf(stderr, "ratelab storm: %s\n", err[0] ? err : "curl_global_init failed");
		return 1;
	}
	print_setup(&o);
	atomic_store(&cancel_flag, 0);
	sa.sa_handler = on_sigint;
	sa.sa_flags = SA_RESETHAND;
	sigaction(SIGINT, &sa, &old_sa);
	rc = run_all(&o, pol, res, &done);
	sigaction(SIGINT, &old_sa, NULL);
	if (rc == 130)
		printf("interrupted: %zu of %zu runs finished\n", done, o.npolicies + (o.control ? 1 : 0));
	if (o.report_dir != NULL && done > 0 && write_report(&o, res, done) != 0 && rc == 0)
		rc = 1;
	for (size_t i = 0; i < done; i++)
		storm_result_destroy(&res[i]);
	curl_global_cleanup();
	return rc;
}
