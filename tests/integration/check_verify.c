/* `ratelab verify`: the grader over synthetic logs (exact), the CLI, curl, and the hammer's grade table. */
#include <check.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "lab/verify_grade.h"
#include "tests/harness/testutil.h"

#define MS(x) ((uint64_t)(x) * NS_PER_MS)

/* ---- the grader, exact ---- */

static struct scenario_arrival arrival(const char *client, const char *method, uint64_t t_ms, int status,
                                       int64_t wait_ms)
{
	struct scenario_arrival a;

	memset(&a, 0, sizeof(a));
	snprintf(a.client, sizeof(a.client), "%s", client);
	snprintf(a.method, sizeof(a.method), "%s", method);
	snprintf(a.path, sizeof(a.path), "/");
	a.t_ns = MS(t_ms);
	a.status = status;
	a.has_wait = wait_ms >= 0;
	a.wait_ns = wait_ms >= 0 ? MS(wait_ms) : 0;
	return a;
}

static struct verify_grade_verdict grade(const char *expect, const struct scenario_arrival *log, size_t n,
                                         const struct verify_grade_run *run)
{
	struct verify_grade_expect e[1];
	struct verify_grade_verdict v;
	size_t ne;
	char err[200];

	ck_assert_msg(verify_grade_parse(expect, e, 1, &ne, err, sizeof(err)) == 0, "%s", err);
	verify_grade_one(&e[0], log, n, run, &v);
	ck_assert_str_eq(v.name, expect);
	return v;
}

static const struct verify_grade_run RUN_OK = { 0, false, 4 * NS_PER_SEC, 60 * NS_PER_SEC };

START_TEST(parse_lists_and_errors)
{
	struct verify_grade_expect e[VERIFY_GRADE_MAX_EXPECT];
	size_t n;
	char err[300];

	ck_assert_int_eq(verify_grade_parse("succeeds,max-attempts<=3,gives-up-within=5s,jitter", e,
	                                    VERIFY_GRADE_MAX_EXPECT, &n, err, sizeof(err)), 0);
	ck_assert_uint_eq(n, 4);
	ck_assert_int_eq(e[1].kind, VERIFY_MAX_ATTEMPTS);
	ck_assert_uint_eq(e[1].arg, 3);
	ck_assert_int_eq(e[2].kind, VERIFY_GIVES_UP_WITHIN);
	ck_assert_uint_eq(e[2].arg, 5 * NS_PER_SEC);
	ck_assert_int_eq(verify_grade_parse("succeeds,fast", e, 4, &n, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "unknown expectation 'fast'"));
	ck_assert_int_eq(verify_grade_parse("max-attempts=3", e, 4, &n, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "max-attempts<=N"));
	ck_assert_int_eq(verify_grade_parse("gives-up-within=soon", e, 4, &n, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "gives-up-within=soon"));
	ck_assert_int_eq(verify_grade_parse("succeeds=1", e, 4, &n, err, sizeof(err)), -1);
	ck_assert_int_eq(verify_grade_parse(",", e, 4, &n, err, sizeof(err)), -1);
}
END_TEST

START_TEST(retry_after_tolerance_is_50ms_from_the_answer)
{
	struct scenario_arrival log[3] = {
		arrival("a", "GET", 0, 429, 2000), arrival("a", "GET", 1960, 429, 2000), arrival("a", "GET", 3900, 200, -1),
	};
	struct verify_grade_verdict v = grade("honours-retry-after", log, 2, &RUN_OK);

	ck_assert(v.pass);
	ck_assert_str_eq(v.evidence, "a: asked 2.000s, waited 1.960s [0 of 1 retries too early; tolerance 50ms]");
	v = grade("honours-retry-after", log, 3, &RUN_OK);
	ck_assert(!v.pass);
	ck_assert_ptr_nonnull(strstr(v.evidence, "a: asked 2.000s, waited 1.940s (too early)"));
	ck_assert_ptr_nonnull(strstr(v.evidence, "[1 of 2 retries too early"));
	/* A held answer (scripted delay) counts from when it was sent. */
	log[0].delay_ns = MS(500);
	log[1].t_ns = MS(2400);
	v = grade("honours-retry-after", log, 2, &RUN_OK);
	ck_assert(!v.pass);
	ck_assert_ptr_nonnull(strstr(v.evidence, "waited 1.900s (too early)"));
	v = grade("honours-retry-after", log, 1, &RUN_OK);
	ck_assert(v.pass);
	ck_assert_str_eq(v.evidence, "no retry followed an answer that asked for a wait (1 arrivals)");
}
END_TEST

