/* `ratelab verify`: the CLI, real clients (curl, the lab's hammer), CI output, and the hammer's grade table. */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "tests/harness/testutil.h"

static void run_verify(struct test_run *r, const char *const *args, int timeout_ms)
{
	ck_assert_int_eq(testutil_run(r, args, NULL, timeout_ms), 0);
}

/* A scenario script (or any text) in a fresh /tmp file; path must be a "...XXXXXX" template. */
static void write_file(char *path, const char *text)
{
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* A path for a result file (created empty, so cli_check_output accepts it). */
static void temp_path(char *path)
{
	write_file(path, "");
}

#define ck_assert_has(hay, needle) ck_assert_msg(strstr((hay), (needle)) != NULL, "no '%s' in:\n%s", (needle), (hay))

/* Run verify args, whose --json is path (a "...XXXXXX" template); the JSON it wrote, for the caller to json_decref. */
static json_t *run_verify_json(struct test_run *r, const char *const *args, char *path, int timeout_ms)
{
	json_t *root;

	temp_path(path);
	run_verify(r, args, timeout_ms);
	root = json_load_file(path, 0, NULL);
	unlink(path);
	ck_assert_msg(root != NULL, "no JSON at %s: %s", path, r->out);
	return root;
}

/*
 * What a real run of a timing expectation (backs-off, jitter) shows: the exit
 * when decided; lines shown either way and lines shown when decided.  A stall
 * of the whole machine at a retry leaves the verdict undecided instead: exit
 * 5, `held` on its line, which verify says only when its noise probe recorded
 * the stall (the JSON's "stalls").  And a spread of a few tens of ms cannot
 * pass jitter on a machine that noisy: verify's bar is NOISE_FACTOR times the
 * oversleep its probe measured (the JSON's noise_ms), so a run that should
 * pass (`noisy` set) may fail with that bar, over the 20 ms floor.  The
 * verdicts' exact figures on exact logs, stalls and noise included, are
 * tests/unit/check_verify_grade.c's, so no load can flip what is asserted here.
 */
struct timing_want {
	int decided;
	const char *held;
	const char *always[3];
	const char *when_decided[3];
	const char *noisy;
};

#define NOISE_FACTOR 4  /* lab/verify_grade.h: VERIFY_GRADE_NOISE_FACTOR */

#define HELD_BACKOFF ": not observed: a stall of the machine held up a retry"
#define HELD_JITTER ": not observed: stalls of the machine held up retries"

/* Run verify args (--json at path, a template) and check it against w; the JSON, for the caller to json_decref. */
static json_t *run_timing(struct test_run *r, const char *const *args, char *path, const struct timing_want *w)
{
	json_t *root = run_verify_json(r, args, path, 30000);
	bool decided = r->status == w->decided;

	for (size_t i = 0; i < 3 && w->always[i]; i++)
		ck_assert_has(r->out, w->always[i]);
	if (!decided && w->noisy != NULL && r->status == 1) {
		const char *under = strstr(r->out, "(under ");
		double bar, noise = json_real_value(json_object_get(root, "noise_ms"));

		ck_assert_msg(under && sscanf(under, "(under %lfms)", &bar) == 1, "exit 1 with no bar: %s", r->out);
		/* one rounding of the bar to the ms: within 1 ms of the JSON's figure */
		ck_assert_msg(bar > 20 && fabs(bar - NOISE_FACTOR * noise) <= 1, "exit 1, bar %.0fms, noise %.3fms: %s",
		              bar, noise, r->out);
		ck_assert_has(r->out, w->noisy);
		return root;
	}
	if (!decided) {
		ck_assert_msg(r->status == 5, "exit %d (want %d, or 5 after a stall): %s", r->status, w->decided, r->out);
		ck_assert_msg(json_array_size(json_object_get(root, "stalls")) > 0, "not observed, yet no stall: %s", r->out);
		ck_assert_has(r->out, w->held);
	}
	for (size_t i = 0; decided && i < 3 && w->when_decided[i]; i++)
		ck_assert_has(r->out, w->when_decided[i]);
	return root;
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
		{ "verify", "--all", "--scenario", "post-503", "--", "true", NULL },
		{ "verify", "--all", "--expect", "succeeds", "--", "true", NULL },
		{ "verify", "--all", "--jobs", "0", "--", "true", NULL },
		{ "verify", "--scenario", "post-503", "--junit", "/nonexistent-dir/v.xml", "--", "true", NULL },
		{ "verify", "--scenario", "post-503,post-503", "--", "true", NULL },
		{ "verify", "--scenario", "post-503", "--skip", "slow-get", "--", "true", NULL },
		{ "verify", "--all", "--skip", "slow-gets", "--", "true", NULL },
		{ "verify", "--scenario", "post-503", "--write-baseline", "--", "true", NULL },
		{ "verify", "--scenario", "post-503", "--baseline", "/nonexistent-dir/b.json", "--", "true", NULL },
		{ "verify", "--scenario", "post-503", "--listen", "127.0.0.1", NULL },
		{ "verify", "--scenario", "post-503", "--listen", "127.0.0.1:0", "--", "true", NULL },
		{ "verify", "--scenario", "post-503", "--until-idle", "2s", "--", "true", NULL },
		{ "verify", "--scenario", "post-503", "--upstream", "http://127.0.0.1:1", "--", "true", NULL },
		{ "verify", "--scenario", "post-503", "--listen", "127.0.0.1:0", "--upstream", "ftp://127.0.0.1:1", NULL },
	};
	static const char *const NAMED[] = {
		"ratelab verify: unknown option '--bogus'\n",
		"ratelab verify: --clients: '0' is not a number from 1 to 64\n",
		"ratelab verify: --timeout: 'soon' is not a duration such as 250ms, 2s or 1m\n",
		"ratelab verify: --expect: unknown expectation 'fast' (succeeds, honours-retry-after, honours-ratelimit, "
		"max-attempts<=N, gives-up-within=DUR, no-retry-non-idempotent, no-retry, backs-off, jitter, "
		"stops-after-attempts)\n",
		"ratelab verify: --scenario: 'nope' is neither a built-in scenario (ratelab verify --list names them) "
		"nor a readable file\n",
		"ratelab verify: missing COMMAND after --\n",
		"ratelab verify: --scenario or --all is required\n",
		"ratelab verify: --scenario and --all do not go together\n",
		"ratelab verify: --expect does not go with --all (each scenario has its own)\n",
		"ratelab verify: --jobs: '0' is not a number from 1 to 32\n",
		"ratelab verify: --junit: '/nonexistent-dir/v.xml' cannot be written (No such file or directory)\n",
		"ratelab verify: --scenario: 'post-503' is named twice\n",
		"ratelab verify: --skip goes with --all\n",
		"ratelab verify: --skip: 'slow-gets' is not a built-in scenario (retry-after-seconds, retry-after-date, "
		"no-retry-after, retry-after-too-long, post-503, post-429, server-errors, persistent-429, layered, "
		"maintenance-503, bad-request-400, unauthorized-401, not-found-404, not-implemented-501, connection-reset, "
		"close-mid-body, malformed-answer, slow-get, slow-post, ratelimit-only, ratelimit-reset, x-ratelimit-reset, "
		"envoy-x-ratelimit, github-reset, retry-after-zero, retry-after-fraction, retry-after-past-date, retry-after-garbage, retry-after-twice, "
		"payload-too-large)\n",
		"ratelab verify: --write-baseline needs --baseline FILE\n",
		"ratelab verify: --baseline: '/nonexistent-dir/b.json' cannot be read (No such file or directory)\n",
		"ratelab verify: --listen: '127.0.0.1' is not ADDR:PORT (e.g. 127.0.0.1:0)\n",
		"ratelab verify: --listen takes no COMMAND (the app runs elsewhere)\n",
		"ratelab verify: --until-idle goes with --listen\n",
		"ratelab verify: --upstream goes with --listen\n",
		"ratelab verify: --upstream: 'ftp://127.0.0.1:1' must start with http:// or https://\n" };
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

START_TEST(help_and_list_go_to_stdout)
{
	static const char *const HELP[] = { "verify", "--help", NULL };
	static const char *const LIST[] = { "verify", "--list", NULL };
	struct test_run r;

	run_verify(&r, HELP, 5000);
	ck_assert_int_eq(r.status, 0);
	ck_assert_has(r.out, "usage: ratelab verify --scenario LIST [options] -- COMMAND");
	ck_assert_has(r.out, "ratelab verify --all [--skip LIST] [options] -- COMMAND");
	ck_assert_has(r.out, "--listen ADDR:PORT [options]\n");
	ck_assert_has(r.out, "no-retry-non-idempotent");
	ck_assert_has(r.out, "--junit FILE|-");
	ck_assert_has(r.out, "exit status:\n"
	                     "  0     every expectation holds\n"
	                     "  1     one fails (or, with --strict, is not observed)\n"
	                     "  2     a bad flag or value\n"
	                     "  4     COMMAND could not run or never reached the server, or the scenario\n"
	                     "        server could not start\n"
	                     "  5     none fails, but a scenario had no expectation observed at all\n"
	                     "  74    the results could not be written (standard output, or a file such as\n"
	                     "        --json)\n"
	                     "  130   interrupted\n");
	ck_assert_has(r.out, "  --skip LIST ");
	ck_assert_has(r.out, "  --baseline FILE ");
	ck_assert_has(r.out, "  --write-baseline ");
	ck_assert_has(r.out, "  --listen ADDR:PORT ");
	ck_assert_has(r.out, "  --until-idle DUR ");
	ck_assert_has(r.out, "  --upstream URL ");
	testutil_run_free(&r);
	run_verify(&r, LIST, 5000);
	ck_assert_int_eq(r.status, 0);
	ck_assert_has(r.out, "retry-after-too-long (GET)\n  answers: 429 + Retry-After: 3600, always");
	ck_assert_has(r.out, "slow-post (POST)\n");
	ck_assert_has(r.out, "  correct: ");
	testutil_run_free(&r);
}
END_TEST

/* A command past --timeout is killed, with its children, and graded as such. */
START_TEST(timeout_kills_the_command)
{
	static const char *const ARGS[] = { "verify", "--scenario", "persistent-429", "--timeout", "300ms", "--expect",
		                            "succeeds,stops-after-attempts", "--", "sh", "-c",
		                            "curl -s -o /dev/null \"$RATELAB_URL/\"; sleep 30; true", NULL };
	struct test_run r;

	run_verify(&r, ARGS, 10000);
	ck_assert_int_eq(r.status, 1);
	ck_assert_msg(r.seconds < 3.0, "took %.2fs", r.seconds);
	ck_assert_has(r.out, "scenario persistent-429: 1 arrivals; command killed at the 0.30s timeout\n");
	ck_assert_has(r.out, "FAIL  succeeds                 still running at the 0.3s timeout: killed");
	ck_assert_has(r.out, "FAIL  stops-after-attempts");
	ck_assert_has(r.out, "0 of 2 expectations hold");
	/* and says what it was doing: sh waits for its sleep, asleep (S), not held by the machine (D) */
	ck_assert_has(r.err, "was still running at the timeout; its threads (id:name, state, kernel wait): ");
	ck_assert_has(r.err, ":sh S ");
	testutil_run_free(&r);
}
END_TEST

/* A client that never reaches the server is a failed run of its own kind: exit 4, and says so. */
START_TEST(never_reaching_the_server_exits_4)
{
	char wrong[128];
	static const char *const NOTHING[] = { "verify", "--scenario", "retry-after-seconds", "--", "true", NULL };
	const char *const elsewhere[] = { "verify", "--scenario", "retry-after-seconds", "--", "curl", "-s", wrong, NULL };
	struct test_run r;
	int hold;

	run_verify(&r, NOTHING, 10000);
	ck_assert_int_eq(r.status, 4);
	ck_assert_has(r.out, "scenario retry-after-seconds: 0 arrivals; command exited 0 after ");
	ck_assert_has(r.out, "FAIL  succeeds                 the command never reached the server\n");
	ck_assert_has(r.out, "0 of 3 expectations hold\n");
	ck_assert_str_eq(r.err, "ratelab verify: the command never reached the server (0 arrivals): does it use "
	                        "$RATELAB_URL? (proxy variables are unset for it)\n");
	testutil_run_free(&r);
	snprintf(wrong, sizeof(wrong), "http://127.0.0.1:%d/", testutil_dead_port(&hold));
	run_verify(&r, elsewhere, 10000);
	close(hold);
	ck_assert_int_eq(r.status, 4);
	ck_assert_has(r.out, "0 arrivals");
	testutil_run_free(&r);
}
END_TEST

/*
 * A command that verify stops early (gives-up-within passed by) before it
 * reached the server is graded as it stood, not as one that never could: it
 * may only have been slow to start (a busy machine held a hammer's start for
 * 6 s).  Exit 1, and a line that says so.
 */
START_TEST(stopped_before_reaching_the_server_is_graded)
{
	static const char *const SLOW[] = { "verify", "--scenario", "slow-get", "--expect", "succeeds,gives-up-within=1s",
		                            "--", "sleep", "30", NULL };
	struct test_run r;

	run_verify(&r, SLOW, 20000);
	ck_assert_int_eq(r.status, 1);
	ck_assert_has(r.out, "scenario slow-get: 0 arrivals; command stopped after ");
	ck_assert_has(r.out, "N/O   succeeds                 still running when verify stopped it at ");
	ck_assert_has(r.out, "FAIL  gives-up-within=1s       still running when verify stopped it at ");
	ck_assert_has(r.out, "0 of 2 expectations hold, 1 not observed\n");
	ck_assert_has(r.err, "ratelab verify: the command had not reached the server when verify stopped it (0 arrivals) "
	                     "at ");
	testutil_run_free(&r);
}
END_TEST

/* The client does not inherit a proxy: with http_proxy set to a dead port, curl still reaches the scenario. */
START_TEST(proxy_variables_are_not_inherited)
{
	char script[] = "/tmp/ratelab-ok-XXXXXX", proxy[64], proxy2[64], proxy3[64];
	const char *const args[] = { "verify", "--scenario", script, "--expect", "succeeds", "--", "curl", "-sf",
		                     "-o", "/dev/null", "$RATELAB_URL/", NULL };
	const char *env[] = { proxy, proxy2, proxy3, "NO_PROXY=", "no_proxy=", NULL };
	struct test_run r;
	int hold, port = testutil_dead_port(&hold);

	write_file(script, "[{\"status\":200}]");
	snprintf(proxy, sizeof(proxy), "http_proxy=http://127.0.0.1:%d", port);
	snprintf(proxy2, sizeof(proxy2), "HTTP_PROXY=http://127.0.0.1:%d", port);
	snprintf(proxy3, sizeof(proxy3), "ALL_PROXY=http://127.0.0.1:%d", port);
	ck_assert_int_eq(testutil_run(&r, args, env, 10000), 0);
	unlink(script);
	close(hold);
	ck_assert_msg(r.status == 0, "exit %d: %s%s", r.status, r.out, r.err);
	ck_assert_has(r.out, ": 1 arrivals; command exited 0 after");
	testutil_run_free(&r);
}
END_TEST

/*
 * Only what aims at $RATELAB_URL counts: the scenario server has a loopback
 * address of its own, so requests to the same port on 127.0.0.1 (another
 * program still firing at a port it once had there) do not reach it.
 */
START_TEST(only_the_commands_requests_count)
{
	static const char *const ARGS[] = {
		"verify", "--scenario", "retry-after-seconds", "--", "sh", "-c",
		"curl -s -o /dev/null \"$RATELAB_URL/\"; p=${RATELAB_URL##*:}; "
		"for i in 1 2 3; do curl -s -o /dev/null \"http://127.0.0.1:$p/\"; done; echo \"$RATELAB_URL\" >&2",
		NULL
	};
	struct test_run r;

	run_verify(&r, ARGS, 10000);
	ck_assert_msg(r.status == 0, "exit %d: %s%s", r.status, r.out, r.err);
	ck_assert_has(r.out, "scenario retry-after-seconds: 1 arrivals; command exited 0 after");
	ck_assert_has(r.out, "PASS  max-attempts<=3          attempts: 127.0.0.1=1");
	ck_assert_msg(strncmp(r.err, "http://127.", 11) == 0 && strncmp(r.err, "http://127.0.0.1:", 17) != 0,
	              "RATELAB_URL: %s", r.err);
	testutil_run_free(&r);
}
END_TEST

/* Exit 4, not 2, for a command that cannot be run: it is not a usage error. */
START_TEST(cannot_run_exits_4)
{
	static const char *const ARGS[] = { "verify", "--scenario", "post-503", "--", "/nonexistent-dir/client", NULL };
	struct test_run r;

	run_verify(&r, ARGS, 5000);
	ck_assert_int_eq(r.status, 4);
	ck_assert_str_eq(r.err, "ratelab verify: cannot run '/nonexistent-dir/client': No such file or directory\n");
	ck_assert_str_eq(r.out, "");
	testutil_run_free(&r);
}
END_TEST

/*
 * A script given inline, as --help shows it, is one scenario however many
 * commas its JSON has, also in a list beside a built-in; malformed, it is a
 * bad value naming it.
 */
START_TEST(inline_script_scenario)
{
	static const char *const ONE[] = { "verify", "--scenario", "[{\"status\":429,\"retry_after\":\"1\"},{\"status\":200}]",
		                           "--expect", "succeeds", "--", "curl", "--retry", "2", "-s", "$RATELAB_URL/", NULL };
	static const char *const TWO[] = { "verify", "--scenario", "[{\"status\":200}],post-503", "--expect", "succeeds",
		                           "--", "curl", "-s", "-X", "$RATELAB_METHOD", "$RATELAB_URL/", NULL };
	static const char *const BAD[] = { "verify", "--scenario", "[{\"status\":42", "--", "true", NULL };
	struct test_run r;

	run_verify(&r, ONE, 20000);
	ck_assert_msg(r.status == 0, "exit %d: %s%s", r.status, r.out, r.err);
	ck_assert_has(r.out, "scenario script: 2 arrivals;");
	ck_assert_has(r.out, "PASS  succeeds ");
	testutil_run_free(&r);
	run_verify(&r, TWO, 20000);
	ck_assert_has(r.out, "\nscript ");
	ck_assert_has(r.out, "\npost-503 ");
	testutil_run_free(&r);
	run_verify(&r, BAD, 5000);
	ck_assert_int_eq(r.status, 2);
	ck_assert_str_eq(r.err, "ratelab verify: --scenario: '[{\"status\":42': not JSON: '}' expected near end of file "
	                        "(line 1)\n");
	testutil_run_free(&r);
}
END_TEST

/* --listen on a port another socket holds: the scenario server cannot start, which is 4 (could not run), not a grade. */
START_TEST(listen_on_a_taken_port_exits_4)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	char listen_at[32], want[128];
	struct test_run r;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(fd, 1), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &al), 0);
	snprintf(listen_at, sizeof(listen_at), "127.0.0.1:%u", ntohs(a.sin_port));
	const char *const args[] = { "verify", "--scenario", "retry-after-seconds", "--listen", listen_at, "--timeout",
		                     "2s", NULL };
	run_verify(&r, args, 10000);
	close(fd);
	snprintf(want, sizeof(want), "ratelab verify: cannot listen on %s (address in use or not available)\n", listen_at);
	ck_assert_msg(r.status == 4, "exit %d: %s%s", r.status, r.out, r.err);
	ck_assert_str_eq(r.err, want);
	ck_assert_str_eq(r.out, "");
	testutil_run_free(&r);
}
END_TEST

