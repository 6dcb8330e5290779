/* ratelab hammer: run the engine on the parsed options (hammer_args.c), join, report, judge. */
#include "hammer/hammer.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cli.h"
#include "common/clock.h"
#include "common/junit.h"
#include "common/retry/retry.h"
#include "hammer/engine.h"
#include "hammer/expect.h"
#include "hammer/hammer_args.h"
#include "hammer/join.h"
#include "hammer/plot.h"
#include "hammer/report.h"

#define ERRLEN 256


static atomic_int cancel_flag;

static void on_sigint(int sig)
{
	(void)sig;
	atomic_store(&cancel_flag, 1);
}

/* The joined run's lines under the summary: the nodes, the spread, the offsets, and who is missing. */
static void join_lines(FILE *f, const struct hammer_opts *o, const struct join_summary *js)
{
	char line[200];

	if (js != NULL) {
		join_summary_line(js, line, sizeof(line));
		fprintf(f, "%s\n", line);
		if (js->missing[0] != '\0')
			fprintf(f, "%s\n", js->missing);
	} else if (o->join != NULL) {
		fprintf(f, "node %u of %u of %s: this node's share; node 0 prints the merged result "
		        "(or: ratelab merge %s)\n", join_node(o->join), o->nodes, join_url(o->join), join_url(o->join));
	}
}

/* The summary (the merged one on a joined run's node 0: js), --json, --timeline and --plot. */
static void write_outputs(const struct hammer_opts *o, const struct hammer_result *r,
                          const struct join_summary *js, int *rc)
{
	struct report_info info = { o->cfg.url, o->cfg.method, o->policy_name, o->cfg.concurrency,
	                            o->cfg.threads, o->cfg.seed, o->cfg.rate, o->cfg.herd, js ? js->json : NULL,
	                            o->cfg.schedule };
	char err[ERRLEN], title[160], how[300], subtitle[360];
	struct cli_output outs[HAMMER_OUTPUTS];
	FILE *text;

	hammer_outputs(o, outs);
	text = cli_outputs_take_stdout(outs, HAMMER_OUTPUTS) ? stderr : stdout;
	if (!o->quiet) {
		report_text(text, r);
		join_lines(text, o, js);
	}
	fflush(stdout);
	if (o->json_path != NULL && report_write_json(o->json_path, r, &info, err, sizeof(err)) != 0) {
		fprintf(stderr, "ratelab hammer: %s\n", err);
		*rc = CLI_EXIT_WRITE;
	}
	if (o->timeline_path != NULL && report_write_timeline(o->timeline_path, r->timeline, err, sizeof(err)) != 0) {
		fprintf(stderr, "ratelab hammer: %s\n", err);
		*rc = CLI_EXIT_WRITE;
	}
	/* The subtitle names the backoff and the Retry-After handling: two plots on a slide differ in it. */
	if (o->cfg.nurls > 1)
		snprintf(title, sizeof(title), "%s %s (+%u more), %u clients", o->cfg.method, o->cfg.url,
		         o->cfg.nurls - 1, o->cfg.concurrency);
	else
		snprintf(title, sizeof(title), "%s %s, %u clients", o->cfg.method, o->cfg.url, o->cfg.concurrency);
	retry_policy_describe(&o->policy, how, sizeof(how));
	snprintf(subtitle, sizeof(subtitle), "policy %s: %s", o->policy_name, how);
	if (o->plot_path != NULL && plot_write_svg(o->plot_path, r->timeline, title, subtitle, err, sizeof(err)) != 0) {
		fprintf(stderr, "ratelab hammer: %s\n", err);
		*rc = CLI_EXIT_WRITE;
	}
}

