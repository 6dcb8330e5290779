/* ratelab hammer's command line: the options table, --help, the defaults and the checks across flags. */
#include "hammer/hammer_args.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/cli.h"
#include "common/cli_help.h"
#include "common/clock.h"
#include "hammer/wire.h"

/* One line per preset: its attempts and caps, as the retry engine describes them. */
static void usage_presets(FILE *f)
{
	const char *names = retry_preset_names();
	struct retry_policy p;
	char name[32], lead[40], line[300];

	fprintf(f, "\npresets (--policy NAME):\n");
	while (*names != '\0') {
		size_t n = strcspn(names, ", ");

		snprintf(name, sizeof(name), "%.*s", (int)n, names);
		names += n + strspn(names + n, ", ");
		if (n == 0 || n >= sizeof(name) || retry_policy_preset(name, &p) != 0)
			continue;
		retry_policy_describe(&p, line, sizeof(line));
		snprintf(lead, sizeof(lead), "  %s", name);
		cli_help_write_wrapped(f, lead, 16, line);
	}
}

/* --method: an upper-case token, which also keeps CR and LF out of the request line. */
static int opt_method(void *base, const struct cli_option *o, const char *v, char *why, size_t wl)
{
	(void)o;
	if (cli_has_crlf(v))
		return snprintf(why, wl, "contains a CR or LF"), -1;
	if (v[0] == '\0' || strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != strlen(v))
		return snprintf(why, wl, "is not an upper-case method such as GET or POST"), -1;
	((struct hammer_opts *)base)->cfg.method = v;
	return 0;
}

