/*
 * Runs in virtual time (--sim): exact, whatever the thread count, and a
 * policy's arithmetic counted exactly against serve's own limiter and
 * capacity model.  No server, no sockets: the binary runs alone.
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/harness/testutil.h"

#define RUN_MS 60000

/* The whole of file path, malloc'd (NUL-terminated); *len gets its size. */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	ck_assert_msg(f != NULL, "cannot open %s", path);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	ck_assert_int_ge(n, 1);
	rewind(f);
	buf = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* Run ratelab args (exit 0 wanted). */
static void run_ok(const char *const *args)
{
	struct test_run r;

	ck_assert_int_eq(testutil_run(&r, args, NULL, RUN_MS), 0);
	ck_assert_msg(r.status == 0, "%s exit %d: %s", args[0], r.status, r.err);
	testutil_run_free(&r);
}

static void assert_same_file(const char *a, const char *b)
{
	size_t na, nb;
	char *x = slurp(a, &na), *y = slurp(b, &nb);

	ck_assert_msg(na == nb && memcmp(x, y, na) == 0, "%s and %s differ", a, b);
	free(x);
	free(y);
}

/* The same seed and flags give the same bytes, with 1 thread or 4: --json, --timeline and --plot. */
START_TEST(hammer_sim_is_exact)
{
	char dir[] = "/tmp/ratelab-sim-XXXXXX", out[2][3][128];
	const char *threads[2] = { "1", "4" };

	ck_assert_ptr_nonnull(mkdtemp(dir));
	for (int i = 0; i < 2; i++) {
		snprintf(out[i][0], sizeof(out[i][0]), "%s/%d.json", dir, i);
		snprintf(out[i][1], sizeof(out[i][1]), "%s/%d.csv", dir, i);
		snprintf(out[i][2], sizeof(out[i][2]), "%s/%d.svg", dir, i);
		const char *args[] = { "hammer", "--sim", "--serve", "--limiter gcra --limit 20 --burst 5",
		                       "--policy", "lab", "--concurrency", "300", "--requests", "2000",
		                       "--sim-delay", "2ms±1ms", "--sim-loss", "0.01", "--timeout", "1s",
		                       "--seed", "42", "--threads", threads[i], "--quiet",
		                       "--json", out[i][0], "--timeline", out[i][1], "--plot", out[i][2], NULL };

		run_ok(args);
	}
	for (int k = 0; k < 3; k++)
		assert_same_file(out[0][k], out[1][k]);
	for (int i = 0; i < 2; i++)
		for (int k = 0; k < 3; k++)
			unlink(out[i][k]);
	rmdir(dir);
}
END_TEST

/* A herd's report in virtual time is the same bytes twice over: the results, the CSVs, the page. */
START_TEST(herd_sim_is_exact)
{
	static const char *const files[] = { "results.json", "report.html", "full.csv", "decorrelated.csv" };
	char dir[2][64], path[2][160], cmd[200];

	for (int i = 0; i < 2; i++) {
		snprintf(dir[i], sizeof(dir[i]), "/tmp/ratelab-simherd-XXXXXX");
		ck_assert_ptr_nonnull(mkdtemp(dir[i]));
		const char *args[] = { "herd", "--sim", "--clients", "500", "--policies", "full,decorrelated",
		                       "--sim-delay", "1ms±300us", "--seed", "9", "--report", dir[i], NULL };

		run_ok(args);
	}
	for (size_t k = 0; k < sizeof(files) / sizeof(files[0]); k++) {
		for (int i = 0; i < 2; i++)
			snprintf(path[i], sizeof(path[i]), "%s/%s", dir[i], files[k]);
		assert_same_file(path[0], path[1]);
	}
	for (int i = 0; i < 2; i++) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir[i]);
		ck_assert_int_eq(system(cmd), 0);
	}
}
END_TEST

/* hammer --sim --json - ARGS: the JSON it prints. */
static json_t *sim_json(const char *const *args, struct test_run *r)
{
	json_t *j = testutil_run_json(r, args, NULL, RUN_MS);

	ck_assert_msg(j != NULL, "no JSON: %s", r->err);
	ck_assert_msg(r->status == 0, "exit %d: %s", r->status, r->err);
	return j;
}

/*
 * One --sim hammer run against serve's own code, counted exactly: its flags,
 * the JSON figures it gives (at most four), and a line of its summary (or NULL).
 * token bucket: 5 per second, 40 requests at once without retries, 5 admitted.
 * capacity: 2 workers and a queue of 2 meet 10 clients at one instant; 4 are
 * served and 6 shed with 503; with --retry (the lab preset) the 503s are
 * retried until all 10 are served.  faults: serve's --faults in the model:
 * statuses replace admitted answers, a reset is a transport error.
 */