/* A process the command detached with setsid does not outlive verify, whether the command exits or is killed. */
START_TEST(detached_processes_are_stopped)
{
	static const char *const EXITS[] = { "verify", "--scenario", "post-503", "--quiet", "--", "sh", "-c",
		                             "setsid sleep 61.25 & curl -s -o /dev/null -X POST \"$RATELAB_URL/\"", NULL };
	static const char *const KILLED[] = { "verify", "--scenario", "post-503", "--quiet", "--timeout", "1s", "--",
		                              "sh", "-c",
		                              "setsid sleep 61.5 & curl -s -o /dev/null -X POST \"$RATELAB_URL/\"; "
		                              "sleep 30", NULL };
	struct test_run r;
	pid_t left;

	run_verify(&r, EXITS, 10000);
	ck_assert_msg(r.status == 0, "exit %d: %s%s", r.status, r.out, r.err);
	testutil_run_free(&r);
	left = testutil_find_process("sleep 61.25");
	if (left)
		kill(left, SIGKILL);
	ck_assert_msg(left == 0, "the detached 'sleep 61.25' outlived verify");
	run_verify(&r, KILLED, 10000);
	ck_assert_int_eq(r.status, 0);
	ck_assert_has(r.out, "command killed at the 1.00s timeout");
	testutil_run_free(&r);
	left = testutil_find_process("sleep 61.5");
	if (left)
		kill(left, SIGKILL);
	ck_assert_msg(left == 0, "the detached 'sleep 61.5' outlived verify");
}
END_TEST

