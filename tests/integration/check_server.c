/* ratelab serve end to end: the real binary (and the in-process API) on port 0, driven by libcurl. */
#include <check.h>
#include <curl/curl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/httpdate.h"
#include "server/server.h"
#include "server/server_args.h"
#include "tests/harness/testutil.h"

static void url_of(const struct test_server *s, const char *path, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s", s->url, path);
}

static json_t *get_json(CURL *c, const struct test_server *s, const char *path)
{
	struct test_reply r;
	char url[128];
	json_error_t je;
	json_t *j;

	url_of(s, path, url, sizeof(url));
	ck_assert_int_eq(testutil_fire(c, "GET", url, NULL, &r), CURLE_OK);
	ck_assert_int_eq(r.status, 200);
	j = json_loads(r.body, 0, &je);
	ck_assert_msg(j != NULL, "%s is not JSON: %s", path, je.text);
	return j;
}

static bool header(const struct test_reply *r, const char *name, char *buf, size_t len)
{
	return testutil_header(r->headers, name, buf, len);
}

START_TEST(token_bucket_40_gets)
{
	static const char *const args[] = { "--limiter", "token-bucket", "--limit", "5", NULL };
	struct test_server s;
	CURL *c = curl_easy_init();
	struct test_reply r;
	char url[128], v[256];
	int ok = 0, rejected = 0;

	testutil_start(&s, args);
	url_of(&s, "/work", url, sizeof(url));
	for (int i = 0; i < 40; i++) {
		ck_assert_int_eq(testutil_fire(c, "GET", url, NULL, &r), CURLE_OK);
		if (r.status == 200) {
			ok++;
			ck_assert(header(&r, "RateLimit", v, sizeof(v)));
			ck_assert_msg(strncmp(v, "\"default\";r=", 12) == 0, "RateLimit: %s", v);
			continue;
		}
		ck_assert_int_eq(r.status, 429);
		rejected++;
		ck_assert(header(&r, "Retry-After", v, sizeof(v)));
		ck_assert_int_ge(atoi(v), 1);
		ck_assert_str_eq(v, "1");
		ck_assert(header(&r, "RateLimit-Policy", v, sizeof(v)));
		ck_assert_str_eq(v, "\"default\";q=5;w=1");
		ck_assert(header(&r, "RateLimit", v, sizeof(v)));
		ck_assert_str_eq(v, "\"default\";r=0;t=1");
		ck_assert(header(&r, "Content-Type", v, sizeof(v)));
		ck_assert_str_eq(v, "application/problem+json");
	}
	ck_assert_msg(ok >= 5 && ok <= 10, "%d answers of 200", ok);
	ck_assert_int_eq(ok + rejected, 40);
	curl_easy_cleanup(c);
	ck_assert_int_eq(testutil_stop(&s), 0);
}
END_TEST

START_TEST(admitted_ratelimit_counts_down)
{
	static const char *const args[] = { "--limit", "5", "--window", "1h", "--headers", "both", NULL };
	/* t is the next token (every 720 s), not the time until the bucket is full again. */
	static const char *const want[] = { "\"default\";r=4;t=720", "\"default\";r=3;t=720", "\"default\";r=2;t=720",
	                                    "\"default\";r=1;t=720", "\"default\";r=0;t=720" };
	struct test_server s;
	CURL *c = curl_easy_init();
	struct test_reply r;
	char url[128], v[64], rem[8];

	testutil_start(&s, args);
	url_of(&s, "/", url, sizeof(url));
	for (int i = 0; i < 5; i++) {
		ck_assert_int_eq(testutil_fire(c, "GET", url, NULL, &r), CURLE_OK);
		ck_assert_int_eq(r.status, 200);
		ck_assert(header(&r, "RateLimit", v, sizeof(v)));
		ck_assert_str_eq(v, want[i]);
		ck_assert(header(&r, "RateLimit-Policy", v, sizeof(v)));
		ck_assert_str_eq(v, "\"default\";q=5;w=3600");
		snprintf(rem, sizeof(rem), "%d", (4 - i) % 10);
		ck_assert(header(&r, "X-RateLimit-Remaining", v, sizeof(v)));
		ck_assert_str_eq(v, rem);
	}
	curl_easy_cleanup(c);
	ck_assert_int_eq(testutil_stop(&s), 0);
}
END_TEST

/* n GETs of url answered 200, then one answered 429: its problem+json body, parsed. */
static json_t *admit_then_reject(CURL *c, const char *url, int n)
{
	struct test_reply r;
	json_t *j;

	for (int i = 0; i < n; i++) {
		ck_assert_int_eq(testutil_fire(c, "GET", url, NULL, &r), CURLE_OK);
		ck_assert_int_eq(r.status, 200);
	}
	ck_assert_int_eq(testutil_fire(c, "GET", url, NULL, &r), CURLE_OK);
	ck_assert_int_eq(r.status, 429);
	j = json_loads(r.body, 0, NULL);
	ck_assert_ptr_nonnull(j);
	return j;
}

