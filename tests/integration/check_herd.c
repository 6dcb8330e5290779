/* ratelab herd and /occ: the record's rules, the delay, the herd's peaks, and real herds. */
#include <check.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/timeline.h"
#include "hammer/engine.h"
#include "lab/herd.h"
#include "lab/herd_occ.h"
#include "lab/herd_report.h"
#include "server/handlers/occ.h"
#include "tests/harness/testutil.h"

START_TEST(occ_rules)
{
	struct occ *o = occ_new();
	struct occ_reply r;

	ck_assert_ptr_nonnull(o);
	occ_handle(o, "GET", NULL, &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(r.etag, "\"0\"");
	occ_handle(o, "PUT", "\"0\"", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(r.etag, "\"1\"");
	occ_handle(o, "PUT", "\"0\"", &r);           /* someone else wrote first */
	ck_assert_int_eq(r.status, 409);
	ck_assert_str_eq(r.etag, "\"1\"");
	ck_assert_str_eq(r.body, "{\"version\":1,\"writes\":1,\"conflicts\":1}\n");
	occ_handle(o, "PUT", NULL, &r);
	ck_assert_int_eq(r.status, 428);
	occ_handle(o, "DELETE", "\"1\"", &r);
	ck_assert_int_eq(r.status, 405);
	ck_assert_str_eq(r.allow, "GET, PUT");
	occ_handle(o, "PUT", "\"7\", \"1\"", &r);    /* a list matches any member */
	ck_assert_int_eq(r.status, 200);
	occ_handle(o, "PUT", "*", &r);
	ck_assert_int_eq(r.status, 200);
	occ_handle(o, "PUT", "W/\"3\"", &r);         /* weak tags never match */
	ck_assert_int_eq(r.status, 409);
	ck_assert_uint_eq(occ_version(o), 3);
	occ_reset(o);
	ck_assert_uint_eq(occ_version(o), 0);
	occ_free(o);
}
END_TEST

#define OCC_THREADS 4
#define OCC_LOOPS 2000

static void *occ_writer(void *arg)
{
	struct occ *o = arg;
	struct occ_reply r;
	uintptr_t won = 0;

	for (int i = 0; i < OCC_LOOPS; i++) {
		char tag[32];

		occ_handle(o, "GET", NULL, &r);
		snprintf(tag, sizeof(tag), "%s", r.etag);
		occ_handle(o, "PUT", tag, &r);
		won += r.status == 200;
	}
	return (void *)won;
}

START_TEST(occ_thread_safe)
{
	struct occ *o = occ_new();
	pthread_t t[OCC_THREADS];
	uintptr_t total = 0;

	for (int i = 0; i < OCC_THREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, occ_writer, o), 0);
	for (int i = 0; i < OCC_THREADS; i++) {
		void *won;

		pthread_join(t[i], &won);
		total += (uintptr_t)won;
	}
	/* Every won write bumped the version exactly once; no lost updates. */
	ck_assert_uint_eq(occ_version(o), total);
	ck_assert_uint_ge(total, OCC_LOOPS);
	occ_free(o);
}
END_TEST

START_TEST(delay_parse_and_sample)
{
	struct occ_delay d;
	struct prng rng;
	char err[160];
	double sum = 0;

	ck_assert_int_eq(occ_delay_parse("20ms\xc2\xb1" "5ms", &d, err, sizeof(err)), 0);
	ck_assert_uint_eq(d.mean_ns, 20 * NS_PER_MS);
	ck_assert_uint_eq(d.sd_ns, 5 * NS_PER_MS);
	ck_assert_int_eq(occ_delay_parse("2ms+-1ms", &d, err, sizeof(err)), 0);
	ck_assert_uint_eq(d.sd_ns, 1 * NS_PER_MS);
	ck_assert_int_eq(occ_delay_parse("20ms", &d, err, sizeof(err)), 0);
	ck_assert_uint_eq(d.sd_ns, 0);
	prng_seed(&rng, 1);
	ck_assert_uint_eq(occ_delay_sample(&d, &rng), 20 * NS_PER_MS);
	ck_assert_int_eq(occ_delay_parse("20", &d, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "--delay: bad value '20' (want MEAN[±SD], e.g. 20ms±5ms)");
	ck_assert_int_eq(occ_delay_parse("20ms+-x", &d, err, sizeof(err)), -1);
	d.mean_ns = 10 * NS_PER_MS;
	d.sd_ns = 2 * NS_PER_MS;
	for (int i = 0; i < 10000; i++) {
		uint64_t v = occ_delay_sample(&d, &rng);

		ck_assert_uint_le(v, 18 * NS_PER_MS);
		sum += (double)v;
	}
	ck_assert_double_eq_tol(sum / 10000, 10.0 * NS_PER_MS, 0.1 * NS_PER_MS);
}
END_TEST

START_TEST(peaks_slide)
{
	struct herd_bin bins[40] = { { 0 } };
	struct herd_result r = { .bins = bins, .nbins = 40 };
	struct herd_bin row;

	bins[0].rejected = 100;              /* the first volley */
	bins[15].rejected = 30;              /* a wave split over two 100 ms rows */
	bins[15].retries = 30;
	bins[22].ok = 20;
	bins[22].retries = 20;
	bins[39].other = 1;
	herd_result_peaks(&r);
	ck_assert_uint_eq(r.peak_attempts, 100);
	ck_assert_uint_eq(r.peak_retries, 50);  /* a sliding window catches 15..22 together */
	ck_assert_uint_eq(herd_report_rows100(&r), 4);
	ck_assert(herd_report_row100(&r, 2, &row));
	ck_assert_uint_eq(row.ok, 20);
	ck_assert(!herd_report_row100(&r, 4, &row));
}
END_TEST

START_TEST(policies)
{
	struct herd_knobs k;
	struct retry_policy p;
	char err[256];

	herd_knobs_defaults(HERD_WORKLOAD_REQUEST, &k);
	ck_assert_int_eq(herd_policy("exponential", &k, HERD_WORKLOAD_REQUEST, &p, err, sizeof(err)), 0);
	ck_assert_int_eq(p.backoff, BACKOFF_EXPONENTIAL);
	ck_assert_uint_eq(p.base_ns, 500 * NS_PER_MS);
	ck_assert_uint_eq(p.max_attempts, 10);
	ck_assert(p.retry_on[429] && p.retry_on[409] && !p.honour_retry_after);
	ck_assert_int_eq(herd_policy("lab", &k, HERD_WORKLOAD_OCC, &p, err, sizeof(err)), 0);
	ck_assert(p.retry_on[409]);
	ck_assert_int_eq(herd_policy("jittery", &k, HERD_WORKLOAD_REQUEST, &p, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "'jittery'"));
}
END_TEST

/* Run `ratelab herd ARGS --report DIR` and load DIR/results.json's policies by name. */
static json_t *run_herd(const char *const *args, char *dir, size_t dlen, struct test_run *run)
{
	const char *argv[32];
	char path[600];
	size_t n = 0;
	json_t *doc;

	snprintf(dir, dlen, "/tmp/ratelab-herd-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	argv[n++] = "herd";
	for (size_t i = 0; args[i]; i++)
		argv[n++] = args[i];
	argv[n++] = "--report";
	argv[n++] = dir;
	argv[n] = NULL;
	ck_assert_int_eq(testutil_run(run, argv, NULL, 120000), 0);
	ck_assert_msg(run->status == 0, "herd exit %d: %s", run->status, run->err);
	snprintf(path, sizeof(path), "%s/results.json", dir);
	doc = json_load_file(path, 0, NULL);
	ck_assert_ptr_nonnull(doc);
	return doc;
}

static json_t *policy_obj(json_t *doc, const char *name)
{
	json_t *arr = json_object_get(doc, "policies"), *p;
	size_t i;

	json_array_foreach(arr, i, p)
		if (strcmp(json_string_value(json_object_get(p, "policy")), name) == 0)
			return p;
	ck_abort_msg("no policy %s in results.json", name);
	return NULL;
}

static double num(json_t *p, const char *key)
{
	json_t *v = json_object_get(p, key);

	ck_assert_msg(json_is_number(v), "no number %s", key);
	return json_number_value(v);
}

static void remove_dir(const char *dir)
{
	char cmd[700];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/*
 * The check: 100 herd clients, peak retries per 100 ms without jitter >= 2x full
 * jitter.  A 1 s base (default 500 ms) spreads full jitter's first retries over ten 100 ms
 * windows, so the margin (about 3.5-5x) survives a loaded machine.
 */
START_TEST(herd_waves_vs_jitter)
{
	static const char *const args[] = { "--clients", "100", "--policies", "exponential,full", "--seed", "7",
	                                    "--base", "1s", NULL };
	struct test_run run;
	char dir[64], path[600];
	json_t *doc = run_herd(args, dir, sizeof(dir), &run);
	json_t *ex = policy_obj(doc, "exponential"), *fu = policy_obj(doc, "full");

	ck_assert_msg(num(ex, "peak_retries_per_100ms") >= 2 * num(fu, "peak_retries_per_100ms"),
	              "no jitter %.0f vs full jitter %.0f", num(ex, "peak_retries_per_100ms"),
	              num(fu, "peak_retries_per_100ms"));
	ck_assert_double_eq(num(ex, "successes") + num(ex, "failures"), 100);
	ck_assert_double_eq(num(fu, "successes"), 100);
	ck_assert_double_eq(num(ex, "calls_per_client"), num(ex, "calls") / 100);
	/* The table on stdout has one row per policy, in order. */
	ck_assert_ptr_nonnull(strstr(run.out, "\nexponential "));
	ck_assert(strstr(run.out, "\nexponential ") < strstr(run.out, "\nfull "));
	snprintf(path, sizeof(path), "%s/exponential.csv", dir);
	ck_assert_int_eq(access(path, R_OK), 0);
	snprintf(path, sizeof(path), "%s/report.html", dir);
	ck_assert_int_eq(access(path, R_OK), 0);
	json_decref(doc);
	testutil_run_free(&run);
	remove_dir(dir);
}
END_TEST

/* The whole of a file (malloc'd). */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = malloc(1 << 20);
	size_t n;

	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(buf);
	n = fread(buf, 1, (1 << 20) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* --url: the report says the server was external and gives the RateLimit-Policy it sent. */
START_TEST(herd_report_names_the_external_server)
{
	static const char *const sargs[] = { "--limit", "7", "--key", "global", "--quiet", NULL };
	struct test_server s;
	struct test_run run;
	char dir[64], path[600], *html;
	json_t *doc;

	ck_assert_int_eq(testutil_server_start(&s, sargs, 5000), 0);
	{
		const char *const args[] = { "--clients", "10", "--policies", "full", "--url", s.url, NULL };

		doc = run_herd(args, dir, sizeof(dir), &run);
	}
	ck_assert(json_is_true(json_object_get(json_object_get(doc, "server"), "external")));
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(doc, "server"), "ratelimit_policy")),
	                 "\"default\";q=7;w=1");
	snprintf(path, sizeof(path), "%s/report.html", dir);
	html = slurp(path);
	ck_assert_ptr_nonnull(strstr(html, "server: external, "));
	ck_assert_ptr_nonnull(strstr(html, "RateLimit-Policy <code>&quot;default&quot;;q=7;w=1</code>"));
	ck_assert_ptr_null(strstr(html, "50/s burst 20"));
	ck_assert_ptr_nonnull(strstr(html, "viewBox=\"0 0 1000 150\""));
	free(html);
	json_decref(doc);
	testutil_run_free(&run);
	remove_dir(dir);
	ck_assert_int_eq(testutil_server_stop(&s, 10000), 0);
}
END_TEST

/*
 * A preset's retry budget holds in herd as in hammer: gRPC throttling (10
 * tokens, a failure takes one, retries stop below half) lets none of a
 * rejected herd's retries through, where no budget retries every rejected
 * client nine times.  A policy's arithmetic, so in virtual time, exactly:
 * the burst of 20 admits 20 of the 100 at the instant they fire.
 */
START_TEST(herd_budget_throttles)
{
	static const char *const args[] = { "--sim", "--clients", "100", "--policies", "grpc,none", "--seed", "7", NULL };
	struct test_run run;
	char dir[64];
	json_t *doc = run_herd(args, dir, sizeof(dir), &run);
	json_t *g = policy_obj(doc, "grpc"), *none = policy_obj(doc, "none");

	ck_assert_double_eq(num(g, "retries"), 0);
	ck_assert_double_eq(num(g, "successes"), 20);
	ck_assert_double_eq(num(g, "failures"), 80);
	ck_assert_double_eq(num(none, "retries"), 80 * 9);
	ck_assert_double_eq(num(none, "calls"), 100 + 80 * 9);
	ck_assert_double_eq(num(none, "successes"), 20);
	json_decref(doc);
	testutil_run_free(&run);
	remove_dir(dir);
}
END_TEST

/*
 * The AWS blog's OCC result: no jitter takes far longer and far more calls
 * than jitter.  In virtual time (a fixed 100 us each way) no jitter stays in
 * perfect lockstep, so the counts are exact and the gap is the model's
 * whole: a real run's scheduling noise breaks the lockstep a little.
 */
START_TEST(herd_occ_blog)
{
	static const char *const args[] = { "--sim", "--workload", "occ", "--clients", "40", "--cap", "250ms",
	                                    "--policies", "exponential,full,equal,decorrelated", NULL };
	static const struct { const char *name; double calls; } want[] = {
		{ "exponential", 1640 }, { "full", 192 }, { "equal", 210 }, { "decorrelated", 172 },
	};
	struct test_run run;
	char dir[64];
	json_t *doc = run_herd(args, dir, sizeof(dir), &run);
	json_t *ex = policy_obj(doc, "exponential");

	ck_assert_str_eq(json_string_value(json_object_get(doc, "workload")), "occ");
	for (size_t i = 0; i < 4; i++) {
		json_t *p = policy_obj(doc, want[i].name);

		ck_assert_double_eq(num(p, "successes"), 40);
		ck_assert_msg(num(p, "calls") == want[i].calls, "%s: %.0f calls", want[i].name, num(p, "calls"));
		if (i > 0)
			ck_assert_msg(num(ex, "completion_s") > 100 * num(p, "completion_s"), "%s: %.3fs vs no jitter %.3fs",
			              want[i].name, num(p, "completion_s"), num(ex, "completion_s"));
	}
	ck_assert_double_eq(num(ex, "completion_s"), 8.826);
	json_decref(doc);
	testutil_run_free(&run);
	remove_dir(dir);
}
END_TEST

/* One occ herd of n clients over transport t, in this process, against s. */
static void occ_herd(const struct test_server *s, enum hammer_transport t, uint32_t n, struct hammer_result *r)
{
	struct herd_knobs k = { .base_ns = 2 * NS_PER_MS, .cap_ns = 50 * NS_PER_MS, .max_attempts = 1000 };
	struct retry_policy pol;
	char url[96], err[256];
	struct hammer_config c = {
		.url = url, .method = "GET", .workload = &HERD_OCC, .requests = n, .concurrency = n,
		.threads = 2, .herd = true, .seed = 3, .transport = t, .policy = &pol,
		.timeout_ns = 5 * NS_PER_SEC, .duration_ns = 30 * NS_PER_SEC, .interval_ns = HERD_PEAK_NS,
		.by_start_ns = HERD_BIN_NS,
	};

	snprintf(url, sizeof(url), "%s/", s->url);
	ck_assert_int_eq(herd_policy("full", &k, HERD_WORKLOAD_OCC, &pol, err, sizeof(err)), 0);
	ck_assert_int_eq(hammer_result_init(r, c.interval_ns), 0);
	ck_assert_msg(hammer_run(&c, r, err, sizeof(err)) == 0, "hammer_run: %s", err);
}

/*
 * The occ workload over each transport: every client writes exactly once;
 * each attempt is a GET (200, with the ETag) and a PUT with If-Match that
 * wins (200) or conflicts (409); the record's own count of writes and
 * conflicts agrees; every call lands in the herd's start-time bins.
 */
START_TEST(occ_workload_on_both_transports)
{
	static const enum hammer_transport T[] = { HAMMER_TRANSPORT_WIRE, HAMMER_TRANSPORT_CURL };
	static const char *const names[] = { "wire", "curl" };
	static const char *const sargs[] = { "--limiter", "none", NULL };

	for (size_t i = 0; i < 2; i++) {
		struct test_server s;
		struct hammer_result r;
		char url[96], want[96], *body = NULL;
		long status = 0;
		uint64_t binned = 0, conflicts;

		ck_assert_int_eq(testutil_server_start(&s, sargs, 5000), 0);
		occ_herd(&s, T[i], 12, &r);
		ck_assert_str_eq(r.transport, names[i]);
		ck_assert_uint_eq(r.requests, 12);
		ck_assert_uint_eq(r.ok, 12);
		ck_assert_uint_eq(r.status[200], 12);
		ck_assert_uint_eq(r.answered, r.calls);
		ck_assert_uint_eq(r.calls % 2, 0);
		conflicts = r.calls / 2 - 12;
		ck_assert_uint_eq(r.attempt_status[409], conflicts);
		ck_assert_uint_eq(r.attempt_status[200], r.calls / 2 + 12);
		ck_assert_uint_eq(r.attempt_status[200] + r.attempt_status[409], r.calls);
		for (uint32_t row = 0; row < timeline_rows(r.by_start); row++)
			binned += timeline_attempts(r.by_start, row);
		ck_assert_uint_eq(binned, r.calls);
		snprintf(url, sizeof(url), "%s/occ", s.url);
		ck_assert_int_eq(testutil_http("GET", url, NULL, &status, NULL, &body), 0);
		snprintf(want, sizeof(want), "{\"version\":12,\"writes\":12,\"conflicts\":%llu}\n",
		         (unsigned long long)conflicts);
		ck_assert_str_eq(body, want);
		free(body);
		hammer_result_destroy(&r);
		ck_assert_int_eq(testutil_server_stop(&s, 3000), 0);
	}
}
END_TEST

/* The herd's bins read the engine's start-time timeline: outcome classes, retries, peaks. */
START_TEST(bins_from_the_engine)
{
	struct hammer_result r;
	struct herd_result h;

	ck_assert_int_eq(hammer_result_init(&r, HERD_PEAK_NS), 0);
	r.by_start = timeline_new(HERD_BIN_NS);
	ck_assert_ptr_nonnull(r.by_start);
	for (int i = 0; i < 5; i++) {
		timeline_sent(r.by_start, 0);
		timeline_outcome(r.by_start, 0, i < 3 ? 429 : 200);
	}
	timeline_sent(r.by_start, 25 * NS_PER_MS);
	timeline_outcome(r.by_start, 25 * NS_PER_MS, 503);
	timeline_retry(r.by_start, 25 * NS_PER_MS);
	timeline_sent(r.by_start, 25 * NS_PER_MS);
	timeline_outcome(r.by_start, 25 * NS_PER_MS, 409);
	timeline_retry(r.by_start, 25 * NS_PER_MS);
	timeline_sent(r.by_start, 150 * NS_PER_MS);
	timeline_outcome(r.by_start, 150 * NS_PER_MS, 0);
	r.ok = 2;
	r.calls = 8;
	r.retries = 2;
	r.last_ok_ns = 12 * NS_PER_MS;
	ck_assert_int_eq(herd_result_from_run(&h, "full", 4, &r), 0);
	ck_assert_str_eq(h.policy, "full");
	ck_assert_uint_eq(h.successes, 2);
	ck_assert_uint_eq(h.failures, 2);
	ck_assert_uint_eq(h.completion_ns, 12 * NS_PER_MS);
	ck_assert_uint_eq(h.nbins, 16);
	ck_assert_uint_eq(h.bins[0].rejected, 3);
	ck_assert_uint_eq(h.bins[0].ok, 2);
	ck_assert_uint_eq(h.bins[2].rejected, 1);
	ck_assert_uint_eq(h.bins[2].conflict, 1);
	ck_assert_uint_eq(h.bins[2].retries, 2);
	ck_assert_uint_eq(h.bins[15].other, 1);
	ck_assert_uint_eq(h.peak_attempts, 7);
	ck_assert_uint_eq(h.peak_retries, 2);
	herd_result_destroy(&h);
	hammer_result_destroy(&r);
}
END_TEST

/*
 * `serve --delay 1s` holds each /occ answer on the server's timer, not on its
 * thread: with one server thread, once the server has read a PUT /occ,
 * /healthz is answered while the PUT waits (a held thread would answer the
 * PUT first), and the PUT still takes its second and writes.
 */
START_TEST(occ_delay_does_not_block_the_thread)
{
	static const char *const args[] = { "--delay", "1s", "--threads", "1", "--quiet", NULL };
	static const char put[] = "PUT /occ HTTP/1.1\r\nHost: x\r\nIf-Match: \"0\"\r\nContent-Length: 0\r\n\r\n";
	struct test_server s;
	struct pollfd pf;
	char url[128], head[1024];
	long status = 0;
	double t0, took = 0, put_ms;
	int fd;

	ck_assert_msg(testutil_server_start(&s, args, 5000) == 0, "serve --delay did not start");
	snprintf(url, sizeof(url), "%s/healthz", s.url);
	fd = testutil_raw_connect(s.port, 1);
	ck_assert_int_ge(fd, 0);
	t0 = testutil_mono_ms();
	ck_assert_int_eq(send(fd, put, sizeof(put) - 1, MSG_NOSIGNAL), (ssize_t)(sizeof(put) - 1));
	ck_assert_msg(testutil_server_has_read(s.port, &fd, 1, 10000), "the server never read the PUT");
	for (int i = 0; i < 20; i++) {
		double h0 = testutil_mono_ms();

		ck_assert_int_eq(testutil_http("GET", url, NULL, &status, NULL, NULL), 0);
		ck_assert_int_eq(status, 200);
		took = i == 0 ? testutil_mono_ms() - h0 : took;
		pf = (struct pollfd){ fd, POLLIN, 0 };
		/* the first /healthz, sent once the PUT was in, came back before it */
		if (i == 0)
			ck_assert_msg(poll(&pf, 1, 0) == 0, "the delayed PUT /occ was answered before /healthz (which took %.0f ms)",
			              took);
	}
	testutil_raw_read_until(fd, head, sizeof(head), "\r\n\r\n", 10000);
	put_ms = testutil_mono_ms() - t0;
	close(fd);
	ck_assert_msg(strncmp(head, "HTTP/1.1 200 ", 13) == 0, "PUT /occ: '%.200s'", head);
	ck_assert_msg(strstr(head, "\r\nETag: \"1\"\r\n") != NULL, "PUT /occ: '%.300s'", head);
	ck_assert_msg(put_ms >= 1000, "the delayed PUT took %.0f ms, want 1 s", put_ms);
	ck_assert_int_eq(testutil_server_stop(&s, 3000), 0);
}
END_TEST

START_TEST(cli_errors)
{
	static const char *const help[] = { "herd", "--help", NULL };
	static const char *const badn[] = { "herd", "--clients", "zero", NULL };
	static const char *const badp[] = { "herd", "--policies", "full,jittery", NULL };
	static const char *const badw[] = { "herd", "--workload", "write", NULL };
	static const char *const badr[] = { "herd", "--report", "/nonexistent-dir/report", NULL };
	static const char *const bogus[] = { "herd", "--bogus", NULL };
	static const char *const extra[] = { "herd", "extra", NULL };
	struct test_run r;

	ck_assert_int_eq(testutil_run(&r, help, NULL, 10000), 0);
	ck_assert_int_eq(r.status, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "usage: ratelab herd"));
	testutil_run_free(&r);
	ck_assert_int_eq(testutil_run(&r, badn, NULL, 10000), 0);
	ck_assert_int_eq(r.status, 2);
	ck_assert_str_eq(r.err, "ratelab herd: --clients: 'zero' is not a number from 1 to 1000000\n");
	testutil_run_free(&r);
	ck_assert_int_eq(testutil_run(&r, badp, NULL, 10000), 0);
	ck_assert_int_eq(r.status, 2);
	ck_assert_str_eq(r.err, "ratelab herd: --policies: 'full,jittery' names an unknown policy 'jittery' "
	                        "(none,exponential,full,equal,decorrelated, or a preset: none, lab, signaldb, wasm, "
	                        "saia, aws-standard, grpc, naive, sre-adaptive)\n");
	testutil_run_free(&r);
	ck_assert_int_eq(testutil_run(&r, badw, NULL, 10000), 0);
	ck_assert_int_eq(r.status, 2);
	ck_assert_str_eq(r.err, "ratelab herd: --workload: 'write' is not one of request, occ\n");
	testutil_run_free(&r);
	ck_assert_int_eq(testutil_run(&r, bogus, NULL, 10000), 0);
	ck_assert_int_eq(r.status, 2);
	ck_assert_str_eq(r.err, "ratelab herd: unknown option '--bogus'\n");
	testutil_run_free(&r);
	ck_assert_int_eq(testutil_run(&r, extra, NULL, 10000), 0);
	ck_assert_int_eq(r.status, 2);
	ck_assert_str_eq(r.err, "ratelab herd: unexpected argument 'extra'\n");
	testutil_run_free(&r);
	ck_assert_int_eq(testutil_run(&r, badr, NULL, 10000), 0);
	ck_assert_int_eq(r.status, 2);
	ck_assert_str_eq(r.err, "ratelab herd: --report: '/nonexistent-dir/report' cannot be made (No such file or directory)\n");
	ck_assert_str_eq(r.out, "");
	testutil_run_free(&r);
}
END_TEST

Suite *herd_suite(void)
{
	Suite *s = suite_create("herd");
	TCase *unit = tcase_create("unit");
	TCase *live = tcase_create("live");

	tcase_add_test(unit, occ_rules);
	tcase_add_test(unit, occ_thread_safe);
	tcase_add_test(unit, delay_parse_and_sample);
	tcase_add_test(unit, peaks_slide);
	tcase_add_test(unit, policies);
	tcase_add_test(unit, bins_from_the_engine);
	tcase_add_test(live, cli_errors);
	tcase_add_test(live, herd_waves_vs_jitter);
	tcase_add_test(live, herd_budget_throttles);
	tcase_add_test(live, herd_report_names_the_external_server);
	tcase_add_test(live, herd_occ_blog);
	tcase_add_test(live, occ_workload_on_both_transports);
	tcase_add_test(live, occ_delay_does_not_block_the_thread);
	tcase_set_timeout(live, 150);
	suite_add_tcase(s, unit);
	suite_add_tcase(s, live);
	return s;
}
