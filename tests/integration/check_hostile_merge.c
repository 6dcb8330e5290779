/*
 * Hostile result files against `ratelab merge`: garbage, counts that
 * overflow when summed, histogram buckets that wrap, and files far larger
 * than any run writes.  A file that does not read is left out like a node
 * without a result (named, the merge incomplete, --expect fails with 3),
 * everything else is merged and written, and memory stays bounded whatever
 * a file claims.  The good result comes from a real serve and hammer.
 */
#include <check.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/harness/testutil.h"

/*
 * Peak RSS is asserted in plain builds only: a sanitizer's shadow memory and
 * quarantine (and the test's own freed buffers, still resident in the forked
 * child before its exec) make it meaningless there.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RSS_CHECKED 0
#else
#define RSS_CHECKED 1
#endif

/* A real result: serve, then hammer --requests 20 --json DIR/good.json (10 of them 200, 10 429). */
static void good_result(const char *dir, char *path, size_t len)
{
	struct test_server s;
	struct test_run r;

	ck_assert_int_eq(testutil_server_start(&s, (const char *[]){ "--limit", "10", "--window", "1m", NULL }, 5000), 0);
	snprintf(path, len, "%s/good.json", dir);
	testutil_run(&r, (const char *[]){ "hammer", s.url, "--requests", "20", "--concurrency", "1", "--json", path,
	                                   NULL }, NULL, 20000);
	ck_assert_msg(r.status == 0, "hammer: exit %d: %s", r.status, r.err);
	testutil_run_free(&r);
	testutil_server_stop(&s, 5000);
}

/* A copy of the good result at dir/name with raw's member `key` set to v. */
static void planted(const char *good, const char *dir, const char *name, const char *key, json_t *v, char *out,
                    size_t len)
{
	json_t *j = json_load_file(good, 0, NULL);

	ck_assert_ptr_nonnull(j);
	json_object_set_new(json_object_get(j, "raw"), key, v);
	snprintf(out, len, "%s/%s", dir, name);
	ck_assert_int_eq(json_dump_file(j, out, JSON_COMPACT), 0);
	json_decref(j);
}