START_TEST(problem_body_carries_exact_wait)
{
	static const char *const args[] = { "--limit", "2", "--window", "1h", "--key", "global", NULL };
	struct test_server s;
	CURL *c = curl_easy_init();
	char url[128];
	json_t *j;
	double ms;

	testutil_start(&s, args);
	url_of(&s, "/", url, sizeof(url));
	j = admit_then_reject(c, url, 2);
	ck_assert_str_eq(json_string_value(json_object_get(j, "limiter")), "token-bucket");
	ck_assert_int_eq(json_integer_value(json_object_get(j, "status")), 429);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "policy"), "quota")), 2);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "policy"), "window_s")), 3600);
	/* One token per 30 minutes: the exact wait is just under 1800000 ms, the header says 1800. */
	ms = json_number_value(json_object_get(j, "wait_ms"));
	ck_assert_msg(ms > 1790000.0 && ms <= 1800000.0, "wait_ms %f", ms);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "retry_after_s")), 1800);
	json_decref(j);
	curl_easy_cleanup(c);
	ck_assert_int_eq(testutil_stop(&s), 0);
}
END_TEST

/*
 * Fixed windows start when the server starts, so an hour window opened by a
 * fresh server has nearly the whole hour left, whenever the machine booted.
 * (Aligned to boot-time multiples, an experiment could see it roll over
 * mid-run: the lab guide's layered chapter once did.)
 */
START_TEST(fixed_windows_start_with_the_server)
{
	static const char *const fw[] = { "--limiter", "fixed-window", "--limit", "1", "--window", "1h", "--key",
		                          "global", NULL };
	static const char *const ly[] = { "--limiter", "layered", "--layer", "5/1s", "--layer", "1/1h", "--key",
		                          "global", NULL };
	const char *const *cases[] = { fw, ly };
	CURL *c = curl_easy_init();

	for (size_t k = 0; k < 2; k++) {
		struct test_server s;
		char url[128];
		json_t *j;
		double ms;

		testutil_start(&s, cases[k]);
		url_of(&s, "/", url, sizeof(url));
		j = admit_then_reject(c, url, 1);
		ms = json_number_value(json_object_get(j, "wait_ms"));
		/* the whole hour but the few seconds since the server started */
		ck_assert_msg(ms > 3540000.0 && ms <= 3600000.0, "case %zu: wait_ms %f", k, ms);
		ck_assert_int_eq(json_integer_value(json_object_get(j, "retry_after_s")), 3600);
		json_decref(j);
		ck_assert_int_eq(testutil_stop(&s), 0);
	}
	curl_easy_cleanup(c);
}
END_TEST

START_TEST(stats_and_metrics_count)
{
	static const char *const args[] = { "--limit", "5", "--window", "1h", NULL };
	struct test_server s;
	CURL *c = curl_easy_init();
	struct test_reply r;
	char url[128], want[160];
	json_t *j, *tl;
	json_int_t adm = 0, rej = 0;
	size_t i;
	json_t *v;

	testutil_start(&s, args);
	url_of(&s, "/a", url, sizeof(url));
	for (int k = 0; k < 8; k++)
		ck_assert_int_eq(testutil_fire(c, "GET", url, NULL, &r), CURLE_OK);
	j = get_json(c, &s, "/stats");
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "status"), "200")), 5);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "status"), "429")), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(json_object_get(j, "decisions"),
	                                                                  "token-bucket"), "admitted")), 5);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "live_keys")), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "evictions")), 0);
	ck_assert(json_number_value(json_object_get(j, "uptime_s")) > 0);
	tl = json_object_get(j, "timeline");
	ck_assert_int_eq(json_integer_value(json_object_get(tl, "bucket_ms")), 100);
	ck_assert_uint_eq(json_array_size(json_object_get(tl, "admitted")), 600);
	json_array_foreach(json_object_get(tl, "admitted"), i, v)
		adm += json_integer_value(v);
	json_array_foreach(json_object_get(tl, "rejected"), i, v)
		rej += json_integer_value(v);
	ck_assert_int_eq(adm, 5);
	ck_assert_int_eq(rej, 3);
	json_decref(j);
	url_of(&s, "/metrics", url, sizeof(url));
	ck_assert_int_eq(testutil_fire(c, "GET", url, NULL, &r), CURLE_OK);
	ck_assert_int_eq(r.status, 200);
	snprintf(want, sizeof(want), "\nratelab_decisions_total{route=\"/\",limiter=\"token-bucket\",decision=\"admitted\"} 5\n");
	ck_assert_msg(strstr(r.body, want) != NULL, "metrics lack %s", want);
	ck_assert_ptr_nonnull(strstr(r.body, "\nratelab_requests_total{status=\"429\"} 3\n"));
	for (char *line = strtok(r.body, "\n"); line; line = strtok(NULL, "\n")) {
		char name[128];
		double val;

		if (line[0] == '#')
			continue;
		ck_assert_msg(sscanf(line, "%127[a-z_]%*[^ ] %lf", name, &val) == 2 || sscanf(line, "%127[a-z_] %lf", name, &val) == 2,
		              "bad metrics line '%s'", line);
		ck_assert_msg(strncmp(name, "ratelab_", 8) == 0, "series '%s' not ratelab_*", name);
	}
	curl_easy_cleanup(c);
	ck_assert_int_eq(testutil_stop(&s), 0);
}
END_TEST