START_TEST(attempts_and_exit)
{
	struct scenario_arrival log[4] = {
		arrival("a", "GET", 0, 429, 1000), arrival("b", "GET", 5, 429, 1000), arrival("a", "GET", 1000, 429, 1000),
		arrival("a", "GET", 2000, 429, 1000),
	};
	struct verify_grade_run killed = { 143, true, 6 * NS_PER_SEC, 6 * NS_PER_SEC };
	struct verify_grade_run failed = { 3, false, 1500 * NS_PER_MS, 60 * NS_PER_SEC };
	struct verify_grade_verdict v = grade("max-attempts<=2", log, 4, &RUN_OK);

	ck_assert(!v.pass);
	ck_assert_str_eq(v.evidence, "attempts: a=3 b=1");
	ck_assert(grade("max-attempts<=3", log, 4, &RUN_OK).pass);
	ck_assert(grade("succeeds", log, 4, &RUN_OK).pass);
	v = grade("succeeds", log, 4, &failed);
	ck_assert(!v.pass);
	ck_assert_str_eq(v.evidence, "command exited 3 after 1.50s");
	v = grade("gives-up-within=2s", log, 4, &failed);
	ck_assert(v.pass);
	ck_assert_str_eq(v.evidence, "command exited 3 after 1.50s (limit 2.00s)");
	ck_assert(!grade("gives-up-within=1s", log, 4, &failed).pass);
	v = grade("gives-up-within=5s", log, 4, &killed);
	ck_assert(!v.pass);
	ck_assert_str_eq(v.evidence, "still running at the 6.0s timeout: killed");
	v = grade("stops-after-attempts", log, 4, &failed);
	ck_assert(v.pass);
	ck_assert_str_eq(v.evidence, "attempts: a=3 b=1; ended on its own after 1.50s");
	ck_assert(!grade("stops-after-attempts", log, 4, &killed).pass);
	ck_assert(!grade("stops-after-attempts", log, 0, &failed).pass);
}
END_TEST

START_TEST(stopping_means_at_most_ten_attempts)
{
	struct scenario_arrival log[11];
	struct verify_grade_run ran = { 0, false, NS_PER_SEC, 60 * NS_PER_SEC };

	for (size_t i = 0; i < 11; i++)
		log[i] = arrival("a", "GET", i * 10, 429, -1);
	ck_assert(grade("stops-after-attempts", log, 10, &ran).pass);
	ck_assert(!grade("stops-after-attempts", log, 11, &ran).pass);
}
END_TEST

START_TEST(non_idempotent_retries)
{
	struct scenario_arrival log[5] = {
		arrival("a", "POST", 0, 503, -1), arrival("a", "POST", 100, 200, -1),
		arrival("b", "POST", 0, 429, 1000), arrival("b", "POST", 1000, 200, -1),
		arrival("c", "POST", 0, 503, -1),
	};
	struct verify_grade_verdict v = grade("no-retry-non-idempotent", log, 5, &RUN_OK);

	ck_assert(!v.pass);
	ck_assert_str_eq(v.evidence, "POST retried 0.100s after 503 without an Idempotency-Key (a); "
	                             "5 non-idempotent arrivals, 1 unsafe retries after a 5xx, 0 retries with an "
	                             "Idempotency-Key");
	snprintf(log[1].idempotency_key, sizeof(log[1].idempotency_key), "k1");
	v = grade("no-retry-non-idempotent", log, 5, &RUN_OK);
	ck_assert(v.pass);   /* a keyed retry is safe, and 429 means "not processed" */
	ck_assert_ptr_nonnull(strstr(v.evidence, "0 unsafe retries after a 5xx, 1 retries with an Idempotency-Key"));
}
END_TEST

