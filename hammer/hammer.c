/* ratelab hammer: parse, wire the engine, report. */
#include "hammer/hammer.h"

#include <curl/curl.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/parse.h"
#include "common/retry/retry.h"
#include "hammer/engine.h"
#include "hammer/expect.h"
#include "hammer/plot.h"
#include "hammer/report.h"
#include "hammer/wire.h"

#define MAX_HEADERS 64
#define MAX_KNOBS 32
#define ERRLEN 256

struct knob {
	const char *name;
	const char *value;
};

struct hammer_opts {
	struct hammer_config cfg;
	struct retry_policy policy;
	const char *policy_name;
	bool no_retry;
	bool verbose;
	bool quiet;
	bool requests_given;
	bool concurrency_given;
	bool seed_given;
	const char *json_path;
	const char *timeline_path;
	const char *plot_path;
	const char *expect_spec;
	struct expect *expect;
	const char *headers[MAX_HEADERS];
	const char *urls[HAMMER_MAX_URLS];
	struct knob knobs[MAX_KNOBS];
	unsigned nknobs;
};

/* Retry-engine knobs, forwarded to retry_policy_set; the bool says whether it takes a value. */
static const struct { const char *name; bool has_value; } KNOBS[] = {
	{ "backoff", true }, { "base", true }, { "cap", true }, { "multiplier", true },
	{ "max-attempts", true }, { "deadline", true }, { "retry-on", true },
	{ "retry-non-idempotent", false }, { "retry-after", true }, { "max-retry-after", true },
	{ "budget", true },
};

static const char *const VALUE_FLAGS[] = {
	"requests", "concurrency", "duration", "rate", "arrivals", "threads", "method", "header",
	"data", "timeout", "connect-timeout", "start", "seed", "policy", "json", "timeline",
	"interval", "plot", "expect", "transport",
};

static atomic_int cancel_flag;

static void on_sigint(int sig)
{
	(void)sig;
	atomic_store(&cancel_flag, 1);
}

static void usage(FILE *f)
{
	fprintf(f,
	"usage: ratelab hammer [URL...] [options]   (URL defaults to http://127.0.0.1:8080/)\n"
	"  several URLs: requests go round-robin over the servers (a request's retries stay on\n"
	"  its server), and the summary breaks the counts down per server (at most %d URLs)\n"
	"\nload:\n"
	"  --requests N          requests to make (40; no limit with --duration)\n"
	"  --concurrency N       virtual clients (4; 256 with --rate)\n"
	"  --duration DUR        run for DUR instead of a count (e.g. 10s)\n"
	"  --rate R              open loop: R new requests per second (or COUNT/PERIOD); retries on top\n"
	"  --arrivals KIND       constant (default) or poisson, with --rate\n"
	"  --threads N           worker threads (default: the number of cores)\n"
	"  --method M, --header 'K: V' (repeatable), --data BODY\n"
	"  --timeout DUR         per attempt (30s); --connect-timeout DUR\n"
	"  --start now|herd      herd: every client fires at one instant once all are ready\n"
	"  --transport T         auto (default): ratelab's own HTTP/1.1 client for http:// URLs,\n"
	"                        libcurl otherwise; wire: the own client only; curl: libcurl only\n"
	"  --seed N              make every jittered wait reproducible\n"
	"\nretries:\n"
	"  --retry               the lab preset (same as --policy lab)\n"
	"  --policy NAME         %s\n"
	"  --no-retry            never retry (also RATELAB_NO_RETRY=1)\n"
	"  --backoff none|constant|exponential|full|equal|decorrelated|randomized\n"
	"  --base DUR --cap DUR --multiplier X --max-attempts N --deadline DUR\n"
	"  --retry-on LIST       statuses plus conn, timeout (e.g. 429,503,conn)\n"
	"  --retry-non-idempotent  --retry-after honour|ignore  --max-retry-after DUR\n"
	"  --budget ratio=0.2,min=10,window=10s\n"
	"\noutput:\n"
	"  --json FILE|-         the figures as JSON (with -, the summary goes to stderr)\n"
	"  --timeline FILE.csv   per-interval counts; --interval DUR (100ms)\n"
	"  --plot FILE.svg       the timeline, stacked by status\n"
	"  --verbose             one note per retry; --quiet: no summary\n"
	"  --expect CHECKS       e.g. 'ok>=30,429<=5,wall<=10s,calls<=200'; exit 3 when one fails\n"
	"\nexit: 0 run completed, 1 no HTTP answer at all, 2 usage error, 3 --expect failed, 130 Ctrl-C\n",
	HAMMER_MAX_URLS, retry_preset_names());
}

