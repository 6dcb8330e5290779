/* ratelab herd: the thundering-herd comparison of backoff policies. */
#include "lab/herd.h"

#include <curl/curl.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cli.h"
#include "common/clock.h"
#include "common/progress.h"
#include "hammer/engine.h"
#include "hammer/join.h"
#include "lab/herd_impl.h"
#include "lab/herd_occ.h"
#include "lab/herd_report.h"
#include "lab/simserver.h"
#include "server/handlers/occ.h"
#include "server/server.h"

/* A joined herd: the join, and each policy's merged summary line (node 0). */
struct herd_join {
	struct join *join;
	const char *base;                         /* the server's URL, for node 0's POST /reset */
	const char *admin_token;                  /* sent with it, or NULL */
	char lines[HERD_MAX_POLICIES][200];
	bool failed;                              /* a wait of the join failed: exit 4 */
};

/* Set by the first Ctrl-C (SIGINT): the policy running stops, the finished ones are reported. */
static atomic_int herd_cancel;

static void on_sigint(int sig)
{
	(void)sig;
	atomic_store(&herd_cancel, 1);
}

static size_t discard(char *p, size_t sz, size_t n, void *ud)
{
	(void)p;
	(void)ud;
	return sz * n;
}

/* The in-process server's config: one global limit on "/" (and /occ, added by the caller). */
static int server_config(const struct herd_opts *o, struct server_config *c, char *err, size_t errlen)
{
	struct config_route *r;

	server_config_defaults(c);
	c->key = CONFIG_KEY_GLOBAL;
	c->seed = o->seed;
	r = &c->routes[0];
	snprintf(r->limiter, sizeof(r->limiter), "%s", o->limiter);
	r->params.limit = o->limit;
	r->params.window_ns = NS_PER_SEC;
	r->params.burst = o->burst;
	return limiter_params_check(limiter_find(o->limiter), &r->params, err, errlen);
}

static struct server *start_server(const struct herd_opts *o, struct occ_route *oc, char *err, size_t errlen)
{
	struct server_config c;

	if (server_config(o, &c, err, errlen) != 0)
		return NULL;
	c.port = 0;
	c.quiet = true;
	c.threads = 4;
	/* Every client keeps its connection open, all from this machine: room for all of them. */
	if (c.max_connections < o->clients + 64)
		c.max_connections = o->clients + 64;
	c.max_connections_per_ip = c.max_connections;
	if (occ_route_register(&c, oc) != 0) {
		snprintf(err, errlen, "cannot add /occ");
		return NULL;
	}
	return server_start(&c, err, errlen);
}

/* --sim: the model of the server start_server would start. */
static struct simserver *sim_model_new(const struct herd_opts *o, char *err, size_t errlen)
{
	struct server_config c;

	if (server_config(o, &c, err, errlen) != 0)
		return NULL;
	return simserver_new(&c, &o->delay, o->seed, err, errlen);
}

/* POST URL/reset, with Authorization: Bearer token unless token is NULL; returns 0, or -1 with a reason. */
static int post_reset(const char *base, const char *token, char *err, size_t errlen)
{
	char url[512], auth[160];
	long status = 0;
	CURL *e = curl_easy_init();
	struct curl_slist *h;
	CURLcode rc;

	if (!e)
		return snprintf(err, errlen, "curl init failed"), -1;
	snprintf(url, sizeof(url), "%s/reset", base);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token ? token : "");
	/* An empty POST without libcurl's form Content-Type, which admin endpoints refuse. */
	if (!(h = curl_slist_append(NULL, "Content-Type:")) || (token && !curl_slist_append(h, auth))) {
		curl_slist_free_all(h);
		curl_easy_cleanup(e);
		return snprintf(err, errlen, "out of memory"), -1;
	}
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 5000L);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
	rc = curl_easy_perform(e);
	if (rc == CURLE_OK)
		curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(e);
	curl_slist_free_all(h);
	if (rc != CURLE_OK || status < 200 || status >= 300) {
		snprintf(err, errlen, "POST %.200s failed (%s, status %ld)%s", url,
		         rc == CURLE_OK ? "answered" : curl_easy_strerror(rc), status,
		         status == 403 ? ": off the server's machine, give herd the server's --admin-token" : "");
		return -1;
	}
	return 0;
}

