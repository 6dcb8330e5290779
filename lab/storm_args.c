/* ratelab storm's flags: the table, --help, the defaults and the checks made after parsing. */
#include "lab/storm_args.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/cli.h"
#include "common/cli_help.h"
#include "common/clock.h"
#include "common/parse.h"

#define DEFAULT_CAPACITY "workers=4,service=10ms,queue=fifo:400"
#define DEFAULT_TRIGGER "25%@3s+2s"

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
		for (size_t i = 0; i < o->npolicies; i++)
			if (strcmp(o->policies[i], tok) == 0)
				return snprintf(why, wl, "names '%s' twice (it is in the list already)", tok), -1;
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
	cli_words_join(policy_list, sizeof(policy_list), STORM_DEFAULT_POLICIES, retry_preset_names());
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
	{ "--sim-delay", CLI_CUSTOM, .fn = opt_sim_delay, .needs = "--sim or --compare", .section = CLI_SEC_ADVANCED, .arg = "MEAN[±SD]",
	  .help = "with --sim or --compare: each message's one-way network delay (default 100us)" },
	{ "--sim-loss", CLI_DOUBLE, SO(net.loss), .dmin = 0, .dmax = 1, .needs = "--sim or --compare", .section = CLI_SEC_ADVANCED, .arg = "P",
	  .help = "with --sim or --compare: each message lost with probability P (0..1)" },
	{ "--sim-connect", CLI_DURATION, SO(net.connect_ns), .min = 0, .max = 3600 * NS_PER_SEC, .needs = "--sim or --compare", .section = CLI_SEC_ADVANCED, .arg = "DUR",
	  .help = "with --sim or --compare: a new connection's set-up before its first request (default 0)" },
	{ "--compare", CLI_BOOL, SO(compare), .section = CLI_SEC_ADVANCED,
	  .help = "each run on the in-process server, then in virtual time (the --sim-* flags "
	          "apply): the two rows and the gap per column (virtual minus real); --report "
	          "keeps the real runs" },
	{ "--sweep", CLI_BOOL, SO(sweep), .section = CLI_SEC_ADVANCED,
	  .help = "with --sim: where the storm turns metastable: for each policy a grid of runs "
	          "over offered load and trigger length, each cell the time to recover after the "
	          "trigger (or no); --report DIR writes sweep.csv, sweep.json and sweep.svg" },
	{ "--sweep-loads", CLI_CUSTOM, .fn = opt_sweep_loads, .needs = "--sweep", .section = CLI_SEC_ADVANCED, .arg = "LIST",
	  .help = "offered load in % of the backend's capacity (default 50,60,70,80,90,95)" },
	{ "--sweep-lengths", CLI_CUSTOM, .fn = opt_sweep_lengths, .needs = "--sweep", .section = CLI_SEC_ADVANCED, .arg = "LIST",
	  .help = "trigger lengths (default 500ms,1s,2s,3s,5s)" },
	{ "--sweep-after", CLI_CUSTOM, .fn = opt_sweep_after, .needs = "--sweep", .section = CLI_SEC_ADVANCED, .arg = "DUR",
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
	         "1\ta run could not be set up\n"
	         "2\ta bad flag or value\n"
	         CLI_EXIT_WRITE_LINE
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
		if (o->window.end_ns + NS_PER_SEC > o->duration_ns)
			return cli_bad_value(err, errlen, "storm", "--trigger", o->trigger_spec,
			                     "ends at %s, less than the second before the run's end (--duration %s) that "
			                     "recovery is judged on", end, dur);
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
	if (o->window.end_ns + NS_PER_SEC > o->duration_ns)
		return cli_fail(err, errlen, "storm", "--rate: the spike ends at %s, less than the second before the run's "
		                "end (--duration %s) that recovery is judged on", end, dur);
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

int storm_args_parse(struct storm_opts *o, struct sweep_grid *grid, int argc, char **argv, int *exit_code)
{
	struct cli_group g = { STORM_OPTIONS, o };
	char err[1024];
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
