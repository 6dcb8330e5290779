/* Integration tests of `ratelab hammer` against the real `ratelab serve` on port 0. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/harness/testutil.h"

#define RUN_MS 20000

struct fixture {
	struct test_server srv;
	char url[96];
};

static void serve(struct fixture *f, const char *const *args)
{
	ck_assert_msg(testutil_server_start(&f->srv, args, 5000) == 0, "server did not start");
	snprintf(f->url, sizeof(f->url), "%s/", f->srv.url);
}

static void unserve(struct fixture *f)
{
	testutil_server_stop(&f->srv, 3000);
}

/* Count of `status` in the summary's "<status>  xN" line; 0 when absent. */
static long text_count(const char *out, const char *status)
{
	char key[32];
	const char *p;

	snprintf(key, sizeof(key), "%s  x", status);
	for (p = out; (p = strstr(p, key)) != NULL; p++)
		if (p == out || p[-1] == '\n')
			return strtol(p + strlen(key), NULL, 10);
	return 0;
}

START_TEST(lab_without_retry)
{
	struct fixture f;
	struct test_run r;
	static const char *const sargs[] = { "--limiter", "token-bucket", "--limit", "5", NULL };

	serve(&f, sargs);
	const char *args[] = { "hammer", f.url, NULL };
	ck_assert_int_eq(testutil_run(&r, args, NULL, RUN_MS), 0);
	unserve(&f);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	/* the lab guide's format: status lines, then "N requests in S" */
	ck_assert_msg(strncmp(r.out, "200  x", 6) == 0, "%s", r.out);
	ck_assert_int_ge(text_count(r.out, "200"), 5);
	ck_assert_int_le(text_count(r.out, "200"), 10);
	ck_assert_int_eq(text_count(r.out, "200") + text_count(r.out, "429"), 40);
	ck_assert_ptr_nonnull(strstr(r.out, "\n40 requests in "));
	ck_assert_ptr_nonnull(strstr(r.out, "\n40 calls, 0 retries"));
	ck_assert_ptr_nonnull(strstr(r.out, "\nlatency p50 "));
	ck_assert_ptr_nonnull(strstr(r.out, "\npeak 40 attempts per 100ms\n"));
	/* one server: no per-server breakdown */
	ck_assert_ptr_null(strstr(r.out, "per server"));
	ck_assert_double_lt(r.seconds, 2.0);
	testutil_run_free(&r);
}
END_TEST

START_TEST(lab_with_retry)
{
	struct fixture f;
	struct test_run r;
	static const char *const sargs[] = { "--limiter", "token-bucket", "--limit", "5", NULL };
	json_t *j;
	double wall;

	serve(&f, sargs);
	const char *args[] = { "hammer", f.url, "--retry", "--seed", "1", "--json", "-", NULL };
	j = testutil_run_json(&r, args, NULL, RUN_MS);
	ck_assert_msg(j != NULL, "not JSON: %s / %s", r.out, r.err);
	unserve(&f);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_int_eq(testutil_jint(j, "requests", NULL), 40);
	ck_assert_int_ge(testutil_jint(j, "ok", NULL), 30);
	ck_assert_int_eq(testutil_jint(j, "statuses", "200"), testutil_jint(j, "ok", NULL));
	ck_assert_int_eq(testutil_jint(j, "calls", NULL), 40 + testutil_jint(j, "retries", NULL));
	ck_assert_int_gt(testutil_jint(j, "retries", NULL), 0);
	wall = json_real_value(json_object_get(j, "wall_s"));
	ck_assert_msg(wall >= 4.0 && wall <= 12.0, "wall %.2f", wall);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "config"), "policy")), "lab");
	/* every retry wait went through the timer heap and was timed */
	ck_assert_int_eq(testutil_jint(j, "timer_lateness_ms", "count"), testutil_jint(j, "retries", NULL));
	/* with --json -, the summary moves to stderr in the same format */
	ck_assert_ptr_nonnull(strstr(r.err, "40 requests in "));
	json_decref(j);
	testutil_run_free(&r);
}
END_TEST