static int bad_flag(const char *flag, const char *value, const char *why)
{
	if (value != NULL)
		fprintf(stderr, "ratelab hammer: %s '%s': %s\n", flag, value, why);
	else
		fprintf(stderr, "ratelab hammer: %s: %s\n", flag, why);
	return -1;
}

static int flag_u64(const char *flag, const char *v, uint64_t min, uint64_t max, uint64_t *out)
{
	char why[128];

	if (parse_u64(v, min, max, out, why, sizeof(why)) != 0)
		return bad_flag(flag, NULL, why);  /* the message quotes the value */
	return 0;
}

static int flag_duration(const char *flag, const char *v, uint64_t *out)
{
	char why[128];

	if (parse_duration(v, out, why, sizeof(why)) != 0)
		return bad_flag(flag, NULL, why);
	return 0;
}

/* "--rate 50", "--rate 2.5" or "--rate 30/1m". */
static int flag_rate(const char *v, double *out)
{
	uint64_t count, period;
	char why[128];

	if (strchr(v, '/') != NULL) {
		if (parse_rate(v, &count, &period, why, sizeof(why)) != 0)
			return bad_flag("--rate", NULL, why);
		*out = (double)count * 1e9 / (double)period;
		return 0;
	}
	if (parse_double(v, 0.001, 1e7, out, why, sizeof(why)) != 0)
		return bad_flag("--rate", NULL, why);
	return 0;
}

/* A timeout: both transports count in whole milliseconds, so less than 1ms is refused. */
static int flag_timeout(const char *flag, const char *v, uint64_t *out)
{
	if (flag_duration(flag, v, out) != 0)
		return -1;
	return *out < NS_PER_MS ? bad_flag(flag, v, "must be at least 1ms") : 0;
}

static int flag_choice(const char *flag, const char *v, const char *a, const char *b, bool *is_b)
{
	char why[64];

	if (strcmp(v, a) != 0 && strcmp(v, b) != 0) {
		snprintf(why, sizeof(why), "want %s or %s", a, b);
		return bad_flag(flag, v, why);
	}
	*is_b = strcmp(v, b) == 0;
	return 0;
}

static int load_flag(struct hammer_opts *o, const char *name, const char *flag, const char *v)
{
	struct hammer_config *c = &o->cfg;
	uint64_t u;

	if (strcmp(name, "requests") == 0) {
		o->requests_given = true;
		return flag_u64(flag, v, 1, UINT64_MAX - 1, &c->requests);
	}
	if (strcmp(name, "concurrency") == 0) {
		o->concurrency_given = true;
		if (flag_u64(flag, v, 1, 1000000, &u) != 0)
			return -1;
		c->concurrency = (uint32_t)u;
		return 0;
	}
	if (strcmp(name, "threads") == 0) {
		if (flag_u64(flag, v, 1, 256, &u) != 0)
			return -1;
		c->threads = (uint32_t)u;
		return 0;
	}
	if (strcmp(name, "duration") == 0)
		return flag_duration(flag, v, &c->duration_ns) != 0 ? -1
		       : c->duration_ns == 0 ? bad_flag(flag, v, "must be more than 0") : 0;
	if (strcmp(name, "rate") == 0)
		return flag_rate(v, &c->rate);
	if (strcmp(name, "arrivals") == 0)
		return flag_choice(flag, v, "constant", "poisson", &c->poisson);
	if (strcmp(name, "start") == 0)
		return flag_choice(flag, v, "now", "herd", &c->herd);
	if (strcmp(name, "timeout") == 0)
		return flag_timeout(flag, v, &c->timeout_ns);
	if (strcmp(name, "connect-timeout") == 0)
		return flag_timeout(flag, v, &c->connect_timeout_ns);
	if (strcmp(name, "seed") == 0) {
		o->seed_given = true;
		return flag_u64(flag, v, 0, INT64_MAX, &c->seed);
	}
	return 1;
}

