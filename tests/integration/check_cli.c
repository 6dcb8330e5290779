/* Every subcommand's command line, through the real binary: each mistake's exact line and exit 2. */
#include <check.h>
#include <curl/curl.h>
#include <jansson.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/version.h"
#include "tests/harness/testutil.h"

#define RUN_MS 10000

struct mistake {
	const char *args[16];   /* the subcommand first, NULL-terminated */
	const char *err;        /* the whole of stderr */
};

/* Each row exits 2 with exactly its line on stderr and nothing on stdout. */
static void expect_mistakes(const struct mistake *m, size_t n)
{
	struct test_run r;

	for (size_t i = 0; i < n; i++) {
		ck_assert_int_eq(testutil_run(&r, m[i].args, NULL, RUN_MS), 0);
		ck_assert_msg(r.status == 2, "%s %s: exit %d (stderr '%s')", m[i].args[0], m[i].args[1], r.status, r.err);
		ck_assert_str_eq(r.err, m[i].err);
		ck_assert_str_eq(r.out, "");
		testutil_run_free(&r);
	}
}

/* `CMD --help` and `CMD -h` exit 0 with the usage on stdout and nothing on stderr. */
static void expect_help(const char *cmd)
{
	const char *flags[] = { "--help", "-h" };
	char want[64];
	struct test_run r;

	snprintf(want, sizeof(want), "usage: ratelab %s", cmd);
	for (size_t i = 0; i < 2; i++) {
		const char *args[] = { cmd, flags[i], NULL };

		ck_assert_int_eq(testutil_run(&r, args, NULL, RUN_MS), 0);
		ck_assert_msg(r.status == 0, "%s %s: exit %d", cmd, flags[i], r.status);
		ck_assert_msg(strncmp(r.out, want, strlen(want)) == 0, "%s %s: stdout '%.80s'", cmd, flags[i], r.out);
		ck_assert_str_eq(r.err, "");
		testutil_run_free(&r);
	}
}

START_TEST(version_names_the_libraries)
{
	const char *args[] = { "--version", NULL };
	char want[256];
	struct test_run r;

	snprintf(want, sizeof(want), "ratelab %s\nlibmicrohttpd %s\nlibcurl %s\n", RATELAB_VERSION, MHD_get_version(),
	         curl_version_info(CURLVERSION_NOW)->version);
	ck_assert_int_eq(testutil_run(&r, args, NULL, RUN_MS), 0);
	ck_assert_int_eq(r.status, 0);
	ck_assert_str_eq(r.out, want);
	ck_assert_str_eq(r.err, "");
	testutil_run_free(&r);
}
END_TEST

START_TEST(cases_mistakes)
{
	static const struct mistake M[] = {
		{ { "cases", "--bogus", "t.json", NULL }, "ratelab cases: unknown option '--bogus'\n" },
		{ { "cases", "t.json", "--seed", NULL }, "ratelab cases: --seed needs a value\n" },
		{ { "cases", "--seed", "x", "t.json", NULL },
		  "ratelab cases: --seed: 'x' is not a number from 0 to 9223372036854775807\n" },
		{ { "cases", "--seed=9223372036854775808", "t.json", NULL },
		  "ratelab cases: --seed: '9223372036854775808' is not a number from 0 to 9223372036854775807\n" },
		{ { "cases", NULL }, "ratelab cases: missing FILE\n" },
		{ { "cases", "a.json", "b.json", NULL }, "ratelab cases: unexpected argument 'b.json'\n" },
		{ { "cases", "/nonexistent-dir/a\nb.json", NULL }, "ratelab cases: /nonexistent-dir/a\\nb.json: cannot open\n" },
	};
	char path[512];
	struct test_run r;

	expect_mistakes(M, sizeof(M) / sizeof(M[0]));
	expect_help("cases");
	testutil_path("tests/retry-cases.json", path, sizeof(path));
	{
		const char *args[] = { "cases", "--seed=7", path, NULL };

		ck_assert_int_eq(testutil_run(&r, args, NULL, RUN_MS), 0);
		ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
		ck_assert_ptr_nonnull(strstr(r.out, " passed, 0 failed\n"));
		testutil_run_free(&r);
	}
}
END_TEST