/* Processes whose command line is exactly `cmdline` (NULs as spaces); with kill_them, SIGKILLed. */
static int count_processes(const char *cmdline, bool kill_them)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)) != NULL) {
		char path[64], buf[128];
		ssize_t got;
		int fd, pid = atoi(de->d_name);

		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
		if ((fd = open(path, O_RDONLY)) < 0)
			continue;
		got = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (got <= 0)
			continue;
		buf[got] = '\0';
		for (ssize_t i = 0; i < got - 1; i++)
			if (buf[i] == '\0')
				buf[i] = ' ';
		if (strcmp(buf, cmdline) != 0)
			continue;
		n++;
		if (kill_them)
			kill(pid, SIGKILL);
	}
	closedir(d);
	return n;
}

/*
 * A command that starts 1,000 detached children with an empty environment
 * (env -i setsid: no marker, another session) leaves none behind: verify is
 * their subreaper and kills everything below it, however many.  600 left 88.
 */
START_TEST(thousand_detached_children_are_stopped)
{
	static const char *const ARGS[] = { "verify", "--scenario", "post-503", "--quiet", "--", "sh", "-c",
		                            "i=0; while [ $i -lt 1000 ]; do env -i setsid sleep 61.75 & i=$((i+1)); done; "
		                            "curl -s -o /dev/null -X POST \"$RATELAB_URL/\"", NULL };
	struct test_run r;
	int left;

	run_verify(&r, ARGS, 60000);
	ck_assert_msg(r.status == 0, "exit %d: %s%s", r.status, r.out, r.err);
	testutil_run_free(&r);
	left = count_processes("sleep 61.75", true);
	ck_assert_msg(left == 0, "%d of the 1,000 detached 'sleep 61.75' outlived verify", left);
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
	ck_assert_has(r.out, "PASS  succeeds");
	/* the PASS says the wait was at least the 2 s asked, within the 50 ms tolerance: curl's 2 s,
	 * then the machine's lag (2.0 quiet, 2.1 under ASan on a busy machine; 1.999 once, the 429
	 * stamped as sent a millisecond after curl had it) */
	ck_assert_has(r.out, "PASS  honours-retry-after      127.0.0.1: asked 2.000s, waited ");
	ck_assert_has(r.out, "PASS  max-attempts<=3          attempts: 127.0.0.1=3");
	ck_assert_has(r.out, "3 of 3 expectations hold");
	ck_assert_has(r.err, "scenario retry-after-seconds step 3: 200");  /* curl's stdout */
	testutil_run_free(&r);
}
END_TEST

/* A client that re-fires at once fails honours-retry-after with exit 1; --json carries the same verdict. */
START_TEST(curl_loop_fails_with_exit_1)
{
	char json_path[] = "/tmp/ratelab-verify-XXXXXX";
	const char *const args[] = { "verify", "--scenario", "retry-after-seconds", "--expect", "honours-retry-after",
		                     "--json", json_path, "--", "sh", "-c",
		                     "for i in 1 2 3; do curl -s -o /dev/null \"$RATELAB_URL/\"; done", NULL };
	struct test_run r;
	json_t *root, *v;

	temp_path(json_path);
	run_verify(&r, args, 20000);
	ck_assert_int_eq(r.status, 1);
	ck_assert_has(r.out, "FAIL  honours-retry-after      127.0.0.1: asked 2.000s, waited 0.");  /* under 1 s, however busy */
	ck_assert_has(r.out, "[2 of 2 retries too early; tolerance 50ms]");
	testutil_run_free(&r);
	root = json_load_file(json_path, 0, NULL);
	unlink(json_path);
	ck_assert_ptr_nonnull(root);
	ck_assert(json_is_false(json_object_get(root, "pass")));
	ck_assert_str_eq(json_string_value(json_object_get(root, "state")), "graded");
	ck_assert_str_eq(json_string_value(json_object_get(root, "method")), "GET");
	ck_assert_int_eq(json_integer_value(json_object_get(root, "exit_status")), 0);
	ck_assert_uint_eq(json_array_size(json_object_get(root, "arrivals")), 3);
	v = json_array_get(json_object_get(root, "verdicts"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(v, "name")), "honours-retry-after");
	ck_assert_str_eq(json_string_value(json_object_get(v, "outcome")), "fail");
	ck_assert(json_is_false(json_object_get(v, "pass")));
	json_decref(root);
}
END_TEST

/*
 * The jitter line's "retry N: gaps A..B" for curl's two retries: each client
 * waited its 1 s, as the server saw it from the answer's end to the next
 * arrival, so a gap may read 0.999s (the answer left a moment after it was
 * stamped) and anything over 1 s is the machine's lag.
 */
static void lockstep_gaps_near_1s(const char *out)
{
	for (int n = 1; n <= 2; n++) {
		char key[32];
		const char *at;
		double lo, hi;

		snprintf(key, sizeof(key), "retry %d: gaps ", n);
		at = strstr(out, key);
		ck_assert_msg(at != NULL, "no \"%s\": %s", key, out);
		ck_assert_msg(sscanf(at + strlen(key), "%lfs..%lfs", &lo, &hi) == 2, "unreadable gaps: %s", at);
		ck_assert_msg(lo >= 0.99 && lo <= hi && hi < 10, "retry %d: gaps %.3fs..%.3fs, not curl's 1 s: %s", n, lo,
		              hi, out);
	}
}

/*
 * Three copies of the lab hammer, each its own --seed (from RATELAB_CLIENT), spread
 * their Retry-After jitter; three copies of curl retry in lockstep.  (No "-o /dev/null"
 * for curl: --retry truncates the output file first, which fails on /dev/null, exit 23.)
 * Real clients on a real server: a stall of the machine at a retry leaves jitter
 * undecided, and noise over 5 ms raises the bar past the hammers' 46 ms
 * (run_timing); the same clients in exact time are check_verify_grade's
 * lab_preset_spreads_where_curl_does_not.
 */
START_TEST(jitter_across_clients)
{
	char hammer[512], json_path[] = "/tmp/ratelab-jitter-XXXXXX", lock_path[] = "/tmp/ratelab-lockstep-XXXXXX";
	const char *const jittered[] = { "verify", "--scenario", "persistent-429", "--clients", "3", "--expect",
		                         "jitter,honours-retry-after", "--timeout", "20s", "--json", json_path, "--",
		                         "sh", "-c", hammer, NULL };
	const char *const lockstep[] = { "verify", "--scenario", "persistent-429", "--clients", "3", "--expect",
		                         "jitter", "--timeout", "20s", "--json", lock_path, "--", "curl", "--retry",
		                         "2", "-s", "$RATELAB_URL/", NULL };
	static const struct timing_want SPREAD = {
		.decided = 0, .held = HELD_JITTER, .always = { "PASS  honours-retry-after      ", "127.0.0.1/client-3" },
		.when_decided = { "PASS  jitter                   3 clients; retry 1: gaps" },
		.noisy = "the clients retry in lockstep" };
	/* curl did retry twice, each time after its 1 s (lockstep_gaps_near_1s) */
	static const struct timing_want LOCKSTEP = {
		.decided = 1, .held = HELD_JITTER, .always = { "jitter                   3 clients; retry 1: gaps " },
		.when_decided = { "FAIL  jitter                   3 clients; retry 1: gaps ", "; retry 2: gaps ",
		                  "the clients retry in lockstep" } };
	struct test_run r;

	snprintf(hammer, sizeof(hammer), "exec '%s' hammer --policy lab --requests 1 --concurrency 1 --quiet "
	         "--seed \"$RATELAB_CLIENT\" \"$RATELAB_URL\"", testutil_bin());
	json_decref(run_timing(&r, jittered, json_path, &SPREAD));
	testutil_run_free(&r);
	json_decref(run_timing(&r, lockstep, lock_path, &LOCKSTEP));
	if (r.status == 1)
		lockstep_gaps_near_1s(r.out);
	testutil_run_free(&r);
}
END_TEST

/*
 * An HTTP-date Retry-After on an answer held 2 s: curl waits until the date
 * and passes.  The date is the first whole second at or after the planned
 * send + 3 s, so the wait planned is 3 s to 4 s; the wait asked runs from
 * when the answer really left (the JSON's end_ms) to the date, which is
 * under 3 s when it left later than the date's fraction of a second.
 */
START_TEST(date_wait_on_a_held_answer)
{
	char script[] = "/tmp/ratelab-date-XXXXXX", json_path[] = "/tmp/ratelab-date-json-XXXXXX";
	const char *const args[] = { "verify", "--scenario", script, "--expect", "succeeds,honours-retry-after",
		                     "--json", json_path, "--", "curl", "--retry", "2", "-sf", "$RATELAB_URL/", NULL };
	struct test_run r;
	json_t *root, *a;
	const char *at;
	double asked, due_ms;

	write_file(script, "[{\"status\":429,\"retry_after\":\"date:3\",\"delay\":\"2s\"},{\"status\":200}]");
	root = run_verify_json(&r, args, json_path, 20000);
	unlink(script);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.out);
	ck_assert_has(r.out, "(held 2.000s)  (asked to wait 3.");
	ck_assert_has(r.out, "PASS  honours-retry-after      127.0.0.1: asked ");
	ck_assert_has(r.out, "s (date), waited ");
	ck_assert_has(r.out, "[0 of 1 retries too early; tolerance 50ms]");
	a = json_array_get(json_object_get(root, "arrivals"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(a, "end")), "sent");
	due_ms = json_real_value(json_object_get(a, "t_ms")) + json_real_value(json_object_get(a, "delay_ms")) +
	         json_real_value(json_object_get(a, "wait_ms"));
	at = strstr(r.out, "127.0.0.1: asked ");
	ck_assert_int_eq(sscanf(at, "127.0.0.1: asked %lfs (date)", &asked), 1);
	/* Both sides are printed to the millisecond: one rounding each, so they agree within 1 ms. */
	ck_assert_msg(fabs(asked * 1e3 - (due_ms - json_real_value(json_object_get(a, "end_ms")))) <= 1.0,
	              "asked %.3fs, JSON: due %.3fms, left %.3fms", asked, due_ms,
	              json_real_value(json_object_get(a, "end_ms")));
	json_decref(root);
	testutil_run_free(&r);
}
END_TEST