static int request_flag(struct hammer_opts *o, const char *name, const char *flag, const char *v)
{
	if (strcmp(name, "method") == 0) {
		if (v[0] == '\0' || strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != strlen(v))
			return bad_flag(flag, v, "want an upper-case method such as GET or POST");
		o->cfg.method = v;
		return 0;
	}
	if (strcmp(name, "header") == 0) {
		if (strchr(v, ':') == NULL || v[0] == ':')
			return bad_flag(flag, v, "want 'Name: value'");
		if (o->cfg.nheaders == MAX_HEADERS)
			return bad_flag(flag, v, "too many headers");
		o->headers[o->cfg.nheaders++] = v;
		return 0;
	}
	if (strcmp(name, "data") == 0) {
		o->cfg.data = v;
		return 0;
	}
	if (strcmp(name, "transport") == 0) {
		if (strcmp(v, "auto") == 0)
			o->cfg.transport = HAMMER_TRANSPORT_AUTO;
		else if (strcmp(v, "wire") == 0)
			o->cfg.transport = HAMMER_TRANSPORT_WIRE;
		else if (strcmp(v, "curl") == 0)
			o->cfg.transport = HAMMER_TRANSPORT_CURL;
		else
			return bad_flag(flag, v, "want auto, wire or curl");
		return 0;
	}
	return 1;
}

static int output_flag(struct hammer_opts *o, const char *name, const char *flag, const char *v)
{
	char why[ERRLEN];

	if (strcmp(name, "json") == 0)
		o->json_path = v;
	else if (strcmp(name, "timeline") == 0)
		o->timeline_path = v;
	else if (strcmp(name, "plot") == 0)
		o->plot_path = v;
	else if (strcmp(name, "interval") == 0)
		return flag_duration(flag, v, &o->cfg.interval_ns) != 0 ? -1
		       : o->cfg.interval_ns < NS_PER_MS ? bad_flag(flag, v, "must be at least 1ms") : 0;
	else if (strcmp(name, "expect") == 0) {
		expect_free(o->expect);
		o->expect = expect_parse(v, why, sizeof(why));
		if (o->expect == NULL) {
			fprintf(stderr, "ratelab hammer: %s\n", why);
			return -1;
		}
	} else if (strcmp(name, "policy") == 0) {
		struct retry_policy probe;

		if (retry_policy_preset(v, &probe) != 0) {
			snprintf(why, sizeof(why), "unknown policy (%s)", retry_preset_names());
			return bad_flag(flag, v, why);
		}
		o->policy_name = v;
	} else
		return 1;
	return 0;
}

static int knob_index(const char *name)
{
	for (size_t i = 0; i < sizeof(KNOBS) / sizeof(KNOBS[0]); i++)
		if (strcmp(name, KNOBS[i].name) == 0)
			return (int)i;
	return -1;
}

static bool takes_value(const char *name)
{
	int k = knob_index(name);

	if (k >= 0)
		return KNOBS[k].has_value;
	for (size_t i = 0; i < sizeof(VALUE_FLAGS) / sizeof(VALUE_FLAGS[0]); i++)
		if (strcmp(name, VALUE_FLAGS[i]) == 0)
			return true;
	return false;
}

/* A flag with no value; 1 when name is not one. */
static int bool_flag(struct hammer_opts *o, const char *name)
{
	if (strcmp(name, "retry") == 0)
		o->policy_name = "lab";
	else if (strcmp(name, "no-retry") == 0)
		o->no_retry = true;
	else if (strcmp(name, "verbose") == 0)
		o->verbose = true;
	else if (strcmp(name, "quiet") == 0)
		o->quiet = true;
	else
		return 1;
	return 0;
}

static int one_flag(struct hammer_opts *o, const char *flag, const char *name, const char *v)
{
	int k = knob_index(name), rc;

	if (k >= 0) {
		if (o->nknobs == MAX_KNOBS)
			return bad_flag(flag, v, "too many retry knobs");
		o->knobs[o->nknobs].name = KNOBS[k].name;  /* name is the caller's scratch buffer */
		o->knobs[o->nknobs++].value = v ? v : "true";
		return 0;
	}
	if (v == NULL)
		return bool_flag(o, name) == 0 ? 0 : bad_flag(flag, NULL, "unknown flag (see --help)");
	rc = load_flag(o, name, flag, v);
	if (rc == 1)
		rc = request_flag(o, name, flag, v);
	if (rc == 1)
		rc = output_flag(o, name, flag, v);
	return rc == 1 ? bad_flag(flag, v, "unknown flag (see --help)") : rc;
}