/* --junit: one testcase per --expect check, a failure saying what the run got.  0, or -1 with a message. */
static int write_junit(const struct hammer_opts *o, const struct expect_facts *f, uint64_t wall_ns)
{
	struct junit *j = junit_new("ratelab hammer");
	int rc = j && junit_suite(j, "hammer --expect", (double)wall_ns / 1e9) == 0 ? 0 : -1;

	for (size_t i = 0; rc == 0 && i < expect_count(o->expect); i++) {
		char text[48], got[32], msg[96];
		bool holds = expect_item(o->expect, i, f, text, sizeof(text), got, sizeof(got));

		snprintf(msg, sizeof(msg), "%s (got %s)", text, got);
		rc = junit_case(j, "ratelab.hammer.expect", text, (double)wall_ns / 1e9, holds ? JUNIT_PASS : JUNIT_FAILURE,
		                msg, msg);
	}
	if (rc == 0)
		rc = junit_write(j, o->junit_path);
	junit_free(j);
	if (rc != 0)
		fprintf(stderr, "ratelab hammer: --junit: cannot write '%s'\n", o->junit_path);
	return rc;
}

/*
 * The exit code of a finished run: 130, 1, 3 or 0.  A joined run's --expect
 * is checked on node 0 only, against the merged result (js), and fails on
 * an incomplete one.
 */
static int verdict(const struct hammer_opts *o, const struct hammer_result *r, const struct join_summary *js)
{
	struct expect_facts f = { r->status, RETRY_STATUS_MAX, r->ok, r->failed, r->requests, r->calls,
	                          r->retries, 0, r->wall_ns };
	char why[512];

	for (int e = RETRY_ERR_REFUSED; e < HAMMER_ERR_KINDS; e++)
		f.errors += r->final_errors[e];
	if (r->interrupted)
		return 130;
	if (r->answered == 0) {
		fprintf(stderr, "ratelab hammer: no request got an HTTP answer from %s%s\n", o->cfg.url,
		        r->attempt_errors[RETRY_ERR_REFUSED] ? " (connection refused: is the server running?)" : "");
		return 1;
	}
	if (o->junit_path && (o->join == NULL || js != NULL) && write_junit(o, &f, r->wall_ns) != 0)
		return 1;
	if (o->expect == NULL || (o->join != NULL && js == NULL))
		return 0;
	if (js != NULL && !js->complete) {
		fprintf(stderr, "ratelab hammer: expect failed: the merged result is incomplete: %s\n",
		        strchr(js->missing, '\n') ? "several nodes are missing" : js->missing);
		return 3;
	}
	if (!expect_check(o->expect, &f, why, sizeof(why))) {
		fprintf(stderr, "ratelab hammer: expect failed: %s\n", why);
		return 3;
	}
	return 0;
}

static int on_ready(void *ctx, uint64_t *start_ns, char *err, size_t errlen)
{
	struct hammer_opts *o = ctx;
	int rc = join_ready(o->join, start_ns, err, errlen);

	o->join_failed = rc != 0;
	return rc;
}

/* --join: take a node index in the run and hook the engine's start to it.  0, or 4 (reported). */
static int join_setup(struct hammer_opts *o)
{
	char settings[256], err[2 * ERRLEN];
	struct join_opts jo = { o->join_url, o->nodes, o->join_timeout_ns, JOIN_START_MARGIN_NS, settings, o->cfg.seed,
	                        NULL, NULL };

	snprintf(settings, sizeof(settings), "hammer concurrency=%u requests=%llu rate=%g duration=%llums start=%s",
	         o->cfg.concurrency, (unsigned long long)o->cfg.requests, o->cfg.rate,
	         (unsigned long long)(o->cfg.duration_ns / NS_PER_MS), o->cfg.herd ? "herd" : "now");
	o->join = join_new(&jo, err, sizeof(err));
	if (o->join == NULL) {
		fprintf(stderr, "ratelab hammer: %s\n", err);
		return 4;
	}
	o->cfg.node = join_node(o->join);
	o->cfg.nodes = o->nodes;
	o->cfg.ready = on_ready;
	o->cfg.ready_ctx = o;
	/* without --seed every node draws from the first node's seed */
	o->cfg.seed = join_seed(o->join);
	return 0;
}