/* --header 'Name: value': one header line; a CR or LF would smuggle in a second one. */
/* A header name's characters (RFC 9110's token). */
static const char HEADER_NAME[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#$%&'*+-.^_`|~";

static int opt_header(void *base, const struct cli_option *o, const char *v, char *why, size_t wl)
{
	struct hammer_opts *h = base;

	(void)o;
	if (cli_has_crlf(v))
		return snprintf(why, wl, "contains a CR or LF"), -1;
	if (strchr(v, ':') == NULL || v[0] == ':')
		return snprintf(why, wl, "is not a header such as 'Name: value'"), -1;
	if (strspn(v, HEADER_NAME) != (size_t)(strchr(v, ':') - v))
		return snprintf(why, wl, "has a name that is not letters, digits and !#$%%&'*+-.^_`|~"), -1;
	if (strncasecmp(v, "Content-Length:", 15) == 0 || strncasecmp(v, "Transfer-Encoding:", 18) == 0)
		return snprintf(why, wl, "frames the body, which hammer does from --data"), -1;
	if (h->cfg.nheaders == MAX_HEADERS)
		return snprintf(why, wl, "is one too many (at most %d headers)", MAX_HEADERS), -1;
	h->headers[h->cfg.nheaders++] = v;
	return 0;
}

static int opt_expect(void *base, const struct cli_option *o, const char *v, char *why, size_t wl)
{
	struct hammer_opts *h = base;
	char inner[ERRLEN];

	(void)o;
	expect_free(h->expect);
	h->expect = expect_parse(v, inner, sizeof(inner));
	if (h->expect == NULL)
		return snprintf(why, wl, "is not a list of checks such as ok>=30,429<=5,wall<=10s (keys: a status, "
		                "ok, failed, requests, calls, retries, errors, wall)"), -1;
	return 0;
}

/*
 * --rate R, or a schedule such as 100/s,300/s@10s+3s,100/s (common/rate_schedule.h).
 * A plain rate keeps cfg.rate alone; a schedule also sets cfg.rate to its peak.
 */
static int opt_rate(void *base, const struct cli_option *o, const char *v, char *why, size_t wl)
{
	struct hammer_opts *h = base;
	char inner[ERRLEN];

	if (strpbrk(v, ",@+") == NULL) {
		if (rate_schedule_parse(v, o->dmax, &h->schedule, NULL, 0) != 0 || !(h->schedule.seg[0].rate >= o->dmin))
			return snprintf(why, wl, "is not a rate such as 50, 2.5 or 30/1m (%g to %g per second)", o->dmin,
			                o->dmax), -1;
		h->cfg.rate = h->schedule.seg[0].rate;
		h->cfg.schedule = NULL;
		return 0;
	}
	if (rate_schedule_parse(v, o->dmax, &h->schedule, inner, sizeof(inner)) != 0)
		return snprintf(why, wl, "is not a rate schedule such as 100/s,300/s@10s+3s,100/s (%s)", inner), -1;
	h->cfg.rate = rate_schedule_peak(&h->schedule);
	h->cfg.schedule = &h->schedule;
	return 0;
}

static int opt_policy(void *base, const struct cli_option *o, const char *v, char *why, size_t wl)
{
	struct retry_policy probe;

	(void)o;
	if (retry_policy_preset(v, &probe) != 0)
		return snprintf(why, wl, "is not one of %s", retry_preset_names()), -1;
	((struct hammer_opts *)base)->policy_name = v;
	return 0;
}

static int opt_retry(void *base, const struct cli_option *o, const char *v, char *why, size_t wl)
{
	(void)o;
	(void)v;
	(void)why;
	(void)wl;
	((struct hammer_opts *)base)->policy_name = "lab";
	return 0;
}

/* What each retry knob wants, for the message when the retry engine refuses a value. */
static const struct { const char *flag, *want; } KNOB_WANTS[] = {
	{ "--backoff", "is not one of none, constant, exponential, full, equal, decorrelated, randomized" },
	{ "--multiplier", "is not a number from 1 to 100" },
	{ "--max-attempts", "is not a number from 1 to 100" },
	{ "--retry-on", "is not a list of statuses 100-599, conn and timeout" },
	{ "--retry-after", "is not one of honour, ignore" },
	{ "--budget", "is not a budget such as ratio=0.2,min=10,window=10s, on, sre,k=2,window=2m or none" },
};

/*
 * A retry-engine knob: checked now against a probe policy, applied over the
 * chosen preset in finish_opts (a knob given before --policy still applies).
 */
static int opt_knob(void *base, const struct cli_option *o, const char *v, char *why, size_t wl)
{
	struct hammer_opts *h = base;
	struct retry_policy probe;
	const char *want = "is not a duration such as 250ms, 2s or 1m";

	if (h->nknobs == MAX_KNOBS)
		return snprintf(why, wl, "is one too many (at most %d retry knobs)", MAX_KNOBS), -1;
	retry_policy_preset("lab", &probe);
	if (retry_policy_set(&probe, o->name + 2, v ? v : "true", NULL, 0) != 0) {
		for (size_t i = 0; i < sizeof(KNOB_WANTS) / sizeof(KNOB_WANTS[0]); i++)
			if (strcmp(o->name, KNOB_WANTS[i].flag) == 0)
				want = KNOB_WANTS[i].want;
		return snprintf(why, wl, "%s", want), -1;
	}
	h->knobs[h->nknobs].name = o->name + 2;
	h->knobs[h->nknobs++].value = v ? v : "true";
	return 0;
}

/* --join: redis://HOST[:PORT]/RUNID, checked now, connected to when the run starts. */
static int opt_join(void *base, const struct cli_option *o, const char *v, char *why, size_t wl)
{
	char host[256], run[JOIN_RUN_MAX];
	int port;

	(void)o;
	if (join_parse_url(v, host, sizeof(host), &port, run, sizeof(run), why, wl) != 0)
		return -1;
	((struct hammer_opts *)base)->join_url = v;
	return 0;
}

static int opt_sim_delay(void *base, const struct cli_option *o, const char *v, char *why, size_t wl)
{
	char inner[ERRLEN];

	(void)o;
	if (sim_net_parse_delay(v, &((struct hammer_opts *)base)->simcfg.net, inner, sizeof(inner)) != 0)
		return snprintf(why, wl, "is not a delay such as 10ms or 10ms±2ms"), -1;
	return 0;
}

static const char *const ARRIVALS[] = { "constant", "poisson", NULL };
static const char *const STARTS[] = { "now", "herd", NULL };
static const char *const TRANSPORTS[] = { "auto", "wire", "curl", NULL };  /* enum hammer_transport */

static const char *backoff_words(void)
{
	return "none, constant, exponential, full, equal, decorrelated, randomized";
}

static const char *retry_after_words(void)
{
	return "honour, ignore";
}

#define HO(member) CLI_FIELD(struct hammer_opts, member)
#define DUR_MS(member) CLI_DURATION, HO(member), .min = NS_PER_MS, .max = UINT64_MAX

static const struct cli_option HAMMER_OPTIONS[] = {
	{ "URL", CLI_LIST, HO(urls), .max = HAMMER_MAX_URLS, CLI_COUNT(struct hammer_opts, cfg.nurls) },
	{ "--requests", CLI_U64, HO(cfg.requests), .min = 1, .max = UINT64_MAX - 1,
	  CLI_GIVEN(struct hammer_opts, requests_given), .section = CLI_SEC_RUN, .arg = "N",
	  .help = "requests to make (default 40; no limit with --duration)" },
	{ "--concurrency", CLI_U64, HO(cfg.concurrency), .min = 1, .max = 1000000,
	  CLI_GIVEN(struct hammer_opts, concurrency_given), .section = CLI_SEC_RUN, .arg = "N",
	  .help = "virtual clients (default 4; 256 with --rate)" },
	{ "--duration", CLI_DURATION, HO(cfg.duration_ns), .min = 1, .max = UINT64_MAX, .section = CLI_SEC_RUN, .arg = "DUR",
	  .help = "run for DUR instead of a count (e.g. 10s)" },
	{ "--rate", CLI_CUSTOM, .fn = opt_rate, .dmin = 0.001, .dmax = 1e7, .section = CLI_SEC_RUN, .arg = "R",
	  .help = "open loop: R new requests per second (or COUNT/PERIOD); retries on top; or a "
	          "schedule RATE[@START[+LEN]],...: 100/s,300/s@10s+3s,100/s is 100/s, then "
	          "300/s from 10s for 3s, then 100/s again" },
	{ "--arrivals", CLI_CHOICE, HO(cfg.poisson), .words = ARRIVALS, .section = CLI_SEC_RUN, .arg = "constant|poisson",
	  .help = "with --rate: evenly spaced (default) or random arrivals" },
	{ "--threads", CLI_U64, HO(cfg.threads), .min = 1, .max = 256, .section = CLI_SEC_ADVANCED, .arg = "N",
	  .help = "worker threads (default: the number of cores)" },
	{ "--method", CLI_CUSTOM, .fn = opt_method, .section = CLI_SEC_RUN, .arg = "M",
	  .help = "the request method (default GET)" },
	{ "--header", CLI_CUSTOM, .fn = opt_header, .section = CLI_SEC_RUN, .arg = "'K: V'",
	  .help = "a request header; repeatable" },
	{ "--data", CLI_STRING, HO(cfg.data), .section = CLI_SEC_RUN, .arg = "BODY",
	  .help = "the request body" },
	/* both transports count in whole milliseconds */
	{ "--timeout", DUR_MS(cfg.timeout_ns), .section = CLI_SEC_RUN, .arg = "DUR",
	  .help = "per attempt (default 30s)" },
	{ "--connect-timeout", DUR_MS(cfg.connect_timeout_ns), .section = CLI_SEC_RUN, .arg = "DUR",
	  .help = "per connection attempt" },
	{ "--start", CLI_CHOICE, HO(cfg.herd), .words = STARTS, .section = CLI_SEC_RUN, .arg = "now|herd",
	  .help = "herd: every client fires at one instant once all are ready" },
	{ "--transport", CLI_CHOICE, HO(cfg.transport), .words = TRANSPORTS, .section = CLI_SEC_ADVANCED, .arg = "auto|wire|curl",
	  .help = "auto (default): ratelab's own HTTP/1.1 client for http:// URLs, libcurl "
	          "otherwise; wire: the own client only; curl: libcurl only" },
	{ "--seed", CLI_U64, HO(cfg.seed), .max = INT64_MAX, CLI_GIVEN(struct hammer_opts, seed_given), .section = CLI_SEC_ADVANCED, .arg = "N",
	  .help = "make every jittered wait reproducible" },
	{ "--sources", CLI_U64, HO(cfg.sources), .min = 1, .max = (1u << 24) - 2, .section = CLI_SEC_ADVANCED, .arg = "N",
	  .help = "spread the own client's connections to a 127.x.y.z server over N source "
	          "addresses from 127.0.0.1 (default: as many as the port range needs, so "
	          "100,000 clients fit; 1 below about 14,000)" },
	{ "--retry", CLI_ACTION, .fn = opt_retry, .section = CLI_SEC_DOES,
	  .help = "the lab preset (same as --policy lab)" },
	{ "--policy", CLI_CUSTOM, .fn = opt_policy, .values = retry_preset_names, .section = CLI_SEC_DOES, .arg = "NAME",
	  .help = "a retry preset (see presets below)." },
	{ "--no-retry", CLI_BOOL, HO(no_retry), .section = CLI_SEC_DOES,
	  .help = "never retry (also RATELAB_NO_RETRY=1)" },
	{ "--backoff", CLI_CUSTOM, .fn = opt_knob, .values = backoff_words, .section = CLI_SEC_DOES, .arg = "KIND",
	  .help = "the wait between attempts." },
	{ "--base", CLI_CUSTOM, .fn = opt_knob, .section = CLI_SEC_DOES, .arg = "DUR",
	  .help = "the first backoff wait" },
	{ "--cap", CLI_CUSTOM, .fn = opt_knob, .section = CLI_SEC_DOES, .arg = "DUR",
	  .help = "the longest backoff wait" },
	{ "--multiplier", CLI_CUSTOM, .fn = opt_knob, .section = CLI_SEC_DOES, .arg = "X",
	  .help = "the backoff growth per attempt" },
	{ "--max-attempts", CLI_CUSTOM, .fn = opt_knob, .section = CLI_SEC_DOES, .arg = "N",
	  .help = "attempts per request, the first included" },
	{ "--deadline", CLI_CUSTOM, .fn = opt_knob, .section = CLI_SEC_DOES, .arg = "DUR",
	  .help = "the most one request may take in all" },
	{ "--retry-on", CLI_CUSTOM, .fn = opt_knob, .section = CLI_SEC_DOES, .arg = "LIST",
	  .help = "statuses plus conn, timeout (e.g. 429,503,conn)" },
	{ "--retry-non-idempotent", CLI_ACTION, .fn = opt_knob, .section = CLI_SEC_DOES,
	  .help = "retry POST and PATCH too" },
	{ "--retry-after", CLI_CUSTOM, .fn = opt_knob, .values = retry_after_words, .section = CLI_SEC_DOES, .arg = "honour|ignore",
	  .help = "whether a Retry-After answer sets the wait" },
	{ "--max-retry-after", CLI_CUSTOM, .fn = opt_knob, .section = CLI_SEC_DOES, .arg = "DUR",
	  .help = "a longer Retry-After fails fast" },
	{ "--total-wait-cap", CLI_CUSTOM, .fn = opt_knob, .section = CLI_SEC_DOES, .arg = "DUR",
	  .help = "the most one request may spend waiting in all" },
	{ "--budget", CLI_CUSTOM, .fn = opt_knob, .section = CLI_SEC_DOES, .arg = "SPEC",
	  .help = "a retry budget: ratio=0.2,min=10,window=10s | on | sre[,k=2,window=2m] | none" },
	{ "--shared-wait", CLI_BOOL, HO(cfg.shared_wait), .section = CLI_SEC_DOES,
	  .help = "a Retry-After holds every client of this run off until it is over, not just the "
	          "one that got it (one client, one wait).  A retrying run sends Retry-Attempt and "
	          "Retry-Request on each call, so the server judges each retry against its own rejection" },
	{ "--json", CLI_STRING, HO(json_path), .section = CLI_SEC_OUTPUT, .arg = "FILE|-",
	  .help = "the figures as JSON (with -, the summary goes to stderr)" },
	{ "--junit", CLI_STRING, HO(junit_path), .section = CLI_SEC_OUTPUT, .arg = "FILE|-",
	  .help = "the --expect checks as JUnit XML for CI, one testcase per check (with -, the "
	          "summary goes to stderr)" },
	{ "--timeline", CLI_STRING, HO(timeline_path), .section = CLI_SEC_OUTPUT, .arg = "FILE.csv",
	  .help = "per-interval counts" },
	{ "--interval", DUR_MS(cfg.interval_ns), .section = CLI_SEC_OUTPUT, .arg = "DUR",
	  .help = "the interval of --timeline and --plot (default 100ms)" },
	{ "--plot", CLI_STRING, HO(plot_path), .section = CLI_SEC_OUTPUT, .arg = "FILE.svg",
	  .help = "the timeline, stacked by status" },
	{ "--verbose", CLI_BOOL, HO(verbose), .section = CLI_SEC_OUTPUT,
	  .help = "one note per retry" },
	{ "--quiet", CLI_BOOL, HO(quiet), .section = CLI_SEC_OUTPUT,
	  .help = "no summary" },
	{ "--expect", CLI_CUSTOM, .fn = opt_expect, .section = CLI_SEC_OUTPUT, .arg = "CHECKS",
	  .help = "e.g. 'ok>=30,429<=5,wall<=10s,calls<=200'; exit 3 when one fails" },
	{ "--join", CLI_CUSTOM, .fn = opt_join, .section = CLI_SEC_ADVANCED, .arg = "redis://HOST:PORT/RUNID",
	  .help = "with --nodes N: N hammers started with the same line (and their own --join) "
	          "start at one instant and split the work: --concurrency, --requests and --rate "
	          "are the run's totals; node 0 prints the merged summary, --json, --timeline, "
	          "--plot and --expect" },
	{ "--nodes", CLI_U64, HO(nodes), .min = 1, .max = JOIN_NODES_MAX, .section = CLI_SEC_ADVANCED, .arg = "N",
	  .help = "how many hammers --join waits for" },
	{ "--join-timeout", DUR_MS(join_timeout_ns), .needs = "--join", .section = CLI_SEC_ADVANCED, .arg = "DUR",
	  .help = "the longest wait for the other nodes (default 30s)" },
	{ "--sim", CLI_BOOL, HO(sim), .section = CLI_SEC_ADVANCED,
	  .help = "run in exact virtual time against an in-process model of ratelab serve "
	          "(its limiter, capacity model and /occ): the same engine and retry policy, no "
	          "sockets; the same --seed gives the same bytes (one loop: --threads changes nothing)" },
	{ "--serve", CLI_STRING, HO(serve_flags), .section = CLI_SEC_ADVANCED, .arg = "'FLAGS'",
	  .help = "with --sim: the model's serve flags, e.g. '--limiter gcra --limit 5'" },
	{ "--sim-delay", CLI_CUSTOM, .fn = opt_sim_delay, .needs = "--sim", .section = CLI_SEC_ADVANCED, .arg = "MEAN[±SD]",
	  .help = "with --sim: each message's one-way network delay, |N(MEAN, SD)| (default 100us)" },
	{ "--sim-loss", CLI_DOUBLE, HO(simcfg.net.loss), .dmin = 0, .dmax = 1, .needs = "--sim", .section = CLI_SEC_ADVANCED, .arg = "P",
	  .help = "with --sim: each message lost with probability P (0..1; the call times out)" },
	{ "--sim-connect", CLI_DURATION, HO(simcfg.net.connect_ns), .min = 0, .max = 3600 * NS_PER_SEC, .needs = "--sim", .section = CLI_SEC_ADVANCED, .arg = "DUR",
	  .help = "with --sim: a client's first call pays DUR to set its connection up (default 0)" },
	{ NULL },
};

#define HAMMER_STR_(x) #x
#define HAMMER_STR(x) HAMMER_STR_(x)

static const struct cli_option *const HAMMER_TABLES[] = { HAMMER_OPTIONS, NULL };

static const struct cli_help HAMMER_HELP = {
	.usage = "ratelab hammer [URL...] [options]",
	.about = "Fires requests at URL (default http://127.0.0.1:8080/) from concurrent virtual "
	         "clients, with or without retry, and prints what came back.  Several URLs: "
	         "requests go round-robin over the servers (a request's retries stay on its server), "
	         "and the summary breaks the counts down per server (at most "
	         HAMMER_STR(HAMMER_MAX_URLS) " URLs).",
	.tables = HAMMER_TABLES,
	.more = usage_presets,
	.exits = "0\tthe run completed\n"
	         "1\tno HTTP answer at all\n"
	         "2\ta bad flag or value\n"
	         "3\t--expect failed\n"
	         "4\ta joined run could not start or reach Redis\n"
	         CLI_EXIT_WRITE_LINE
	         "130\tCtrl-C\n",
};

static const struct cli_command HAMMER_CLI = { "hammer", NULL, &HAMMER_HELP };

static void set_defaults(struct hammer_opts *o)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);

	memset(o, 0, sizeof(*o));
	o->cfg.method = NULL;
	o->cfg.concurrency = 4;
	o->cfg.threads = cores > 0 ? (uint32_t)cores : 1;
	o->cfg.timeout_ns = 30 * NS_PER_SEC;
	o->cfg.interval_ns = 100 * NS_PER_MS;
	o->cfg.headers = o->headers;
	o->policy_name = "none";
	o->join_timeout_ns = 30 * NS_PER_SEC;
	sim_net_defaults(&o->simcfg.net);
}