START_TEST(reset_restores_burst)
{
	static const char *const args[] = { "--limit", "3", "--window", "1h", NULL };
	struct test_server s;
	CURL *c = curl_easy_init();
	struct test_reply r;
	char url[128], rurl[128];
	json_t *j;

	testutil_start(&s, args);
	url_of(&s, "/x", url, sizeof(url));
	url_of(&s, "/reset", rurl, sizeof(rurl));
	for (int round = 0; round < 2; round++) {
		for (int k = 0; k < 3; k++) {
			ck_assert_int_eq(testutil_fire(c, "GET", url, NULL, &r), CURLE_OK);
			ck_assert_int_eq(r.status, 200);
		}
		ck_assert_int_eq(testutil_fire(c, "GET", url, NULL, &r), CURLE_OK);
		ck_assert_int_eq(r.status, 429);
		if (round == 0) {
			ck_assert_int_eq(testutil_fire(c, "GET", rurl, NULL, &r), CURLE_OK);
			ck_assert_int_eq(r.status, 405);
			ck_assert_int_eq(testutil_fire(c, "POST", rurl, NULL, &r), CURLE_OK);
			ck_assert_int_eq(r.status, 200);
		}
	}
	/* Statistics were cleared too: only the second round is counted. */
	j = get_json(c, &s, "/stats");
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "status"), "429")), 1);
	json_decref(j);
	curl_easy_cleanup(c);
	ck_assert_int_eq(testutil_stop(&s), 0);
}
END_TEST

/* POST /reset clears the /occ record too: a write, a reset, and the version is 0 again. */
START_TEST(reset_clears_occ)
{
	static const char *const args[] = { "--limiter", "none", NULL };
	struct test_server s;
	CURL *c = curl_easy_init();
	struct test_reply r;
	char url[128], rurl[128], etag[32];

	testutil_start(&s, args);
	url_of(&s, "/occ", url, sizeof(url));
	url_of(&s, "/reset", rurl, sizeof(rurl));
	ck_assert_int_eq(testutil_fire(c, "PUT", url, "If-Match: \"0\"", &r), CURLE_OK);
	ck_assert_int_eq(r.status, 200);
	ck_assert(header(&r, "ETag", etag, sizeof(etag)));
	ck_assert_str_eq(etag, "\"1\"");
	ck_assert_int_eq(testutil_fire(c, "POST", rurl, NULL, &r), CURLE_OK);
	ck_assert_int_eq(r.status, 200);
	ck_assert_int_eq(testutil_fire(c, "GET", url, NULL, &r), CURLE_OK);
	ck_assert_int_eq(r.status, 200);
	ck_assert(header(&r, "ETag", etag, sizeof(etag)));
	ck_assert_str_eq(etag, "\"0\"");
	ck_assert_str_eq(r.body, "{\"version\":0,\"writes\":0,\"conflicts\":0}\n");
	curl_easy_cleanup(c);
	ck_assert_int_eq(testutil_stop(&s), 0);
}
END_TEST

START_TEST(faults_at_their_rates)
{
	static const char *const args[] = { "--limiter", "none", "--faults", "503:10,502:5,reset:5", "--seed", "7", NULL };
	struct test_server s;
	CURL *c = curl_easy_init();
	struct test_reply r;
	char url[128];
	int n200 = 0, n503 = 0, n502 = 0, nreset = 0;
	json_t *j, *st;

	testutil_start(&s, args);
	url_of(&s, "/f", url, sizeof(url));
	for (int i = 0; i < 2000; i++) {
		CURLcode rc = testutil_fire(c, "GET", url, NULL, &r);

		if (rc == CURLE_GOT_NOTHING || rc == CURLE_RECV_ERROR) {
			nreset++;
			continue;
		}
		ck_assert_msg(rc == CURLE_OK, "curl: %s", curl_easy_strerror(rc));
		n200 += r.status == 200;
		n503 += r.status == 503;
		n502 += r.status == 502;
	}
	ck_assert_int_eq(n200 + n503 + n502 + nreset, 2000);
	/* Binomial(2000, p) within 5 standard deviations. */
	ck_assert_msg(n503 > 133 && n503 < 267, "503: %d", n503);
	ck_assert_msg(n502 > 51 && n502 < 149, "502: %d", n502);
	ck_assert_msg(nreset > 51 && nreset < 149, "reset: %d", nreset);
	/* The server counted exactly what the client saw. */
	j = get_json(c, &s, "/stats");
	st = json_object_get(j, "status");
	ck_assert_int_eq(json_integer_value(json_object_get(st, "503")), n503);
	ck_assert_int_eq(json_integer_value(json_object_get(st, "502")), n502);
	ck_assert_int_eq(json_integer_value(json_object_get(st, "reset")), nreset);
	json_decref(j);
	curl_easy_cleanup(c);
	ck_assert_int_eq(testutil_stop(&s), 0);
}
END_TEST

