/*
 * ratelab storm end to end: non-recovery with naive retries, recovery with a
 * budget and adaptive throttling (in virtual time); bad input; Ctrl-C (a
 * real run).
 */
#include <check.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/harness/testutil.h"

#define RUN_MS 40000

static json_t *policy_of(json_t *doc, size_t i)
{
	return json_array_get(json_object_get(doc, "policies"), i);
}

static double jreal(json_t *o, const char *k)
{
	return json_number_value(json_object_get(o, k));
}

static void rm_dir(const char *dir)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/*
 * The headline, small: 4 workers of 10 ms (400/s) behind a FIFO queue of
 * 240 (0.6 s of waiting when full), 200 requests a second with a 300 ms
 * deadline, and a quarter of the workers for 1.5 s from 2 s.  Naive retries
 * keep the queue full of requests whose clients have gone: goodput stays at
 * nothing for the rest of the run.  Within a retry budget, and with the
 * adaptive throttle, it comes back within the 1.5 s the run leaves it.  A
 * policy's arithmetic against serve's capacity model, so in virtual time:
 * every figure is exact (a real run's machine stalls act as extra triggers).
 */
static json_t *run_small_storm(const char *dir, struct test_run *r)
{
	char path[300];
	json_error_t je;
	json_t *doc;
	const char *args[] = { "storm", "--sim", "--policies", "naive,budget,adaptive", "--duration", "6s",
	                       "--trigger", "25%@2s+1500ms", "--timeout", "300ms",
	                       "--capacity", "workers=4,service=10ms,queue=fifo:240",
	                       "--rate", "200", "--clients", "1500", "--report", dir, NULL };

	ck_assert_int_eq(testutil_run(r, args, NULL, RUN_MS), 0);
	ck_assert_msg(r->status == 0, "exit %d: %s", r->status, r->err);
	ck_assert_ptr_nonnull(strstr(r->out, "\nnaive                   200.0     39.3      0.0        0.0         no"));
	ck_assert_ptr_nonnull(strstr(r->out, "\nbudget                  200.0     39.3    142.0      265.0       0.7s"));
	ck_assert_ptr_nonnull(strstr(r->out, "\nadaptive                200.0     39.3     97.2      198.0       1.4s"));
	snprintf(path, sizeof(path), "%s/results.json", dir);
	doc = json_load_file(path, 0, &je);
	ck_assert_msg(doc != NULL, "%s: %s", path, je.text);
	return doc;
}

START_TEST(naive_stays_down_budget_and_adaptive_recover)
{
	char dir[256], path[300];
	struct test_run r;
	json_t *doc, *naive, *budget, *adaptive;

	snprintf(dir, sizeof(dir), "/tmp/ratelab-storm-%d", (int)getpid());
	doc = run_small_storm(dir, &r);
	naive = policy_of(doc, 0);
	budget = policy_of(doc, 1);
	adaptive = policy_of(doc, 2);
	ck_assert_str_eq(json_string_value(json_object_get(naive, "policy")), "naive");
	ck_assert_str_eq(json_string_value(json_object_get(budget, "policy")), "budget");
	ck_assert_str_eq(json_string_value(json_object_get(adaptive, "policy")), "adaptive");
	/* naive: 3782 attempts for 1200 requests, and 1089 of 1546 services for clients that had gone */
	ck_assert(json_is_false(json_object_get(naive, "recovered")));
	ck_assert_int_eq(testutil_jint_req(naive, "ok", NULL), 457);
	ck_assert_int_eq(testutil_jint_req(naive, "attempts", NULL), 3782);
	ck_assert_int_eq(testutil_jint_req(naive, "served", NULL), 1546);
	ck_assert_int_eq(testutil_jint_req(naive, "served_gone", NULL), 1089);
	ck_assert_int_eq(testutil_jint_req(naive, "queue_peak", NULL), 240);
	/* budget: 283 retries, back after 0.7 s */
	ck_assert(json_is_true(json_object_get(budget, "recovered")));
	ck_assert_double_eq(jreal(budget, "recovered_after_s"), 0.7);
	ck_assert_int_eq(testutil_jint_req(budget, "ok", NULL), 812);
	ck_assert_int_eq(testutil_jint_req(budget, "retries", NULL), 283);
	/* adaptive: the throttle refused 498 attempts, 379 of them before any call */
	ck_assert(json_is_true(json_object_get(adaptive, "recovered")));
	ck_assert_double_eq(jreal(adaptive, "recovered_after_s"), 1.4);
	ck_assert_int_eq(testutil_jint_req(adaptive, "ok", NULL), 700);
	ck_assert_int_eq(testutil_jint_req(adaptive, "throttled", NULL), 498);
	ck_assert_int_eq(testutil_jint_req(adaptive, "unsent", NULL), 379);
	ck_assert_int_eq(testutil_jint_req(adaptive, "served_gone", NULL), 169);
	json_decref(doc);
	snprintf(path, sizeof(path), "%s/naive.csv", dir);
	ck_assert_int_eq(access(path, R_OK), 0);
	snprintf(path, sizeof(path), "%s/report.html", dir);
	ck_assert_int_eq(access(path, R_OK), 0);
	rm_dir(dir);
	testutil_run_free(&r);
}
END_TEST