START_TEST(backs_off_means_growing_gaps)
{
	struct scenario_arrival grow[3] = { arrival("a", "GET", 0, 503, -1), arrival("a", "GET", 100, 502, -1),
		                            arrival("a", "GET", 300, 200, -1) };
	struct scenario_arrival flat[3] = { arrival("a", "GET", 0, 503, -1), arrival("a", "GET", 100, 502, -1),
		                            arrival("a", "GET", 200, 200, -1) };
	struct scenario_arrival now[2] = { arrival("a", "GET", 0, 503, -1), arrival("a", "GET", 5, 200, -1) };
	struct verify_grade_verdict v = grade("backs-off", grow, 3, &RUN_OK);

	ck_assert(v.pass);
	ck_assert_str_eq(v.evidence, "mean gap by retry after answers without a wait: 0.100s 0.200s");
	v = grade("backs-off", flat, 3, &RUN_OK);
	ck_assert(!v.pass);
	ck_assert_ptr_nonnull(strstr(v.evidence, "(the gaps do not grow)"));
	v = grade("backs-off", now, 2, &RUN_OK);
	ck_assert(!v.pass);
	ck_assert_ptr_nonnull(strstr(v.evidence, "under 10ms"));
	v = grade("backs-off", now, 1, &RUN_OK);
	ck_assert(v.pass);
	ck_assert_str_eq(v.evidence, "no retry followed an answer without a wait");
}
END_TEST

START_TEST(jitter_needs_spread_across_clients)
{
	struct scenario_arrival spread[4] = { arrival("a", "GET", 0, 429, 1000), arrival("b", "GET", 0, 429, 1000),
		                              arrival("a", "GET", 1000, 200, -1), arrival("b", "GET", 1060, 200, -1) };
	struct scenario_arrival lock[4] = { arrival("a", "GET", 0, 429, 1000), arrival("b", "GET", 0, 429, 1000),
		                            arrival("a", "GET", 1000, 200, -1), arrival("b", "GET", 1002, 200, -1) };
	struct verify_grade_verdict v = grade("jitter", spread, 4, &RUN_OK);

	ck_assert(v.pass);
	ck_assert_str_eq(v.evidence, "2 clients; retry 1: gaps 1.000s..1.060s (spread 60ms)");
	v = grade("jitter", lock, 4, &RUN_OK);
	ck_assert(!v.pass);
	ck_assert_ptr_nonnull(strstr(v.evidence, "0 of 1 retry numbers spread 10ms or more"));
	spread[1] = spread[2];
	v = grade("jitter", spread, 2, &RUN_OK);
	ck_assert(!v.pass);
	ck_assert_ptr_nonnull(strstr(v.evidence, "1 clients"));
	ck_assert_ptr_nonnull(strstr(v.evidence, "needs a multi-client run"));
}
END_TEST

/* ---- the CLI ---- */

static void run_verify(struct test_run *r, const char *const *args, int timeout_ms)
{
	ck_assert_int_eq(testutil_run(r, args, NULL, timeout_ms), 0);
}