/* A POST sent again after the client's own timeout, while the first was still being answered, is a duplicate risk. */
START_TEST(post_resent_after_a_timeout_fails)
{
	char script[] = "/tmp/ratelab-slowpost-XXXXXX";
	const char *const args[] = { "verify", "--scenario", script, "--expect", "no-retry-non-idempotent", "--", "curl",
		                     "--retry", "2", "--max-time", "1", "-s", "-X", "POST",
		                     "$RATELAB_URL/", NULL };
	struct test_run r;

	write_file(script, "[{\"status\":200,\"delay\":\"3s\"},{\"status\":200}]");
	run_verify(&r, args, 20000);
	unlink(script);
	ck_assert_msg(r.status == 1, "exit %d: %s", r.status, r.out);
	ck_assert_has(r.out, "FAIL  no-retry-non-idempotent  POST sent again ");
	ck_assert_has(r.out, "s after the first attempt, whose answer (held 3.0s) it never got, without an "
	                     "Idempotency-Key (127.0.0.1)");
	testutil_run_free(&r);
}
END_TEST

/* A new Idempotency-Key on every attempt protects nothing. */
START_TEST(new_key_per_attempt_fails)
{
	static const char *const ARGS[] = { "verify", "--scenario", "post-503", "--quiet", "--", "sh", "-c",
		                            "for k in k1 k2; do curl -s -o /dev/null -X POST -H \"Idempotency-Key: $k\" "
		                            "\"$RATELAB_URL/orders\"; done", NULL };
	struct test_run r;

	run_verify(&r, ARGS, 10000);
	ck_assert_msg(r.status == 1, "exit %d: %s", r.status, r.out);
	ck_assert_has(r.out, "FAIL  no-retry-non-idempotent  POST sent again ");
	ck_assert_has(r.out, "s after 503 with a new Idempotency-Key (127.0.0.1); 2 non-idempotent arrivals, 1 unsafe "
	                     "retries, 0 retries with the same Idempotency-Key\n");
	testutil_run_free(&r);
}
END_TEST

/*
 * --timeout under gives-up-within: the client killed at the timeout might
 * still have given up in time, so it is not observed (said before the run),
 * and --strict makes that a failure.
 */
START_TEST(short_timeout_is_not_a_failure)
{
	static const char *const ARGS[] = { "verify", "--scenario", "retry-after-too-long", "--timeout", "1s", "--expect",
		                            "gives-up-within=5s", "--quiet", "--", "sh", "-c",
		                            "curl -s -o /dev/null \"$RATELAB_URL/\"; sleep 10", NULL };
	static const char *const STRICT[] = { "verify", "--scenario", "retry-after-too-long", "--timeout", "1s",
		                              "--expect", "gives-up-within=5s", "--quiet", "--strict", "--", "sh", "-c",
		                              "curl -s -o /dev/null \"$RATELAB_URL/\"; sleep 10", NULL };
	struct test_run r;

	run_verify(&r, ARGS, 10000);
	ck_assert_msg(r.status == 5, "exit %d: %s", r.status, r.out);
	ck_assert_has(r.out, "N/O   gives-up-within=5s       still running at the 1.0s timeout: killed, before the "
	                     "5.00s limit: raise --timeout over it\n");
	ck_assert_has(r.out, "0 of 1 expectations hold, 1 not observed: nothing was observed, which is not a pass "
	                     "(exit 5)\n");
	/* that said first, then (killed at the timeout) what the command was doing, and nothing else */
	static const char WARNED[] = "ratelab verify: --timeout 1.00s is shorter than gives-up-within=5s: a command "
	                             "still running at the timeout is 'not observed' there, not failed\n";
	ck_assert_msg(strncmp(r.err, WARNED, strlen(WARNED)) == 0, "stderr: %s", r.err);
	ck_assert_msg(strncmp(r.err + strlen(WARNED), "ratelab verify: pid ", 20) == 0 &&
	                  strstr(r.err + strlen(WARNED), " was still running at the timeout; its threads ") != NULL &&
	                  strchr(r.err + strlen(WARNED), '\n') == r.err + strlen(r.err) - 1,
	              "stderr: %s", r.err);
	testutil_run_free(&r);
	run_verify(&r, STRICT, 10000);
	ck_assert_int_eq(r.status, 1);
	ck_assert_has(r.out, "0 of 1 expectations hold, 1 not observed (failures with --strict)\n");
	testutil_run_free(&r);
}
END_TEST

/*
 * A constant one-second delay does not back off: curl's four attempts, each
 * retry at least its 1 s after the answer.  The digits past that are the
 * machine's lag (a first gap of 1.104 s under load asks 276 ms of growth), so
 * the exact verdict on exact gaps is check_verify_grade's backs_off_needs_a_margin
 * and curl_lag_is_not_growth; a stall at a retry leaves it undecided.
 */
START_TEST(constant_delay_does_not_back_off)
{
	char json_path[] = "/tmp/ratelab-backoff-XXXXXX";
	const char *const args[] = { "verify", "--scenario", "server-errors", "--expect", "backs-off", "--quiet",
		                     "--json", json_path, "--", "curl", "--retry", "3", "--retry-delay", "1", "-s",
		                     "$RATELAB_URL/", NULL };
	static const struct timing_want CONSTANT = {
		.decided = 1, .held = HELD_BACKOFF,
		.always = { "backs-off                median gap by retry after answers without a wait: " },
		.when_decided = { "FAIL  backs-off                median gap by retry after answers without a wait: 1.",
		                  "(the waits do not grow: the later ones are not ", "ms over the first)\n" } };
	struct test_run r;
	json_t *root = run_timing(&r, args, json_path, &CONSTANT);

	ck_assert_uint_eq(json_array_size(json_object_get(root, "arrivals")), 4);
	json_decref(root);
	testutil_run_free(&r);
}
END_TEST

/*
 * Past 4096 arrivals the log is full: the run says how many were not logged,
 * and so does every verdict; max-attempts counts every attempt on the one
 * connection, not the 4,096 logged.  One row a run: curl's URL range, the
 * expectation, the exit, and the lines it prints.
 */
static const struct past_the_log {
	const char *range, *expect;
	int timeout_ms, status;
	const char *lines[3];
} PAST_THE_LOG[] = {
	{ "$RATELAB_URL/[1-4100]", "max-attempts<=5000", 60000, 0,
	  { ": 4096 arrivals; command exited 0 after ", "s (4 more not logged: the log holds 4096)\n",
	    "PASS  max-attempts<=5000       attempts: 127.0.0.1=4100 (every attempt counted; the log "
	    "holds the first 4096 arrivals, 4 more not logged)\n" } },
	{ "$RATELAB_URL/[1-5000]", "max-attempts<=4500", 80000, 1,
	  { "FAIL  max-attempts<=4500       attempts: 127.0.0.1=5000 (every attempt counted; the log "
	    "holds the first 4096 arrivals, 904 more not logged)\n" } },
};

/* One row of PAST_THE_LOG (Check's loop index _i). */
START_TEST(counts_go_on_past_the_log)
{
	const struct past_the_log *c = &PAST_THE_LOG[_i];
	char script[] = "/tmp/ratelab-flood-XXXXXX";
	const char *const args[] = { "verify", "--scenario", script, "--expect", c->expect, "--quiet", "--",
		                     "curl", "-s", "-o", "/dev/null", c->range, NULL };
	struct test_run r;

	write_file(script, "[{\"status\":200}]");
	run_verify(&r, args, c->timeout_ms);
	unlink(script);
	ck_assert_msg(r.status == c->status, "exit %d: %s", r.status, r.out);
	for (size_t i = 0; i < 3 && c->lines[i]; i++)
		ck_assert_has(r.out, c->lines[i]);
	testutil_run_free(&r);
}
END_TEST

/* Killed at the timeout while it honours an hour's wait, curl --retry 3 has made 1 attempt so far: not a pass. */
START_TEST(killed_client_attempts_are_a_lower_bound)
{
	static const char *const ARGS[] = { "verify", "--scenario", "retry-after-too-long", "--expect", "max-attempts<=1",
		                            "--timeout", "2s", "--quiet", "--", "curl", "--retry", "3", "-s",
		                            "$RATELAB_URL/", NULL };
	struct test_run r;

	run_verify(&r, ARGS, 15000);
	ck_assert_msg(r.status == 5, "exit %d: %s", r.status, r.out);
	ck_assert_has(r.out, "command killed at the 2.00s timeout\n");
	ck_assert_has(r.out, "N/O   max-attempts<=1          attempts: 127.0.0.1=1; a lower bound: still running at the "
	                     "2.0s timeout: killed\n");
	testutil_run_free(&r);
}
END_TEST

/* A GET against a POST scenario asserts nothing: exit 5, not 0; and --strict makes it a failure. */
START_TEST(nothing_observed_is_not_a_pass)
{
	static const char *const ARGS[] = { "verify", "--scenario", "post-503", "--", "curl", "-s", "-o", "/dev/null",
		                            "$RATELAB_URL/", NULL };
	static const char *const STRICT[] = { "verify", "--scenario", "post-503", "--strict", "--", "curl", "-s", "-o",
		                              "/dev/null", "$RATELAB_URL/", NULL };
	struct test_run r;

	run_verify(&r, ARGS, 10000);
	ck_assert_msg(r.status == 5, "exit %d: %s", r.status, r.out);
	ck_assert_has(r.out, "0 of 1 expectations hold, 1 not observed: nothing was observed, which is not a pass "
	                     "(exit 5)\n");
	testutil_run_free(&r);
	run_verify(&r, STRICT, 10000);
	ck_assert_int_eq(r.status, 1);
	testutil_run_free(&r);
}
END_TEST

/* Every named scenario runs and is graded, repeated or in a comma list: a failing one fails the run. */
START_TEST(every_named_scenario_is_graded)
{
	static const char *const REPEATED[] = { "verify", "--scenario", "post-503", "--scenario", "retry-after-seconds",
		                                "--", "curl", "--retry", "3", "-s", "-X", "$RATELAB_METHOD", 
		                                "$RATELAB_URL/", NULL };
	static const char *const LISTED[] = { "verify", "--scenario", "post-503,retry-after-seconds", "--", "curl",
		                              "--retry", "3", "-s", "-X", "$RATELAB_METHOD",
		                              "$RATELAB_URL/", NULL };
	const char *const *both[] = { REPEATED, LISTED };
	struct test_run r;

	for (size_t i = 0; i < 2; i++) {
		run_verify(&r, both[i], 30000);
		ck_assert_msg(r.status == 1, "case %zu: exit %d: %s", i, r.status, r.out);
		ck_assert_has(r.out, "scenario               method succeeds honours attempts idempotent\n"
		                     "post-503               POST   -        -       -        FAIL\n"
		                     "retry-after-seconds    GET    pass     pass    pass     -\n"
		                     "1 of 2 scenarios hold (0 of them with a verdict not observed)\n"
		                     "FAIL  post-503 no-retry-non-idempotent: POST sent again ");
		testutil_run_free(&r);
	}
}
END_TEST