/* Returns 0, 1 for --help, -1 on a usage error (already reported). */
static int parse_args(struct hammer_opts *o, int argc, char **argv)
{
	char name[64];

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *eq, *v = NULL;

		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
			return 1;
		if (strncmp(a, "--", 2) != 0) {
			if (a[0] == '-')
				return bad_flag("flag", a, "unknown flag (see --help)");
			if (o->cfg.nurls == HAMMER_MAX_URLS)
				return bad_flag("URL", a, "too many URLs (at most 16)");
			o->urls[o->cfg.nurls++] = a;
			continue;
		}
		eq = strchr(a, '=');
		snprintf(name, sizeof(name), "%.*s", (int)((eq ? (size_t)(eq - a) : strlen(a)) - 2), a + 2);
		if (eq != NULL)
			v = eq + 1;
		else if (takes_value(name) && i + 1 < argc)
			v = argv[++i];
		else if (takes_value(name))
			return bad_flag(a, NULL, "needs a value");
		if (one_flag(o, a, name, v) != 0)
			return -1;
	}
	return 0;
}

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
}

/* An http:// or https:// URL that libcurl can take apart (host present, port in range); -1 reported. */
static int check_url(const char *url)
{
	CURLU *h;
	CURLUcode rc;

	if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0)
		return bad_flag("URL", url, "want http://HOST[:PORT]/PATH");
	h = curl_url();
	if (h == NULL)
		return bad_flag("URL", url, "out of memory");
	rc = curl_url_set(h, CURLUPART_URL, url, 0);
	curl_url_cleanup(h);
	return rc == CURLUE_OK ? 0 : bad_flag("URL", url, curl_url_strerror(rc));
}

/* An output file must be writable before the run, not found unwritable after it; -1 reported. */
static int check_out(const char *flag, const char *path)
{
	FILE *f;

	if (path == NULL || strcmp(path, "-") == 0)
		return 0;
	f = fopen(path, "a");
	if (f == NULL)
		return bad_flag(flag, path, strerror(errno));
	fclose(f);
	return 0;
}

/* Settle what depends on several flags; -1 on a usage error. */
static int finish_opts(struct hammer_opts *o)
{
	const char *env = getenv("RATELAB_NO_RETRY");
	char err[ERRLEN];

	if (o->cfg.nurls == 0)
		o->urls[o->cfg.nurls++] = "http://127.0.0.1:8080/";
	for (uint32_t i = 0; i < o->cfg.nurls; i++)
		if (check_url(o->urls[i]) != 0)
			return -1;
	if (check_out("--json", o->json_path) != 0 || check_out("--timeline", o->timeline_path) != 0 ||
	    check_out("--plot", o->plot_path) != 0)
		return -1;
	for (uint32_t i = 0; o->cfg.transport == HAMMER_TRANSPORT_WIRE && i < o->cfg.nurls; i++)
		if (!wire_url_supported(o->urls[i]))
			return bad_flag("--transport wire", o->urls[i], "only plain http://HOST[:PORT]/PATH URLs");
	o->cfg.url = o->urls[0];
	o->cfg.urls = o->urls;
	if (o->cfg.method == NULL)
		o->cfg.method = o->cfg.data != NULL ? "POST" : "GET";
	if (!o->requests_given && o->cfg.duration_ns == 0)
		o->cfg.requests = 40;
	if (o->cfg.rate > 0 && !o->concurrency_given)
		o->cfg.concurrency = 256;
	if (o->cfg.poisson && o->cfg.rate == 0)
		return bad_flag("--arrivals", "poisson", "needs --rate");
	/* Without --seed every run draws its own jitter (two hammers started
	 * together must not retry in lockstep); --json reports the seed drawn. */
	if (!o->seed_given)
		o->cfg.seed = (clock_wall_ns() ^ ((uint64_t)getpid() << 32)) & INT64_MAX;
	retry_policy_preset(o->policy_name, &o->policy);
	for (unsigned i = 0; i < o->nknobs; i++)
		if (retry_policy_set(&o->policy, o->knobs[i].name, o->knobs[i].value, err, sizeof(err)) != 0) {
			fprintf(stderr, "ratelab hammer: %s\n", err);
			return -1;
		}
	/* --no-retry and RATELAB_NO_RETRY=1 win over any policy or knob */
	if (o->no_retry || (env != NULL && strcmp(env, "1") == 0)) {
		o->policy_name = "none";
		retry_policy_preset("none", &o->policy);
	}
	o->cfg.policy = &o->policy;
	o->cfg.notes = o->verbose ? stderr : NULL;
	o->cfg.progress = (!o->quiet && !o->verbose && isatty(STDERR_FILENO)) ? stderr : NULL;
	o->cfg.cancel = &cancel_flag;
	return 0;
}