START_TEST(usage_errors_exit_2)
{
	static const char *const BAD[][12] = {
		{ "verify", "--scenario", "post-503", "--bogus", "--", "true", NULL },
		{ "verify", "--scenario", "post-503", "--clients", "0", "--", "true", NULL },
		{ "verify", "--scenario", "post-503", "--timeout", "soon", "--", "true", NULL },
		{ "verify", "--scenario", "post-503", "--expect", "fast", "--", "true", NULL },
		{ "verify", "--scenario", "nope", "--", "true", NULL },
		{ "verify", "--scenario", "post-503", NULL },
		{ "verify", "--", "true", NULL },
		{ "verify", "--scenario", "post-503", "--", "/nonexistent-dir/client", NULL },
	};
	static const char *const NAMED[] = {
		"ratelab verify: unknown option '--bogus'\n",
		"ratelab verify: --clients: '0' is not a number from 1 to 64\n",
		"ratelab verify: --timeout: 'soon' is not a duration above 0\n",
		"ratelab verify: --expect: unknown expectation 'fast' (succeeds, honours-retry-after, max-attempts<=N, "
		"gives-up-within=DUR, no-retry-non-idempotent, backs-off, jitter, stops-after-attempts)\n",
		"ratelab verify: --scenario: 'nope' is neither a built-in scenario (retry-after-seconds, retry-after-date, "
		"no-retry-after, retry-after-too-long, post-503, post-429, server-errors, persistent-429, layered) "
		"nor a readable file\n",
		"ratelab verify: missing COMMAND after --\n",
		"ratelab verify: --scenario is required\n",
		"ratelab verify: cannot run '/nonexistent-dir/client': No such file or directory\n" };
	struct test_run r;

	for (size_t i = 0; i < sizeof(BAD) / sizeof(BAD[0]); i++) {
		run_verify(&r, (const char *const *)BAD[i], 5000);
		ck_assert_msg(r.status == 2, "case %zu: exit %d", i, r.status);
		ck_assert_str_eq(r.err, NAMED[i]);
		ck_assert_str_eq(r.out, "");
		testutil_run_free(&r);
	}
}
END_TEST

START_TEST(help_goes_to_stdout)
{
	static const char *const ARGS[] = { "verify", "--help", NULL };
	struct test_run r;

	run_verify(&r, ARGS, 5000);
	ck_assert_int_eq(r.status, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "usage: ratelab verify --scenario NAME|FILE"));
	ck_assert_ptr_nonnull(strstr(r.out, "retry-after-too-long"));
	ck_assert_ptr_nonnull(strstr(r.out, "no-retry-non-idempotent"));
	testutil_run_free(&r);
}
END_TEST

/* A command past --timeout is killed, with its children, and graded as such. */
START_TEST(timeout_kills_the_command)
{
	static const char *const ARGS[] = { "verify", "--scenario", "persistent-429", "--timeout", "300ms", "--expect",
		                            "succeeds,stops-after-attempts", "--", "sh", "-c", "sleep 30; true", NULL };
	struct test_run r;

	run_verify(&r, ARGS, 10000);
	ck_assert_int_eq(r.status, 1);
	ck_assert_msg(r.seconds < 3.0, "took %.2fs", r.seconds);
	ck_assert_ptr_nonnull(strstr(r.out, "FAIL  succeeds                 still running at the 0.3s timeout: killed"));
	ck_assert_ptr_nonnull(strstr(r.out, "FAIL  stops-after-attempts"));
	ck_assert_ptr_nonnull(strstr(r.out, "0 of 2 expectations hold"));
	testutil_run_free(&r);
}
END_TEST