/* A joined run is over here: publish this node's result; node 0 merges and reports.  The exit code. */
static int joined_outputs(struct hammer_opts *o, const struct hammer_result *r)
{
	struct hammer_result merged;
	struct join_summary js;
	char err[2 * ERRLEN];
	int rc = 0;

	struct report_info info = { o->cfg.url, o->cfg.method, o->policy_name, o->cfg.concurrency,
	                            o->cfg.threads, o->cfg.seed, o->cfg.rate, o->cfg.herd, NULL, o->cfg.schedule };
	json_t *config = report_config_json(&info, r);

	rc = join_publish(o->join, r, config, err, sizeof(err));
	json_decref(config);
	if (rc != 0) {
		fprintf(stderr, "ratelab hammer: %s\n", err);
		return 4;
	}
	if (join_node(o->join) != 0) {
		write_outputs(o, r, NULL, &rc);
		return rc != 0 ? rc : verdict(o, r, NULL);
	}
	if (join_collect(o->join, &merged, &js, err, sizeof(err)) != 0) {
		fprintf(stderr, "ratelab hammer: %s\n", err);
		hammer_result_destroy(&merged);
		return 4;
	}
	write_outputs(o, &merged, &js, &rc);
	if (rc == 0)
		rc = verdict(o, &merged, &js);
	join_summary_destroy(&js);
	hammer_result_destroy(&merged);
	return rc;
}

/* --sim: the model the run goes against, from --serve's flags.  0, or 2 (reported). */
static int sim_setup(struct hammer_opts *o, const struct hammer_sim_models *models)
{
	char err[2 * ERRLEN];

	if (models == NULL) {
		fprintf(stderr, "ratelab hammer: --sim: this build has no server model\n");
		return 2;
	}
	o->simcfg.model = models->ops;
	o->simcfg.model_state = models->create(o->serve_flags, o->cfg.seed, err, sizeof(err));
	if (o->simcfg.model_state == NULL) {
		fprintf(stderr, "ratelab hammer: --serve: %s\n", err);
		return 2;
	}
	o->cfg.sim = &o->simcfg;
	return 0;
}

int hammer_main(int argc, char **argv, const struct hammer_sim_models *models)
{
	struct hammer_opts o;
	struct hammer_result r;
	struct sigaction sa = { 0 }, old_sa;
	char err[2 * ERRLEN];
	int rc;

	rc = hammer_args_parse(&o, argc, argv, &cancel_flag, err, sizeof(err));
	if (rc != 0) {
		expect_free(o.expect);
		return hammer_args_exit(rc, err);
	}
	if (o.sim && (rc = sim_setup(&o, models)) != 0) {
		expect_free(o.expect);
		return rc == 2 ? 2 : hammer_args_exit(rc, err);
	}
	if (hammer_result_init(&r, o.cfg.interval_ns) != 0) {
		fprintf(stderr, "ratelab hammer: out of memory\n");
		rc = 1;
		goto free_expect;
	}
	if (o.join_url != NULL && (rc = join_setup(&o)) != 0)
		goto free_result;
	atomic_store(&cancel_flag, 0);
	sa.sa_handler = on_sigint;
	sa.sa_flags = SA_RESETHAND;
	sigaction(SIGINT, &sa, &old_sa);
	rc = hammer_run(&o.cfg, &r, err, sizeof(err));
	sigaction(SIGINT, &old_sa, NULL);
	if (rc != 0) {
		fprintf(stderr, "ratelab hammer: %s\n", err);
		rc = o.join_failed ? 4 : 1;
		goto free_result;
	}
	if (o.join != NULL) {
		rc = joined_outputs(&o, &r);
		goto free_result;
	}
	write_outputs(&o, &r, NULL, &rc);
	if (rc == 0)
		rc = verdict(&o, &r, NULL);
free_result:
	join_free(o.join);
	hammer_result_destroy(&r);
free_expect:
	expect_free(o.expect);
	if (o.cfg.sim != NULL)
		models->destroy(o.simcfg.model_state);
	return rc;
}
