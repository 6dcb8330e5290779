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
#include "lab/verify_args.h"
#include "lab/verify_baseline.h"
#include "lab/verify_child.h"
#include "lab/verify_report.h"
#include "lab/verify_run.h"

/* Set by the signal handler, read by the copies' threads: a lock-free atomic, which a handler may store. */
static atomic_int verify_interrupted;

static void on_signal(int sig)
{
	atomic_store(&verify_interrupted, sig);
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

static void run_opts(const struct verify_opts *o, struct verify_run_opts *ro, bool several)
{
	memset(ro, 0, sizeof(*ro));
	ro->cmd = o->cmd;
	ro->clients = (unsigned)o->clients;
	ro->timeout_ns = o->timeout_ns;
	ro->quiet_command = several;
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
	else if (r->state == VERIFY_NO_ARRIVALS && r->listened)
		fprintf(stderr, "ratelab verify: no request reached scenario %s\n", r->scenario);
	else if (r->state == VERIFY_NO_ARRIVALS)
		fprintf(stderr, "ratelab verify: the command never reached the server (0 arrivals): does it use "
		        "$RATELAB_URL? (proxy variables are unset for it)\n");
	else if (r->state == VERIFY_INTERRUPTED)
		fprintf(stderr, "ratelab verify: interrupted\n");
	else if (r->state == VERIFY_GRADED && r->n == 0)
		fprintf(stderr, "ratelab verify: the command had not reached the server when verify stopped it (0 arrivals) "
		        "at %.2fs\n", (double)r->run.wall_ns / 1e9);
}

/* Where the verdicts go: stdout, unless --json or --junit takes it. */
static FILE *report_file(const struct verify_opts *o)
{
	struct cli_output outs[VERIFY_OUTPUTS];

	verify_outputs(o, outs);
	return cli_outputs_take_stdout(outs, VERIFY_OUTPUTS) ? stderr : stdout;
}

static json_t *all_json(const struct verify_opts *o, const struct verify_result *rs, size_t n, int rc)
{
	json_t *root = json_pack("{s:[],s:b,s:i,s:[]}", "command", "pass", rc == 0, "exit", rc, "scenarios");

	for (size_t i = 0; root && o->cmd && o->cmd[i]; i++)
		json_array_append_new(json_object_get(root, "command"), json_string(o->cmd[i]));
	for (size_t i = 0; root && i < n; i++)
		json_array_append_new(json_object_get(root, "scenarios"), verify_report_json(&rs[i], o->strict));
	return root;
}

/* --baseline: write today's verdicts, or compare with them; returns the exit code that follows from rc. */
static int apply_baseline(const struct verify_opts *o, const struct verify_result *rs, size_t n, int rc)
{
	struct verify_baseline_diff d;

	if (!o->baseline || rc == VERIFY_EXIT_INTERRUPTED || rc == VERIFY_EXIT_NOT_RUN)
		return rc;
	if (o->write_baseline) {
		if (verify_baseline_write(o->baseline, rs, n) < 0) {
			fprintf(stderr, "ratelab verify: --baseline: cannot write '%s'\n", o->baseline);
			return CLI_EXIT_WRITE;
		}
		fprintf(report_file(o), "baseline %s: written (%zu scenarios)\n", o->baseline, n);
		return VERIFY_EXIT_OK;
	}
	verify_baseline_compare(report_file(o), o->baseline, o->base, rs, n, o->strict, &d);
	return d.worse ? VERIFY_EXIT_FAILED : VERIFY_EXIT_OK;
}

/* The baseline, the result files and the exit code of rs[0..n); single: one scenario's JSON object. */
static int finish(const struct verify_opts *o, const struct verify_result *rs, size_t n, bool single)
{
	int rc = single ? verify_report_exit(&rs[0], o->strict) : verify_report_exit_all(rs, n, o->strict);
	bool written = true;

	if (rc == VERIFY_EXIT_INTERRUPTED)
		return rc;
	rc = apply_baseline(o, rs, n, rc);
	/* The verdicts are the product: a result file that could not be written fails the run. */
	if (o->json && write_json(o->json, single ? verify_report_json(&rs[0], o->strict) : all_json(o, rs, n, rc)) < 0)
		written = false;
	if (o->junit && write_junit(o->junit, rs, n, o->strict) < 0)
		written = false;
	return !written && rc == VERIFY_EXIT_OK ? CLI_EXIT_WRITE : rc;
}

/* ---- the scenarios of a run, prepared before any starts ---- */

struct prepared {
	struct scenario *sc[VERIFY_MAX_SCENARIOS];
	struct verify_grade_expect ex[VERIFY_MAX_SCENARIOS][VERIFY_GRADE_MAX_EXPECT];
	size_t nex[VERIFY_MAX_SCENARIOS];
	size_t n;
};

static void prepared_free(struct prepared *p)
{
	for (size_t i = 0; p && i < p->n; i++)
		scenario_free(p->sc[i]);
	free(p);
}

/* Every named scenario and its expectations; NULL with a usage error in err. */
static struct prepared *prepare(const struct verify_opts *o, char *err, size_t errlen)
{
	struct prepared *p = calloc(1, sizeof(*p));
	char why[400];

	if (!p) {
		cli_fail(err, errlen, "verify", "out of memory");
		return NULL;
	}
	for (; p->n < o->nnames; p->n++) {
		if (!(p->sc[p->n] = scenario_new(o->names[p->n], why, sizeof(why)))) {
			cli_fail(err, errlen, "verify", "--scenario: %s", why);
			goto fail;
		}
		if (verify_grade_parse(o->expect ? o->expect : scenario_default_expect(p->sc[p->n]), p->ex[p->n],
		                       VERIFY_GRADE_MAX_EXPECT, &p->nex[p->n], why, sizeof(why)) < 0) {
			cli_fail(err, errlen, "verify", "%s", why);
			p->n++;
			goto fail;
		}
	}
	return p;
fail:
	prepared_free(p);
	return NULL;
}

/* ---- several scenarios: workers ---- */

struct all_run {
	const struct verify_opts *o;
	struct prepared *p;
	struct verify_result *rs;
	size_t next;               /* the next scenario to run */
	pthread_mutex_t lock;
	bool cannot_run;           /* the command cannot be executed: start no more */
	struct all_show *show;     /* NULL: no progress line */
};

static void run_one_of(struct all_run *a, size_t i)
{
	struct verify_run_opts ro;

	run_opts(a->o, &ro, true);
	ro.index = i;
	ro.total = a->p->n;
	ro.progress = a->show ? show_all : NULL;
	ro.progress_ctx = a->show;
	verify_run(a->p->sc[i], a->p->ex[i], a->p->nex[i], &ro, &a->rs[i]);
	/* its log is graded and copied: free it now, not after every other scenario */
	scenario_free(a->p->sc[i]);
	a->p->sc[i] = NULL;
}

static void *all_worker(void *arg)
{
	struct all_run *a = arg;

	for (;;) {
		size_t i;

		pthread_mutex_lock(&a->lock);
		i = a->cannot_run || verify_interrupted ? a->p->n : a->next++;
		pthread_mutex_unlock(&a->lock);
		if (i >= a->p->n)
			return NULL;
		run_one_of(a, i);
		pthread_mutex_lock(&a->lock);
		a->cannot_run |= a->rs[i].state == VERIFY_CANNOT_RUN;
		pthread_mutex_unlock(&a->lock);
	}
}

/* Results of the scenarios not run (after a "cannot run"), so every row says something. */
static void fill_unrun(struct all_run *a)
{
	for (size_t i = 0; i < a->p->n; i++)
		if (a->rs[i].scenario[0] == '\0') {
			snprintf(a->rs[i].scenario, sizeof(a->rs[i].scenario), "%s", scenario_name(a->p->sc[i]));
			a->rs[i].method = scenario_method(a->p->sc[i]);
			a->rs[i].nex = a->p->nex[i];
			memcpy(a->rs[i].ex, a->p->ex[i], a->p->nex[i] * sizeof(a->p->ex[i][0]));
			a->rs[i].state = verify_interrupted ? VERIFY_INTERRUPTED : VERIFY_CANNOT_RUN;
			snprintf(a->rs[i].error, sizeof(a->rs[i].error), "not run");
		}
}

/* Run every prepared scenario, o->jobs at a time, into rs. */
static void run_several(const struct verify_opts *o, struct prepared *p, struct verify_result *rs)
{
	struct all_run a = { o, p, rs, 0, PTHREAD_MUTEX_INITIALIZER, false, NULL };
	struct all_show show = { PTHREAD_MUTEX_INITIALIZER, 0, p->n, clock_monotonic_ns() };
	pthread_t th[VERIFY_MAX_JOBS];
	size_t started = 0;

	a.show = shows_progress(o) ? &show : NULL;
	for (; started < o->jobs && started < p->n; started++)
		if (pthread_create(&th[started], NULL, all_worker, &a) != 0)
			break;
	if (started == 0)
		all_worker(&a);
	for (size_t i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	if (a.show)
		progress_done(stderr);
	fill_unrun(&a);
	for (size_t i = 0; a.cannot_run && i < p->n; i++)
		if (rs[i].state == VERIFY_CANNOT_RUN) {
			explain(&rs[i]);
			break;
		}
}

/* One scenario with a command: its progress line and the timeout warning. */
static void run_single(const struct verify_opts *o, struct prepared *p, struct verify_result *r)
{
	struct verify_run_opts ro;

	warn_timeout(o, p->ex[0], p->nex[0]);
	run_opts(o, &ro, false);
	if (shows_progress(o))
		ro.progress = show_one;
	verify_run(p->sc[0], p->ex[0], p->nex[0], &ro, r);
}

static void run_listening(const struct verify_opts *o, struct prepared *p, struct verify_result *rs)
{
	struct verify_listen_opts lo = { o->bind, o->port, o->idle_ns, o->timeout_ns, &verify_interrupted, stderr,
		                         o->upstream };

	verify_listen(p->sc, (const struct verify_grade_expect (*)[VERIFY_GRADE_MAX_EXPECT])p->ex, p->nex, p->n, &lo, rs);
}

/* Run what o names and report it: one scenario's arrivals and verdicts, or one table for several. */
static int verify_scenarios(const struct verify_opts *o)
{
	char err[600];
	struct prepared *p = prepare(o, err, sizeof(err));
	struct verify_result *rs = p ? calloc(p->n, sizeof(*rs)) : NULL;
	bool single = p && p->n == 1 && !o->all;
	int rc = VERIFY_EXIT_FAILED;

	if (!p) {
		fprintf(stderr, "%s\n", err);  /* a scenario or expectation that does not load: a usage error */
		return 2;
	}
	if (!rs)
		goto free_p;
	if (o->listen)
		run_listening(o, p, rs);
	else if (single)
		run_single(o, p, rs);
	else
		run_several(o, p, rs);
	if (single && (rs[0].state == VERIFY_GRADED || rs[0].state == VERIFY_NO_ARRIVALS))
		verify_report_text(report_file(o), &rs[0], o->quiet, o->strict);
	else if (!single && (!verify_interrupted || o->listen))
		verify_report_table(report_file(o), rs, p->n, o->strict);
	if (!single && !o->listen && verify_interrupted) {
		size_t graded = 0;

		for (size_t i = 0; i < p->n; i++)
			graded += rs[i].state != VERIFY_INTERRUPTED;
		fprintf(stderr, "ratelab verify: interrupted: %zu of %zu scenarios had run to their end\n", graded, p->n);
	}
	if (single || o->listen)
		for (size_t i = 0; i < p->n; i++)
			explain(&rs[i]);
	rc = finish(o, rs, p->n, single);
	for (size_t i = 0; i < p->n; i++)
		verify_result_free(&rs[i]);
	free(rs);
free_p:
	prepared_free(p);
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
	int rc;

	if (verify_args_parse(&o, argc, argv, &rc) != 0)
		return rc;
	if (o.list) {
		list_builtins();
		return 0;
	}
	install_signals();
	verify_child_init();
	rc = verify_scenarios(&o);
	verify_child_sweep();
	json_decref(o.base);
	return rc;
}