START_TEST(no_retry_env_wins)
{
	struct fixture f;
	struct test_run r;
	static const char *const sargs[] = { "--limiter", "token-bucket", "--limit", "5", NULL };
	static const char *const env[] = { "RATELAB_NO_RETRY=1", NULL };
	json_t *j;

	serve(&f, sargs);
	const char *args[] = { "hammer", f.url, "--retry", "--json", "-", "--quiet", NULL };
	j = testutil_run_json(&r, args, env, RUN_MS);
	ck_assert_msg(j != NULL, "not JSON: %s / %s", r.out, r.err);
	unserve(&f);
	ck_assert_int_eq(r.status, 0);
	ck_assert_int_eq(testutil_jint(j, "calls", NULL), 40);
	ck_assert_int_eq(testutil_jint(j, "retries", NULL), 0);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "config"), "policy")), "none");
	ck_assert_str_eq(r.err, "");
	json_decref(j);
	testutil_run_free(&r);
}
END_TEST

/* Without --seed two runs draw different jitter; --seed N is reported back as given. */
START_TEST(seed_drawn_unless_given)
{
	struct fixture f;
	struct test_run r;
	static const char *const sargs[] = { "--limiter", "none", NULL };
	long long seeds[3];
	json_t *j;

	serve(&f, sargs);
	for (int i = 0; i < 3; i++) {
		const char *args[] = { "hammer", f.url, "--requests", "1", "--json", "-", "--quiet",
		                       i == 2 ? "--seed" : NULL, "9007199254740993", NULL };
		j = testutil_run_json(&r, args, NULL, RUN_MS);
		ck_assert_msg(j != NULL, "not JSON: %s / %s", r.out, r.err);
		ck_assert_int_eq(r.status, 0);
		seeds[i] = (long long)json_integer_value(json_object_get(json_object_get(j, "config"), "seed"));
		json_decref(j);
		testutil_run_free(&r);
	}
	unserve(&f);
	ck_assert(seeds[0] >= 0 && seeds[1] >= 0);
	ck_assert_msg(seeds[0] != seeds[1], "two runs drew the same seed %lld", seeds[0]);
	ck_assert_int_eq(seeds[2], 9007199254740993LL);
}
END_TEST

START_TEST(signaldb_post_503_not_retried)
{
	struct fixture f;
	struct test_run r;
	static const char *const sargs[] = { "--limiter", "none", "--faults", "503:100", NULL };
	json_t *j;

	serve(&f, sargs);
	const char *post[] = { "hammer", f.url, "--policy", "signaldb", "--method", "POST", "--data", "x",
	                       "--requests", "6", "--json", "-", "--quiet", NULL };
	j = testutil_run_json(&r, post, NULL, RUN_MS);
	ck_assert_msg(j != NULL, "not JSON: %s / %s", r.out, r.err);
	ck_assert_int_eq(r.status, 0);
	ck_assert_int_eq(testutil_jint(j, "statuses", "503"), 6);
	ck_assert_int_eq(testutil_jint(j, "calls", NULL), 6);
	ck_assert_int_eq(testutil_jint(j, "retries", NULL), 0);
	ck_assert_int_eq(testutil_jint(j, "gave_up", "not-retryable"), 6);
	json_decref(j);
	testutil_run_free(&r);

	/* the same 503 on a GET is retried: 4 attempts each */
	const char *get[] = { "hammer", f.url, "--policy", "signaldb", "--requests", "2", "--seed", "3",
	                      "--json", "-", "--quiet", NULL };
	j = testutil_run_json(&r, get, NULL, RUN_MS);
	ck_assert_msg(j != NULL, "not JSON: %s / %s", r.out, r.err);
	unserve(&f);
	ck_assert_int_eq(r.status, 0);
	ck_assert_int_eq(testutil_jint(j, "statuses", "503"), 2);
	ck_assert_int_eq(testutil_jint(j, "calls", NULL), 8);
	ck_assert_int_eq(testutil_jint(j, "gave_up", "attempts"), 2);
	json_decref(j);
	testutil_run_free(&r);
}
END_TEST

static void fail_fast_under(const char *policy)
{
	struct fixture f;
	struct test_run r;
	static const char *const sargs[] = { "--limiter", "fixed-window", "--limit", "1", "--window", "1h",
	                                     NULL };
	json_t *j;

	serve(&f, sargs);
	const char *args[] = { "hammer", f.url, "--policy", policy, "--requests", "3", "--concurrency", "1",
	                       "--json", "-", "--quiet", NULL };
	j = testutil_run_json(&r, args, NULL, RUN_MS);
	ck_assert_msg(j != NULL, "not JSON: %s / %s", r.out, r.err);
	unserve(&f);
	ck_assert_int_eq(r.status, 0);
	ck_assert_int_eq(testutil_jint(j, "statuses", "200"), 1);
	ck_assert_int_eq(testutil_jint(j, "statuses", "429"), 2);
	ck_assert_int_eq(testutil_jint(j, "calls", NULL), 3);
	ck_assert_int_eq(testutil_jint(j, "gave_up", "retry-after-too-long"), 2);
	ck_assert_double_lt(r.seconds, 3.0);
	json_decref(j);
	testutil_run_free(&r);
}

