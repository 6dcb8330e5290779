/* `ratelab verify`: run any client against scripted scenarios and grade what it did. */
#include "lab/verify.h"

#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cli.h"
#include "common/clock.h"
#include "common/junit.h"
#include "common/progress.h"
#include "lab/verify_child.h"
#include "lab/verify_report.h"
#include "lab/verify_run.h"

#define VERIFY_DEFAULT_TIMEOUT_NS (60ULL * NS_PER_SEC)
#define VERIFY_DEFAULT_JOBS 6
#define VERIFY_MAX_JOBS 32

struct verify_opts {
	const char *scenario;
	const char *expect;        /* NULL: the scenario's defaults */
	const char *json;
	const char *junit;
	uint64_t clients;
	uint64_t timeout_ns;
	uint64_t jobs;
	bool all, list, strict, quiet;
	char **cmd;                /* NULL-terminated, from after "--" */
};

static volatile sig_atomic_t verify_interrupted;

static void on_signal(int sig)
{
	verify_interrupted = sig;
}

static const struct cli_option VERIFY_OPTIONS[] = {
	{ "--scenario", CLI_STRING, CLI_FIELD(struct verify_opts, scenario), .values = scenario_builtin_names, .section = CLI_SEC_RUN, .arg = "NAME|FILE",
	  .help = "a built-in (see --list) or a JSON script such as "
	          "[{\"status\":429,\"retry_after\":\"2\"},{\"status\":200}]" },
	{ "--all", CLI_BOOL, CLI_FIELD(struct verify_opts, all), .section = CLI_SEC_RUN,
	  .help = "every built-in scenario with its own expectations: one table" },
	{ "--list", CLI_BOOL, CLI_FIELD(struct verify_opts, list), .section = CLI_SEC_RUN,
	  .help = "the built-in scenarios: what each answers, what a correct client does" },
	{ "--expect", CLI_STRING, CLI_FIELD(struct verify_opts, expect), .values = verify_grade_names, .section = CLI_SEC_DOES, .arg = "LIST",
	  .help = "comma-separated expectations (default: the scenario's own list)." },
	{ "--json", CLI_STRING, CLI_FIELD(struct verify_opts, json), .section = CLI_SEC_OUTPUT, .arg = "FILE|-",
	  .help = "verdicts, evidence and arrivals as JSON" },
	{ "--junit", CLI_STRING, CLI_FIELD(struct verify_opts, junit), .section = CLI_SEC_OUTPUT, .arg = "FILE|-",
	  .help = "JUnit XML for CI: one testcase per expectation" },
	{ "--clients", CLI_U64, CLI_FIELD(struct verify_opts, clients), .min = 1, .max = VERIFY_CHILD_MAX, .section = CLI_SEC_DOES, .arg = "N",
	  .help = "run N copies at once, each its own client (URL .../client-K); 1..64" },
	{ "--timeout", CLI_DURATION, CLI_FIELD(struct verify_opts, timeout_ns), .min = 1, .max = UINT64_MAX, .section = CLI_SEC_DOES, .arg = "DUR",
	  .help = "kill COMMAND past this (default 60s)" },
	{ "--jobs", CLI_U64, CLI_FIELD(struct verify_opts, jobs), .min = 1, .max = VERIFY_MAX_JOBS, .section = CLI_SEC_ADVANCED, .arg = "N",
	  .help = "--all: scenarios run at once (default 6; 1..32)" },
	{ "--strict", CLI_BOOL, CLI_FIELD(struct verify_opts, strict), .section = CLI_SEC_DOES,
	  .help = "an expectation not observed fails" },
	{ "--quiet", CLI_BOOL, CLI_FIELD(struct verify_opts, quiet), .section = CLI_SEC_OUTPUT,
	  .help = "no arrival list and no progress line (shown on a terminal while the command "
	          "runs), verdicts only" },
	{ "COMMAND", CLI_REST, CLI_FIELD(struct verify_opts, cmd) },
	{ NULL },
};

static const struct cli_option *const VERIFY_TABLES[] = { VERIFY_OPTIONS, NULL };