/* --all --skip: the named built-ins are left out of the run, the table and the JSON. */
START_TEST(skip_leaves_scenarios_out)
{
	char json_path[] = "/tmp/ratelab-skip-XXXXXX";
	const char *const args[] = { "verify", "--all", "--skip", "slow-get,slow-post", "--skip", "post-503", "--json",
		                     json_path, "--", "true", NULL };
	struct test_run r;
	json_t *root, *sc;
	size_t i;

	temp_path(json_path);
	run_verify(&r, args, 30000);
	ck_assert_int_eq(r.status, 4);
	ck_assert_has(r.out, "0 of 27 scenarios hold");
	ck_assert_msg(!strstr(r.out, "slow-get") && !strstr(r.out, "post-503"), "%s", r.out);
	testutil_run_free(&r);
	root = json_load_file(json_path, 0, NULL);
	unlink(json_path);
	ck_assert_ptr_nonnull(root);
	ck_assert_uint_eq(json_array_size(json_object_get(root, "scenarios")), 27);
	json_array_foreach(json_object_get(root, "scenarios"), i, sc)
		ck_assert_str_ne(json_string_value(json_object_get(sc, "scenario")), "slow-post");
	json_decref(root);
}
END_TEST

/*
 * --baseline: the accepted verdicts of one client (curl --retry 3: post-503
 * fails) are written; the same client passes against them; a client that
 * does not retry gets worse on retry-after-seconds (exit 1) and better on
 * post-503, and both are said.
 */
START_TEST(baseline_fails_only_on_what_got_worse)
{
	char base[] = "/tmp/ratelab-base-XXXXXX";
	const char *const write[] = { "verify", "--scenario", "post-503,retry-after-seconds", "--baseline", base,
		                      "--write-baseline", "--", "curl", "--retry", "3", "-s", "-X", "$RATELAB_METHOD",
		                      "$RATELAB_URL/", NULL };
	const char *const same[] = { "verify", "--scenario", "post-503,retry-after-seconds", "--baseline", base, "--",
		                     "curl", "--retry", "3", "-s", "-X", "$RATELAB_METHOD", "$RATELAB_URL/", NULL };
	const char *const worse[] = { "verify", "--scenario", "post-503,retry-after-seconds", "--baseline", base, "--",
		                      "curl", "-sf", "-X", "$RATELAB_METHOD", "$RATELAB_URL/", NULL };
	struct test_run r;
	json_t *root;

	temp_path(base);
	run_verify(&r, write, 30000);
	ck_assert_msg(r.status == 0, "exit %d: %s%s", r.status, r.out, r.err);
	ck_assert_has(r.out, "post-503               POST   -        -       -        FAIL\n");
	ck_assert_has(r.out, "baseline /tmp/ratelab-base-");
	ck_assert_has(r.out, ": written (2 scenarios)\n");
	testutil_run_free(&r);
	root = json_load_file(base, 0, NULL);
	ck_assert_ptr_nonnull(root);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(json_object_get(root, "verdicts"), "post-503"),
	                                                   "no-retry-non-idempotent")), "fail");
	json_decref(root);
	run_verify(&r, same, 30000);
	ck_assert_msg(r.status == 0, "exit %d: %s%s", r.status, r.out, r.err);
	ck_assert_has(r.out, ": 0 worse, 0 better, 4 the same\n");
	testutil_run_free(&r);
	run_verify(&r, worse, 30000);
	unlink(base);
	ck_assert_msg(r.status == 1, "exit %d: %s%s", r.status, r.out, r.err);
	ck_assert_has(r.out, "better  post-503 no-retry-non-idempotent: fail -> pass\n");
	ck_assert_has(r.out, "WORSE   retry-after-seconds succeeds: pass -> fail\n");
	ck_assert_has(r.out, "WORSE   retry-after-seconds honours-retry-after: pass -> not observed\n");
	ck_assert_has(r.out, ": 2 worse, 1 better, 1 the same\n");
	testutil_run_free(&r);
}
END_TEST

/*
 * Asked to wait an hour, curl --retry 3 would wait it out; the verdict is
 * settled at 5 s (gives-up-within failed), and the run ends there: verify says
 * it stopped the command at 5 s (how long the whole process took on a busy
 * machine is no part of it; the harness bounds that).
 */
START_TEST(too_long_wait_ends_when_settled)
{
	static const char *const ARGS[] = { "verify", "--scenario", "retry-after-too-long", "--", "curl", "--retry", "3",
		                            "-s", "$RATELAB_URL/", NULL };
	struct test_run r;

	run_verify(&r, ARGS, 15000);
	ck_assert_msg(r.status == 1, "exit %d: %s", r.status, r.out);
	ck_assert_has(r.out, "scenario retry-after-too-long: 1 arrivals; command stopped after 5.");
	ck_assert_has(r.out, "s: a verdict had failed for good\n");
	ck_assert_has(r.out, "FAIL  gives-up-within=5s       still running when verify stopped it at 5.");
	ck_assert_has(r.out, "N/O   max-attempts<=1          attempts: 127.0.0.1=1; a lower bound: still running when "
	                     "verify stopped it at 5.");
	testutil_run_free(&r);
}
END_TEST

/* A wait given only by RateLimit: curl ignores it (its own 1 s), and honours-ratelimit says so. */
START_TEST(ratelimit_only_wait)
{
	static const char *const ARGS[] = { "verify", "--scenario", "ratelimit-only", "--", "curl", "--retry", "2", "-s",
		                            "$RATELAB_URL/", NULL };
	struct test_run r;

	run_verify(&r, ARGS, 15000);
	ck_assert_msg(r.status == 1, "exit %d: %s", r.status, r.out);
	ck_assert_has(r.out, "-> 429  (asked to wait 2.000s by RateLimit)\n");
	/* curl's own 1 s and then the machine's lag (1.1 and more under ASan on a busy machine) */
	ck_assert_has(r.out, "FAIL  honours-ratelimit        127.0.0.1: asked 2.000s, waited 1.");
	ck_assert_has(r.out, "(too early) [1 of 1 retries too early; tolerance 50ms]\n");
	testutil_run_free(&r);
}
END_TEST

/*
 * A client that reads every dialect's wait (python3's urllib): RateLimit t=,
 * RateLimit-Reset, x-ratelimit-reset, X-RateLimit-Reset in delta seconds or,
 * past 10^9, as a Unix second.  It honours each dialect's scenario, and
 * verify --list names the dialect each speaks.
 */
static const char DIALECT_CLIENT[] =
	"import re, sys, time, urllib.request, urllib.error\n"
	"def wait_of(h):\n"
	"    m = re.search(r';t=(\\d+)', h.get('RateLimit') or '')\n"
	"    if m: return int(m.group(1))\n"
	"    for name in ('RateLimit-Reset', 'X-RateLimit-Reset'):\n"
	"        v = h.get(name)\n"
	"        if v: return int(v) - time.time() if int(v) > 10**9 else int(v)\n"
	"    return 1\n"
	"for attempt in range(3):\n"
	"    try:\n"
	"        urllib.request.urlopen(sys.argv[1] + '/', timeout=10).read(); sys.exit(0)\n"
	"    except urllib.error.HTTPError as e:\n"
	"        if e.code != 429: sys.exit(1)\n"
	"        time.sleep(max(wait_of(e.headers), 0) + 0.1)\n"
	"sys.exit(1)\n";

START_TEST(every_dialect_honoured_by_a_client_that_reads_it)
{
	static const char *const SCENARIOS[][2] = {
		{ "ratelimit-only", "ietf" }, { "ratelimit-reset", "draft-03" }, { "x-ratelimit-reset", "legacy" },
		{ "envoy-x-ratelimit", "x-ratelimit" }, { "github-reset", "github" },
	};
	static const char *const LIST[] = { "verify", "--list", NULL };
	struct test_run r;
	char head[80], want[80];

	run_verify(&r, LIST, 15000);
	ck_assert_int_eq(r.status, 0);
	for (size_t i = 0; i < sizeof(SCENARIOS) / sizeof(SCENARIOS[0]); i++) {
		const char *p, *sp;

		snprintf(head, sizeof(head), "\n%s (GET)\n", SCENARIOS[i][0]);
		snprintf(want, sizeof(want), "\n  speaks:  %s\n", SCENARIOS[i][1]);
		p = strstr(r.out, head);
		sp = p ? strstr(p + 1, "\n  speaks:  ") : NULL;
		ck_assert_msg(sp && strncmp(sp, want, strlen(want)) == 0, "--list does not say %s speaks %s:\n%s",
		              SCENARIOS[i][0], SCENARIOS[i][1], r.out);
	}
	testutil_run_free(&r);
	for (size_t i = 0; i < sizeof(SCENARIOS) / sizeof(SCENARIOS[0]); i++) {
		const char *const args[] = { "verify", "--scenario", SCENARIOS[i][0], "--", "python3", "-c", DIALECT_CLIENT,
			                     "$RATELAB_URL", NULL };

		run_verify(&r, args, 20000);
		ck_assert_msg(r.status == 0, "%s: exit %d: %s%s", SCENARIOS[i][0], r.status, r.out, r.err);
		ck_assert_has(r.out, "PASS  honours-ratelimit");
		ck_assert_has(r.out, "PASS  succeeds");
		testutil_run_free(&r);
	}
}
END_TEST

/*
 * A preset that does not retry a POST: succeeds fails and says why,
 * honours-retry-after is not observed (N/O, "pass": false in the JSON).
 */