START_TEST(verify_mistakes)
{
	static const struct mistake M[] = {
		{ { "verify", "--bogus", "--scenario", "post-503", "--", "true", NULL },
		  "ratelab verify: unknown option '--bogus'\n" },
		{ { "verify", "--scenario", NULL }, "ratelab verify: --scenario needs a value\n" },
		{ { "verify", "--scenario", "post-503", "--clients", "65", "--", "true", NULL },
		  "ratelab verify: --clients: '65' is not a number from 1 to 64\n" },
		{ { "verify", "--scenario", "post-503", "--clients=x", "--", "true", NULL },
		  "ratelab verify: --clients: 'x' is not a number from 1 to 64\n" },
		{ { "verify", "--scenario", "post-503", "--timeout", "0", "--", "true", NULL },
		  "ratelab verify: --timeout: '0' is not a duration above 0\n" },
		{ { "verify", "--scenario", "post-503", "--quiet=yes", "--", "true", NULL },
		  "ratelab verify: --quiet takes no value\n" },
		{ { "verify", "--scenario", "post-503", "true", NULL },
		  "ratelab verify: unexpected argument 'true' (COMMAND goes after --)\n" },
		{ { "verify", "--scenario", "post-503", "--", NULL }, "ratelab verify: missing COMMAND after --\n" },
		{ { "verify", "--", "true", NULL }, "ratelab verify: --scenario or --all is required\n" },
		/* a result file that cannot be written stops the run before it starts */
		{ { "verify", "--scenario", "post-503", "--json", "/nonexistent-dir/x.json", "--", "true", NULL },
		  "ratelab verify: --json: '/nonexistent-dir/x.json' cannot be written (No such file or directory)\n" },
		{ { "verify", "--scenario", "post-503", "--json", "-", "--junit", "-", "--", "true", NULL },
		  "ratelab verify: --json and --junit both write to standard output ('-')\n" },
	};
	char json_path[] = "/tmp/ratelab-cli-XXXXXX", json_flag[64];
	int fd = mkstemp(json_path);
	struct test_run r;
	json_t *root;

	expect_mistakes(M, sizeof(M) / sizeof(M[0]));
	expect_help("verify");
	ck_assert_int_ge(fd, 0);
	close(fd);
	snprintf(json_flag, sizeof(json_flag), "--json=%s", json_path);
	{
		const char *args[] = { "verify", "--scenario=post-503", "--timeout=5s", "--clients=2", json_flag,
			               "--quiet", "--", "curl", "-s", "$RATELAB_URL/", NULL };

		ck_assert_int_eq(testutil_run(&r, args, NULL, RUN_MS), 0);
		/* a GET against post-503 observes none of its expectations: exit 5, not a pass */
		ck_assert_msg(r.status == 5, "exit %d: %s %s", r.status, r.out, r.err);
		ck_assert_ptr_nonnull(strstr(r.out, "scenario post-503: 2 arrivals"));
		testutil_run_free(&r);
	}
	root = json_load_file(json_path, 0, NULL);
	unlink(json_path);
	ck_assert_ptr_nonnull(root);
	ck_assert(json_is_false(json_object_get(root, "pass")));
	ck_assert_int_eq(json_integer_value(json_object_get(root, "clients")), 2);
	json_decref(root);
}
END_TEST