START_TEST(no_retry_after_fault_and_modes)
{
	static const char *const args[] = { "--limit", "1", "--window", "1h", "--faults", "no-retry-after:50",
	                                    "--headers", "both", NULL };
	struct test_server s;
	CURL *c = curl_easy_init();
	struct test_reply r;
	char url[128], v[64];
	int without = 0;

	testutil_start(&s, args);
	url_of(&s, "/", url, sizeof(url));
	ck_assert_int_eq(testutil_fire(c, "GET", url, NULL, &r), CURLE_OK);
	ck_assert_int_eq(r.status, 200);
	ck_assert(header(&r, "X-RateLimit-Limit", v, sizeof(v)));
	ck_assert_str_eq(v, "1");
	ck_assert(header(&r, "X-RateLimit-Remaining", v, sizeof(v)));
	ck_assert_str_eq(v, "0");
	ck_assert(header(&r, "RateLimit", v, sizeof(v)));
	ck_assert_str_eq(v, "\"default\";r=0;t=3600");
	for (int i = 0; i < 400; i++) {
		ck_assert_int_eq(testutil_fire(c, "GET", url, NULL, &r), CURLE_OK);
		ck_assert_int_eq(r.status, 429);
		ck_assert(header(&r, "X-RateLimit-Reset", v, sizeof(v)));
		ck_assert_int_ge(atoi(v), 3599);
		if (!header(&r, "Retry-After", v, sizeof(v)))
			without++;
	}
	ck_assert_msg(without > 150 && without < 250, "%d of 400 without Retry-After", without);
	curl_easy_cleanup(c);
	ck_assert_int_eq(testutil_stop(&s), 0);
}
END_TEST

START_TEST(http_date_and_status_503)
{
	static const char *const args[] = { "--limit", "1", "--window", "10s", "--retry-after", "http-date",
	                                    "--status", "503", NULL };
	struct test_server s;
	CURL *c = curl_easy_init();
	struct test_reply r;
	char url[128], v[64];
	time_t when, now;

	testutil_start(&s, args);
	url_of(&s, "/", url, sizeof(url));
	ck_assert_int_eq(testutil_fire(c, "GET", url, NULL, &r), CURLE_OK);
	ck_assert_int_eq(testutil_fire(c, "GET", url, NULL, &r), CURLE_OK);
	now = time(NULL);
	ck_assert_int_eq(r.status, 503);
	ck_assert(header(&r, "Retry-After", v, sizeof(v)));
	ck_assert_msg(httpdate_parse(v, &when) == 0, "not an HTTP-date: %s", v);
	ck_assert_msg(when >= now + 8 && when <= now + 11, "Retry-After %s is not ~10 s ahead", v);
	curl_easy_cleanup(c);
	ck_assert_int_eq(testutil_stop(&s), 0);
}
END_TEST