START_TEST(retry_after_3600_fails_fast)
{
	fail_fast_under("signaldb");
	fail_fast_under("saia");
}
END_TEST

START_TEST(expect_exit_codes)
{
	struct fixture f;
	struct test_run r;
	static const char *const sargs[] = { "--limiter", "token-bucket", "--limit", "5", NULL };

	serve(&f, sargs);
	const char *pass[] = { "hammer", f.url, "--expect", "ok>=5,429>=20,calls=40,retries=0,wall<=5s", NULL };
	ck_assert_int_eq(testutil_run(&r, pass, NULL, RUN_MS), 0);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	testutil_run_free(&r);
	const char *fail[] = { "hammer", f.url, "--expect", "ok>=30,failed<=5", "--quiet", NULL };
	ck_assert_int_eq(testutil_run(&r, fail, NULL, RUN_MS), 0);
	unserve(&f);
	ck_assert_int_eq(r.status, 3);
	ck_assert_msg(strncmp(r.err, "ratelab hammer: expect failed: ok>=30 (got ", 43) == 0, "%s", r.err);
	ck_assert_ptr_nonnull(strstr(r.err, "failed<=5 (got "));
	ck_assert_str_eq(r.out, "");
	testutil_run_free(&r);
}
END_TEST

/* --junit with --expect: one testcase per check, the failed ones saying what the run got. */
START_TEST(expect_junit)
{
	struct fixture f;
	struct test_run r;
	static const char *const sargs[] = { "--limiter", "token-bucket", "--limit", "5", NULL };
	char xml_path[] = "/tmp/ratelab-hammer-junit-XXXXXX";
	int fd = mkstemp(xml_path);
	char *xml = NULL;

	ck_assert_int_ge(fd, 0);
	close(fd);
	serve(&f, sargs);
	const char *args[] = { "hammer", f.url, "--expect", "ok>=30,calls=40,429<=5", "--quiet", "--junit", xml_path,
		               NULL };
	const char *alone[] = { "hammer", f.url, "--junit", xml_path, NULL };
	ck_assert_int_eq(testutil_run(&r, args, NULL, RUN_MS), 0);
	ck_assert_int_eq(r.status, 3);
	testutil_run_free(&r);
	ck_assert_int_eq(testutil_run(&r, alone, NULL, RUN_MS), 0);
	unserve(&f);
	ck_assert_int_eq(r.status, 2);
	ck_assert_str_eq(r.err, "ratelab hammer: --junit needs --expect (its checks are the testcases)\n");
	testutil_run_free(&r);
	ck_assert_msg(testutil_junit_read(xml_path, &xml) == 0, "not JUnit XML: %s", xml);
	unlink(xml_path);
	ck_assert_msg(strstr(xml, "suites=1 tests=3 failures=2 skipped=0 errors=0\n") != NULL, "%s", xml);
	ck_assert_msg(strstr(xml, "hammer --expect | ratelab.hammer.expect | ok>=30 | failure | ok>=30 (got ") != NULL,
	              "%s", xml);
	ck_assert_msg(strstr(xml, "| calls=40 | pass | \n") != NULL, "%s", xml);
	ck_assert_msg(strstr(xml, "| 429<=5 | failure | 429<=5 (got ") != NULL, "%s", xml);
	free(xml);
}
END_TEST

START_TEST(no_server_exits_1)
{
	struct fixture f;
	struct test_run r;

	/* a port that was just freed: nothing listens there */
	serve(&f, NULL);
	unserve(&f);
	const char *args[] = { "hammer", f.url, "--requests", "5", NULL };
	ck_assert_int_eq(testutil_run(&r, args, NULL, RUN_MS), 0);
	ck_assert_int_eq(r.status, 1);
	ck_assert_ptr_nonnull(strstr(r.out, "error:refused x5\n5 requests in "));
	ck_assert_ptr_nonnull(strstr(r.err, "no request got an HTTP answer"));
	ck_assert_ptr_nonnull(strstr(r.err, "connection refused"));
	testutil_run_free(&r);
}
END_TEST