START_TEST(serve_mistakes)
{
	static const struct mistake M[] = {
		{ { "serve", "--port", "0", "--bogus", NULL }, "ratelab serve: unknown option '--bogus'\n" },
		{ { "serve", "--bogus=1", NULL }, "ratelab serve: unknown option '--bogus'\n" },
		{ { "serve", "--limit", "5", "--port", NULL }, "ratelab serve: --port needs a value\n" },
		{ { "serve", "--port", "70000", NULL }, "ratelab serve: --port: '70000' is not a number from 0 to 65535\n" },
		{ { "serve", "--port", "0", "--limit=0", NULL },
		  "ratelab serve: --limit: '0' is not a number from 1 to 4294967295\n" },
		{ { "serve", "--port", "0", "--delay", NULL }, "ratelab serve: --delay needs a value\n" },
		{ { "serve", "--port", "0", "--scenario", NULL }, "ratelab serve: --scenario needs a value\n" },
		{ { "serve", "--port", "0", "extra", NULL }, "ratelab serve: unexpected argument 'extra'\n" },
		/* the Redis store's flags read as every other flag */
		{ { "serve", "--port", "0", "--store", NULL }, "ratelab serve: --store needs a value\n" },
		{ { "serve", "--port", "0", "--store=http://x", NULL },
		  "ratelab serve: --store: 'http://x' is not memory or redis://HOST:PORT[/DB]\n" },
		{ { "serve", "--port", "0", "--store-failure", "maybe", NULL },
		  "ratelab serve: --store-failure: 'maybe' is not one of open, closed\n" },
	};
	const char *const flags[] = { "--limit=5", "--window=1s", "--headers=ietf", "--delay=1ms", "--store=memory",
		                      "--store-failure=closed", "--quiet", NULL };
	struct test_server srv;
	char *headers = NULL;
	long status = 0;
	struct test_run r;
	const char *help[] = { "serve", "--help", NULL };
	char url[96];

	expect_mistakes(M, sizeof(M) / sizeof(M[0]));
	expect_help("serve");
	ck_assert_int_eq(testutil_run(&r, help, NULL, RUN_MS), 0);
	/* one usage text for flags that live in four modules */
	ck_assert_ptr_nonnull(strstr(r.out, "--limiter NAME"));
	ck_assert_ptr_nonnull(strstr(r.out, "--delay MEAN"));
	ck_assert_ptr_nonnull(strstr(r.out, "--store URL"));
	ck_assert_ptr_nonnull(strstr(r.out, "--scenario NAME|FILE"));
	testutil_run_free(&r);
	ck_assert_int_eq(testutil_server_start(&srv, flags, RUN_MS), 0);
	snprintf(url, sizeof(url), "%s/", srv.url);
	ck_assert_int_eq(testutil_http("GET", url, NULL, &status, &headers, NULL), 0);
	ck_assert_int_eq(status, 200);
	ck_assert_msg(strstr(headers, "\"default\";q=5;w=1") != NULL, "headers: %s", headers);
	free(headers);
	ck_assert_int_eq(testutil_server_stop(&srv, 3000), 0);
}
END_TEST