START_TEST(bad_flags_exit_2)
{
	/* { flag, value or NULL (the flag alone, last on the line), the whole of stderr } */
	static const char *const bad[][3] = {
		{ "--limit", "abc", "ratelab serve: --limit: 'abc' is not a number from 1 to 4294967295\n" },
		{ "--status", "404", "ratelab serve: --status: '404' is not one of 429, 503\n" },
		{ "--headers", "xml", "ratelab serve: --headers: 'xml' is not one of ietf, draft-03, x-ratelimit, github, "
		                      "legacy, both, retry-after-only, none\n" },
		{ "--key", "cookie", "ratelab serve: --key: 'cookie' is not one of global, ip, header:NAME\n" },
		{ "--retry-after", "later", "ratelab serve: --retry-after: 'later' is not one of seconds, http-date, none\n" },
		{ "--faults", "teapot:5", "ratelab serve: --faults: 'teapot:5' is not a fault list: unknown fault "
		                          "'teapot' (STATUS, reset, no-retry-after, delay=DUR)\n" },
		{ "--window", "0", "ratelab serve: --window: '0' is not a duration above 0\n" },
		{ "--bogus", "1", "ratelab serve: unknown option '--bogus'\n" },
		{ "--limiter", "magic", "ratelab serve: --limiter: 'magic' is not one of token-bucket, leaky-bucket, "
		                        "fixed-window, sliding-log, sliding-window, gcra, concurrency, layered, none\n" },
		{ "--threads", "0", "ratelab serve: --threads: '0' is not a number from 1 to 64\n" },
		{ "--connection-timeout", "soon", "ratelab serve: --connection-timeout: 'soon' is not a duration such as 250ms, 2s or 1m\n" },
		{ "--bind", "localhost", "ratelab serve: --bind: 'localhost' is not an IPv4 or IPv6 address\n" },
		{ "--scenario=nope", NULL, "ratelab serve: --scenario: 'nope' is neither a built-in scenario "
		                           "(ratelab verify --list names them) nor a readable file\n" },
		{ "--delay", NULL, "ratelab serve: --delay needs a value\n" },
		{ "--delay", "20", "ratelab serve: --delay: '20' needs a unit, e.g. 20ms or 20s (ns, us, ms, s, m, h, d)\n" },
		{ "--port", "70000", "ratelab serve: --port: '70000' is not a number from 0 to 65535\n" },
		{ "--max-keys", "0", "ratelab serve: --max-keys: '0' is not a number from 1 to 4294967296\n" },
		{ "--max-connections", "0", "ratelab serve: --max-connections: '0' is not a number from 1 to 1000000\n" },
		{ "--max-body", "x", "ratelab serve: --max-body: 'x' is not a size such as 64K, 1M or 1MiB (0 B to 1 GiB; K = 1024)\n" },
		{ "--burst", "0", "ratelab serve: --burst: '0' is not a number from 1 to 4294967295\n" },
		{ "--store-failure", "sideways", "ratelab serve: --store-failure: 'sideways' is not one of open, closed\n" },
		{ "--layer", "5", "ratelab serve: --layer: '5' is not a rate such as 5/s or 30/1m\n" },
		{ "--limiter", "layered", "ratelab serve: --limiter: 'layered' needs at least one --layer RATE\n" },
		{ "--config", "/nonexistent-dir/routes.json", "ratelab serve: --config: /nonexistent-dir/routes.json: cannot open\n" },
		{ "--quiet=yes", NULL, "ratelab serve: --quiet takes no value\n" },
	};
	struct test_run r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *args[] = { "serve", "--port", "0", bad[i][0], bad[i][1], NULL };
		const char *val = bad[i][1] ? bad[i][1] : "";

		ck_assert_int_eq(testutil_run(&r, args, NULL, 5000), 0);
		ck_assert_msg(r.status == 2, "%s %s: exit %d", bad[i][0], val, r.status);
		ck_assert_str_eq(r.err, bad[i][2]);
		ck_assert_str_eq(r.out, "");
		testutil_run_free(&r);
	}
}
END_TEST

START_TEST(help_exits_0)
{
	const char *args[] = { "serve", "--help", NULL };
	struct test_run r;

	ck_assert_int_eq(testutil_run(&r, args, NULL, 5000), 0);
	ck_assert_int_eq(r.status, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "usage: ratelab serve"));
	ck_assert_ptr_nonnull(strstr(r.out, "falls back to its IP"));
	testutil_run_free(&r);
}
END_TEST

START_TEST(bad_config_exit_2)
{
	char path[] = "/tmp/ratelab-badcfg-XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");
	const char *args[] = { "serve", "--port", "0", "--config", path, NULL };
	struct test_run r;

	fputs("{\"routes\": [\n  {\"prefix\": \"/api\",\n   \"limiter\": \"nope\"}\n]}\n", f);
	fclose(f);
	ck_assert_int_eq(testutil_run(&r, args, NULL, 5000), 0);
	unlink(path);
	ck_assert_int_eq(r.status, 2);
	ck_assert_msg(strstr(r.err, path) && strstr(r.err, ":3:") && strstr(r.err, "unknown limiter"), "stderr '%s'",
	              r.err);
	testutil_run_free(&r);
}
END_TEST

START_TEST(sigterm_drains_and_summarises)
{
	static const char *const args[] = { "--limit", "2", "--window", "1h", NULL };
	struct test_server s;
	CURL *c = curl_easy_init();
	struct test_reply r;
	char url[128], out[512];
	size_t used = 0;

	testutil_start(&s, args);
	url_of(&s, "/", url, sizeof(url));
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(testutil_fire(c, "GET", url, NULL, &r), CURLE_OK);
	curl_easy_cleanup(c);
	kill(s.pid, SIGTERM);
	for (int k = 0; k < 100 && used < sizeof(out) - 1; k++) {
		struct pollfd p = { s.stdout_fd, POLLIN, 0 };
		ssize_t n;

		if (poll(&p, 1, 50) <= 0)
			continue;
		n = read(s.stdout_fd, out + used, sizeof(out) - 1 - used);
		if (n <= 0)
			break;
		used += (size_t)n;
	}
	out[used] = '\0';
	ck_assert_int_eq(testutil_stop(&s), 0);
	ck_assert_msg(strstr(out, "ratelab serve: stopped after ") != NULL, "stdout '%s'", out);
	ck_assert_msg(strstr(out, ": 3 requests, 2 admitted, 1 rejected\n") != NULL, "stdout '%s'", out);
}
END_TEST

static int handle_echo(struct server *srv, void *ctx, const struct server_request *req, struct server_reply *out)
{
	const char *q = server_request_query(req, "say");

	(void)srv;
	out->status = 201;
	out->content_type = "text/plain";
	out->body = malloc(256);
	out->body_len = (size_t)snprintf(out->body, 256, "%s %s %s %zu %s", (const char *)ctx, req->method, req->path,
	                                 req->body_len, q ? q : "-");
	snprintf(out->headers, sizeof(out->headers), "X-Echo: yes\n");
	return 0;
}