START_TEST(not_observed_is_not_a_pass)
{
	char json_path[] = "/tmp/ratelab-nobs-XXXXXX";
	const char *const args[] = { "verify", "--scenario", "post-429", "--quiet", "--json", json_path, "--",
		                     testutil_bin(), "hammer", "--policy", "wasm", "--requests", "1", "--concurrency",
		                     "1", "--quiet", "--method", "$RATELAB_METHOD", "--expect", "ok>=1", "$RATELAB_URL",
		                     NULL };
	struct test_run r;
	json_t *root, *v;

	temp_path(json_path);
	run_verify(&r, args, 15000);
	ck_assert_msg(r.status == 1, "exit %d: %s", r.status, r.out);
	ck_assert_has(r.out, "FAIL  succeeds                 command exited 3 after ");
	ck_assert_has(r.out, "s; its last answer was 429 to a POST and it did not retry (many clients retry only "
	                     "idempotent methods)\n");
	ck_assert_has(r.out, "N/O   honours-retry-after      not observed: no retry followed an answer that asked for a "
	                     "wait (1 such answers, 1 arrivals)\n");
	ck_assert_has(r.out, "1 of 3 expectations hold, 1 not observed\n");
	testutil_run_free(&r);
	root = json_load_file(json_path, 0, NULL);
	unlink(json_path);
	ck_assert_ptr_nonnull(root);
	v = json_array_get(json_object_get(root, "verdicts"), 1);
	ck_assert_str_eq(json_string_value(json_object_get(v, "outcome")), "not observed");
	ck_assert(json_is_false(json_object_get(v, "pass")));
	json_decref(root);
}
END_TEST

/* A run with nothing but "not observed" passes, and fails with --strict. */
START_TEST(strict_fails_what_was_not_observed)
{
	static const char *const LAX[] = { "verify", "--scenario", "payload-too-large", "--quiet", "--", "curl", "-s",
		                           "-o", "/dev/null", "-X", "$RATELAB_METHOD", "$RATELAB_URL/", NULL };
	static const char *const STRICT[] = { "verify", "--scenario", "payload-too-large", "--quiet", "--strict", "--",
		                              "curl", "-s", "-o", "/dev/null", "-X", "$RATELAB_METHOD", "$RATELAB_URL/",
		                              NULL };
	struct test_run r;

	run_verify(&r, LAX, 10000);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.out);
	ck_assert_has(r.out, "N/O   honours-retry-after");
	ck_assert_has(r.out, "PASS  max-attempts<=2          attempts: 127.0.0.1=1\n");
	testutil_run_free(&r);
	run_verify(&r, STRICT, 10000);
	ck_assert_int_eq(r.status, 1);
	testutil_run_free(&r);
}
END_TEST

/* --junit: one testcase per expectation, failures with their evidence, read back by a real XML parser. */
START_TEST(junit_for_ci)
{
	char path[] = "/tmp/ratelab-junit-XXXXXX";
	const char *const failing[] = { "verify", "--scenario", "post-503", "--quiet", "--junit", path, "--", "curl",
		                        "--retry", "3", "-s", "-X", "POST", "$RATELAB_URL/orders",
		                        NULL };
	const char *const mixed[] = { "verify", "--scenario", "post-429", "--quiet", "--junit", path, "--", "curl", "-sf",
		                      "-o", "/dev/null", "-X", "POST", "$RATELAB_URL/", NULL };
	const char *const never[] = { "verify", "--scenario", "post-429", "--junit", path, "--", "true", NULL };
	struct test_run r;
	char *xml = NULL;

	temp_path(path);
	run_verify(&r, failing, 15000);
	ck_assert_int_eq(r.status, 1);
	testutil_run_free(&r);
	ck_assert_msg(testutil_junit_read(path, &xml) == 0, "not JUnit XML: %s", xml);
	ck_assert_has(xml, "suites=1 tests=1 failures=1 skipped=0 errors=0\n");
	ck_assert_has(xml, "verify post-503 | ratelab.verify.post-503 | no-retry-non-idempotent | failure | POST sent "
	                   "again 1.");
	ck_assert_has(xml, "without an Idempotency-Key (127.0.0.1); 2 non-idempotent arrivals, 1 unsafe retries");
	free(xml);
	run_verify(&r, mixed, 15000);
	ck_assert_int_eq(r.status, 1);
	testutil_run_free(&r);
	ck_assert_msg(testutil_junit_read(path, &xml) == 0, "not JUnit XML: %s", xml);
	ck_assert_has(xml, "suites=1 tests=3 failures=1 skipped=1 errors=0\n");
	ck_assert_has(xml, "| succeeds | failure | command exited 22 after ");
	ck_assert_has(xml, "| honours-retry-after | skipped | not observed: ");
	ck_assert_has(xml, "| max-attempts<=2 | pass | \n");
	free(xml);
	run_verify(&r, never, 15000);
	ck_assert_int_eq(r.status, 4);
	testutil_run_free(&r);
	ck_assert_msg(testutil_junit_read(path, &xml) == 0, "not JUnit XML: %s", xml);
	ck_assert_has(xml, "suites=1 tests=3 failures=0 skipped=0 errors=3\n");
	ck_assert_has(xml, "| succeeds | error | the command never reached the server\n");
	free(xml);
	unlink(path);
}
END_TEST

/* --all: one row per built-in scenario; a command that never reaches the server exits 4 with every row failed. */
START_TEST(all_scenarios_one_table)
{
	char json_path[] = "/tmp/ratelab-all-XXXXXX", xml_path[] = "/tmp/ratelab-allx-XXXXXX";
	const char *const args[] = { "verify", "--all", "--jobs", "8", "--json", json_path, "--junit", xml_path, "--",
		                     "true", NULL };
	static const char *const CANNOT[] = { "verify", "--all", "--", "/nonexistent-dir/client", NULL };
	struct test_run r;
	json_t *root, *sc;
	char *xml = NULL;

	temp_path(json_path);
	temp_path(xml_path);
	run_verify(&r, args, 30000);
	ck_assert_int_eq(r.status, 4);
	ck_assert_has(r.out, "scenario               method succeeds honours attempts within idempotent no-retry "
	                     "backs-off stops\n");
	ck_assert_has(r.out, "retry-after-seconds    GET    FAIL     FAIL    FAIL     -      -          -        -  "
	                     "       -\n");
	ck_assert_has(r.out, "0 of 30 scenarios hold (0 of them with a verdict not observed)\n");
	ck_assert_has(r.out, "FAIL  slow-post no-retry-non-idempotent: the command never reached the server\n");
	testutil_run_free(&r);
	root = json_load_file(json_path, 0, NULL);
	unlink(json_path);
	ck_assert_ptr_nonnull(root);
	ck_assert_int_eq(json_integer_value(json_object_get(root, "exit")), 4);
	ck_assert_uint_eq(json_array_size(json_object_get(root, "scenarios")), 30);
	sc = json_array_get(json_object_get(root, "scenarios"), 4);
	ck_assert_str_eq(json_string_value(json_object_get(sc, "scenario")), "post-503");
	ck_assert_str_eq(json_string_value(json_object_get(sc, "method")), "POST");
	ck_assert_str_eq(json_string_value(json_object_get(sc, "state")), "no arrivals");
	json_decref(root);
	ck_assert_msg(testutil_junit_read(xml_path, &xml) == 0, "not JUnit XML: %s", xml);
	unlink(xml_path);
	ck_assert_has(xml, "suites=30 tests=");
	ck_assert_has(xml, "verify slow-get | ratelab.verify.slow-get | gives-up-within=6s | error | ");
	free(xml);
	run_verify(&r, CANNOT, 15000);
	ck_assert_int_eq(r.status, 4);
	ck_assert_has(r.err, "ratelab verify: cannot run '/nonexistent-dir/client': No such file or directory\n");
	testutil_run_free(&r);
}
END_TEST

/* ---- the hammer's grade table: `verify --all` per preset ---- */

#define GRID_PRESETS 8

struct grid_run {
	char policy[16], json[64], err[64];
	char *argv[48];
	pid_t pid;
	int status;      /* verify's wait status */
};

/* argv: ratelab verify --all --jobs 4 --timeout T --json F -- ratelab COMMAND..., {policy} filled in. */
static void grid_argv(struct grid_run *g, json_t *table)
{
	const char *head[] = { testutil_bin(), "verify", "--all", "--jobs", "4", "--timeout",
		               json_string_value(json_object_get(table, "timeout")), "--json", g->json, "--",
		               testutil_bin() };
	size_t n = 0, i;
	json_t *a;

	for (i = 0; i < sizeof(head) / sizeof(head[0]); i++)
		g->argv[n++] = strdup(head[i]);
	json_array_foreach(json_object_get(table, "command"), i, a) {
		const char *s = json_string_value(a);

		if (n < 47)
			g->argv[n++] = strdup(strcmp(s, "{policy}") == 0 ? g->policy : s);
	}
	g->argv[n] = NULL;
}

static pid_t grid_spawn(struct grid_run *g)
{
	pid_t pid = fork();

	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY), err = open(g->err, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		dup2(null, STDOUT_FILENO);
		dup2(err >= 0 ? err : null, STDERR_FILENO);
		execv(g->argv[0], g->argv);
		_exit(127);
	}
	return pid;
}

static void append(char *msg, size_t len, const char *fmt, ...)
{
	size_t used = strlen(msg);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg + used, len - used, fmt, ap);
	va_end(ap);
}

/* The result of scenario `name` in an --all JSON, or NULL. */
static json_t *grid_scenario(json_t *all, const char *name)
{
	size_t i;
	json_t *sc;

	json_array_foreach(json_object_get(all, "scenarios"), i, sc)
		if (strcmp(json_string_value(json_object_get(sc, "scenario")), name) == 0)
			return sc;
	return NULL;
}

static bool mark_holds(char mark, const char *outcome)
{
	return mark == '~' || (mark == '+' && strcmp(outcome, "pass") == 0) ||
	       (mark == '-' && strcmp(outcome, "fail") == 0) || (mark == '?' && strcmp(outcome, "not observed") == 0);
}

/*
 * A timing verdict a stall of the machine left undecided, by run_timing's
 * rule: "not observed", saying so, in a scenario whose run recorded a stall.
 */
static bool held_by_a_stall(json_t *sc, const char *outcome, const char *evidence)
{
	return strcmp(outcome, "not observed") == 0 && json_array_size(json_object_get(sc, "stalls")) > 0 && evidence &&
	       (strstr(evidence, HELD_BACKOFF) || strstr(evidence, HELD_JITTER));
}

/*
 * An honours-* verdict the table says fails, that passed because a stall of
 * the machine held up the retry: some retry (an arrival after the first)
 * came in a stall the run recorded, or within 15 ms after it (verify's
 * STALL_SLACK_NS).  An early retry held up past its wait looks polite, and
 * honours-* does not weigh stalls as backs-off and jitter do.
 */
