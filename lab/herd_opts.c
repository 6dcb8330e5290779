/* ratelab herd's options: --help, the flags, their checks, and the policies they name. */
#include "lab/herd.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cli.h"
#include "common/cli_help.h"
#include "common/clock.h"
#include "hammer/join.h"
#include "lab/herd_impl.h"
#include "server/handlers/occ.h"
#include "server/limit/limiter.h"

/* Append the comma-separated names of list, each a built-in or a preset; why filled on -1. */
static int add_policies(struct herd_opts *o, const char *list, char *why, size_t wl)
{
	char buf[512], inner[256], *save = NULL, *tok;
	size_t before = o->npolicies;
	struct herd_knobs def;
	struct retry_policy probe;

	if (strlen(list) >= sizeof(buf))
		return snprintf(why, wl, "is too long"), -1;
	strcpy(buf, list);
	herd_knobs_defaults(HERD_WORKLOAD_REQUEST, &def);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (o->npolicies == HERD_MAX_POLICIES)
			return snprintf(why, wl, "is one too many (at most %d policies)", HERD_MAX_POLICIES), -1;
		if (strlen(tok) >= sizeof(o->policies[0]))
			return snprintf(why, wl, "has a name longer than %zu bytes", sizeof(o->policies[0]) - 1), -1;
		if (herd_policy(tok, &def, HERD_WORKLOAD_REQUEST, &probe, inner, sizeof(inner)) != 0)
			return snprintf(why, wl, "names an unknown policy '%s' (%s, or a preset: %s)", tok,
			                HERD_DEFAULT_POLICIES, retry_preset_names()), -1;
		/* a policy run twice is the same run twice: one lane of the report drawn twice */
		for (size_t i = 0; i < o->npolicies; i++)
			if (strcmp(o->policies[i], tok) == 0)
				return snprintf(why, wl, "names '%s' twice (it is in the list already)", tok), -1;
		strcpy(o->policies[o->npolicies++], tok);
	}
	if (o->npolicies == before)
		return snprintf(why, wl, "is not a list of policies such as none,full"), -1;
	return 0;
}

static int opt_policies(void *base, const struct cli_option *opt, const char *v, char *why, size_t wl)
{
	struct herd_opts *o = base;

	if (strcmp(opt->name, "--policies") == 0)
		o->npolicies = 0;
	return add_policies(o, v, why, wl);
}

/* --url: an http:// or https:// URL with a host, found bad before any DNS lookup or run. */
static int opt_url(void *base, const struct cli_option *opt, const char *v, char *why, size_t wl)
{
	CURLU *h = NULL;
	char *host = NULL;
	bool ok = !cli_has_crlf(v) && (strncmp(v, "http://", 7) == 0 || strncmp(v, "https://", 8) == 0) &&
	          (h = curl_url()) != NULL && curl_url_set(h, CURLUPART_URL, v, 0) == CURLUE_OK &&
	          curl_url_get(h, CURLUPART_HOST, &host, 0) == CURLUE_OK && host[0] != '\0';

	(void)opt;
	curl_free(host);
	curl_url_cleanup(h);
	if (!ok)
		return snprintf(why, wl, "is not an http:// or https:// URL with a host"), -1;
	((struct herd_opts *)base)->url = v;
	return 0;
}

/* --admin-token: what serve accepts (printable ASCII, no space), so it fits in a header line. */
static int opt_admin_token(void *base, const struct cli_option *opt, const char *v, char *why, size_t wl)
{
	(void)opt;
	if (v[0] == '\0' || strlen(v) > 127)
		return snprintf(why, wl, "is not a token of 1 to 127 characters"), -1;
	for (const char *p = v; *p; p++)
		if (*p <= ' ' || *p > '~')
			return snprintf(why, wl, "has a space or a character that is not printable ASCII"), -1;
	((struct herd_opts *)base)->admin_token = v;
	return 0;
}

static int opt_path(void *base, const struct cli_option *opt, const char *v, char *why, size_t wl)
{
	(void)opt;
	if (v[0] != '/' || cli_has_crlf(v) || strchr(v, ' ') != NULL)
		return snprintf(why, wl, "is not a path such as /api (a leading /, no space, CR or LF)"), -1;
	((struct herd_opts *)base)->path = v;
	return 0;
}