static struct server *start_inproc(struct server_config *cfg, char *base, size_t len)
{
	char err[256] = "";
	struct server *srv;

	cfg->port = 0;
	cfg->quiet = true;
	srv = server_start(cfg, err, sizeof(err));
	ck_assert_msg(srv != NULL, "server_start: %s", err);
	ck_assert_int_gt(server_port(srv), 0);
	snprintf(base, len, "http://127.0.0.1:%d", server_port(srv));
	return srv;
}

START_TEST(inprocess_routes_and_handler)
{
	struct server_config cfg;
	struct server *srv;
	CURL *c = curl_easy_init();
	struct test_reply r;
	char base[64], url[128], v[64];
	char *argv[] = { "serve", "--limiter", "none", NULL };
	char err[256];

	ck_assert_int_eq(server_config_from_args(&cfg, 3, argv, err, sizeof(err)), 0);
	config_route_defaults(&cfg.routes[cfg.nroutes], "/api");
	cfg.routes[cfg.nroutes].params.limit = 2;
	cfg.routes[cfg.nroutes++].params.window_ns = 3600ULL * 1000000000ULL;
	ck_assert_int_eq(server_config_add_handler(&cfg, "/echo", handle_echo, "hi"), 0);
	srv = start_inproc(&cfg, base, sizeof(base));
	snprintf(url, sizeof(url), "%s/api/v1", base);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(testutil_fire(c, "GET", url, NULL, &r), CURLE_OK);
		ck_assert_int_eq(r.status, i < 2 ? 200 : 429);
	}
	snprintf(url, sizeof(url), "%s/other", base);
	for (int i = 0; i < 5; i++) {
		ck_assert_int_eq(testutil_fire(c, "GET", url, NULL, &r), CURLE_OK);
		ck_assert_int_eq(r.status, 200);
	}
	snprintf(url, sizeof(url), "%s/echo?say=x", base);
	ck_assert_int_eq(testutil_fire(c, "POST", url, NULL, &r), CURLE_OK);
	ck_assert_int_eq(r.status, 201);
	ck_assert_str_eq(r.body, "hi POST /echo 0 x");
	ck_assert(header(&r, "X-Echo", v, sizeof(v)));
	ck_assert_str_eq(v, "yes");
	snprintf(url, sizeof(url), "%s/healthz", base);
	ck_assert_int_eq(testutil_fire(c, "GET", url, NULL, &r), CURLE_OK);
	ck_assert_int_eq(r.status, 200);
	curl_easy_cleanup(c);
	server_stop(srv);
}
END_TEST