static bool passed_in_a_stall(json_t *sc, char mark, const char *name, const char *outcome)
{
	json_t *arrivals = json_object_get(sc, "arrivals"), *st;
	size_t k;

	if (mark != '-' || strcmp(outcome, "pass") != 0 || strncmp(name, "honours-", 8) != 0)
		return false;
	json_array_foreach(json_object_get(sc, "stalls"), k, st) {
		double from = json_number_value(json_array_get(st, 0)), to = json_number_value(json_array_get(st, 1));

		for (size_t i = 1; i < json_array_size(arrivals); i++) {
			double t = json_number_value(json_object_get(json_array_get(arrivals, i), "t_ms"));

			if (t >= from && t <= to + 15)
				return true;
		}
	}
	return false;
}

/* Compare one scenario's verdicts under one preset with its marks; appends mismatches to msg. */
static void grid_check_one(const char *policy, const char *sname, const char *marks_in, json_t *sc, char *msg,
                           size_t len)
{
	json_t *verdicts = json_object_get(sc, "verdicts"), *a;
	char marks[200], *save = NULL;
	size_t i = 0, before = strlen(msg), k;

	snprintf(marks, sizeof(marks), "%s", marks_in);
	for (char *m = strtok_r(marks, " ", &save); m; m = strtok_r(NULL, " ", &save), i++) {
		json_t *v = json_array_get(verdicts, i);
		const char *name = json_string_value(json_object_get(v, "name"));
		const char *outcome = json_string_value(json_object_get(v, "outcome"));
		const char *evidence = json_string_value(json_object_get(v, "evidence"));

		if (!name || strcmp(name, m + 1) != 0)
			append(msg, len, "%s/%s: verdict %zu is %s, table says %s; ", sname, policy, i, name ? name : "missing",
			       m + 1);
		else if (!mark_holds(m[0], outcome) && !held_by_a_stall(sc, outcome, evidence) &&
		         !passed_in_a_stall(sc, m[0], name, outcome))
			append(msg, len, "%s/%s: %s is %s, table says %c (%s); ", sname, policy, name, outcome, m[0], evidence);
	}
	if (json_array_size(verdicts) != i)
		append(msg, len, "%s/%s: %zu verdicts for %zu marks; ", sname, policy, json_array_size(verdicts), i);
	/* A run that went wrong says when its requests came (ms from the first) and how long it ran in all. */
	if (strlen(msg) > before) {
		append(msg, len, "[%s/%s ran %.1fs, arrivals at", sname, policy,
		       json_number_value(json_object_get(sc, "wall_s")));
		json_array_foreach(json_object_get(sc, "arrivals"), k, a)
			append(msg, len, " %.0f", json_number_value(json_object_get(a, "t_ms")));
		append(msg, len, " ms, stalls at");
		json_array_foreach(json_object_get(sc, "stalls"), k, a)
			append(msg, len, " %.0f-%.0f", json_number_value(json_array_get(a, 0)),
			       json_number_value(json_array_get(a, 1)));
		append(msg, len, " ms]; ");
	}
}

/* What verify said of the commands it killed at their timeout (their threads' states) into said; the file removed. */
static void grid_said(const struct grid_run *g, char *said, size_t len)
{
	FILE *f = fopen(g->err, "r");
	char line[2048];

	unlink(g->err);
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, " was still running at the timeout; "))
			append(said, len, "%s: %s", g->policy, line);
	if (f)
		fclose(f);
}

/* Compare one preset's --all JSON with the table's marks. */
static void grid_check(const struct grid_run *g, json_t *table, char *msg, size_t len, char *said, size_t saidlen)
{
	json_t *all = json_load_file(g->json, 0, NULL), *sc;
	const char *sname;

	unlink(g->json);
	grid_said(g, said, saidlen);
	if (!all) {
		append(msg, len, "%s: no JSON (verify's wait status %d); ", g->policy, g->status);
		return;
	}
	json_object_foreach(json_object_get(table, "scenarios"), sname, sc) {
		json_t *got = grid_scenario(all, sname);
		const char *marks = json_string_value(json_object_get(json_object_get(sc, "grades"), g->policy));

		if (!got || !marks)
			append(msg, len, "%s/%s: %s; ", sname, g->policy, got ? "no marks in the table" : "not run");
		else
			grid_check_one(g->policy, sname, marks, got, msg, len);
	}
	if (json_array_size(json_object_get(all, "scenarios")) != json_object_size(json_object_get(table, "scenarios")))
		append(msg, len, "%s: %zu scenarios run, the table has %zu; ", g->policy,
		       json_array_size(json_object_get(all, "scenarios")), json_object_size(json_object_get(table, "scenarios")));
	json_decref(all);
}

/* Start every preset's --all at once and wait for them, bounded. */
static void grid_run(struct grid_run *g, size_t n)
{
	uint64_t deadline = clock_monotonic_ns() + 170 * NS_PER_SEC;
	size_t running = 0;

	for (size_t i = 0; i < n; i++) {
		ck_assert_int_gt(g[i].pid = grid_spawn(&g[i]), 0);
		running++;
	}
	while (running > 0 && clock_monotonic_ns() < deadline) {
		struct timespec ts = { 0, 50 * 1000000L };

		for (size_t i = 0; i < n; i++)
			if (g[i].pid > 0 && waitpid(g[i].pid, &g[i].status, WNOHANG) == g[i].pid) {
				g[i].pid = 0;
				running--;
			}
		if (running > 0)
			nanosleep(&ts, NULL);
	}
	for (size_t i = 0; i < n; i++)
		if (g[i].pid > 0)
			kill(g[i].pid, SIGKILL);
	ck_assert_msg(running == 0, "the grade table did not finish in 170s");
}

START_TEST(hammer_presets_grade_as_the_table_says)
{
	static struct grid_run runs[GRID_PRESETS];
	static char msg[32768], said[16384];
	char path[512];
	json_t *table = json_load_file(testutil_path("tests/verify-grades.json", path, sizeof(path)), 0, NULL), *p;
	size_t n = 0, i;

	ck_assert_msg(table != NULL, "cannot read tests/verify-grades.json");
	json_array_foreach(json_object_get(table, "presets"), i, p) {
		ck_assert_uint_lt(n, GRID_PRESETS);
		memset(&runs[n], 0, sizeof(runs[n]));
		snprintf(runs[n].policy, sizeof(runs[n].policy), "%s", json_string_value(p));
		snprintf(runs[n].json, sizeof(runs[n].json), "/tmp/ratelab-grade-%d-%zu.json", (int)getpid(), n);
		snprintf(runs[n].err, sizeof(runs[n].err), "/tmp/ratelab-grade-%d-%zu.err", (int)getpid(), n);
		grid_argv(&runs[n], table);
		n++;
	}
	ck_assert_uint_eq(n, 7);
	ck_assert_uint_eq(json_object_size(json_object_get(table, "scenarios")), 30);
	grid_run(runs, n);
	msg[0] = said[0] = '\0';
	for (i = 0; i < n; i++)
		grid_check(&runs[i], table, msg, sizeof(msg), said, sizeof(said));
	/* A failed grade with commands killed at their timeout: what they were doing then (a client's own wait, or the kernel's). */
	if (msg[0] != '\0' && said[0] != '\0')
		fputs(said, stderr);
	for (i = 0; i < n; i++)
		for (size_t j = 0; runs[i].argv[j]; j++)
			free(runs[i].argv[j]);
	json_decref(table);
	/* Check drops a message over its 4 KiB and says only "early exit": the first 3000 bytes are shown. */
	ck_assert_msg(msg[0] == '\0', "%.3000s", msg);
}
END_TEST

/* Start `ratelab verify ARGS` with stdout to out_path and stderr to a socket (*err_fd, for testutil_raw_read_until); its
 * pid. */