/* A header line of the probe: keep RateLimit-Policy's value (trimmed) in ud. */
static size_t policy_header(char *p, size_t sz, size_t n, void *ud)
{
	static const char NAME[] = "ratelimit-policy:";
	size_t len = sz * n, k = sizeof(NAME) - 1;
	char *out = ud;

	if (len > k && strncasecmp(p, NAME, k) == 0) {
		while (k < len && (p[k] == ' ' || p[k] == '\t'))
			k++;
		while (len > k && (p[len - 1] == '\r' || p[len - 1] == '\n' || p[len - 1] == ' '))
			len--;
		snprintf(out, 256, "%.*s", (int)(len - k), p + k);
	}
	return sz * n;
}

/*
 * --url: one GET of the path, before the first reset clears what it took,
 * to learn the policy the server announces (RateLimit-Policy) for the report.
 * out stays "" when it sends none or does not answer.
 */
static void probe_policy(const char *base, const char *path, char out[256])
{
	CURL *e = curl_easy_init();
	char url[640];

	out[0] = '\0';
	if (!e)
		return;
	snprintf(url, sizeof(url), "%s%s", base, path);
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 5000L);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, policy_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, out);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
	if (curl_easy_perform(e) != CURLE_OK)
		out[0] = '\0';
	curl_easy_cleanup(e);
}

/* Build every policy first, so a bad name fails before anything runs. */
static int build_policies(const struct herd_opts *o, struct retry_policy *pol)
{
	char err[256];

	for (size_t i = 0; i < o->npolicies; i++)
		if (herd_policy(o->policies[i], &o->knobs, o->workload, &pol[i], err, sizeof(err)) != 0) {
			fprintf(stderr, "ratelab herd: %s\n", err);
			return 2;
		}
	return 0;
}

/* This node's share of the herd's clients: k < clients with k % nodes == node. */
static uint32_t local_clients(const struct herd_opts *o, const struct herd_join *hj)
{
	uint32_t n, i;

	if (hj == NULL)
		return o->clients;
	n = join_nodes(hj->join);
	i = join_node(hj->join);
	return o->clients / n + (i < o->clients % n ? 1 : 0);
}

static int on_ready(void *ctx, uint64_t *start_ns, char *err, size_t errlen)
{
	struct herd_join *hj = ctx;
	int rc = join_ready(hj->join, start_ns, err, errlen);

	hj->failed = hj->failed || rc != 0;
	return rc;
}

/* Node 0, once every node is ready for the policy: the server starts from nothing. */
static int on_leader(void *ctx, char *err, size_t errlen)
{
	const struct herd_join *hj = ctx;

	return post_reset(hj->base, hj->admin_token, err, errlen);
}

static int own_result(struct herd_result *out, const char *name, uint32_t clients, const struct hammer_result *r,
                      char *err, size_t errlen)
{
	if (herd_result_from_run(out, name, clients, r) == 0)
		return 0;
	snprintf(err, errlen, "out of memory");
	return -1;
}

/*
 * The herd's result of policy i from this node's run r: a joined herd's
 * node 0 merges every node's (and keeps the nodes line), the other nodes
 * report their own share; without a join, r itself.
 */
static int policy_result(const struct herd_opts *o, struct herd_join *hj, size_t i, const char *name,
                         const struct hammer_result *r, struct herd_result *out, char *err, size_t errlen)
{
	struct hammer_result merged;
	struct join_summary js;
	size_t n;
	int rc;

	if (hj == NULL)
		return own_result(out, name, o->clients, r, err, errlen);
	if (join_publish(hj->join, r, NULL, err, errlen) != 0) {
		hj->failed = true;
		return -1;
	}
	if (join_node(hj->join) != 0)
		return own_result(out, name, local_clients(o, hj), r, err, errlen);
	if (join_collect(hj->join, &merged, &js, err, errlen) != 0) {
		hj->failed = true;
		hammer_result_destroy(&merged);
		return -1;
	}
	join_summary_line(&js, hj->lines[i], sizeof(hj->lines[i]));
	n = strlen(hj->lines[i]);
	if (js.missing[0] != '\0')
		snprintf(hj->lines[i] + n, sizeof(hj->lines[i]) - n, "; %s", js.missing);
	rc = herd_result_from_run(out, name, o->clients, &merged);
	if (rc != 0)
		snprintf(err, errlen, "out of memory");
	join_summary_destroy(&js);
	hammer_result_destroy(&merged);
	return rc;
}