static int opt_limiter(void *base, const struct cli_option *opt, const char *v, char *why, size_t wl)
{
	(void)opt;
	if (!limiter_find(v))
		return snprintf(why, wl, "is not one of %s", limiter_names()), -1;
	((struct herd_opts *)base)->limiter = v;
	return 0;
}

static int opt_join(void *base, const struct cli_option *opt, const char *v, char *why, size_t wl)
{
	char host[256], run[JOIN_RUN_MAX];
	int port;

	(void)opt;
	if (join_parse_url(v, host, sizeof(host), &port, run, sizeof(run), why, wl) != 0)
		return -1;
	((struct herd_opts *)base)->join_url = v;
	return 0;
}

static int opt_delay(void *base, const struct cli_option *opt, const char *v, char *why, size_t wl)
{
	(void)opt;
	if (occ_delay_parse(v, &((struct herd_opts *)base)->delay, NULL, 0) != 0)
		return snprintf(why, wl, "is not a delay such as 20ms or 20ms\xc2\xb1" "5ms"), -1;
	return 0;
}

static int opt_sim_delay(void *base, const struct cli_option *opt, const char *v, char *why, size_t wl)
{
	char inner[256];

	(void)opt;
	if (sim_net_parse_delay(v, &((struct herd_opts *)base)->net, inner, sizeof(inner)) != 0)
		return snprintf(why, wl, "is not a delay such as 10ms or 10ms\xc2\xb1" "2ms"), -1;
	return 0;
}

_Static_assert(HERD_WORKLOAD_REQUEST == 0 && HERD_WORKLOAD_OCC == 1, "WORKLOADS follows enum herd_workload");
static const char *const WORKLOADS[] = { "request", "occ", NULL };

#define HO(member) CLI_FIELD(struct herd_opts, member)

static char policy_list[512];
static pthread_once_t policy_list_once = PTHREAD_ONCE_INIT;

static void build_policy_list(void)
{
	cli_words_join(policy_list, sizeof(policy_list), HERD_DEFAULT_POLICIES, retry_preset_names());
}

/* The policies --policies takes (for completion and "did you mean"). */
static const char *policy_words(void)
{
	pthread_once(&policy_list_once, build_policy_list);
	return policy_list;
}