START_TEST(usage_errors_exit_2)
{
	static const char *const bad[][4] = {
		{ "hammer", "--bogus", NULL }, { "hammer", "--requests", "x", NULL },
		{ "hammer", "--concurrency", "0", NULL }, { "hammer", "--policy", "nope", NULL },
		{ "hammer", "--backoff", "sideways", NULL }, { "hammer", "--timeout", "5", NULL },
		{ "hammer", "--expect", "ok>>3", NULL }, { "hammer", "--requests", NULL },
		{ "hammer", "--start", "later", NULL }, { "hammer", "ftp://x/", NULL },
		{ "hammer", "http://127.0.0.1:99999/", NULL }, { "hammer", "http://", NULL },
		{ "hammer", "--connect-timeout", "0", NULL },
		{ "hammer", "--json", "/nonexistent-dir/x.json", NULL },
		{ "hammer", "--plot", "/nonexistent-dir/x.svg", NULL },
		{ "hammer", "--rate", "x", NULL }, { "hammer", "--header", "nocolon", NULL },
		{ "hammer", "--method", "get", NULL }, { "hammer", "--retry-on", "99x", NULL },
		{ "hammer", "--budget", "ratio=x", NULL }, { "hammer", "--arrivals", "poisson", NULL },
		{ "hammer", "--rate", "100/s,300/s@x+3s", NULL }, { "hammer", "--rate", "100/s,300/s", NULL },
	};
	static const char *const line[] = {
		"ratelab hammer: unknown option '--bogus'\n",
		"ratelab hammer: --requests: 'x' is not a number from 1 to 18446744073709551614\n",
		"ratelab hammer: --concurrency: '0' is not a number from 1 to 1000000\n",
		"ratelab hammer: --policy: 'nope' is not one of none, lab, signaldb, wasm, saia, aws-standard, grpc, naive, "
		"sre-adaptive (did you mean none?)\n",
		"ratelab hammer: --backoff: 'sideways' is not one of none, constant, exponential, full, equal, decorrelated, "
		"randomized\n",
		"ratelab hammer: --timeout: '5' needs a unit, e.g. 5ms or 5s (ns, us, ms, s, m, h, d)\n",
		"ratelab hammer: --expect: 'ok>>3' is not a list of checks such as ok>=30,429<=5,wall<=10s (keys: a status, "
		"ok, failed, requests, calls, retries, errors, wall)\n",
		"ratelab hammer: --requests needs a value\n",
		"ratelab hammer: --start: 'later' is not one of now, herd\n",
		"ratelab hammer: URL: 'ftp://x/' is not an http:// or https:// URL\n",
		"ratelab hammer: URL: 'http://127.0.0.1:99999/' is not a valid URL (Port number was not a decimal number "
		"between 0 and 65535)\n",
		"ratelab hammer: URL: 'http://' is not a valid URL (No host part in the URL)\n",
		"ratelab hammer: --connect-timeout: '0' is not a duration of at least 1ms\n",
		"ratelab hammer: --json: '/nonexistent-dir/x.json' cannot be written (No such file or directory)\n",
		"ratelab hammer: --plot: '/nonexistent-dir/x.svg' cannot be written (No such file or directory)\n",
		"ratelab hammer: --rate: 'x' is not a rate such as 50, 2.5 or 30/1m (0.001 to 1e+07 per second)\n",
		"ratelab hammer: --header: 'nocolon' is not a header such as 'Name: value'\n",
		"ratelab hammer: --method: 'get' is not an upper-case method such as GET or POST\n",
		"ratelab hammer: --retry-on: '99x' is not a list of statuses 100-599, conn and timeout\n",
		"ratelab hammer: --budget: 'ratio=x' is not a budget such as ratio=0.2,min=10,window=10s, on, "
		"sre,k=2,window=2m or none\n",
		"ratelab hammer: --arrivals poisson needs --rate\n",
		"ratelab hammer: --rate: '100/s,300/s@x+3s' is not a rate schedule such as 100/s,300/s@10s+3s,100/s "
		"(item 2 '300/s@x+3s': '@x' is not a start such as @10s)\n",
		"ratelab hammer: --rate: '100/s,300/s' is not a rate schedule such as 100/s,300/s@10s+3s,100/s "
		"(item 2 '300/s': needs @START: the item before it has no +LEN)\n",
	};
	struct test_run r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(testutil_run(&r, (const char *const *)bad[i], NULL, RUN_MS), 0);
		ck_assert_msg(r.status == 2, "%s %s: exit %d", bad[i][1], bad[i][2] ? bad[i][2] : "", r.status);
		ck_assert_str_eq(r.err, line[i]);
		ck_assert_str_eq(r.out, "");
		testutil_run_free(&r);
	}
	const char *help[] = { "hammer", "--help", NULL };
	ck_assert_int_eq(testutil_run(&r, help, NULL, RUN_MS), 0);
	ck_assert_int_eq(r.status, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "usage: ratelab hammer"));
	ck_assert_ptr_nonnull(strstr(r.out, "--expect"));
	testutil_run_free(&r);
}
END_TEST