static pid_t spawn_listening(const char *const *args, const char *out_path, int *err_fd)
{
	const char *argv[24];
	int fds[2];
	size_t n = 0;
	pid_t pid;

	argv[n++] = testutil_bin();
	for (size_t i = 0; args[i] && n < 23; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
	pid = fork();
	if (pid == 0) {
		int out = open(out_path, O_WRONLY | O_TRUNC);

		dup2(out, STDOUT_FILENO);
		dup2(fds[1], STDERR_FILENO);
		close(fds[0]);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(fds[1]);
	*err_fd = fds[0];
	return pid;
}

/* Read fd until a line holding "listening on http://"; the URL that follows it into url (bounded: 10 s). */
static void wait_listening(int fd, char *url, size_t len)
{
	char buf[2048];
	size_t n = testutil_raw_read_until(fd, buf, sizeof(buf) - 1, "\n", 10000);
	char *at;

	buf[n] = '\0';
	at = strstr(buf, "listening on ");
	ck_assert_msg(at && strchr(at, '\n'), "no listening line: '%s'", buf);
	snprintf(url, len, "%.*s", (int)(strchr(at, '\n') - at - 13), at + 13);
}

/* A python3 urllib client that honours Retry-After, three tries, as an app the test starts on its own. */
static const char URLLIB_CLIENT[] =
	"import sys, time, urllib.request, urllib.error\n"
	"for i in range(3):\n"
	"    try:\n"
	"        urllib.request.urlopen(sys.argv[1] + '/api', timeout=5).read()\n"
	"        sys.exit(0)\n"
	"    except urllib.error.HTTPError as e:\n"
	"        time.sleep(float(e.headers.get('Retry-After', '1')))\n"
	"sys.exit(1)\n";

/* URLLIB_CLIENT that prints the body of its 2xx. */
static const char URLLIB_CLIENT_PRINTS[] =
	"import sys, time, urllib.request, urllib.error\n"
	"for i in range(3):\n"
	"    try:\n"
	"        print(urllib.request.urlopen(sys.argv[1] + '/api', timeout=5).read().decode(), end='')\n"
	"        sys.exit(0)\n"
	"    except urllib.error.HTTPError as e:\n"
	"        time.sleep(float(e.headers.get('Retry-After', '1')))\n"
	"sys.exit(1)\n";

/*
 * --listen on port 0: verify prints the URL, a python3 app the test starts
 * meets the scenario there, and once it has been idle 3 s verify grades it.
 */
START_TEST(listen_grades_an_app_it_did_not_start)
{
	char out_path[] = "/tmp/ratelab-listen-XXXXXX", url[128], text[4096];
	static const char *const ARGS[] = { "verify", "--scenario", "retry-after-seconds", "--listen", "127.0.0.1:0",
		                            "--until-idle", "3s", "--timeout", "40s", NULL };
	int err_fd, st;
	pid_t verify, app;
	FILE *f;
	size_t n;

	temp_path(out_path);
	verify = spawn_listening(ARGS, out_path, &err_fd);
	wait_listening(err_fd, url, sizeof(url));
	ck_assert_msg(strncmp(url, "http://127.0.0.1:", 17) == 0, "%s", url);
	app = fork();
	if (app == 0) {
		execlp("python3", "python3", "-c", URLLIB_CLIENT, url, (char *)NULL);
		_exit(127);
	}
	ck_assert_int_eq(testutil_wait(app, 20000), 0);
	st = testutil_wait(verify, 20000);
	close(err_fd);
	f = fopen(out_path, "r");
	n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
	text[n] = '\0';
	if (f)
		fclose(f);
	unlink(out_path);
	ck_assert_msg(st == 0, "exit %d: %s", st, text);
	ck_assert_has(text, "scenario retry-after-seconds: 3 arrivals; served ");
	ck_assert_has(text, "s, until idle\n");
	ck_assert_has(text, "GET    127.0.0.1          /api -> 429  (asked to wait 2.000s)\n");
	ck_assert_has(text, "PASS  succeeds                 1 of 1 clients ended on a 2xx (seen from the server: no "
	                    "command)\n");
	ck_assert_has(text, "PASS  honours-retry-after      127.0.0.1: asked 2.000s, waited ");  /* 2 s + lag, within tolerance */
	ck_assert_has(text, "PASS  max-attempts<=3          attempts: 127.0.0.1=3\n");
}
END_TEST

/* SIGTERM ends serving and grades what came: here one curl that never retried. */
START_TEST(listen_ends_on_a_signal)
{
	char out_path[] = "/tmp/ratelab-listen-XXXXXX", url[128], text[4096];
	static const char *const ARGS[] = { "verify", "--scenario", "post-503,retry-after-seconds", "--listen",
		                            "127.0.0.1:0", "--timeout", "40s", NULL };
	int err_fd, st;
	long status = 0;
	pid_t verify;
	FILE *f;
	size_t n;

	temp_path(out_path);
	verify = spawn_listening(ARGS, out_path, &err_fd);
	wait_listening(err_fd, url, sizeof(url));
	ck_assert_has(url, "http://127.0.0.1:");
	ck_assert_int_eq(testutil_http("POST", url, "{}", &status, NULL, NULL), 0);
	ck_assert_int_eq(status, 503);
	kill(verify, SIGTERM);
	st = testutil_wait(verify, 20000);
	close(err_fd);
	f = fopen(out_path, "r");
	n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
	text[n] = '\0';
	if (f)
		fclose(f);
	unlink(out_path);
	ck_assert_msg(st == 1, "exit %d: %s", st, text);
	ck_assert_has(text, "post-503               POST   -        -       -        pass\n"
	                    "retry-after-seconds    GET    FAIL     FAIL    FAIL     -\n");
	ck_assert_has(text, "FAIL  retry-after-seconds succeeds: no request reached the server\n");
}
END_TEST

/* A python3 urllib client that retries a 429 at once, three tries: it does not honour Retry-After. */
static const char URLLIB_HASTY[] =
	"import sys, urllib.request, urllib.error\n"
	"for i in range(3):\n"
	"    try:\n"
	"        print(urllib.request.urlopen(sys.argv[1] + '/api', timeout=5).read().decode(), end='')\n"
	"        sys.exit(0)\n"
	"    except urllib.error.HTTPError as e:\n"
	"        pass\n"
	"sys.exit(1)\n";

/*
 * verify --listen --upstream URL, URL a `ratelab serve --limiter none`
 * (answers "ok"): run client (python3 source) against the listening URL, its
 * stdout into app_out; verify's stdout into text; returns verify's exit.
 */
static int listen_upstream(const char *client, const char *upstream, char *app_out, size_t app_len, char *text,
                           size_t len)
{
	char out_path[] = "/tmp/ratelab-listen-XXXXXX", url[256];
	const char *const args[] = { "verify", "--scenario", "retry-after-seconds", "--listen", "127.0.0.1:0",
		                     "--upstream", upstream, "--until-idle", "3s", "--timeout", "40s", NULL };
	int err_fd, st, fds[2];
	pid_t verify, pid;
	FILE *f;
	size_t n;

	temp_path(out_path);
	verify = spawn_listening(args, out_path, &err_fd);
	wait_listening(err_fd, url, sizeof(url));
	ck_assert_msg(strstr(url, ", passing its 2xx steps to ") != NULL, "%s", url);
	*strchr(url, ',') = '\0';
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
	if ((pid = fork()) == 0) {
		dup2(fds[1], STDOUT_FILENO);
		close(fds[0]);
		execlp("python3", "python3", "-c", client, url, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	n = testutil_raw_read(fds[0], app_out, app_len, 20000);
	app_out[n] = '\0';
	close(fds[0]);
	testutil_wait(pid, 20000);
	st = testutil_wait(verify, 20000);
	close(err_fd);
	f = fopen(out_path, "r");
	n = f ? fread(text, 1, len - 1, f) : 0;
	text[n] = '\0';
	if (f)
		fclose(f);
	unlink(out_path);
	return st;
}

/*
 * --listen with --upstream: the scenario's 429s come from the script, its
 * 200 is the real service's answer (the upstream counts exactly the one
 * request that passed), and what arrived is graded as without an upstream.
 */
START_TEST(listen_in_front_of_an_upstream)
{
	const char *up_args[] = { "--quiet", "--limiter", "none", NULL };
	struct test_server up;
	char app[256], text[4096];
	json_t *j;
	int st;

	ck_assert_int_eq(testutil_server_start(&up, up_args, 10000), 0);
	st = listen_upstream(URLLIB_CLIENT_PRINTS, up.url, app, sizeof(app), text, sizeof(text));
	ck_assert_msg(st == 0, "exit %d: %s", st, text);
	ck_assert_str_eq(app, "ok\n");
	ck_assert_has(text, "scenario retry-after-seconds: 3 arrivals; served ");
	ck_assert_has(text, "GET    127.0.0.1          /api -> 429  (asked to wait 2.000s)\n");
	ck_assert_has(text, "GET    127.0.0.1          /api -> 200 from the upstream\n");
	ck_assert_has(text, "PASS  succeeds                 1 of 1 clients ended on a 2xx");
	ck_assert_has(text, "PASS  honours-retry-after      127.0.0.1: asked 2.000s, waited ");
	ck_assert_has(text, "PASS  max-attempts<=3          attempts: 127.0.0.1=3\n");

	st = listen_upstream(URLLIB_HASTY, up.url, app, sizeof(app), text, sizeof(text));
	ck_assert_msg(st == 1, "exit %d: %s", st, text);
	ck_assert_str_eq(app, "ok\n");
	ck_assert_has(text, "scenario retry-after-seconds: 3 arrivals; served ");
	ck_assert_has(text, "PASS  succeeds                 1 of 1 clients ended on a 2xx");
	ck_assert_has(text, "FAIL  honours-retry-after      ");
	ck_assert_has(text, "[2 of 2 retries too early");
	ck_assert_has(text, "PASS  max-attempts<=3          attempts: 127.0.0.1=3\n");
	/* One request of each run reached the upstream (each app printed its "ok"): the 429s never did. */
	j = testutil_stats(&up);
	ck_assert_int_eq(testutil_jint(j, "requests", NULL), 2);
	json_decref(j);
	ck_assert_int_eq(testutil_server_stop(&up, 5000), 0);
}
END_TEST

Suite *verify_suite(void)
{
	Suite *s = suite_create("verify");
	TCase *cli = tcase_create("cli");
	TCase *clients = tcase_create("clients");
	TCase *grid = tcase_create("grades");

	tcase_add_test(cli, usage_errors_exit_2);
	tcase_add_test(cli, help_and_list_go_to_stdout);
	tcase_add_test(cli, timeout_kills_the_command);
	tcase_add_test(cli, never_reaching_the_server_exits_4);
	tcase_add_test(cli, stopped_before_reaching_the_server_is_graded);
	tcase_add_test(cli, proxy_variables_are_not_inherited);
	tcase_add_test(cli, only_the_commands_requests_count);
	tcase_add_test(cli, cannot_run_exits_4);
	tcase_add_test(cli, listen_on_a_taken_port_exits_4);
	tcase_add_test(cli, inline_script_scenario);
	tcase_add_test(cli, detached_processes_are_stopped);
	tcase_add_test(cli, thousand_detached_children_are_stopped);
	tcase_add_loop_test(cli, counts_go_on_past_the_log, 0, (int)(sizeof(PAST_THE_LOG) / sizeof(PAST_THE_LOG[0])));
	tcase_add_test(cli, nothing_observed_is_not_a_pass);
	tcase_add_test(cli, skip_leaves_scenarios_out);
	tcase_add_test(cli, junit_for_ci);
	tcase_add_test(cli, all_scenarios_one_table);
	tcase_set_timeout(cli, 90);
	suite_add_tcase(s, cli);
	tcase_add_test(clients, curl_with_retry_passes);
	tcase_add_test(clients, curl_loop_fails_with_exit_1);
	tcase_add_test(clients, jitter_across_clients);
	tcase_add_test(clients, date_wait_on_a_held_answer);
	tcase_add_test(clients, post_resent_after_a_timeout_fails);
	tcase_add_test(clients, new_key_per_attempt_fails);
	tcase_add_test(clients, short_timeout_is_not_a_failure);
	tcase_add_test(clients, constant_delay_does_not_back_off);
	tcase_add_test(clients, too_long_wait_ends_when_settled);
	tcase_add_test(clients, ratelimit_only_wait);
	tcase_add_test(clients, every_dialect_honoured_by_a_client_that_reads_it);
	tcase_add_test(clients, not_observed_is_not_a_pass);
	tcase_add_test(clients, strict_fails_what_was_not_observed);
	tcase_add_test(clients, killed_client_attempts_are_a_lower_bound);
	tcase_add_test(clients, every_named_scenario_is_graded);
	tcase_add_test(clients, baseline_fails_only_on_what_got_worse);
	tcase_add_test(clients, listen_grades_an_app_it_did_not_start);
	tcase_add_test(clients, listen_ends_on_a_signal);
	tcase_add_test(clients, listen_in_front_of_an_upstream);
	tcase_set_timeout(clients, 60);
	suite_add_tcase(s, clients);
	tcase_add_test(grid, hammer_presets_grade_as_the_table_says);
	tcase_set_timeout(grid, 380);
	suite_add_tcase(s, grid);
	return s;
}