static const struct cli_option HERD_OPTIONS[] = {
	{ "--policies", CLI_CUSTOM, .fn = opt_policies, .values = policy_words, .section = CLI_SEC_DOES, .arg = "LIST",
	  .help = "comma-separated (default " HERD_DEFAULT_POLICIES "); a retry preset works "
	          "too." },
	{ "--policy", CLI_CUSTOM, .fn = opt_policies, .values = policy_words, .section = CLI_SEC_DOES, .arg = "NAME",
	  .help = "add one more policy (a preset) to the list." },
	{ "--clients", CLI_U64, HO(clients), .min = 1, .max = HERD_SIM_MAX_CLIENTS, .section = CLI_SEC_RUN, .arg = "N",
	  .help = "virtual clients (default 200; at most 100,000, or 1,000,000 with --sim)" },
	{ "--seed", CLI_U64, HO(seed), .max = UINT64_MAX, .section = CLI_SEC_ADVANCED, .arg = "N",
	  .help = "fixes every random wait (default 1)" },
	{ "--workload", CLI_CHOICE, HO(workload), .words = WORKLOADS, .section = CLI_SEC_RUN, .arg = "request|occ",
	  .help = "request: GET until 2xx (default); occ: GET /occ, then PUT with If-Match, "
	          "backing off on 409 until the write succeeds" },
	{ "--report", CLI_STRING, HO(report_dir), .section = CLI_SEC_OUTPUT, .arg = "DIR",
	  .help = "write DIR/report.html, DIR/results.json, DIR/<policy>.csv" },
	{ "--url", CLI_CUSTOM, .fn = opt_url, .section = CLI_SEC_RUN, .arg = "URL",
	  .help = "target this server instead of starting one" },
	{ "--admin-token", CLI_CUSTOM, .fn = opt_admin_token, .section = CLI_SEC_ADVANCED, .arg = "T",
	  .help = "send Authorization: Bearer T with POST /reset (a server started with "
	          "--admin-token T; needed off its machine)" },
	{ "--path", CLI_CUSTOM, .fn = opt_path, .section = CLI_SEC_RUN, .arg = "PATH",
	  .help = "request workload path (default /)" },
	{ "--base", CLI_DURATION, HO(knobs.base_ns), .max = UINT64_MAX, CLI_GIVEN(struct herd_opts, base_set), .section = CLI_SEC_DOES, .arg = "DUR",
	  .help = "backoff base of the built-in policies (500ms; occ: 10ms)" },
	{ "--cap", CLI_DURATION, HO(knobs.cap_ns), .max = UINT64_MAX, CLI_GIVEN(struct herd_opts, cap_set), .section = CLI_SEC_DOES, .arg = "DUR",
	  .help = "cap of one wait (2s; occ: 1s)" },
	{ "--max-time", CLI_DURATION, HO(max_ns), .min = 1, .max = UINT64_MAX, .section = CLI_SEC_DOES, .arg = "DUR",
	  .help = "bound on one policy's run; clients still waiting fail (60s)" },
	{ "--max-attempts", CLI_U64, HO(knobs.max_attempts), .min = 1, .max = 10000,
	  CLI_GIVEN(struct herd_opts, attempts_set), .section = CLI_SEC_DOES, .arg = "N",
	  .help = "attempts per client, the first included (10; occ: 100)" },
	{ "--limiter", CLI_CUSTOM, .fn = opt_limiter, .values = limiter_names, CLI_GIVEN(struct herd_opts, limiter_set), .section = CLI_SEC_RUN, .arg = "NAME",
	  .help = "the in-process server's limiter (token-bucket; occ: none)." },
	{ "--limit", CLI_U64, HO(limit), .min = 1, .max = 1000000000, .section = CLI_SEC_RUN, .arg = "N",
	  .help = "its requests per second (default 50)" },
	{ "--burst", CLI_U64, HO(burst), .min = 1, .max = 1000000000, .section = CLI_SEC_RUN, .arg = "N",
	  .help = "its burst (default 20)" },
	{ "--delay", CLI_CUSTOM, .fn = opt_delay, .section = CLI_SEC_RUN, .arg = "MEAN[±SD]",
	  .help = "in-process server: network delay on /occ (e.g. 2ms±1ms)" },
	{ "--join", CLI_CUSTOM, .fn = opt_join, .section = CLI_SEC_ADVANCED, .arg = "redis://HOST:PORT/RUNID",
	  .help = "one herd from N machines (with --url and --nodes N): --clients is the total, "
	          "every policy starts at one instant on all nodes, node 0 resets the server and "
	          "prints the merged table" },
	{ "--nodes", CLI_U64, HO(nodes), .min = 1, .max = JOIN_NODES_MAX, .section = CLI_SEC_ADVANCED, .arg = "N",
	  .help = "how many herds --join waits for" },
	{ "--join-timeout", CLI_DURATION, HO(join_timeout_ns), .min = NS_PER_MS, .max = UINT64_MAX, .needs = "--join", .section = CLI_SEC_ADVANCED, .arg = "DUR",
	  .help = "the longest wait for the other nodes (30s)" },
	{ "--sim", CLI_BOOL, HO(sim), .section = CLI_SEC_ADVANCED,
	  .help = "exact virtual time: the same engine and policies against an in-process model "
	          "of the server (its limiter, /occ and --delay), no sockets; up to 1,000,000 "
	          "clients; same --seed, same bytes" },
	{ "--sim-delay", CLI_CUSTOM, .fn = opt_sim_delay, .needs = "--sim or --compare", .section = CLI_SEC_ADVANCED, .arg = "MEAN[±SD]",
	  .help = "with --sim or --compare: each message's one-way network delay (default 100us)" },
	{ "--sim-loss", CLI_DOUBLE, HO(net.loss), .dmin = 0, .dmax = 1, .needs = "--sim or --compare", .section = CLI_SEC_ADVANCED, .arg = "P",
	  .help = "with --sim or --compare: each message lost with probability P (0..1)" },
	{ "--sim-connect", CLI_DURATION, HO(net.connect_ns), .min = 0, .max = 3600 * NS_PER_SEC, .needs = "--sim or --compare", .section = CLI_SEC_ADVANCED, .arg = "DUR",
	  .help = "with --sim or --compare: a client's first call pays DUR to connect (default 0)" },
	{ "--compare", CLI_BOOL, HO(compare), .section = CLI_SEC_ADVANCED,
	  .help = "each policy both ways, on the in-process server and in virtual time (the "
	          "--sim-* flags apply): the two rows and the gap per column (virtual minus real); "
	          "--report keeps the real runs" },
	{ NULL },
};