/* An http:// or https:// URL that libcurl can take apart (host present, port in range). */
static int check_url(const char *url, char *err, size_t errlen)
{
	CURLU *h;
	CURLUcode rc;

	if (cli_has_crlf(url))
		return cli_bad_value(err, errlen, "hammer", "URL", url, "contains a CR or LF");
	if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0)
		return cli_bad_value(err, errlen, "hammer", "URL", url, "is not an http:// or https:// URL");
	h = curl_url();
	if (h == NULL)
		return cli_fail(err, errlen, "hammer", "out of memory");
	rc = curl_url_set(h, CURLUPART_URL, url, 0);
	curl_url_cleanup(h);
	if (rc != CURLUE_OK)
		return cli_bad_value(err, errlen, "hammer", "URL", url, "is not a valid URL (%s)", curl_url_strerror(rc));
	return 0;
}

/* The URLs and result files, checked before anything runs. */
void hammer_outputs(const struct hammer_opts *o, struct cli_output out[HAMMER_OUTPUTS])
{
	out[0] = (struct cli_output){ "--json", o->json_path };
	out[1] = (struct cli_output){ "--timeline", o->timeline_path };
	out[2] = (struct cli_output){ "--plot", o->plot_path };
	out[3] = (struct cli_output){ "--junit", o->junit_path };
}