/* curl >= 7.66 honours Retry-After with --retry: a correct third-party client passes. */
START_TEST(curl_with_retry_passes)
{
	static const char *const ARGS[] = { "verify", "--scenario", "retry-after-seconds", "--timeout", "20s", "--",
		                            "curl", "--retry", "3", "--retry-max-time", "20", "-sf",
		                            "$RATELAB_URL/", NULL };
	struct test_run r;

	run_verify(&r, ARGS, 30000);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.out);
	ck_assert_ptr_nonnull(strstr(r.out, "PASS  succeeds"));
	ck_assert_ptr_nonnull(strstr(r.out, "PASS  honours-retry-after      127.0.0.1: asked 2.000s, waited 2.0"));
	ck_assert_ptr_nonnull(strstr(r.out, "PASS  max-attempts<=3          attempts: 127.0.0.1=3"));
	ck_assert_ptr_nonnull(strstr(r.out, "3 of 3 expectations hold"));
	ck_assert_ptr_nonnull(strstr(r.err, "scenario retry-after-seconds step 3: 200"));  /* curl's stdout */
	testutil_run_free(&r);
}
END_TEST

/* A client that re-fires at once fails honours-retry-after with exit 1; --json carries the same verdict. */
START_TEST(curl_loop_fails_with_exit_1)
{
	char json_path[] = "/tmp/ratelab-verify-XXXXXX";
	int fd = mkstemp(json_path);
	const char *const args[] = { "verify", "--scenario", "retry-after-seconds", "--expect", "honours-retry-after",
		                     "--json", json_path, "--", "sh", "-c",
		                     "for i in 1 2 3; do curl -s -o /dev/null \"$RATELAB_URL/\"; done", NULL };
	struct test_run r;
	json_t *root, *v;

	ck_assert_int_ge(fd, 0);
	close(fd);
	run_verify(&r, args, 20000);
	ck_assert_int_eq(r.status, 1);
	ck_assert_ptr_nonnull(strstr(r.out, "FAIL  honours-retry-after      127.0.0.1: asked 2.000s, waited 0.0"));
	ck_assert_ptr_nonnull(strstr(r.out, "[2 of 2 retries too early; tolerance 50ms]"));
	testutil_run_free(&r);
	root = json_load_file(json_path, 0, NULL);
	unlink(json_path);
	ck_assert_ptr_nonnull(root);
	ck_assert(json_is_false(json_object_get(root, "pass")));
	ck_assert_int_eq(json_integer_value(json_object_get(root, "exit_status")), 0);
	ck_assert_uint_eq(json_array_size(json_object_get(root, "arrivals")), 3);
	v = json_array_get(json_object_get(root, "verdicts"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(v, "name")), "honours-retry-after");
	ck_assert(json_is_false(json_object_get(v, "pass")));
	json_decref(root);
}
END_TEST

/*
 * Three copies of the lab hammer, each its own --seed (from RATELAB_CLIENT), spread
 * their Retry-After jitter; three copies of curl retry in lockstep.  (No "-o /dev/null"
 * for curl: --retry truncates the output file first, which fails on /dev/null, exit 23.)
 */
START_TEST(jitter_across_clients)
{
	char hammer[512];
	const char *const jittered[] = { "verify", "--scenario", "persistent-429", "--clients", "3", "--expect",
		                         "jitter,honours-retry-after", "--timeout", "20s", "--", "sh", "-c", hammer,
		                         NULL };
	static const char *const LOCKSTEP[] = { "verify", "--scenario", "persistent-429", "--clients", "3",
		                                "--expect", "jitter", "--timeout", "20s", "--", "curl", "--retry", "2",
		                                "-s", "$RATELAB_URL/", NULL };
	struct test_run r;

	snprintf(hammer, sizeof(hammer), "exec '%s' hammer --policy lab --requests 1 --concurrency 1 --quiet "
	         "--seed \"$RATELAB_CLIENT\" \"$RATELAB_URL\"", testutil_bin());
	run_verify(&r, jittered, 30000);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.out);
	ck_assert_ptr_nonnull(strstr(r.out, "PASS  jitter                   3 clients; retry 1: gaps"));
	ck_assert_ptr_nonnull(strstr(r.out, "127.0.0.1/client-3"));
	testutil_run_free(&r);
	run_verify(&r, LOCKSTEP, 30000);
	ck_assert_msg(r.status == 1, "exit %d: %s", r.status, r.out);
	ck_assert_ptr_nonnull(strstr(r.out, "FAIL  jitter                   3 clients; retry 1: gaps 1.0"));
	ck_assert_ptr_nonnull(strstr(r.out, "; retry 2: gaps 1.0"));  /* curl did retry, each time after 1 s */
	testutil_run_free(&r);
}
END_TEST