static const struct sim_count {
	const char *name;
	const char *args[20];
	struct { const char *k1, *k2; long long want; } figures[4];
	const char *summary;
} SIM_COUNTS[] = {
	{ "token bucket",
	  { "hammer", "--sim", "--serve", "--limiter token-bucket --limit 5", "--no-retry", "--concurrency", "10",
	    "--requests", "40", "--seed", "3", "--json", "-", NULL },
	  { { "statuses", "200", 5 }, { "statuses", "429", 35 }, { "calls", NULL, 40 } },
	  "40 requests in 0.00s" },
	{ "capacity",
	  { "hammer", "--sim", "--serve", "--limiter none --capacity workers=2,service=10ms,queue=fifo:2", "--no-retry",
	    "--start", "herd", "--concurrency", "10", "--requests", "10", "--seed", "3", "--json", "-", NULL },
	  { { "statuses", "200", 4 }, { "statuses", "503", 6 } },
	  NULL },
	{ "capacity, retried",
	  { "hammer", "--sim", "--serve", "--limiter none --capacity workers=2,service=10ms,queue=fifo:2", "--retry",
	    "--start", "herd", "--concurrency", "10", "--requests", "10", "--seed", "3", "--json", "-", NULL },
	  { { "statuses", "200", 10 }, { "retries", NULL, 6 } },
	  NULL },
	{ "faults",
	  { "hammer", "--sim", "--serve", "--limiter none --faults 503:20,reset:10,delay=50ms:20", "--no-retry",
	    "--concurrency", "10", "--requests", "1000", "--seed", "5", "--json", "-", NULL },
	  { { "statuses", "200", 712 }, { "statuses", "503", 184 }, { "errors", "reset", 104 } },
	  "latency p50 200us  p90 50ms" },
};

/* One row of SIM_COUNTS (Check's loop index _i). */
START_TEST(sim_counts)
{
	const struct sim_count *c = &SIM_COUNTS[_i];
	struct test_run r;
	json_t *j = sim_json(c->args, &r);

	for (size_t k = 0; k < 4 && c->figures[k].k1 != NULL; k++)
		ck_assert_msg(testutil_jint(j, c->figures[k].k1, c->figures[k].k2) == c->figures[k].want,
		              "%s: %s.%s is %lld, not %lld", c->name, c->figures[k].k1,
		              c->figures[k].k2 ? c->figures[k].k2 : "", testutil_jint(j, c->figures[k].k1, c->figures[k].k2),
		              c->figures[k].want);
	ck_assert_str_eq(testutil_jstr(j, "config", "transport"), "sim");
	if (c->summary != NULL)
		ck_assert_msg(strstr(r.err, c->summary) != NULL, "%s: no '%s' in %s", c->name, c->summary, r.err);
	json_decref(j);
	testutil_run_free(&r);
}
END_TEST

/* Every message lost: each call times out after --timeout, in virtual time; no answer is exit 1. */
START_TEST(loss_times_out)
{
	static const char *const args[] = { "hammer", "--sim", "--sim-loss", "1", "--timeout", "1s", "--no-retry",
	                                    "--concurrency", "4", "--requests", "8", "--json", "-", NULL };
	struct test_run r;
	json_t *j = testutil_run_json(&r, args, NULL, RUN_MS);

	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq(r.status, 1);
	ck_assert_int_eq(testutil_jint(j, "errors", "timeout"), 8);
	ck_assert_int_eq(testutil_jint(j, "answered", NULL), 0);
	ck_assert_ptr_nonnull(strstr(r.err, "8 requests in 2.00s"));
	json_decref(j);
	testutil_run_free(&r);
}
END_TEST

/* --compare: each policy on the in-process server, then in virtual time, then the gap, per column. */
START_TEST(herd_compare_both_ways)
{
	static const char *const args[] = { "herd", "--compare", "--clients", "50", "--policies", "none,full", NULL };
	struct test_run r;
	const char *none, *full;

	ck_assert_int_eq(testutil_run(&r, args, NULL, RUN_MS), 0);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	none = strstr(r.out, "\nnone ");
	full = strstr(r.out, "\nfull ");
	ck_assert_msg(none != NULL && full != NULL && none < full, "%s", r.out);
	/* the burst of 20 admits 20 at once; the other 30 retry 9 times each within the same instant */
	ck_assert_ptr_nonnull(strstr(none, "\n  virtual           20      30     320     6.40     200us         320            270\n  gap "));
	ck_assert_ptr_nonnull(strstr(full, "\n  virtual           50       0      89     1.78     1.53s          58             10\n  gap "));
	testutil_run_free(&r);
}
END_TEST

/* storm --compare: the real storm's row, then the same storm in virtual time (exact), then the gap. */
START_TEST(storm_compare_both_ways)
{
	static const char *const args[] = { "storm", "--compare", "--policies", "naive", "--duration", "4s",
	                                    "--trigger", "25%@1s+1s", NULL };
	struct test_run r;
	const char *real;

	ck_assert_int_eq(testutil_run(&r, args, NULL, RUN_MS), 0);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	real = strstr(r.out, "\nnaive ");
	ck_assert_msg(real != NULL, "%s", r.out);
	ck_assert_ptr_nonnull(strstr(real, "\n  virtual               198.0     99.0    250.5      301.0       0.0s      1.01"
	                                   "     0.1s    1%\n  gap "));
	testutil_run_free(&r);
}
END_TEST