/*
 * One policy's herd on the hammer's engine: every client fires at the same
 * instant and makes one request (the workload's attempts, retried under pol)
 * until it succeeds, gives up, or --max-time ends the run.  Joined, the
 * instant is the herd's and this node runs its share of the clients.
 * Policy i of n: the progress line names it.  Returns 0 when it finished,
 * 1 when Ctrl-C stopped it (out is left empty), or -1 with err filled.
 */
static int run_policy(const struct herd_opts *o, const char *url, const struct retry_policy *pol, size_t i,
                      struct herd_join *hj, const struct sim_config *sim, struct herd_result *out,
                      char *err, size_t errlen)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	char label[96];
	struct hammer_config c = {
		.url = url, .method = "GET", .requests = o->clients, .concurrency = o->clients,
		.workload = o->workload == HERD_WORKLOAD_OCC ? &HERD_OCC : NULL,
		.duration_ns = o->max_ns, .threads = cores > 0 ? (uint32_t)cores : 1, .herd = true,
		.timeout_ns = 10 * NS_PER_SEC, .connect_timeout_ns = 5 * NS_PER_SEC, .seed = o->seed,
		.policy = pol, .interval_ns = HERD_PEAK_NS, .by_start_ns = HERD_BIN_NS,
		.progress = progress_wanted(stderr) ? stderr : NULL, .progress_label = label,
		.progress_unit = "clients done", .cancel = &herd_cancel, .sim = sim,
	};
	struct hammer_result r;
	int rc;

	snprintf(label, sizeof(label), "policy %zu of %zu (%.40s)", i + 1, o->npolicies, pol->name);
	if (hj != NULL) {
		char round[64];

		/* by place as well as name: a policy may be listed twice */
		snprintf(round, sizeof(round), "%zu-%.40s", i, pol->name);
		join_round(hj->join, round);
		c.node = join_node(hj->join);
		c.nodes = join_nodes(hj->join);
		c.ready = on_ready;
		c.ready_ctx = hj;
	}
	if (hammer_result_init(&r, c.interval_ns) != 0) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	err[0] = '\0';
	rc = hammer_run(&c, &r, err, errlen);
	if (rc == 0 && r.interrupted)
		rc = 1;
	else if (rc == 0)
		rc = policy_result(o, hj, i, pol->name, &r, out, err, errlen);
	hammer_result_destroy(&r);
	return rc;
}

/* The gap row of --compare: virtual minus real, column by column. */
static void gap_row(const struct herd_result *real, const struct herd_result *virt)
{
	double ms = ((double)virt->completion_ns - (double)real->completion_ns) / 1e6;
	double per = ((double)virt->calls - (double)real->calls) / (double)(real->clients ? real->clients : 1);
	char done[32];

	snprintf(done, sizeof(done), "%+.0fms", ms);
	printf("%-14s %+7lld %+7lld %+7lld %+8.2f %9s %+11lld %+14lld\n", "  gap",
	       (long long)virt->successes - (long long)real->successes,
	       (long long)virt->failures - (long long)real->failures, (long long)virt->calls - (long long)real->calls,
	       per, done, (long long)virt->peak_attempts - (long long)real->peak_attempts,
	       (long long)virt->peak_retries - (long long)real->peak_retries);
}

/*
 * --compare: policy i on the real server (out), then in virtual time against
 * its model; the two rows and the gap.  0, 1 on Ctrl-C, -1 with err.
 */
static int compare_policy(const struct herd_opts *o, const char *base, const char *url, const struct retry_policy *pol,
                          size_t i, const struct sim_config *sim, struct herd_result *out, char *err, size_t errlen)
{
	struct herd_result virt = { 0 };
	int rc;

	if (post_reset(base, o->admin_token, err, errlen) != 0)
		return -1;
	if ((rc = run_policy(o, url, pol, i, NULL, NULL, out, err, errlen)) != 0 ||
	    (rc = run_policy(o, url, pol, i, NULL, sim, &virt, err, errlen)) != 0) {
		herd_result_destroy(&virt);
		return rc;
	}
	snprintf(virt.policy, sizeof(virt.policy), "  virtual");
	herd_report_row(stdout, out, i == 0);
	herd_report_row(stdout, &virt, false);
	gap_row(out, &virt);
	herd_result_destroy(&virt);
	return 0;
}

/*
 * Every policy in turn, a table row as each finishes (with --compare: the
 * real row, the virtual one and the gap); *done gets how many finished.
 * Returns 0, 130 when Ctrl-C stopped the run, or 1 (reported).
 */
static int run_all(const struct herd_opts *o, const char *base, const struct retry_policy *pol,
                   struct herd_result *res, struct herd_join *hj, const struct sim_config *sim, size_t *done)
{
	char err[512], url[640];
	int rc = 0;