/* ---- the hammer's grade table ---- */

#define GRID_MAX 80
#define GRID_PARALLEL 8

struct grid_row {
	char scenario[32], policy[16], expect[160], json[64];
	char timeout[8];
	char *argv[40];
	pid_t pid;
};

static void fill(char *dst, size_t len, const char *arg, const char *policy, const char *method)
{
	snprintf(dst, len, "%s", strcmp(arg, "{policy}") == 0 ? policy : strcmp(arg, "{method}") == 0 ? method : arg);
}

/* One row's argv: ratelab verify --scenario S --timeout T --quiet --json F -- ratelab COMMAND... */
static void grid_argv(struct grid_row *g, json_t *command, const char *method)
{
	const char *head[] = { testutil_bin(), "verify", "--scenario", g->scenario, "--timeout", g->timeout,
		               "--quiet", "--json", g->json, "--", testutil_bin() };
	size_t n = 0, i;
	json_t *a;

	for (i = 0; i < sizeof(head) / sizeof(head[0]); i++)
		g->argv[n++] = strdup(head[i]);
	json_array_foreach(command, i, a) {
		char buf[64];

		fill(buf, sizeof(buf), json_string_value(a), g->policy, method);
		if (n < 39)
			g->argv[n++] = strdup(buf);
	}
	g->argv[n] = NULL;
}

static size_t grid_load(struct grid_row *rows, json_t *table)
{
	json_t *scenarios = json_object_get(table, "scenarios"), *sc, *grade;
	const char *sname, *policy;
	size_t n = 0;

	json_object_foreach(scenarios, sname, sc) {
		json_object_foreach(json_object_get(sc, "grades"), policy, grade) {
			struct grid_row *g = &rows[n];

			ck_assert_uint_lt(n, GRID_MAX);
			memset(g, 0, sizeof(*g));
			snprintf(g->scenario, sizeof(g->scenario), "%s", sname);
			snprintf(g->policy, sizeof(g->policy), "%s", policy);
			snprintf(g->expect, sizeof(g->expect), "%s", json_string_value(grade));
			snprintf(g->timeout, sizeof(g->timeout), "%s", json_string_value(json_object_get(sc, "timeout")));
			snprintf(g->json, sizeof(g->json), "/tmp/ratelab-grade-%d-%zu.json", (int)getpid(), n);
			grid_argv(g, json_object_get(table, "command"), json_string_value(json_object_get(sc, "method")));
			n++;
		}
	}
	return n;
}

static pid_t grid_spawn(struct grid_row *g)
{
	pid_t pid = fork();

	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
		execv(g->argv[0], g->argv);
		_exit(127);
	}
	return pid;
}

/* Run every row, GRID_PARALLEL at a time; each verify bounds itself by its --timeout. */
static void grid_run(struct grid_row *rows, size_t n)
{
	size_t next = 0, running = 0;
	uint64_t deadline = clock_monotonic_ns() + 150 * NS_PER_SEC;

	while ((next < n || running > 0) && clock_monotonic_ns() < deadline) {
		pid_t done;

		while (next < n && running < GRID_PARALLEL) {
			rows[next].pid = grid_spawn(&rows[next]);
			ck_assert_int_gt(rows[next++].pid, 0);
			running++;
		}
		done = waitpid(-1, NULL, 0);
		if (done > 0)
			running--;
	}
	ck_assert_msg(next == n && running == 0, "the grade table did not finish in 150s");
}

static void append(char *msg, size_t len, const char *fmt, ...)
{
	size_t used = strlen(msg);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg + used, len - used, fmt, ap);
	va_end(ap);
}