START_TEST(hammer_mistakes)
{
	static const struct mistake M[] = {
		{ { "hammer", "--bogus", NULL }, "ratelab hammer: unknown option '--bogus'\n" },
		{ { "hammer", "-x", NULL }, "ratelab hammer: unknown option '-x'\n" },
		{ { "hammer", "http://127.0.0.1:1/", "--requests", NULL }, "ratelab hammer: --requests needs a value\n" },
		{ { "hammer", "--concurrency", "1000001", NULL },
		  "ratelab hammer: --concurrency: '1000001' is not a number from 1 to 1000000\n" },
		{ { "hammer", "--threads=0", NULL }, "ratelab hammer: --threads: '0' is not a number from 1 to 256\n" },
		{ { "hammer", "--quiet=1", NULL }, "ratelab hammer: --quiet takes no value\n" },
		/* a flag that only means something with another is not ignored without it */
		{ { "hammer", "--sim-loss", "0.5", NULL }, "ratelab hammer: --sim-loss goes with --sim\n" },
		{ { "hammer", "--join-timeout", "1s", NULL }, "ratelab hammer: --join-timeout goes with --join\n" },
		/* a header is a name and a value; the body's framing is hammer's own */
		{ { "hammer", "--header", "X y: z", NULL },
		  "ratelab hammer: --header: 'X y: z' has a name that is not letters, digits and !#$%&'*+-.^_`|~\n" },
		{ { "hammer", "--header", "content-length: 5", NULL },
		  "ratelab hammer: --header: 'content-length: 5' frames the body, which hammer does from --data\n" },
		/* a run known to outlast the timeline's rows asks for a longer interval */
		{ { "hammer", "--sim", "--duration", "30m", "--rate", "1", "--interval", "1ms", NULL },
		  "ratelab hammer: --duration is 1800000 intervals of --interval, more than the 1048576 rows a timeline holds: "
		  "give a longer --interval\n" },
		/* two documents on standard output cannot be read apart */
		{ { "hammer", "--sim", "--expect", "ok>=1", "--json", "-", "--junit", "-", NULL },
		  "ratelab hammer: --json and --junit both write to standard output ('-')\n" },
		{ { "hammer", "--sim", "--timeline=-", "--plot=-", NULL },
		  "ratelab hammer: --timeline and --plot both write to standard output ('-')\n" },
		{ { "hammer", "--header", "Transfer-Encoding: chunked", NULL },
		  "ratelab hammer: --header: 'Transfer-Encoding: chunked' frames the body, which hammer does from --data\n" },
	};
	/* CR or LF in a header, method or URL is refused before either transport sees it */
	static const char *const TRANSPORT[] = { "wire", "curl" };
	char out[] = "/tmp/ratelab-cli-XXXXXX";
	int fd = mkstemp(out);
	struct test_server srv;
	struct test_run r;
	json_t *j;

	expect_mistakes(M, sizeof(M) / sizeof(M[0]));
	expect_help("hammer");
	for (size_t t = 0; t < 2; t++) {
		const struct mistake CRLF[] = {
			{ { "hammer", "--transport", TRANSPORT[t], "--header", "X: a\r\nInjected: b", NULL },
			  "ratelab hammer: --header: 'X: a\\r\\nInjected: b' contains a CR or LF\n" },
			{ { "hammer", "--transport", TRANSPORT[t], "--header=X: a\nInjected: b", NULL },
			  "ratelab hammer: --header: 'X: a\\nInjected: b' contains a CR or LF\n" },
			{ { "hammer", "--transport", TRANSPORT[t], "--method", "GET\r\nX", NULL },
			  "ratelab hammer: --method: 'GET\\r\\nX' contains a CR or LF\n" },
			{ { "hammer", "--transport", TRANSPORT[t], "http://127.0.0.1:1/\r\nX: y", NULL },
			  "ratelab hammer: URL: 'http://127.0.0.1:1/\\r\\nX: y' contains a CR or LF\n" },
		};

		expect_mistakes(CRLF, sizeof(CRLF) / sizeof(CRLF[0]));
	}
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(testutil_server_start(&srv, (const char *const[]){ "--limit", "100", "--quiet", NULL }, RUN_MS), 0);
	{
		char json_flag[64], url[96];
		const char *args[] = { "hammer", url, "--requests=3", "--concurrency=1", "--threads=1", "--header=X-Test: 1",
			               "--method=GET", "--policy=lab", "--max-attempts=2", json_flag, "--quiet", NULL };

		snprintf(url, sizeof(url), "%s/", srv.url);
		snprintf(json_flag, sizeof(json_flag), "--json=%s", out);
		ck_assert_int_eq(testutil_run(&r, args, NULL, RUN_MS), 0);
		ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
		testutil_run_free(&r);
	}
	ck_assert_int_eq(testutil_server_stop(&srv, 3000), 0);
	j = json_load_file(out, 0, NULL);
	unlink(out);
	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq(testutil_jint(j, "requests", NULL), 3);
	ck_assert_int_eq(testutil_jint(j, "statuses", "200"), 3);
	json_decref(j);
}
END_TEST