	/* the occ workload names its own path */
	snprintf(url, sizeof(url), "%s%s", base, o->workload == HERD_WORKLOAD_OCC ? "/" : o->path);
	if (hj != NULL && join_node(hj->join) != 0)
		printf("node %u of %u of %s: this node's share of each policy; node 0 prints the whole herd\n",
		       join_node(hj->join), join_nodes(hj->join), join_url(hj->join));
	for (*done = 0; *done < o->npolicies && rc == 0; ++*done) {
		size_t i = *done;

		if (o->compare) {
			if (atomic_load(&herd_cancel) || (rc = compare_policy(o, base, url, &pol[i], i, sim, &res[i], err,
			                                                      sizeof(err))) != 0)
				break;
			fflush(stdout);
			continue;
		}
		/* joined, node 0 resets the server once every node is ready (on_leader) */
		/* a model starts from nothing at every run */
		if (atomic_load(&herd_cancel) ||
		    (hj == NULL && sim == NULL && post_reset(base, o->admin_token, err, sizeof(err)) != 0) ||
		    (rc = run_policy(o, url, &pol[i], i, hj, sim, &res[i], err, sizeof(err))) != 0)
			break;
		herd_report_row(stdout, &res[i], i == 0);
		fflush(stdout);
	}
	if (atomic_load(&herd_cancel) || rc == 1)
		return 130;
	if (*done < o->npolicies) {
		fprintf(stderr, "ratelab herd: %s\n", err);
		return hj != NULL && hj->failed ? 4 : 1;
	}
	for (size_t i = 0; hj != NULL && i < o->npolicies && join_node(hj->join) == 0; i++)
		printf("%s: %s\n", pol[i].name, hj->lines[i]);
	return 0;
}

/* DIR/report.html, results.json and the CSVs of the n policies that finished; 0, or 1 (reported). */
static int write_report(const struct herd_opts *o, const struct herd_result *res, size_t n)
{
	char err[256];
	struct herd_report_info info = {
		.workload = o->workload == HERD_WORKLOAD_OCC ? "occ" : "request",
		.clients = o->clients, .seed = o->seed, .limiter = o->url ? NULL : o->limiter,
		.url = o->url, .limit = o->limit, .burst = o->burst, .base_ns = o->knobs.base_ns,
		.cap_ns = o->knobs.cap_ns, .max_attempts = o->knobs.max_attempts, .planned = o->npolicies,
		.interrupted = n < o->npolicies, .server_policy = o->server_policy[0] ? o->server_policy : NULL,
	};

	if (herd_report_write(o->report_dir, &info, res, n, err, sizeof(err)) != 0) {
		fprintf(stderr, "ratelab herd: %s\n", err);
		return 1;
	}
	printf("report: %s/report.html (results.json, one CSV per policy)\n", o->report_dir);
	return 0;
}

/* Ctrl-C: stop the policy running and say so; a second Ctrl-C ends herd at once. */
static void catch_sigint(void)
{
	struct sigaction sa = { 0 };

	atomic_store(&herd_cancel, 0);
	sa.sa_handler = on_sigint;
	sa.sa_flags = SA_RESETHAND;
	sigaction(SIGINT, &sa, NULL);
}

/* --join: take a node index in the herd; 0, or 4 (reported).  Every node runs the first node's seed. */
static int herd_join_setup(struct herd_opts *o, struct herd_join *hj)
{
	char settings[700], err[512];
	struct join_opts jo = { o->join_url, o->nodes, o->join_timeout_ns, JOIN_START_MARGIN_NS, settings, o->seed,
	                        on_leader, hj };
	size_t n = (size_t)snprintf(settings, sizeof(settings), "herd clients=%u workload=%s max-time=%llums policies=",
	                            o->clients, o->workload == HERD_WORKLOAD_OCC ? "occ" : "request",
	                            (unsigned long long)(o->max_ns / NS_PER_MS));

	for (size_t i = 0; i < o->npolicies && n < sizeof(settings); i++)
		n += (size_t)snprintf(settings + n, sizeof(settings) - n, "%s%s", i ? "," : "", o->policies[i]);
	hj->join = join_new(&jo, err, sizeof(err));
	if (hj->join == NULL) {
		fprintf(stderr, "ratelab herd: %s\n", err);
		return 4;
	}
	o->seed = join_seed(hj->join);
	return 0;
}