START_TEST(concurrency_slot_released_on_disconnect)
{
	struct server_config cfg;
	struct server *srv;
	CURL *c = curl_easy_init(), *slow = curl_easy_init();
	struct test_reply r;
	char base[64], url[128], slow_url[128];
	char *argv[] = { "serve", "--limiter", "concurrency", "--limit", "1", "--query-faults", "--key", "global", NULL };
	char err[256];
	int answered = 0;

	ck_assert_msg(server_config_from_args(&cfg, 8, argv, err, sizeof(err)) == 0, "%s", err);
	srv = start_inproc(&cfg, base, sizeof(base));
	snprintf(url, sizeof(url), "%s/c", base);
	snprintf(slow_url, sizeof(slow_url), "%s/c?delay=300ms", base);
	/* The slow client gives up after 50 ms while holding the only slot. */
	curl_easy_setopt(slow, CURLOPT_URL, slow_url);
	curl_easy_setopt(slow, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(slow, CURLOPT_TIMEOUT_MS, 50L);
	ck_assert_int_eq(curl_easy_perform(slow), CURLE_OPERATION_TIMEDOUT);
	curl_easy_cleanup(slow);
	ck_assert_int_eq(testutil_fire(c, "GET", url, NULL, &r), CURLE_OK);
	ck_assert_int_eq(r.status, 429);
	for (int i = 0; i < 100 && !answered; i++) {
		struct timespec ts = { 0, 20 * 1000000L };

		nanosleep(&ts, NULL);
		ck_assert_int_eq(testutil_fire(c, "GET", url, NULL, &r), CURLE_OK);
		answered = r.status == 200;
	}
	ck_assert_msg(answered, "slot never released");
	curl_easy_cleanup(c);
	server_stop(srv);
}
END_TEST

START_TEST(delay_fault_holds_the_answer)
{
	struct server_config cfg;
	struct server *srv;
	CURL *c = curl_easy_init();
	struct test_reply r;
	char base[64], url[128];
	char *argv[] = { "serve", "--limiter", "none", "--faults", "delay=200ms:100", NULL };
	char err[256];
	double t;

	ck_assert_int_eq(server_config_from_args(&cfg, 5, argv, err, sizeof(err)), 0);
	srv = start_inproc(&cfg, base, sizeof(base));
	snprintf(url, sizeof(url), "%s/slow", base);
	ck_assert_int_eq(testutil_fire(c, "GET", url, NULL, &r), CURLE_OK);
	ck_assert_int_eq(r.status, 200);
	curl_easy_getinfo(c, CURLINFO_TOTAL_TIME, &t);
	ck_assert_msg(t >= 0.2 && t < 2.0, "took %f s", t);
	snprintf(url, sizeof(url), "%s/healthz", base);
	ck_assert_int_eq(testutil_fire(c, "GET", url, NULL, &r), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_TOTAL_TIME, &t);
	ck_assert_msg(t < 0.2, "/healthz took %f s", t);
	curl_easy_cleanup(c);
	server_stop(srv);
}
END_TEST

START_TEST(oversized_requests_refused)
{
	struct server_config cfg;
	struct server *srv;
	CURL *c = curl_easy_init();
	struct test_reply r;
	char base[64], *url = malloc(70000), *body = malloc(100001);
	char *argv[] = { "serve", "--limiter", "none", NULL };
	char err[256];
	CURLcode rc;

	ck_assert_int_eq(server_config_from_args(&cfg, 3, argv, err, sizeof(err)), 0);
	srv = start_inproc(&cfg, base, sizeof(base));
	snprintf(url, 70000, "%s/", base);
	memset(url + strlen(url), 'a', 60000);
	url[strlen(base) + 1 + 60000] = '\0';
	rc = testutil_fire(c, "GET", url, NULL, &r);
	ck_assert_msg(rc != CURLE_OK || r.status == 414 || r.status == 431, "long URL: rc %d status %ld", rc, r.status);
	memset(body, 'b', 100000);
	body[100000] = '\0';
	snprintf(url, 70000, "%s/up", base);
	ck_assert_int_eq(testutil_http("POST", url, body, &r.status, NULL, NULL), 0);
	ck_assert_int_eq(r.status, 413);
	free(url);
	free(body);
	curl_easy_cleanup(c);
	server_stop(srv);
}
END_TEST

START_TEST(bad_query_faults_are_400)
{
	static const char *const bad[][2] = {
		{ "status=abc", "abc" }, { "status=150", "200..599" }, { "status=503:abc", "abc" }, { "delay=zz", "zz" },
	};
	struct server_config cfg;
	struct server *srv;
	CURL *c = curl_easy_init();
	struct test_reply r;
	char base[64], url[160], v[64];
	char *argv[] = { "serve", "--limiter", "none", "--query-faults", NULL };
	char err[256];
	json_error_t je;
	json_t *j;

	ck_assert_int_eq(server_config_from_args(&cfg, 4, argv, err, sizeof(err)), 0);
	srv = start_inproc(&cfg, base, sizeof(base));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(url, sizeof(url), "%s/q?%s", base, bad[i][0]);
		ck_assert_int_eq(testutil_fire(c, "GET", url, NULL, &r), CURLE_OK);
		ck_assert_msg(r.status == 400, "?%s: status %ld", bad[i][0], r.status);
		ck_assert_msg(strstr(r.body, bad[i][1]) != NULL, "?%s: body '%s' lacks '%s'", bad[i][0], r.body, bad[i][1]);
		ck_assert_msg(strchr(r.body, '\n') == r.body + r.blen - 1, "?%s: not one line: '%s'", bad[i][0], r.body);
		ck_assert(header(&r, "Content-Type", v, sizeof(v)));
		ck_assert_str_eq(v, "text/plain");
	}
	snprintf(url, sizeof(url), "%s/q?status=503", base);
	ck_assert_int_eq(testutil_fire(c, "GET", url, NULL, &r), CURLE_OK);
	ck_assert_int_eq(r.status, 503);
	snprintf(url, sizeof(url), "%s/stats", base);
	ck_assert_int_eq(testutil_fire(c, "GET", url, NULL, &r), CURLE_OK);
	j = json_loads(r.body, 0, &je);
	ck_assert_msg(j != NULL, "/stats is not JSON: %s", je.text);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "status"), "400")), 4);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "status"), "503")), 1);
	json_decref(j);
	curl_easy_cleanup(c);
	server_stop(srv);
}
END_TEST