/* Compare one row's --json verdicts with its marks; appends mismatches to msg. */
static void grid_check(const struct grid_row *g, char *msg, size_t len)
{
	json_t *root = json_load_file(g->json, 0, NULL), *verdicts = json_object_get(root, "verdicts");
	char marks[160], *save = NULL;
	size_t i = 0;

	unlink(g->json);
	if (!root) {
		append(msg, len, "%s/%s: no JSON; ", g->scenario, g->policy);
		return;
	}
	snprintf(marks, sizeof(marks), "%s", g->expect);
	for (char *m = strtok_r(marks, " ", &save); m; m = strtok_r(NULL, " ", &save), i++) {
		json_t *v = json_array_get(verdicts, i);
		const char *name = json_string_value(json_object_get(v, "name"));
		bool pass = json_is_true(json_object_get(v, "pass"));

		if (!name || strcmp(name, m + 1) != 0)
			append(msg, len, "%s/%s: verdict %zu is %s, table says %s; ",
			         g->scenario, g->policy, i, name ? name : "missing", m + 1);
		else if ((m[0] == '+' && !pass) || (m[0] == '-' && pass))
			append(msg, len, "%s/%s: %s %s (%s); ", g->scenario, g->policy,
			         name, pass ? "held" : "failed", json_string_value(json_object_get(v, "evidence")));
	}
	if (json_array_size(verdicts) != i)
		append(msg, len, "%s/%s: %zu verdicts for %zu marks; ", g->scenario,
		         g->policy, json_array_size(verdicts), i);
	json_decref(root);
}

START_TEST(hammer_presets_grade_as_the_table_says)
{
	static struct grid_row rows[GRID_MAX];
	static char msg[16384];
	char path[512];
	json_t *table = json_load_file(testutil_path("tests/verify-grades.json", path, sizeof(path)), 0, NULL);
	size_t n;

	ck_assert_msg(table != NULL, "cannot read tests/verify-grades.json");
	n = grid_load(rows, table);
	ck_assert_uint_eq(n, 63);   /* 9 scenarios x 7 presets */
	grid_run(rows, n);
	msg[0] = '\0';
	for (size_t i = 0; i < n; i++)
		grid_check(&rows[i], msg, sizeof(msg));
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; rows[i].argv[j]; j++)
			free(rows[i].argv[j]);
	json_decref(table);
	ck_assert_msg(msg[0] == '\0', "%s", msg);
}
END_TEST

Suite *verify_suite(void)
{
	Suite *s = suite_create("verify");
	TCase *unit = tcase_create("grader");
	TCase *cli = tcase_create("cli");
	TCase *grid = tcase_create("grades");

	tcase_add_test(unit, parse_lists_and_errors);
	tcase_add_test(unit, retry_after_tolerance_is_50ms_from_the_answer);
	tcase_add_test(unit, attempts_and_exit);
	tcase_add_test(unit, stopping_means_at_most_ten_attempts);
	tcase_add_test(unit, non_idempotent_retries);
	tcase_add_test(unit, backs_off_means_growing_gaps);
	tcase_add_test(unit, jitter_needs_spread_across_clients);
	suite_add_tcase(s, unit);
	tcase_add_test(cli, usage_errors_exit_2);
	tcase_add_test(cli, help_goes_to_stdout);
	tcase_add_test(cli, timeout_kills_the_command);
	tcase_add_test(cli, curl_with_retry_passes);
	tcase_add_test(cli, curl_loop_fails_with_exit_1);
	tcase_add_test(cli, jitter_across_clients);
	tcase_set_timeout(cli, 60);
	suite_add_tcase(s, cli);
	tcase_add_test(grid, hammer_presets_grade_as_the_table_says);
	tcase_set_timeout(grid, 180);
	suite_add_tcase(s, grid);
	return s;
}