/*
 * Parse the options, build the policies, make --report's directory and take
 * --join's node index: 0 to run, or -1 with the exit code in *code
 * (0 after --help).
 */
static int herd_setup(struct herd_opts *o, struct retry_policy *pol, struct herd_join *hj, int argc, char **argv,
                      int *code)
{
	int rc = herd_opts_parse(o, argc, argv);

	if (rc != 0)
		return *code = rc == 1 ? 0 : 2, -1;
	if ((rc = build_policies(o, pol)) != 0)
		return *code = rc, -1;
	/* a report directory that cannot be made should stop the run before it starts, not after */
	if (o->report_dir && mkdir(o->report_dir, 0777) != 0 && errno != EEXIST) {
		fprintf(stderr, "ratelab herd: --report '%s': %s\n", o->report_dir, strerror(errno));
		return *code = 2, -1;
	}
	signal(SIGPIPE, SIG_IGN);
	if (o->join_url != NULL && (rc = herd_join_setup(o, hj)) != 0)
		return *code = rc, -1;
	return 0;
}

/*
 * What the herd runs against, unless --url: the in-process server (its URL
 * in url) and, with --sim or --compare, its model.  0, or -1 (reported).
 */
static int start_targets(const struct herd_opts *o, struct occ_route *oc, struct server **srv, struct sim_config *sim,
                         char *url, size_t len)
{
	char err[256];

	oc->delay = o->delay;
	oc->seed = o->seed;
	if ((o->sim || o->compare) && !(sim->model_state = sim_model_new(o, err, sizeof(err)))) {
		fprintf(stderr, "ratelab herd: %s\n", err);
		return -1;
	}
	if (o->sim) {
		snprintf(url, len, "http://sim");
	} else if (!o->url) {
		if (!(oc->occ = occ_new()) || !(*srv = start_server(o, oc, err, sizeof(err)))) {
			fprintf(stderr, "ratelab herd: %s\n", oc->occ ? err : "out of memory");
			return -1;
		}
		snprintf(url, len, "http://127.0.0.1:%d", server_port(*srv));
	}
	return 0;
}

/* The herd of a set-up run: the server (or --url), every policy, the report.  Returns the exit code; frees hj's join. */
static int herd_run(struct herd_opts *o, const struct retry_policy *pol, struct herd_join *hj)
{
	struct herd_result res[HERD_MAX_POLICIES] = { 0 };
	struct occ_route oc = { 0 };
	struct server *srv = NULL;
	struct sim_config sim = { o->net, &SIMSERVER_OPS, NULL };
	char url[128], err[256] = "";
	size_t done = 0;
	int rc = 1;

	/* a connection per client, and the server's end of it when the server runs in this process */
	if ((!o->sim && hammer_raise_nofile(o->url ? local_clients(o, o->join_url ? hj : NULL) : 2 * o->clients, 1, err,
	                        sizeof(err)) != 0) ||
	    curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fprintf(stderr, "ratelab herd: %s\n", err[0] ? err : "curl_global_init failed");
		join_free(hj->join);
		return 1;
	}
	if (start_targets(o, &oc, &srv, &sim, url, sizeof(url)) != 0)
		goto stop;
	hj->base = o->url;
	hj->admin_token = o->admin_token;
	if (o->url)
		probe_policy(o->url, o->workload == HERD_WORKLOAD_OCC ? "/" : o->path, o->server_policy);
	catch_sigint();
	rc = run_all(o, o->url ? o->url : url, pol, res, o->join_url ? hj : NULL,
	             o->sim || o->compare ? &sim : NULL, &done);
	if (rc == 130)
		fprintf(stderr, "ratelab herd: interrupted: %zu of %zu policies finished\n", done, o->npolicies);
	if ((rc == 0 || rc == 130) && o->report_dir && write_report(o, res, done) != 0)
		rc = CLI_EXIT_WRITE;
stop:
	server_stop(srv);
	occ_free(oc.occ);
	simserver_free(sim.model_state);
	for (size_t i = 0; i < o->npolicies; i++)
		herd_result_destroy(&res[i]);
	join_free(hj->join);
	curl_global_cleanup();
	return rc;
}

int herd_main(int argc, char **argv)
{
	struct herd_opts o;
	struct retry_policy pol[HERD_MAX_POLICIES];
	struct herd_join hj = { 0 };
	int code;

	if (herd_setup(&o, pol, &hj, argc, argv, &code) != 0)
		return code;
	return herd_run(&o, pol, &hj);
}