static void remove_dir(const char *dir)
{
	char cmd[200];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static json_t *load(const char *path)
{
	json_t *j = json_load_file(path, 0, NULL);

	ck_assert_msg(j != NULL, "%s is not JSON", path);
	return j;
}

/* Garbage, counts that sum past 2^63 and buckets that wrap: each left out and named, the good one merged. */
START_TEST(corrupt_files_left_out)
{
	char dir[] = "/tmp/ratelab-hmerge-XXXXXX", good[128], garbage[128], big[128], wrap[128], neg[128], out[160];
	struct test_run r;
	json_t *j, *raw;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	good_result(dir, good, sizeof(good));
	snprintf(garbage, sizeof(garbage), "%s/garbage.json", dir);
	write_text(garbage, "garbage{{");
	/* two of these made 9223372036854775805 requests (and negative ones in --json) */
	planted(good, dir, "big.json", "requests", json_integer(4611686018427387903LL), big, sizeof(big));
	/* two buckets of 2^63-1 and one of 2: 2^64 wraps to 0 = the stated count */
	planted(good, dir, "wrap.json", "latency",
	        json_pack("{s:I,s:I,s:I,s:f,s:[[I,I],[I,I],[I,I]]}", "count", (json_int_t)0, "min", (json_int_t)1,
	                  "max", (json_int_t)2, "sum", 0.0, "buckets", (json_int_t)1, (json_int_t)INT64_MAX,
	                  (json_int_t)2, (json_int_t)INT64_MAX, (json_int_t)3, (json_int_t)2), wrap, sizeof(wrap));
	planted(good, dir, "neg.json", "statuses", json_pack("{s:I}", "200", (json_int_t)-5), neg, sizeof(neg));
	snprintf(out, sizeof(out), "%s/out.json", dir);
	testutil_run(&r, (const char *[]){ "merge", good, garbage, big, wrap, neg, big, "--json", out, "--expect",
	                                   "requests>=1", NULL }, NULL, 20000);
	ck_assert_msg(r.status == 3, "exit %d: %s%s", r.status, r.out, r.err);
	ck_assert_msg(strstr(r.out, "6 runs (1 merged, the result is incomplete)") != NULL, "%s", r.out);
	ck_assert_msg(strstr(r.out, "20 requests in ") != NULL, "%s", r.out);
	ck_assert_msg(strstr(r.out, "garbage.json: not JSON") && strstr(r.out, "big.json: raw result: requests") &&
	              strstr(r.out, "wrap.json: raw result: latency") && strstr(r.out, "neg.json: raw result: statuses"),
	              "%s", r.out);
	ck_assert_msg(testutil_one_line(r.err) && strstr(r.err, "expect failed: the result is incomplete"), "%s", r.err);
	testutil_run_free(&r);
	j = load(out);
	raw = json_object_get(j, "raw");
	ck_assert_int_eq(json_integer_value(json_object_get(raw, "requests")), 20);
	ck_assert_int_eq(testutil_jint(j, "requests", NULL), 20);
	ck_assert(json_is_false(json_object_get(json_object_get(j, "join"), "complete")));
	ck_assert_int_eq(json_array_size(json_object_get(json_object_get(j, "join"), "missing")), 5);
	json_decref(j);
	/* without --expect the incomplete merge is written and exits 0 */
	testutil_run(&r, (const char *[]){ "merge", good, big, NULL }, NULL, 20000);
	ck_assert_msg(r.status == 0 && strstr(r.out, "2 runs (1 merged, the result is incomplete)"), "exit %d: %s%s",
	              r.status, r.out, r.err);
	testutil_run_free(&r);
	/* nothing that reads: nothing to merge, a usage error as before */
	testutil_run(&r, (const char *[]){ "merge", garbage, big, NULL }, NULL, 20000);
	ck_assert_msg(r.status == 2 && testutil_one_line(r.err) && strstr(r.err, "ratelab merge: "), "exit %d: %s",
	              r.status, r.err);
	testutil_run_free(&r);
	remove_dir(dir);
}
END_TEST

/* Run `ratelab merge ARGS...` quietly; its exit status and its peak RSS in KB. */
static int merge_rss(const char *const *args, long *maxrss_kb)
{
	const char *argv[16] = { testutil_bin() };
	struct rusage ru;
	struct timespec pause = { 0, 5 * 1000 * 1000 };
	pid_t pid;
	int st = 0, n = 1;

	while (args[n - 1] != NULL && n < 15) {
		argv[n] = args[n - 1];
		n++;
	}
	argv[n] = NULL;
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		freopen("/dev/null", "w", stdout);
		freopen("/dev/null", "w", stderr);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	/* bounded: 30 s of 5 ms polls */
	for (int i = 0; i < 6000; i++) {
		if (wait4(pid, &st, WNOHANG, &ru) == pid) {
			*maxrss_kb = ru.ru_maxrss;
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		}
		nanosleep(&pause, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	ck_abort_msg("merge did not end within 30 s");
	return -1;
}

/* A file of n timeline rows [0,0,0,0] (10 bytes each) around the good result's members. */
static void rows_file(const char *good, const char *path, long n)
{
	json_t *j = json_load_file(good, 0, NULL), *tl;
	char *text, *cut;
	FILE *f;

	ck_assert_ptr_nonnull(j);
	tl = json_object_get(json_object_get(j, "raw"), "timeline");
	json_object_set_new(tl, "codes", json_array());
	json_object_set_new(tl, "rows", json_string("ROWS"));
	text = json_dumps(j, JSON_COMPACT);
	cut = strstr(text, "\"ROWS\"");
	ck_assert_ptr_nonnull(cut);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fwrite(text, 1, (size_t)(cut - text), f);
	fputc('[', f);
	for (long i = 0; i < n; i++)
		fputs(i ? ",[0,0,0,0]" : "[0,0,0,0]", f);
	fputc(']', f);
	fputs(cut + 6, f);
	fclose(f);
	free(text);
	json_decref(j);
}

/*
 * A 42 MB file and one of 7 MB in 3.5 million values are refused before
 * they are parsed (the first took 1.1 GB); the largest file that is read
 * (just under a million values) stays under 200 MB.
 */
START_TEST(huge_files_bounded)
{
	char dir[] = "/tmp/ratelab-hmerge-XXXXXX", good[128], huge[128], dense[128], most[128];
	long rss = 0;
	int rc;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	good_result(dir, good, sizeof(good));
	snprintf(huge, sizeof(huge), "%s/huge.json", dir);
	snprintf(dense, sizeof(dense), "%s/dense.json", dir);
	snprintf(most, sizeof(most), "%s/most.json", dir);
	rows_file(good, huge, 4200000);
	rows_file(good, dense, 700000);
	rows_file(good, most, 199000);
	rc = merge_rss((const char *[]){ "merge", good, huge, "--expect", "requests>=1", NULL }, &rss);
	ck_assert_msg(rc == 3 && (!RSS_CHECKED || rss < 64 * 1024), "42 MB file: exit %d, %ld KB", rc, rss);
	rc = merge_rss((const char *[]){ "merge", good, dense, "--expect", "requests>=1", NULL }, &rss);
	ck_assert_msg(rc == 3 && (!RSS_CHECKED || rss < 64 * 1024), "2.8M values: exit %d, %ld KB", rc, rss);
	rc = merge_rss((const char *[]){ "merge", good, most, "--expect", "requests>=1", NULL }, &rss);
	ck_assert_msg(rc == 0 && (!RSS_CHECKED || rss < 200 * 1024), "a million values: exit %d, %ld KB", rc, rss);
	remove_dir(dir);
}
END_TEST

Suite *hostile_merge_suite(void)
{
	Suite *s = suite_create("hostile_merge");
	TCase *tc = tcase_create("files");

	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, corrupt_files_left_out);
	tcase_add_test(tc, huge_files_bounded);
	suite_add_tcase(s, tc);
	return s;
}