static int check_targets(struct hammer_opts *o, char *err, size_t errlen)
{
	struct cli_output outs[HAMMER_OUTPUTS];

	if (o->cfg.nurls == 0)
		o->urls[o->cfg.nurls++] = "http://127.0.0.1:8080/";
	for (uint32_t i = 0; i < o->cfg.nurls; i++)
		if (check_url(o->urls[i], err, errlen) != 0)
			return -1;
	hammer_outputs(o, outs);
	if (cli_check_outputs(err, errlen, "hammer", outs, HAMMER_OUTPUTS) != 0)
		return -1;
	if (o->junit_path && !o->expect)
		return cli_fail(err, errlen, "hammer", "--junit needs --expect (its checks are the testcases)");
	for (uint32_t i = 0; o->cfg.transport == HAMMER_TRANSPORT_WIRE && i < o->cfg.nurls; i++)
		if (!wire_url_supported(o->urls[i]))
			return cli_bad_value(err, errlen, "hammer", "URL", o->urls[i],
			                     "is not a plain http://HOST[:PORT]/PATH URL (--transport wire takes no other)");
	if (o->cfg.poisson && o->cfg.rate == 0)
		return cli_fail(err, errlen, "hammer", "--arrivals poisson needs --rate");
	if (o->sim && o->join_url != NULL)
		return cli_fail(err, errlen, "hammer", "--sim runs in one process: no --join");
	if (!o->sim && o->serve_flags != NULL)
		return cli_fail(err, errlen, "hammer", "--serve configures the model of --sim: give --sim too");
	if ((o->join_url != NULL) != (o->nodes != 0))
		return cli_fail(err, errlen, "hammer", o->join_url ? "--join needs --nodes N (the nodes in the run)"
		                                                    : "--nodes needs --join redis://HOST:PORT/RUNID");
	return 0;
}