START_TEST(timeline_and_plot_files)
{
	struct fixture f;
	struct test_run r;
	static const char *const sargs[] = { "--limiter", "token-bucket", "--limit", "5", NULL };
	char csv[] = "/tmp/ratelab-tl-XXXXXX", svg[] = "/tmp/ratelab-svg-XXXXXX", buf[65536];
	FILE *fp;
	size_t n;

	ck_assert_int_ge(mkstemp(csv), 0);
	ck_assert_int_ge(mkstemp(svg), 0);
	serve(&f, sargs);
	const char *args[] = { "hammer", f.url, "--timeline", csv, "--plot", svg, "--interval", "50ms", NULL };
	ck_assert_int_eq(testutil_run(&r, args, NULL, RUN_MS), 0);
	unserve(&f);
	ck_assert_int_eq(r.status, 0);
	testutil_run_free(&r);
	fp = fopen(csv, "r");
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	buf[n] = '\0';
	fclose(fp);
	ck_assert_msg(strncmp(buf, "t_s,attempts,2xx,3xx,4xx,5xx,errors,", 36) == 0, "%s", buf);
	ck_assert_ptr_nonnull(strstr(buf, "\n0.000,40,"));
	fp = fopen(svg, "r");
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	buf[n] = '\0';
	fclose(fp);
	ck_assert_ptr_nonnull(strstr(buf, "<svg"));
	ck_assert_ptr_nonnull(strstr(buf, "policy none"));
	ck_assert_ptr_nonnull(strstr(buf, ">429</text>"));
	ck_assert_ptr_nonnull(strstr(buf, "time since start"));
	ck_assert_ptr_nonnull(strstr(buf, "</svg>"));
	remove(csv);
	remove(svg);
}
END_TEST

START_TEST(herd_start_and_duration)
{
	struct fixture f;
	struct test_run r;
	static const char *const sargs[] = { "--limiter", "none", NULL };
	json_t *j;

	serve(&f, sargs);
	const char *args[] = { "hammer", f.url, "--start", "herd", "--concurrency", "200", "--duration",
	                       "500ms", "--json", "-", "--quiet", NULL };
	j = testutil_run_json(&r, args, NULL, RUN_MS);
	ck_assert_msg(j != NULL, "not JSON: %s / %s", r.out, r.err);
	unserve(&f);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_int_gt(testutil_jint(j, "requests", NULL), 200);
	ck_assert_int_eq(testutil_jint(j, "statuses", "200"), testutil_jint(j, "requests", NULL));
	/* every client's first attempt falls in the first interval; only retry waits are timed */
	ck_assert_int_ge(testutil_jint(j, "peak_attempts", NULL), 200);
	ck_assert_int_eq(testutil_jint(j, "timer_lateness_ms", "count"), 0);
	ck_assert_double_ge(json_real_value(json_object_get(j, "wall_s")), 0.5);
	ck_assert_double_lt(json_real_value(json_object_get(j, "wall_s")), 1.5);
	json_decref(j);
	testutil_run_free(&r);
}
END_TEST

static void serve_two(struct fixture *a, struct fixture *b)
{
	/* 5 tokens and no refill within the run: each server admits exactly 5 */
	static const char *const sargs[] = { "--limiter", "token-bucket", "--limit", "5", "--window",
	                                     "1h", NULL };

	serve(a, sargs);
	serve(b, sargs);
}