START_TEST(bad_input_exit_2)
{
	static const char *const bad[][6] = {
		{ "storm", "--rate", "200/s,600/s@x", NULL },
		{ "storm", "--capacity", "workers=4,service=-10ms", NULL },
		{ "storm", "--trigger", "25%@9s+3s", NULL },
		{ "storm", "--policies", "naive,patient", NULL },
		{ "storm", "--trigger", "none", NULL },
		{ "storm", "--rate", "200/s,600/s@8s+5s,200/s", "--trigger", "none", NULL },
		{ "storm", "--duration", "0s", NULL },
	};
	static const char *const line[] = {
		"ratelab storm: --rate: '200/s,600/s@x' is not a rate or a schedule such as 200/s or 200/s,600/s@3s+1s,200/s "
		"(item 2 '600/s@x': '@x' is not a start such as @10s)\n",
		"ratelab storm: --capacity: 'workers=4,service=-10ms' is not a backend such as "
		"workers=4,service=10ms,queue=fifo:400 (service time '-10ms' is negative)\n",
		"ratelab storm: --trigger: '25%@9s+3s' ends at 12s, past the run (--duration 10s)\n",
		"ratelab storm: --policies: 'naive,patient' names an unknown policy 'patient' (naive,backoff,budget,adaptive, "
		"or a preset: none, lab, signaldb, wasm, saia, aws-standard, grpc, naive, sre-adaptive)\n",
		"ratelab storm: --trigger none needs a --rate schedule with a spike, such as 200/s,600/s@3s+1s,200/s "
		"(or use --control for a run without a trigger)\n",
		"ratelab storm: --rate: the spike ends at 13s, past the run (--duration 10s)\n",
		"ratelab storm: --duration: '0s' is not a duration from 1s to 2m\n",
	};
	struct test_run r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(testutil_run(&r, (const char *const *)bad[i], NULL, RUN_MS), 0);
		ck_assert_msg(r.status == 2, "case %zu: exit %d (%s)", i, r.status, r.err);
		ck_assert_str_eq(r.err, line[i]);
		ck_assert_str_eq(r.out, "");
		testutil_run_free(&r);
	}
	const char *help[] = { "storm", "--help", NULL };
	ck_assert_int_eq(testutil_run(&r, help, NULL, RUN_MS), 0);
	ck_assert_int_eq(r.status, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "usage: ratelab storm"));
	ck_assert_ptr_nonnull(strstr(r.out, "--control"));
	testutil_run_free(&r);
}
END_TEST

/* Read from fd into buf (NUL-terminated) until `want` appears or timeout_ms passes; true when it did. */
static bool read_until(int fd, char *buf, size_t cap, size_t *len, const char *want, int timeout_ms)
{
	struct pollfd p = { fd, POLLIN, 0 };

	for (int waited = 0; waited < timeout_ms && strstr(buf, want) == NULL; waited += 50) {
		ssize_t n;

		if (poll(&p, 1, 50) <= 0)
			continue;
		n = read(fd, buf + *len, cap - 1 - *len);
		if (n <= 0)
			return false;
		*len += (size_t)n;
		buf[*len] = '\0';
	}
	return strstr(buf, want) != NULL;
}

/* Ctrl-C during the second run: exit 130, and the first run's row and report are kept. */
START_TEST(sigint_keeps_what_finished)
{
	char dir[256], path[300], out[8192] = "";
	int fds[2], status = 0;
	size_t len = 0;
	json_error_t je;
	json_t *doc;
	pid_t pid;

	snprintf(dir, sizeof(dir), "/tmp/ratelab-storm-int-%d", (int)getpid());
	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		dup2(fds[1], STDERR_FILENO);
		close(fds[0]);
		execl(testutil_bin(), "ratelab", "storm", "--policies", "naive,budget", "--duration", "2s", "--trigger",
		      "50%@500ms+500ms", "--clients", "500", "--report", dir, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	ck_assert_msg(read_until(fds[0], out, sizeof(out), &len, "\nnaive ", 20000), "no first row: %s", out);
	kill(pid, SIGINT);
	read_until(fds[0], out, sizeof(out), &len, "report: ", 10000);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	close(fds[0]);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 130);
	ck_assert_msg(strstr(out, "ratelab storm: interrupted: 1 of 2 runs finished\n") != NULL, "%s", out);
	ck_assert_ptr_null(strstr(out, "\nbudget "));
	snprintf(path, sizeof(path), "%s/results.json", dir);
	doc = json_load_file(path, 0, &je);
	ck_assert_msg(doc != NULL, "%s: %s", path, je.text);
	ck_assert_uint_eq(json_array_size(json_object_get(doc, "policies")), 1);
	json_decref(doc);
	rm_dir(dir);
}
END_TEST

Suite *storm_suite(void)
{
	Suite *s = suite_create("storm");
	TCase *tc = tcase_create("integration");

	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, naive_stays_down_budget_and_adaptive_recover);
	tcase_add_test(tc, bad_input_exit_2);
	tcase_add_test(tc, sigint_keeps_what_finished);
	suite_add_tcase(s, tc);
	return s;
}