static const struct cli_help VERIFY_HELP = {
	.usage = "ratelab verify --scenario NAME|FILE [options] -- COMMAND [ARGS...]\n"
	         "ratelab verify --all [options] -- COMMAND [ARGS...]\n"
	         "ratelab verify --list",
	.about = "Starts a scenario server on a free port, runs COMMAND with RATELAB_URL set to it "
	         "and RATELAB_METHOD to the method the scenario is for (a literal $RATELAB_URL or "
	         "$RATELAB_METHOD in ARGS is replaced too; proxy variables are unset and NO_PROXY "
	         "set), and grades what the server saw.  COMMAND's stdout goes to stderr, so stdout "
	         "holds only the verdicts (with --all, COMMAND's output is dropped).  Each expectation "
	         "passes, fails, or is not observed (N/O: nothing in the run decides it).  A run ends "
	         "when COMMAND does, at --timeout, or (on scenarios that say so in --list) once an "
	         "expectation has failed for good.",
	.tables = VERIFY_TABLES,
	.exits = "0\tevery expectation holds\n"
	         "1\tone fails (or, with --strict, is not observed)\n"
	         "2\ta bad flag or value\n"
	         "4\tCOMMAND could not run or never reached the server\n"
	         "130\tinterrupted\n",
};

static const struct cli_command VERIFY_CLI = { "verify", NULL, &VERIFY_HELP };

/* What cli_parse cannot check: which flags go together. */
static int check_combination(const struct verify_opts *o, char *err, size_t errlen)
{
	if (o->list)
		return 0;
	if (!o->scenario && !o->all)
		return cli_fail(err, errlen, "verify", "--scenario or --all is required");
	if (o->scenario && o->all)
		return cli_fail(err, errlen, "verify", "--scenario and --all do not go together");
	if (o->all && o->expect)
		return cli_fail(err, errlen, "verify", "--expect does not go with --all (each scenario has its own)");
	if (!o->cmd || !o->cmd[0])
		return cli_fail(err, errlen, "verify", "missing COMMAND after --");
	if (cli_check_output(err, errlen, "verify", "--json", o->json) < 0)
		return -1;
	return cli_check_output(err, errlen, "verify", "--junit", o->junit);
}

/* Returns 0 to run, or -1 / 1 for cli_exit (err filled on -1). */
static int parse_args(struct verify_opts *o, int argc, char **argv, char *err, size_t errlen)
{
	struct cli_group g = { VERIFY_OPTIONS, o };
	int rc;

	memset(o, 0, sizeof(*o));
	o->clients = 1;
	o->timeout_ns = VERIFY_DEFAULT_TIMEOUT_NS;
	o->jobs = VERIFY_DEFAULT_JOBS;
	rc = cli_parse(&VERIFY_CLI, &g, 1, argc, argv, err, errlen);
	return rc == 0 ? check_combination(o, err, errlen) : rc;
}

/* A --timeout shorter than a gives-up-within limit cannot fail the limit: say so before the run. */
static void warn_timeout(const struct verify_opts *o, const struct verify_grade_expect *ex, size_t nex)
{
	for (size_t i = 0; i < nex; i++)
		if (ex[i].kind == VERIFY_GIVES_UP_WITHIN && o->timeout_ns < ex[i].arg)
			fprintf(stderr, "ratelab verify: --timeout %.2fs is shorter than %s: a command still running at the "
			        "timeout is 'not observed' there, not failed\n", (double)o->timeout_ns / 1e9, ex[i].text);
}

/* The progress line of one run on a terminal: how many copies ended, and the time so far. */
static void show_one(void *ctx, const struct verify_progress *p)
{
	(void)ctx;
	if (p->done)
		progress_done(stderr);
	else
		progress_line(stderr, "scenario %s: %u of %u clients done, %.1fs", p->scenario, p->clients - p->running,
		              p->clients, (double)p->wall_ns / 1e9);
}

/* The progress line of --all, drawn from the runs' threads. */
struct all_show {
	pthread_mutex_t lock;
	size_t done, total;
	uint64_t t0;
};

static void show_all(void *ctx, const struct verify_progress *p)
{
	struct all_show *s = ctx;

	pthread_mutex_lock(&s->lock);
	s->done += p->done;
	progress_line(stderr, "verify --all: %zu of %zu scenarios done, %.1fs", s->done, s->total,
	              (double)(clock_monotonic_ns() - s->t0) / 1e9);
	pthread_mutex_unlock(&s->lock);
}

/* True when a progress line goes to stderr: a terminal, and no --quiet. */
static bool shows_progress(const struct verify_opts *o)
{
	return !o->quiet && progress_wanted(stderr);
}

static void run_opts(const struct verify_opts *o, struct verify_run_opts *ro)
{
	memset(ro, 0, sizeof(*ro));
	ro->cmd = o->cmd;
	ro->clients = (unsigned)o->clients;
	ro->timeout_ns = o->timeout_ns;
	ro->quiet_command = o->all;
	ro->interrupted = &verify_interrupted;
	ro->total = 1;
}