START_TEST(two_servers_round_robin)
{
	struct fixture a, b;
	struct test_run r;
	char line[400];
	json_t *j;

	serve_two(&a, &b);
	const char *args[] = { "hammer", a.url, b.url, "--requests", "40", "--threads", "2",
	                       "--json", "-", NULL };
	j = testutil_run_json(&r, args, NULL, RUN_MS);
	ck_assert_msg(j != NULL, "not JSON: %s / %s", r.out, r.err);
	unserve(&a);
	unserve(&b);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_int_eq(testutil_jint(j, "requests", NULL), 40);
	ck_assert_int_eq(testutil_jint(j, "statuses", "200"), 10);
	ck_assert_int_eq(testutil_jint(j, "statuses", "429"), 30);
	ck_assert_int_eq(json_array_size(json_object_get(j, "servers")), 2);
	ck_assert_str_eq(json_string_value(json_object_get(testutil_jserver(j, 0), "url")), a.url);
	ck_assert_str_eq(json_string_value(json_object_get(testutil_jserver(j, 1), "url")), b.url);
	for (size_t i = 0; i < 2; i++) {
		ck_assert_int_eq(testutil_jint(testutil_jserver(j, i), "requests", NULL), 20);
		ck_assert_int_eq(testutil_jint(testutil_jserver(j, i), "calls", NULL), 20);
		ck_assert_int_eq(testutil_jint(testutil_jserver(j, i), "ok", NULL), 5);
		ck_assert_int_eq(testutil_jint(testutil_jserver(j, i), "statuses", "200"), 5);
		ck_assert_int_eq(testutil_jint(testutil_jserver(j, i), "statuses", "429"), 15);
	}
	/* the text summary (on stderr with --json -) has one line per server */
	snprintf(line, sizeof(line), "\nper server:\n  %s  200 x5, 429 x15; 20 requests, 20 calls, 0 retries\n"
	         "  %s  200 x5, 429 x15; 20 requests, 20 calls, 0 retries\n", a.url, b.url);
	ck_assert_msg(strstr(r.err, line) != NULL, "%s", r.err);
	json_decref(j);
	testutil_run_free(&r);
}
END_TEST

/* One thread whose clients switch servers: request k goes to server k % 2, retries stay. */
START_TEST(two_servers_one_thread_odd_count)
{
	struct fixture a, b;
	struct test_run r;
	json_t *j;

	serve_two(&a, &b);
	const char *args[] = { "hammer", a.url, b.url, "--requests", "13", "--threads", "1",
	                       "--concurrency", "3", "--retry", "--base", "1ms", "--cap", "2ms",
	                       "--retry-after", "ignore", "--max-attempts", "2", "--seed", "1",
	                       "--json", "-", "--quiet", NULL };
	j = testutil_run_json(&r, args, NULL, RUN_MS);
	ck_assert_msg(j != NULL, "not JSON: %s / %s", r.out, r.err);
	unserve(&a);
	unserve(&b);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_msg(json_is_array(json_object_get(j, "servers")), "no servers array");
	ck_assert_int_eq(testutil_jint(testutil_jserver(j, 0), "requests", NULL), 7);
	ck_assert_int_eq(testutil_jint(testutil_jserver(j, 1), "requests", NULL), 6);
	/* 5 admitted per server; every other request is rejected twice (two attempts, same server) */
	ck_assert_int_eq(testutil_jint(testutil_jserver(j, 0), "ok", NULL), 5);
	ck_assert_int_eq(testutil_jint(testutil_jserver(j, 0), "statuses", "429"), 2);
	ck_assert_int_eq(testutil_jint(testutil_jserver(j, 0), "calls", NULL), 9);
	ck_assert_int_eq(testutil_jint(testutil_jserver(j, 0), "retries", NULL), 2);
	ck_assert_int_eq(testutil_jint(testutil_jserver(j, 1), "ok", NULL), 5);
	ck_assert_int_eq(testutil_jint(testutil_jserver(j, 1), "statuses", "429"), 1);
	ck_assert_int_eq(testutil_jint(testutil_jserver(j, 1), "calls", NULL), 7);
	ck_assert_int_eq(testutil_jint(j, "calls", NULL), 16);
	json_decref(j);
	testutil_run_free(&r);
}
END_TEST

#define SEED_CLIENTS 24
#define SEED_RETRIES 3

/*
 * The --verbose notes of a run, by client: notes[k][i] is the wait client k
 * announced before its retry i + 2, "" when it made none.
 */