/* The preset, its knobs over it, and --no-retry over both. */
static int settle_policy(struct hammer_opts *o, char *err, size_t errlen)
{
	const char *env = getenv("RATELAB_NO_RETRY");
	char why[ERRLEN];

	retry_policy_preset(o->policy_name, &o->policy);
	for (unsigned i = 0; i < o->nknobs; i++)
		if (retry_policy_set(&o->policy, o->knobs[i].name, o->knobs[i].value, why, sizeof(why)) != 0)
			return cli_fail(err, errlen, "hammer", "%s", why);
	/* --no-retry and RATELAB_NO_RETRY=1 win over any policy or knob */
	if (o->no_retry || (env != NULL && strcmp(env, "1") == 0)) {
		o->policy_name = "none";
		retry_policy_preset("none", &o->policy);
	}
	o->cfg.policy = &o->policy;
	return 0;
}

int hammer_args_parse(struct hammer_opts *o, int argc, char **argv, atomic_int *cancel, char *err, size_t errlen)
{
	struct cli_group g = { HAMMER_OPTIONS, o };
	int rc;

	set_defaults(o);
	rc = cli_parse(&HAMMER_CLI, &g, 1, argc, argv, err, errlen);
	if (rc != 0 || check_targets(o, err, errlen) != 0 || settle_policy(o, err, errlen) != 0)
		return rc != 0 ? rc : -1;
	o->cfg.url = o->urls[0];
	o->cfg.urls = o->urls;
	if (o->cfg.method == NULL)
		o->cfg.method = o->cfg.data != NULL ? "POST" : "GET";
	if (!o->requests_given && o->cfg.duration_ns == 0)
		o->cfg.requests = 40;
	if (o->cfg.duration_ns / o->cfg.interval_ns > TIMELINE_MAX_ROWS)
		return cli_fail(err, errlen, "hammer", "--duration is %llu intervals of --interval, more than the %u rows a "
		                "timeline holds: give a longer --interval",
		                (unsigned long long)(o->cfg.duration_ns / o->cfg.interval_ns), TIMELINE_MAX_ROWS);
	if (o->cfg.rate > 0 && !o->concurrency_given)
		o->cfg.concurrency = 256;
	/* Without --seed every run draws its own jitter (two hammers started
	 * together must not retry in lockstep); --json reports the seed drawn. */
	if (!o->seed_given)
		o->cfg.seed = (clock_wall_ns() ^ ((uint64_t)getpid() << 32)) & INT64_MAX;
	o->cfg.notes = o->verbose ? stderr : NULL;
	o->cfg.progress = (!o->quiet && !o->verbose && isatty(STDERR_FILENO)) ? stderr : NULL;
	o->cfg.cancel = cancel;
	/* virtual time runs every client on one loop */
	if (o->sim)
		o->cfg.threads = 1;
	return 0;
}

int hammer_args_exit(int rc, const char *err)
{
	return cli_exit(&HAMMER_CLI, rc, err);
}