static void write_outputs(const struct hammer_opts *o, const struct hammer_result *r, int *rc)
{
	struct report_info info = { o->cfg.url, o->cfg.method, o->policy_name, o->cfg.concurrency,
	                            o->cfg.threads, o->cfg.seed, o->cfg.rate, o->cfg.herd };
	char err[ERRLEN], title[160];
	bool json_stdout = o->json_path != NULL && strcmp(o->json_path, "-") == 0;

	if (!o->quiet)
		report_text(json_stdout ? stderr : stdout, r);
	fflush(stdout);
	if (o->json_path != NULL && report_write_json(o->json_path, r, &info, err, sizeof(err)) != 0) {
		fprintf(stderr, "ratelab hammer: %s\n", err);
		*rc = 1;
	}
	if (o->timeline_path != NULL && report_write_timeline(o->timeline_path, r->timeline, err, sizeof(err)) != 0) {
		fprintf(stderr, "ratelab hammer: %s\n", err);
		*rc = 1;
	}
	if (o->cfg.nurls > 1)
		snprintf(title, sizeof(title), "%s %s (+%u more), policy %s, %u clients", o->cfg.method,
		         o->cfg.url, o->cfg.nurls - 1, o->policy_name, o->cfg.concurrency);
	else
		snprintf(title, sizeof(title), "%s %s, policy %s, %u clients", o->cfg.method, o->cfg.url,
		         o->policy_name, o->cfg.concurrency);
	if (o->plot_path != NULL && plot_write_svg(o->plot_path, r->timeline, title, err, sizeof(err)) != 0) {
		fprintf(stderr, "ratelab hammer: %s\n", err);
		*rc = 1;
	}
}

/* The exit code of a finished run: 130, 1, 3 or 0. */
static int verdict(const struct hammer_opts *o, const struct hammer_result *r)
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
	if (o->expect != NULL && !expect_check(o->expect, &f, why, sizeof(why))) {
		fprintf(stderr, "ratelab hammer: expect failed: %s\n", why);
		return 3;
	}
	return 0;
}

int hammer_main(int argc, char **argv)
{
	struct hammer_opts o;
	struct hammer_result r;
	struct sigaction sa = { 0 }, old_sa;
	char err[ERRLEN];
	int rc;

	set_defaults(&o);
	rc = parse_args(&o, argc, argv);
	if (rc == 0)
		rc = finish_opts(&o);
	if (rc != 0) {
		if (rc == 1)
			usage(stdout);
		expect_free(o.expect);
		return rc == 1 ? 0 : 2;
	}
	if (hammer_result_init(&r, o.cfg.interval_ns) != 0) {
		fprintf(stderr, "ratelab hammer: out of memory\n");
		rc = 1;
		goto free_expect;
	}
	atomic_store(&cancel_flag, 0);
	sa.sa_handler = on_sigint;
	sa.sa_flags = SA_RESETHAND;
	sigaction(SIGINT, &sa, &old_sa);
	rc = hammer_run(&o.cfg, &r, err, sizeof(err));
	sigaction(SIGINT, &old_sa, NULL);
	if (rc != 0) {
		fprintf(stderr, "ratelab hammer: %s\n", err);
		rc = 1;
		goto free_result;
	}
	write_outputs(&o, &r, &rc);
	if (rc == 0)
		rc = verdict(&o, &r);
free_result:
	hammer_result_destroy(&r);
free_expect:
	expect_free(o.expect);
	return rc;
}