/* Write JSON (root handed over) to --json; -1 with a message when it cannot be written. */
static int write_json(const char *path, json_t *root)
{
	int rc = -1;

	if (root && strcmp(path, "-") == 0)
		rc = json_dumpf(root, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(9)) == 0 && fputc('\n', stdout) != EOF ? 0 : -1;
	else if (root)
		rc = json_dump_file(root, path, JSON_INDENT(2) | JSON_REAL_PRECISION(9));
	json_decref(root);
	if (rc < 0)
		fprintf(stderr, "ratelab verify: --json: cannot write '%s'\n", path);
	return rc;
}

/* Write the JUnit report of rs[0..n) to --junit; -1 with a message when it cannot be written. */
static int write_junit(const char *path, const struct verify_result *rs, size_t n, bool strict)
{
	struct junit *j = junit_new("ratelab verify");
	int rc = j ? 0 : -1;

	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = verify_report_junit(j, &rs[i], strict);
	if (rc == 0)
		rc = junit_write(j, path);
	junit_free(j);
	if (rc < 0)
		fprintf(stderr, "ratelab verify: --junit: cannot write '%s'\n", path);
	return rc;
}

/* The messages of a run that did not reach grading, or reached no server. */
static void explain(const struct verify_result *r)
{
	if (r->state == VERIFY_CANNOT_RUN || r->state == VERIFY_SETUP_FAILED)
		fprintf(stderr, "ratelab verify: %s\n", r->error);
	else if (r->state == VERIFY_NO_ARRIVALS)
		fprintf(stderr, "ratelab verify: the command never reached the server (0 arrivals): does it use "
		        "$RATELAB_URL? (proxy variables are unset for it)\n");
	else if (r->state == VERIFY_INTERRUPTED)
		fprintf(stderr, "ratelab verify: interrupted\n");
}

/* The result files and the exit code of one or more results. */
static int finish(const struct verify_opts *o, const struct verify_result *rs, size_t n, json_t *json)
{
	int rc = n == 1 && !o->all ? verify_report_exit(&rs[0], o->strict) : verify_report_exit_all(rs, n, o->strict);
	bool written = true;

	if (rc == VERIFY_EXIT_INTERRUPTED) {
		json_decref(json);
		return rc;
	}
	/* The verdicts are the product: a result file that could not be written fails the run. */
	if (o->json && write_json(o->json, json) < 0)
		written = false;
	else if (!o->json)
		json_decref(json);
	if (o->junit && write_junit(o->junit, rs, n, o->strict) < 0)
		written = false;
	return !written && rc == VERIFY_EXIT_OK ? VERIFY_EXIT_FAILED : rc;
}

static int verify_one(const struct verify_opts *o)
{
	struct verify_grade_expect ex[VERIFY_GRADE_MAX_EXPECT];
	struct verify_run_opts ro;
	struct verify_result r;
	char err[600], why[400];
	struct scenario *sc = scenario_new(o->scenario, why, sizeof(why));
	size_t nex;
	int rc;

	if (!sc)
		return cli_exit(&VERIFY_CLI, cli_fail(err, sizeof(err), "verify", "--scenario: %s", why), err);
	if (verify_grade_parse(o->expect ? o->expect : scenario_default_expect(sc), ex, VERIFY_GRADE_MAX_EXPECT, &nex,
	                       why, sizeof(why)) < 0) {
		scenario_free(sc);
		return cli_exit(&VERIFY_CLI, cli_fail(err, sizeof(err), "verify", "%s", why), err);
	}
	warn_timeout(o, ex, nex);
	run_opts(o, &ro);
	if (shows_progress(o))
		ro.progress = show_one;
	verify_run(sc, ex, nex, &ro, &r);
	if (r.state == VERIFY_GRADED || r.state == VERIFY_NO_ARRIVALS)
		verify_report_text(o->json && strcmp(o->json, "-") == 0 ? stderr : stdout, &r, o->quiet, o->strict);
	explain(&r);
	rc = finish(o, &r, 1, o->json ? verify_report_json(&r, o->strict) : NULL);
	verify_result_free(&r);
	scenario_free(sc);
	return rc;
}

/* ---- --all ---- */

struct all_run {
	const struct verify_opts *o;
	struct verify_result *rs;
	size_t n;
	size_t next;               /* the next scenario to run */
	pthread_mutex_t lock;
	bool cannot_run;           /* the command cannot be executed: start no more */
	struct all_show *show;     /* NULL: no progress line */
};