/*
 * storm --sim --sweep: naive retries stay down after a 2 s trigger at half
 * the capacity, where a retry budget comes back in 1.3 s; at 90 % neither
 * does.  Every cell exact; the grid's CSV, JSON and SVG written.
 */
START_TEST(storm_sweep_grid)
{
	char dir[] = "/tmp/ratelab-sweep-XXXXXX", path[128], cmd[160];
	const char *args[] = { "storm", "--sim", "--sweep", "--sweep-loads", "50,90", "--sweep-lengths", "500ms,2s",
	                       "--policies", "naive,budget", "--report", dir, NULL };
	static const char *const files[] = { "sweep.csv", "sweep.json", "sweep.svg" };
	struct test_run r;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(testutil_run(&r, args, NULL, RUN_MS), 0);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_ptr_nonnull(strstr(r.out, "naive: recovered after (from the trigger's end; no: not within 10s)\n"
	                                    "load \\ trig    500ms   2.00s\n"
	                                    "        50%     0.0s      no\n"
	                                    "        90%     0.0s      no\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "budget: recovered after (from the trigger's end; no: not within 10s)\n"
	                                    "load \\ trig    500ms   2.00s\n"
	                                    "        50%     0.0s    1.3s\n"
	                                    "        90%     0.0s      no\n"));
	for (size_t i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		ck_assert_msg(access(path, R_OK) == 0, "no %s", path);
	}
	snprintf(path, sizeof(path), "%s/sweep.csv", dir);
	{
		size_t n;
		char *csv = slurp(path, &n);

		ck_assert_ptr_nonnull(strstr(csv, "\nbudget,0.50,2.000,true,1.3,"));
		ck_assert_ptr_nonnull(strstr(csv, "\nnaive,0.90,2.000,false,,"));
		free(csv);
	}
	testutil_run_free(&r);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(bad_flags)
{
	static const struct { const char *args[8]; const char *err; } cases[] = {
		{ { "hammer", "--sim", "--serve", "--limit x", NULL },
		  "ratelab hammer: --serve: --limit: 'x' is not a number from 1 to 4294967295\n" },
		{ { "hammer", "--sim", "--sim-loss", "2", NULL },
		  "ratelab hammer: --sim-loss: '2' is not a number from 0 to 1\n" },
		{ { "hammer", "--sim", "--sim-delay", "5", NULL },
		  "ratelab hammer: --sim-delay: '5' needs a unit, e.g. 5ms or 5s (ns, us, ms, s, m, h, d)\n" },
		{ { "hammer", "--sim", "--serve", "--query-faults", NULL },
		  "ratelab hammer: --serve: --sim does not model --query-faults (give the faults to --faults)\n" },
		{ { "hammer", "--sim", "--serve", "--upstream http://127.0.0.1:1/", NULL },
		  "ratelab hammer: --serve: --sim does not model an --upstream (its answers are the model's)\n" },
		{ { "hammer", "--serve", "--limit 3", NULL },
		  "ratelab hammer: --serve configures the model of --sim: give --sim too\n" },
		{ { "herd", "--sim", "--url", "http://127.0.0.1:1/", NULL },
		  "ratelab herd: --sim models its own server: no --url or --join\n" },
		{ { "storm", "--compare", "--sim", NULL },
		  "ratelab storm: --compare runs each storm both ways: no --sim or --sweep\n" },
		{ { "storm", "--sweep", NULL },
		  "ratelab storm: --sweep needs --sim and a --trigger (and no --control)\n" },
		{ { "herd", "--compare", "--sim", NULL },
		  "ratelab herd: --compare runs its own server both ways: no --sim, --url or --join\n" },
		{ { "herd", "--clients", "100001", NULL },
		  "ratelab herd: --clients: '100001' is more than 100000 (up to 1000000 with --sim)\n" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct test_run r;

		ck_assert_int_eq(testutil_run(&r, cases[i].args, NULL, 10000), 0);
		ck_assert_int_eq(r.status, 2);
		ck_assert_str_eq(r.err, cases[i].err);
		testutil_run_free(&r);
	}
}
END_TEST

Suite *sim_suite(void)
{
	Suite *s = suite_create("sim");
	TCase *t = tcase_create("virtual time");

	tcase_add_test(t, hammer_sim_is_exact);
	tcase_add_test(t, herd_sim_is_exact);
	tcase_add_loop_test(t, sim_counts, 0, (int)(sizeof(SIM_COUNTS) / sizeof(SIM_COUNTS[0])));
	tcase_add_test(t, loss_times_out);
	tcase_add_test(t, herd_compare_both_ways);
	tcase_add_test(t, storm_compare_both_ways);
	tcase_add_test(t, storm_sweep_grid);
	tcase_add_test(t, bad_flags);
	tcase_set_timeout(t, 120);
	suite_add_tcase(s, t);
	return s;
}