static void notes_by_client(const char *err, char notes[SEED_CLIENTS][SEED_RETRIES][32])
{
	const char *p = err;

	memset(notes, 0, sizeof(char) * SEED_CLIENTS * SEED_RETRIES * 32);
	while ((p = strstr(p, "client ")) != NULL) {
		unsigned k, attempt;
		char wait[32];

		ck_assert_msg(sscanf(p, "client %u: service unavailable; retrying in %31s (attempt %u)", &k, wait,
		                     &attempt) == 3, "bad note: %.80s", p);
		ck_assert_uint_lt(k, SEED_CLIENTS);
		ck_assert_msg(attempt >= 2 && attempt < 2 + SEED_RETRIES, "attempt %u", attempt);
		ck_assert_str_eq(notes[k][attempt - 2], "");
		snprintf(notes[k][attempt - 2], 32, "%s", wait);
		p += 7;
	}
}

/*
 * Each client draws from its own stream of --seed and its index: the same
 * seed gives every client the same waits over one thread or two, whatever
 * order the clients finish in, and different clients different waits.
 */
START_TEST(seed_fixes_each_clients_waits)
{
	static const char *const sargs[] = { "--limiter", "none", "--faults", "503:100", NULL };
	static char notes[2][SEED_CLIENTS][SEED_RETRIES][32];
	struct fixture f;
	struct test_run r;
	int differ = 0;

	serve(&f, sargs);
	for (int t = 0; t < 2; t++) {
		const char *args[] = { "hammer", f.url, "--requests", "24", "--concurrency", "24", "--threads",
		                       t == 0 ? "1" : "2", "--retry", "--backoff", "full", "--base", "100ms",
		                       "--cap", "1s", "--max-attempts", "4", "--retry-after", "ignore",
		                       "--retry-on", "503", "--seed", "11", "--verbose", "--quiet", NULL };

		ck_assert_int_eq(testutil_run(&r, args, NULL, RUN_MS), 0);
		ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
		notes_by_client(r.err, notes[t]);
		testutil_run_free(&r);
	}
	unserve(&f);
	for (int k = 0; k < SEED_CLIENTS; k++)
		for (int i = 0; i < SEED_RETRIES; i++) {
			ck_assert_msg(notes[0][k][i][0] != '\0', "client %d made no retry %d", k, i + 2);
			ck_assert_msg(strcmp(notes[0][k][i], notes[1][k][i]) == 0, "client %d, retry %d: %s with one "
			              "thread, %s with two", k, i + 2, notes[0][k][i], notes[1][k][i]);
			differ += k > 0 && strcmp(notes[0][k][i], notes[0][0][i]) != 0;
		}
	ck_assert_msg(differ > SEED_CLIENTS, "only %d waits differ from client 0's", differ);
}
END_TEST

START_TEST(too_many_urls_exit_2)
{
	struct test_run r;
	const char *args[20] = { "hammer" };

	for (int i = 1; i <= 17; i++)
		args[i] = "http://127.0.0.1:1/";
	ck_assert_int_eq(testutil_run(&r, args, NULL, RUN_MS), 0);
	ck_assert_int_eq(r.status, 2);
	ck_assert_str_eq(r.err, "ratelab hammer: URL: 'http://127.0.0.1:1/' is one too many (at most 16)\n");
	testutil_run_free(&r);
}
END_TEST

/*
 * sre-adaptive against a server that fails every request: once the window
 * holds refusals, the throttle refuses attempts locally.  Every refusal ends
 * its request ("throttled"); refused first attempts make no call ("unsent").
 */
START_TEST(sre_adaptive_throttles_locally)
{
	struct fixture f;
	struct test_run r;
	static const char *const sargs[] = { "--limiter", "none", "--faults", "503:100", NULL };
	json_t *j;
	long long req, unsent, throttled, calls, s503;

	serve(&f, sargs);
	const char *args[] = { "hammer", f.url, "--policy", "sre-adaptive", "--budget", "sre,k=2,window=10s",
	                       "--rate", "200", "--duration", "1s", "--seed", "3", "--json", "-", NULL };
	j = testutil_run_json(&r, args, NULL, RUN_MS);
	ck_assert_msg(j != NULL, "not JSON: %s / %s", r.out, r.err);
	unserve(&f);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	req = testutil_jint(j, "requests", NULL);
	unsent = testutil_jint(j, "unsent", NULL);
	throttled = testutil_jint(j, "throttled", NULL);
	calls = testutil_jint(j, "calls", NULL);
	s503 = testutil_jint(j, "statuses", "503");
	ck_assert_int_gt(unsent, req / 2);          /* p climbs towards 1: most are never sent */
	ck_assert_int_eq(unsent + s503, req);       /* every finished request: never sent, or a 503 */
	ck_assert_int_eq(testutil_jint(j, "gave_up", "throttled"), throttled);
	ck_assert_int_ge(throttled, unsent);
	ck_assert_int_eq(testutil_jint(j, "attempt_statuses", "503"), calls);
	ck_assert_int_lt(calls, 2 * (req - unsent) + 40);
	ck_assert_ptr_nonnull(strstr(r.err, "throttled x"));
	ck_assert_ptr_nonnull(strstr(r.err, "\nunsent  x"));
	json_decref(j);
	testutil_run_free(&r);
}
END_TEST