static const struct cli_option *const HERD_TABLES[] = { HERD_OPTIONS, NULL };

static const struct cli_help HERD_HELP = {
	.usage = "ratelab herd [options]",
	.about = "The thundering herd: for each policy, POST /reset, then --clients virtual clients "
	         "fire at the same instant and retry under that policy until they succeed or give up.  "
	         "One table row per policy.  Without --url it starts its own server in process.",
	.tables = HERD_TABLES,
	.notes = "Columns: calls are all HTTP requests; done in is the time of the last success;\n"
	         "peak/100ms is the most attempts in any 100 ms window, retries/100ms the most\n"
	         "retries (the first volley is the same for every policy, so this is the echo).\n"
	         "On a terminal a progress line shows the policy running.  Ctrl-C stops the run:\n"
	         "the policies that finished are reported (with --report too).\n",
	.exits = "0\tevery policy ran\n"
	         "1\ta run could not be set up\n"
	         "2\ta bad flag or value\n"
	         "4\ta joined herd could not start or reach Redis\n"
	         CLI_EXIT_WRITE_LINE
	         "130\tCtrl-C\n",
};

static const struct cli_command HERD_CLI = { "herd", NULL, &HERD_HELP };

static void opts_defaults(struct herd_opts *o)
{
	char why[128];

	memset(o, 0, sizeof(*o));
	o->limiter = "token-bucket";
	o->limit = 50;
	o->burst = 20;
	o->clients = 200;
	o->seed = 1;
	o->path = "/";
	o->max_ns = 60 * NS_PER_SEC;
	o->join_timeout_ns = 30 * NS_PER_SEC;
	sim_net_defaults(&o->net);
	add_policies(o, HERD_DEFAULT_POLICIES, why, sizeof(why));
}

/* --report DIR: an existing directory, or one that can be made; before anything runs. */
static int check_report_dir(const char *dir, char *err, size_t errlen)
{
	char parent[4096];
	const char *slash;
	struct stat st;

	if (dir == NULL)
		return 0;
	if (dir[0] == '\0')
		return cli_bad_value(err, errlen, "herd", "--report", dir, "cannot be made (an empty path)");
	if (stat(dir, &st) == 0)
		return S_ISDIR(st.st_mode) ? 0 : cli_bad_value(err, errlen, "herd", "--report", dir,
		                                                "cannot be made (a file is in the way)");
	if (errno == ENOENT) {
		slash = strrchr(dir, '/');
		if (slash == NULL)
			snprintf(parent, sizeof(parent), ".");
		else
			snprintf(parent, sizeof(parent), "%.*s", slash == dir ? 1 : (int)(slash - dir), dir);
		if (access(parent, W_OK | X_OK) == 0)
			return 0;
	}
	return cli_bad_value(err, errlen, "herd", "--report", dir, "cannot be made (%s)", strerror(errno));
}