/* Run built-in i into a->rs[i]. */
static void run_builtin(struct all_run *a, size_t i)
{
	struct verify_grade_expect ex[VERIFY_GRADE_MAX_EXPECT];
	struct verify_run_opts ro;
	char why[400];
	struct scenario *sc = scenario_new(scenario_builtin_name(i), why, sizeof(why));
	size_t nex = 0;

	run_opts(a->o, &ro);
	ro.index = i;
	ro.total = a->n;
	ro.progress = a->show ? show_all : NULL;
	ro.progress_ctx = a->show;
	if (!sc || verify_grade_parse(scenario_default_expect(sc), ex, VERIFY_GRADE_MAX_EXPECT, &nex, why,
	                              sizeof(why)) < 0) {
		a->rs[i].state = VERIFY_SETUP_FAILED;
		snprintf(a->rs[i].scenario, sizeof(a->rs[i].scenario), "%s", scenario_builtin_name(i));
		snprintf(a->rs[i].error, sizeof(a->rs[i].error), "%.300s", why);
		a->rs[i].method = "GET";
	} else {
		verify_run(sc, ex, nex, &ro, &a->rs[i]);
	}
	scenario_free(sc);
}

static void *all_worker(void *arg)
{
	struct all_run *a = arg;

	for (;;) {
		size_t i;

		pthread_mutex_lock(&a->lock);
		i = a->cannot_run || verify_interrupted ? a->n : a->next++;
		pthread_mutex_unlock(&a->lock);
		if (i >= a->n)
			return NULL;
		run_builtin(a, i);
		pthread_mutex_lock(&a->lock);
		a->cannot_run |= a->rs[i].state == VERIFY_CANNOT_RUN;
		pthread_mutex_unlock(&a->lock);
	}
}

/* Results of the scenarios not run (after a "cannot run"), so every row says something. */
static void fill_unrun(struct all_run *a)
{
	for (size_t i = 0; i < a->n; i++)
		if (a->rs[i].scenario[0] == '\0') {
			snprintf(a->rs[i].scenario, sizeof(a->rs[i].scenario), "%s", scenario_builtin_name(i));
			a->rs[i].method = "GET";
			a->rs[i].state = verify_interrupted ? VERIFY_INTERRUPTED : VERIFY_CANNOT_RUN;
			snprintf(a->rs[i].error, sizeof(a->rs[i].error), "not run");
		}
}

static json_t *all_json(const struct verify_opts *o, const struct verify_result *rs, size_t n, int rc)
{
	json_t *root = json_pack("{s:[],s:b,s:i,s:[]}", "command", "pass", rc == 0, "exit", rc, "scenarios");

	for (size_t i = 0; root && o->cmd[i]; i++)
		json_array_append_new(json_object_get(root, "command"), json_string(o->cmd[i]));
	for (size_t i = 0; root && i < n; i++)
		json_array_append_new(json_object_get(root, "scenarios"), verify_report_json(&rs[i], o->strict));
	return root;
}

static int verify_all(const struct verify_opts *o)
{
	struct all_run a = { o, NULL, scenario_builtin_count(), 0, PTHREAD_MUTEX_INITIALIZER, false, NULL };
	struct all_show show = { PTHREAD_MUTEX_INITIALIZER, 0, a.n, clock_monotonic_ns() };
	pthread_t th[VERIFY_MAX_JOBS];
	size_t started = 0;
	int rc = VERIFY_EXIT_FAILED;

	if (!(a.rs = calloc(a.n, sizeof(*a.rs))))
		return rc;
	a.show = shows_progress(o) ? &show : NULL;
	for (; started < o->jobs && started < a.n; started++)
		if (pthread_create(&th[started], NULL, all_worker, &a) != 0)
			break;
	if (started == 0)
		all_worker(&a);
	for (size_t i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	if (a.show)
		progress_done(stderr);
	fill_unrun(&a);
	for (size_t i = 0; a.cannot_run && i < a.n; i++)
		if (a.rs[i].state == VERIFY_CANNOT_RUN) {
			explain(&a.rs[i]);
			break;
		}
	if (!verify_interrupted)
		verify_report_table(o->json && strcmp(o->json, "-") == 0 ? stderr : stdout, a.rs, a.n, o->strict);
	rc = verify_report_exit_all(a.rs, a.n, o->strict);
	rc = finish(o, a.rs, a.n, o->json ? all_json(o, a.rs, a.n, rc) : NULL);
	for (size_t i = 0; i < a.n; i++)
		verify_result_free(&a.rs[i]);
	free(a.rs);
	return rc;
}

static void list_builtins(void)
{
	for (size_t i = 0; i < scenario_builtin_count(); i++)
		scenario_builtin_describe(i, stdout);
}

static void install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

int verify_main(int argc, char **argv)
{
	struct verify_opts o;
	char err[600];
	int rc = parse_args(&o, argc, argv, err, sizeof(err));

	if (rc != 0)
		return cli_exit(&VERIFY_CLI, rc, err);
	if (o.list) {
		list_builtins();
		return 0;
	}
	install_signals();
	verify_child_init();
	rc = o.all ? verify_all(&o) : verify_one(&o);
	verify_child_sweep();
	return rc;
}