/* --rate as a schedule: 50/s, 150/s from 1 s for 1 s, 50/s; 250 arrivals in 3 s, the spike's in its second. */
START_TEST(rate_schedule_spike)
{
	struct fixture f;
	struct test_run r;
	static const char *const sargs[] = { "--limiter", "none", NULL };
	char csv[256];
	json_t *j;
	FILE *fp;
	long rows[4] = { 0 };
	double t;
	long n;
	long long started;

	snprintf(csv, sizeof(csv), "/tmp/ratelab-sched-%d.csv", (int)getpid());
	serve(&f, sargs);
	const char *args[] = { "hammer", f.url, "--rate", "50,150@1s+1s,50", "--duration", "3s", "--interval", "1s",
	                       "--timeline", csv, "--json", "-", NULL };
	j = testutil_run_json(&r, args, NULL, RUN_MS);
	ck_assert_msg(j != NULL, "not JSON: %s / %s", r.out, r.err);
	unserve(&f);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	/* 250 on time; the last ones (up to 2.98 s) miss the end when a loaded machine stalls the loop,
	 * but a plain 50/s would make 150 */
	started = testutil_jint(j, "requests", NULL) + testutil_jint(j, "unfinished", NULL);
	ck_assert_msg(started >= 210 && started <= 250, "%lld arrivals", started);
	ck_assert_str_eq(testutil_jstr(j, "config", "rate_schedule"), "50/s for 1s, 150/s from 1s for 1s, 50/s from 2s");
	ck_assert(json_real_value(json_object_get(json_object_get(j, "config"), "rate")) == 150.0);
	fp = fopen(csv, "r");
	ck_assert_ptr_nonnull(fp);
	fscanf(fp, "%*[^\n]\n");
	while (fscanf(fp, "%lf,%ld%*[^\n]\n", &t, &n) == 2)
		if (t >= 0 && t < 4)
			rows[(int)t] = n;
	fclose(fp);
	unlink(csv);
	/* calls are counted when sent: a stalled loop on a shared machine moves some into the next
	 * second, the last ones past 3 s (the timeline's fourth row) */
	ck_assert_msg(rows[1] > rows[0] + 30 && rows[1] > rows[2], "per second: %ld %ld %ld", rows[0], rows[1], rows[2]);
	ck_assert_int_eq(rows[0] + rows[1] + rows[2] + rows[3], started);
	json_decref(j);
	testutil_run_free(&r);
}
END_TEST

Suite *hammer_suite(void)
{
	Suite *s = suite_create("hammer");
	TCase *tc = tcase_create("integration");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, lab_without_retry);
	tcase_add_test(tc, lab_with_retry);
	tcase_add_test(tc, no_retry_env_wins);
	tcase_add_test(tc, seed_drawn_unless_given);
	tcase_add_test(tc, signaldb_post_503_not_retried);
	tcase_add_test(tc, retry_after_3600_fails_fast);
	tcase_add_test(tc, expect_exit_codes);
	tcase_add_test(tc, expect_junit);
	tcase_add_test(tc, no_server_exits_1);
	tcase_add_test(tc, usage_errors_exit_2);
	tcase_add_test(tc, timeline_and_plot_files);
	tcase_add_test(tc, herd_start_and_duration);
	tcase_add_test(tc, two_servers_round_robin);
	tcase_add_test(tc, two_servers_one_thread_odd_count);
	tcase_add_test(tc, seed_fixes_each_clients_waits);
	tcase_add_test(tc, too_many_urls_exit_2);
	tcase_add_test(tc, sre_adaptive_throttles_locally);
	tcase_add_test(tc, rate_schedule_spike);
	suite_add_tcase(s, tc);
	return s;
}