/* What --sim allows and a real herd does not, and the other way round. */
static int check_sim(const struct herd_opts *o, char *err, size_t errlen)
{
	char n[32];

	if (o->sim && (o->url != NULL || o->join_url != NULL))
		return cli_fail(err, errlen, "herd", "--sim models its own server: no --url or --join");
	if (o->compare && (o->sim || o->url != NULL || o->join_url != NULL))
		return cli_fail(err, errlen, "herd", "--compare runs its own server both ways: no --sim, --url or --join");
	if (!o->sim && o->clients > HERD_MAX_CLIENTS) {
		snprintf(n, sizeof(n), "%u", o->clients);
		return cli_bad_value(err, errlen, "herd", "--clients", n, "is more than %u (up to %u with --sim)",
		                     HERD_MAX_CLIENTS, HERD_SIM_MAX_CLIENTS);
	}
	return 0;
}

int herd_opts_parse(struct herd_opts *o, int argc, char **argv)
{
	struct cli_group g = { HERD_OPTIONS, o };
	struct herd_knobs def;
	char err[640];
	int rc;

	opts_defaults(o);
	rc = cli_parse(&HERD_CLI, &g, 1, argc, argv, err, sizeof(err));
	if (rc == 0)
		rc = check_report_dir(o->report_dir, err, sizeof(err));
	if (rc == 0 && (o->join_url != NULL) != (o->nodes != 0))
		rc = cli_fail(err, sizeof(err), "herd", o->join_url ? "--join needs --nodes N (the nodes in the herd)"
		                                                    : "--nodes needs --join redis://HOST:PORT/RUNID");
	if (rc == 0 && o->join_url != NULL && o->url == NULL)
		rc = cli_fail(err, sizeof(err), "herd", "--join needs --url (the one server every node sends to)");
	if (rc == 0)
		rc = check_sim(o, err, sizeof(err));
	if (rc != 0)
		return cli_exit(&HERD_CLI, rc, err) == 0 ? 1 : 2;
	herd_knobs_defaults(o->workload, &def);
	o->knobs.base_ns = o->base_set ? o->knobs.base_ns : def.base_ns;
	o->knobs.cap_ns = o->cap_set ? o->knobs.cap_ns : def.cap_ns;
	o->knobs.max_attempts = o->attempts_set ? o->knobs.max_attempts : def.max_attempts;
	if (o->workload == HERD_WORKLOAD_OCC && !o->limiter_set)
		o->limiter = "none";
	return 0;
}

void herd_knobs_defaults(enum herd_workload w, struct herd_knobs *k)
{
	bool occ = w == HERD_WORKLOAD_OCC;

	k->base_ns = occ ? 10 * NS_PER_MS : 500 * NS_PER_MS;
	k->cap_ns = occ ? 1 * NS_PER_SEC : 2 * NS_PER_SEC;
	k->max_attempts = occ ? 100 : 10;
}

static bool builtin_kind(const char *name, enum backoff_kind *kind)
{
	static const struct { const char *name; enum backoff_kind kind; } B[] = {
		{ "none", BACKOFF_NONE }, { "exponential", BACKOFF_EXPONENTIAL }, { "full", BACKOFF_FULL },
		{ "equal", BACKOFF_EQUAL }, { "decorrelated", BACKOFF_DECORRELATED },
	};

	for (size_t i = 0; i < sizeof(B) / sizeof(B[0]); i++)
		if (strcmp(name, B[i].name) == 0) {
			*kind = B[i].kind;
			return true;
		}
	return false;
}

int herd_policy(const char *name, const struct herd_knobs *k, enum herd_workload w,
                struct retry_policy *out, char *err, size_t errlen)
{
	enum backoff_kind kind;

	if (!builtin_kind(name, &kind)) {
		if (retry_policy_preset(name, out) != 0) {
			snprintf(err, errlen, "--policies: unknown policy '%s' (%s, or a preset: %s)", name,
			         HERD_DEFAULT_POLICIES, retry_preset_names());
			return -1;
		}
		if (w == HERD_WORKLOAD_OCC)
			out->retry_on[409] = true;
		return 0;
	}
	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", name);
	out->backoff = kind;
	out->max_attempts = k->max_attempts;
	out->base_ns = k->base_ns;
	out->cap_ns = k->cap_ns;
	out->multiplier = 2.0;
	out->retry_on[429] = out->retry_on[503] = out->retry_on[409] = true;
	out->retry_conn = true;
	return 0;
}