START_TEST(herd_mistakes)
{
	static const struct mistake M[] = {
		{ { "herd", "--bogus", NULL }, "ratelab herd: unknown option '--bogus'\n" },
		{ { "herd", "--join-timeout", "1s", NULL }, "ratelab herd: --join-timeout goes with --join\n" },
		{ { "herd", "--sim-loss", "0.9", NULL }, "ratelab herd: --sim-loss goes with --sim or --compare\n" },
		{ { "herd", "--policies", "full", "--policy", "full", NULL },
		  "ratelab herd: --policy: 'full' names 'full' twice (it is in the list already)\n" },
		{ { "herd", "--clients", "5", "--seed", NULL }, "ratelab herd: --seed needs a value\n" },
		/* the range is named, not just 'bad value' */
		{ { "herd", "--clients", "0", NULL }, "ratelab herd: --clients: '0' is not a number from 1 to 1000000\n" },
		{ { "herd", "--clients=100001", NULL },
		  "ratelab herd: --clients: '100001' is more than 100000 (up to 1000000 with --sim)\n" },
		/* a URL that cannot be one is a usage error before any DNS lookup */
		{ { "herd", "--url", "nan", NULL }, "ratelab herd: --url: 'nan' is not an http:// or https:// URL with a host\n" },
		{ { "herd", "--admin-token", "a b", NULL },
		  "ratelab herd: --admin-token: 'a b' has a space or a character that is not printable ASCII\n" },
		{ { "herd", "--url", "http://", NULL },
		  "ratelab herd: --url: 'http://' is not an http:// or https:// URL with a host\n" },
		{ { "herd", "--url", "http://127.0.0.1:1/\r\n", NULL },
		  "ratelab herd: --url: 'http://127.0.0.1:1/\\r\\n' is not an http:// or https:// URL with a host\n" },
		{ { "herd", "--path", "/\r\nX: y", NULL },
		  "ratelab herd: --path: '/\\r\\nX: y' is not a path such as /api (a leading /, no space, CR or LF)\n" },
		/* an empty policy list ran nothing and exited 0 */
		{ { "herd", "--policies", ",", NULL }, "ratelab herd: --policies: ',' is not a list of policies such as none,full\n" },
		{ { "herd", "--policies=", NULL }, "ratelab herd: --policies: '' is not a list of policies such as none,full\n" },
		{ { "herd", "--policy", "x\ny", NULL }, "ratelab herd: --policy: 'x\\ny' names an unknown policy 'x\\ny' "
		  "(none,exponential,full,equal,decorrelated, or a preset: none, lab, signaldb, wasm, saia, aws-standard, "
		  "grpc, naive, sre-adaptive)\n" },
	};
	char dir[] = "/tmp/ratelab-cli-XXXXXX", report[64], json[96];
	const char *args[] = { "herd", "--clients=5", "--policies=none,full", "--max-attempts=3", "--limit=100",
		               "--burst=100", "--seed=2", "--max-time=5s", "--base=10ms", "--cap=50ms", report, NULL };
	struct test_run r;
	json_t *j;

	expect_mistakes(M, sizeof(M) / sizeof(M[0]));
	expect_help("herd");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(report, sizeof(report), "--report=%s", dir);
	ck_assert_int_eq(testutil_run(&r, args, NULL, RUN_MS), 0);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_ptr_nonnull(strstr(r.out, "\nnone                 5       0 "));
	ck_assert_ptr_nonnull(strstr(r.out, "\nfull                 5       0 "));
	testutil_run_free(&r);
	snprintf(json, sizeof(json), "%s/results.json", dir);
	j = json_load_file(json, 0, NULL);
	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq(testutil_jint(j, "clients", NULL), 5);
	ck_assert_int_eq(testutil_jint(j, "seed", NULL), 2);
	ck_assert_int_eq(testutil_jint(j, "limit", NULL), 100);
	json_decref(j);
	for (size_t i = 0; i < 4; i++) {
		static const char *const FILES[] = { "results.json", "report.html", "none.csv", "full.csv" };

		snprintf(json, sizeof(json), "%s/%s", dir, FILES[i]);
		ck_assert_msg(unlink(json) == 0, "%s missing", json);
	}
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

START_TEST(storm_mistakes)
{
	static const struct mistake M[] = {
		{ { "storm", "--bogus", NULL }, "ratelab storm: unknown option '--bogus'\n" },
		{ { "storm", "--policies", NULL }, "ratelab storm: --policies needs a value\n" },
		{ { "storm", "--clients", "0", NULL }, "ratelab storm: --clients: '0' is not a number from 1 to 100000\n" },
		{ { "storm", "--duration=0", NULL }, "ratelab storm: --duration: '0' is not a duration from 1s to 2m\n" },
		{ { "storm", "extra", NULL }, "ratelab storm: unexpected argument 'extra'\n" },
		/* a negative service time, a schedule that does not parse, a trigger past the run */
		{ { "storm", "--capacity", "workers=4,service=-1ms,queue=fifo:10", NULL },
		  "ratelab storm: --capacity: 'workers=4,service=-1ms,queue=fifo:10' is not a backend such as "
		  "workers=4,service=10ms,queue=fifo:400 (service time '-1ms' is negative)\n" },
		{ { "storm", "--rate=abc", NULL },
		  "ratelab storm: --rate: 'abc' is not a rate or a schedule such as 200/s or 200/s,600/s@3s+1s,200/s "
		  "(item 1 'abc': 'abc' is not a rate such as 50, 2.5, 30/1m or 0)\n" },
		{ { "storm", "--trigger", "25%@20s+2s", NULL },
		  "ratelab storm: --trigger: '25%@20s+2s' ends at 22s, past the run (--duration 10s)\n" },
		{ { "storm", "--duration", "2s", "--trigger", "25%@1s+500ms", NULL },
		  "ratelab storm: --trigger: '25%@1s+500ms' ends at 1500ms, less than the second before the run's end "
		  "(--duration 2s) that recovery is judged on\n" },
		{ { "storm", "--sweep-after", "1s", NULL }, "ratelab storm: --sweep-after goes with --sweep\n" },
		{ { "storm", "--sim-delay", "1s", NULL }, "ratelab storm: --sim-delay goes with --sim or --compare\n" },
		{ { "storm", "--policies", "naive,budget,naive", NULL },
		  "ratelab storm: --policies: 'naive,budget,naive' names 'naive' twice (it is in the list already)\n" },
	};

	expect_mistakes(M, sizeof(M) / sizeof(M[0]));
	expect_help("storm");
}
END_TEST

START_TEST(merge_mistakes)
{
	static const struct mistake M[] = {
		{ { "merge", NULL }, "ratelab merge: missing INPUT\n" },
		{ { "merge", "--bogus", NULL }, "ratelab merge: unknown option '--bogus'\n" },
		{ { "merge", "--max-skew", NULL }, "ratelab merge: --max-skew needs a value\n" },
		{ { "merge", "--max-skew=abc", "a.json", NULL },
		  "ratelab merge: --max-skew: 'abc' is not a duration such as 250ms, 2s or 1m\n" },
		{ { "merge", "redis://127.0.0.1:1/x", "a.json", NULL },
		  "ratelab merge: give one redis://HOST:PORT/RUNID, or files, not both\n" },
		/* a malformed redis:// is a bad value (2), not an unreachable Redis (4) */
		{ { "merge", "a.json", "--json", "-", "--plot", "-", NULL },
		  "ratelab merge: --json and --plot both write to standard output ('-')\n" },
		{ { "merge", "redis://", NULL },
		  "ratelab merge: 'redis://' is not redis://HOST[:PORT]/RUNID (a RUNID of letters, digits, '.', '_' or '-', "
		  "at most 63)\n" },
		{ { "merge", "redis://127.0.0.1:70000/r", NULL },
		  "ratelab merge: 'redis://127.0.0.1:70000/r' is not redis://HOST[:PORT]/RUNID (a port from 1 to 65535)\n" },
		{ { "merge", "/nonexistent-dir/x.json", NULL },
		  "ratelab merge: cannot read /nonexistent-dir/x.json: unable to open /nonexistent-dir/x.json: "
		  "No such file or directory\n" },
	};

	expect_mistakes(M, sizeof(M) / sizeof(M[0]));
	expect_help("merge");
}
END_TEST

/* Mistakes that teach: the nearest option, command or value; the unit a number lacks; one
 * size syntax; a flag where a value belongs.  Each one line, exit 2. */
START_TEST(mistakes_that_teach)
{
	static const struct mistake M[] = {
		{ { "serve", "--limter", "gcra", NULL }, "ratelab serve: unknown option '--limter' (did you mean --limiter?)\n" },
		{ { "verify", "--client", "3", NULL }, "ratelab verify: unknown option '--client' (did you mean --clients?)\n" },
		{ { "hammer", "--policy", "navie", NULL },
		  "ratelab hammer: --policy: 'navie' is not one of none, lab, signaldb, wasm, saia, aws-standard, grpc, "
		  "naive, sre-adaptive (did you mean naive?)\n" },
		{ { "serve", "--limiter", "gcar", NULL },
		  "ratelab serve: --limiter: 'gcar' is not one of token-bucket, leaky-bucket, fixed-window, sliding-log, "
		  "sliding-window, gcra, concurrency, layered, none (did you mean gcra?)\n" },
		{ { "serve", "--headers", "ieft", NULL },
		  "ratelab serve: --headers: 'ieft' is not one of ietf, draft-03, x-ratelimit, github, legacy, both, "
		  "retry-after-only, none (did you mean ietf?)\n" },
		{ { "storm", "--policies", "naive,bakoff", NULL },
		  "ratelab storm: --policies: 'naive,bakoff' names an unknown policy 'bakoff' (naive,backoff,budget,adaptive, "
		  "or a preset: none, lab, signaldb, wasm, saia, aws-standard, grpc, naive, sre-adaptive) "
		  "(did you mean backoff?)\n" },
		{ { "server", NULL }, "ratelab: unknown command 'server' (did you mean serve?)\n" },
		{ { "hamer", "--requests", "1", NULL }, "ratelab: unknown command 'hamer' (did you mean hammer?)\n" },
		{ { "frobnicate", NULL }, "ratelab: unknown command 'frobnicate' (try 'ratelab --help')\n" },
		{ { "serve", "--zzzzzz", NULL }, "ratelab serve: unknown option '--zzzzzz'\n" },
		{ { "hammer", "--timeout", "500", NULL },
		  "ratelab hammer: --timeout: '500' needs a unit, e.g. 500ms or 500s (ns, us, ms, s, m, h, d)\n" },
		{ { "serve", "--window", "1", NULL },
		  "ratelab serve: --window: '1' needs a unit, e.g. 1ms or 1s (ns, us, ms, s, m, h, d)\n" },
		{ { "hammer", "--base", "100", NULL },
		  "ratelab hammer: --base: '100' needs a unit, e.g. 100ms or 100s (ns, us, ms, s, m, h, d)\n" },
		{ { "herd", "--delay", "2.5", NULL },
		  "ratelab herd: --delay: '2.5' needs a unit, e.g. 2.5ms or 2.5s (ns, us, ms, s, m, h, d)\n" },
		{ { "serve", "--max-body", "1XB", NULL },
		  "ratelab serve: --max-body: '1XB' is not a size such as 64K, 1M or 1MiB (0 B to 1 GiB; K = 1024)\n" },
		{ { "serve", "--max-body", "2G", NULL },
		  "ratelab serve: --max-body: '2G' is not a size such as 64K, 1M or 1MiB (0 B to 1 GiB; K = 1024)\n" },
		{ { "serve", "--limit", "--port", "0", NULL }, "ratelab serve: --limit needs a value before --port\n" },
		{ { "hammer", "--requests", "--concurrency=2", NULL },
		  "ratelab hammer: --requests needs a value before --concurrency\n" },
		{ { "verify", "--scenario", "--all", NULL }, "ratelab verify: --scenario needs a value before --all\n" },
	};

	expect_mistakes(M, sizeof(M) / sizeof(M[0]));
}
END_TEST

/* The size forms --max-body and --max-key-memory share: each starts a server (port 0) that says so. */
START_TEST(sizes_take_one_syntax)
{
	static const char *const sizes[][2] = {
		{ "--max-body", "65536" }, { "--max-body", "64K" }, { "--max-body", "1M" }, { "--max-body", "1MB" },
		{ "--max-body", "1MiB" }, { "--max-key-memory", "64M" }, { "--max-key-memory", "64MB" },
		{ "--max-key-memory", "64mib" },
	};

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		/* --config on a missing file fails after every flag parsed: exit 2 with the --config line, not the size's */
		const char *args[] = { "serve", "--port", "0", sizes[i][0], sizes[i][1], "--config", "/nonexistent/x.json", NULL };
		struct test_run r;

		ck_assert_int_eq(testutil_run(&r, args, NULL, RUN_MS), 0);
		ck_assert_msg(strstr(r.err, "--config") != NULL && strstr(r.err, sizes[i][0]) == NULL,
		              "%s %s: stderr '%s'", sizes[i][0], sizes[i][1], r.err);
		testutil_run_free(&r);
	}
}
END_TEST

Suite *cli_suite(void)
{
	Suite *s = suite_create("cli");
	TCase *tc = tcase_create("cli");

	tcase_add_test(tc, version_names_the_libraries);
	tcase_add_test(tc, cases_mistakes);
	tcase_add_test(tc, verify_mistakes);
	tcase_add_test(tc, serve_mistakes);
	tcase_add_test(tc, hammer_mistakes);
	tcase_add_test(tc, herd_mistakes);
	tcase_add_test(tc, storm_mistakes);
	tcase_add_test(tc, merge_mistakes);
	tcase_add_test(tc, mistakes_that_teach);
	tcase_add_test(tc, sizes_take_one_syntax);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