START_TEST(long_header_keys_stay_distinct)
{
	struct server_config cfg;
	struct server *srv;
	CURL *c = curl_easy_init();
	struct test_reply r;
	char base[64], url[128], hdr[3][200];
	char *argv[] = { "serve", "--key", "header:X-K", "--limit", "1", "--window", "1h", NULL };
	char err[256];

	ck_assert_msg(server_config_from_args(&cfg, 7, argv, err, sizeof(err)) == 0, "%s", err);
	srv = start_inproc(&cfg, base, sizeof(base));
	snprintf(url, sizeof(url), "%s/k", base);
	/* 153-byte values that agree in their first 140 bytes: past the 127 a key keeps as it is. */
	for (int i = 0; i < 3; i++) {
		int n = snprintf(hdr[i], sizeof(hdr[i]), "X-K: ");

		memset(hdr[i] + n, 'k', 140);
		snprintf(hdr[i] + n + 140, sizeof(hdr[i]) - (size_t)n - 140, "tail-%08d", i);
		ck_assert_uint_eq(strlen(hdr[i]) - (size_t)n, 153);
		ck_assert_int_eq(testutil_fire(c, "GET", url, hdr[i], &r), CURLE_OK);
		ck_assert_msg(r.status == 200, "key %d: status %ld", i, r.status);
	}
	ck_assert_int_eq(testutil_fire(c, "GET", url, hdr[0], &r), CURLE_OK);
	ck_assert_int_eq(r.status, 429);
	curl_easy_cleanup(c);
	server_stop(srv);
}
END_TEST

/* One raw request to port with the extra header line hdr; the status of its answer (0: none). */
static long raw_status(int port, const char *hdr)
{
	char req[256], buf[1024];
	int fd = testutil_raw_connect(port, 1);
	long status = 0;

	ck_assert_int_ge(fd, 0);
	snprintf(req, sizeof(req), "GET /k HTTP/1.1\r\nHost: x\r\n%s\r\nConnection: close\r\n\r\n", hdr);
	ck_assert_int_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	testutil_raw_read(fd, buf, sizeof(buf), 5000);
	close(fd);
	if (sscanf(buf, "HTTP/1.1 %ld", &status) != 1)
		return 0;
	return status;
}

/*
 * A header's trailing spaces and tabs are no part of its value (RFC 9110 5.5):
 * "a \t" and "a" are one key and one client name, and a name of spaces alone is none.
 */
START_TEST(header_values_lose_trailing_whitespace)
{
	struct server_config cfg;
	struct server *srv;
	char base[64], url[128];
	char *argv[] = { "serve", "--key", "header:X-K", "--limit", "1", "--window", "1h", NULL };
	char err[256], *body = NULL;
	long status;
	json_t *j, *rows;

	ck_assert_msg(server_config_from_args(&cfg, 7, argv, err, sizeof(err)) == 0, "%s", err);
	srv = start_inproc(&cfg, base, sizeof(base));
	int port = atoi(strrchr(base, ':') + 1);

	ck_assert_int_eq(raw_status(port, "X-K: a \t\r\nX-Client-Name: ada  "), 200);
	ck_assert_int_eq(raw_status(port, "X-K: a\r\nX-Client-Name: ada"), 429);
	ck_assert_int_eq(raw_status(port, "X-K: b\r\nX-Client-Name:   "), 200);
	snprintf(url, sizeof(url), "%s/stats", base);
	ck_assert_int_eq(testutil_http("GET", url, NULL, &status, NULL, &body), 0);
	j = json_loads(body, 0, NULL);
	ck_assert_ptr_nonnull(j);
	rows = json_object_get(json_object_get(j, "clients"), "rows");
	ck_assert_uint_eq(json_array_size(rows), 2);
	for (size_t i = 0; i < 2; i++) {
		const char *name = json_string_value(json_object_get(json_array_get(rows, i), "name"));

		ck_assert_ptr_nonnull(name);
		snprintf(err, sizeof(err), "%s %lld", name, testutil_jint_req(json_array_get(rows, i), "requests", NULL));
		ck_assert_msg(strcmp(err, "ada 2") == 0 || strcmp(err, "b 1") == 0, "row %zu: %s", i, err);
	}
	json_decref(j);
	free(body);
	server_stop(srv);
}
END_TEST

Suite *server_suite(void)
{
	Suite *s = suite_create("server");
	TCase *tc = tcase_create("http");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, token_bucket_40_gets);
	tcase_add_test(tc, admitted_ratelimit_counts_down);
	tcase_add_test(tc, problem_body_carries_exact_wait);
	tcase_add_test(tc, stats_and_metrics_count);
	tcase_add_test(tc, reset_restores_burst);
	tcase_add_test(tc, reset_clears_occ);
	tcase_add_test(tc, faults_at_their_rates);
	tcase_add_test(tc, no_retry_after_fault_and_modes);
	tcase_add_test(tc, fixed_windows_start_with_the_server);
	tcase_add_test(tc, http_date_and_status_503);
	tcase_add_test(tc, bad_flags_exit_2);
	tcase_add_test(tc, help_exits_0);
	tcase_add_test(tc, bad_config_exit_2);
	tcase_add_test(tc, sigterm_drains_and_summarises);
	tcase_add_test(tc, inprocess_routes_and_handler);
	tcase_add_test(tc, concurrency_slot_released_on_disconnect);
	tcase_add_test(tc, delay_fault_holds_the_answer);
	tcase_add_test(tc, oversized_requests_refused);
	tcase_add_test(tc, bad_query_faults_are_400);
	tcase_add_test(tc, long_header_keys_stay_distinct);
	tcase_add_test(tc, header_values_lose_trailing_whitespace);
	suite_add_tcase(s, tc);
	return s;
}
