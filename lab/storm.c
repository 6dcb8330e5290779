/* ratelab storm: the metastable retry storm, one row per client policy. */
#include "lab/storm.h"

#include <curl/curl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cli.h"
#include "common/clock.h"
#include "common/parse.h"
#include "common/rate_schedule.h"
#include "hammer/engine.h"
#include "lab/simserver.h"
#include "lab/storm_args.h"
#include "lab/storm_report.h"
#include "lab/storm_sweep.h"
#include "server/capacity.h"
#include "server/server.h"

#define ERRLEN 512

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

	if (storm_args_parse(&o, &grid, argc, argv, &rc) != 0)
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
		fprintf(stderr, "ratelab storm: interrupted: %zu of %zu runs finished\n", done,
		        o.npolicies + (o.control ? 1 : 0));
	if (o.report_dir != NULL && done > 0 && write_report(&o, res, done) != 0 && rc == 0)
		rc = CLI_EXIT_WRITE;
	for (size_t i = 0; i < done; i++)
		storm_result_destroy(&res[i]);
	curl_global_cleanup();
	return rc;
}
