/*
 * A hostile Redis against `hammer --join`, `merge redis://` and `serve
 * --store redis://`: replies of unexpected shapes from a fake RESP server
 * (tests/harness/fake_redis.py, a real process on 127.0.0.1), and planted
 * keys in a real redis-server: a start time far ahead, a node result that
 * does not read, counts that overflow, a result far larger than any run
 * writes, and junk in limiter keys.  Nothing crashes, hangs or is lost:
 * each gets a one-line refusal, a merge marked incomplete, or a key reset.
 */
#include <check.h>
#include <hiredis/hiredis.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hammer/result_codec.h"
#include "hammer/result_text.h"
#include "tests/harness/redis_proc.h"
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

static struct redis_proc real;

static void real_up(void)
{
	if (!redis_proc_available() || redis_proc_start(&real, 0) < 0)
		redis_proc_stop(&real);
}

static void real_down(void)
{
	redis_proc_stop(&real);
}

static redisContext *real_open(void)
{
	struct timeval tv = { .tv_sec = 2, .tv_usec = 0 };
	redisContext *c;

	ck_assert_msg(real.pid > 0, "redis-server is missing (scripts/install-deps failed) or did not start");
	c = redisConnectWithTimeout("127.0.0.1", real.port, tv);
	ck_assert_msg(c != NULL && !c->err, "cannot connect to redis");
	redisSetTimeout(c, tv);
	return c;
}

/* One command on c that must not fail; its reply (caller frees). */
static redisReply *must(redisContext *c, redisReply *r)
{
	ck_assert_msg(r != NULL && r->type != REDIS_REPLY_ERROR, "redis: %s", r ? r->str : c->errstr);
	return r;
}

/* The integer value of key (0 when absent). */
static long long real_int(redisContext *c, const char *key)
{
	redisReply *r = must(c, redisCommand(c, "GET %s", key));
	long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;

	freeReplyObject(r);
	return v;
}

/* ---- replies of unexpected shapes ---- */

/* hammer --join against a fake whose TIME answers `reply`: exit 4 and one line naming TIME, never a crash. */
static void time_shape(const char *reply)
{
	struct redis_proc fake;
	struct test_run r;
	char url[96], over[96];

	snprintf(over, sizeof(over), "TIME=%s", reply);
	ck_assert_int_eq(fake_redis_start(&fake, (const char *[]){ over, NULL }), 0);
	snprintf(url, sizeof(url), "%s/shape", fake.url);
	testutil_run(&r, (const char *[]){ "hammer", "http://127.0.0.1:9/", "--join", url, "--nodes", "1",
	                                   "--join-timeout", "2s", "--requests", "1", NULL }, NULL, 20000);
	ck_assert_msg(r.status == 4 && testutil_one_line(r.err) && strstr(r.err, "TIME"), "TIME %s: exit %d: %s", reply,
	              r.status, r.err);
	testutil_run_free(&r);
	redis_proc_stop(&fake);
}

/* TIME as an integer, nil, a nested array, two integers, words, three elements (the last two crashed with SIGSEGV). */
START_TEST(join_time_shapes)
{
	time_shape(":5\\r\\n");
	time_shape("$-1\\r\\n");
	time_shape("*2\\r\\n*1\\r\\n:1\\r\\n:2\\r\\n");
	time_shape("*2\\r\\n:1\\r\\n:2\\r\\n");
	time_shape("*2\\r\\n$3\\r\\nabc\\r\\n$1\\r\\n0\\r\\n");
	time_shape("*2\\r\\n$-1\\r\\n$1\\r\\n0\\r\\n");
}
END_TEST

/* The run's keys and the nodes' results of unexpected types: merge redis:// names them, exits 4, never crashes. */
START_TEST(merge_reply_shapes)
{
	struct redis_proc fake;
	struct test_run r;
	char url[96];

	ck_assert_int_eq(fake_redis_start(&fake, (const char *[]){ "GET:ratelab:join:m:nodes=:2\\r\\n",
	                                                           "STRLEN=:10\\r\\n", "GETRANGE=*1\\r\\n:1\\r\\n",
	                                                           NULL }), 0);
	snprintf(url, sizeof(url), "%s/m", fake.url);
	testutil_run(&r, (const char *[]){ "merge", url, "--timeout", "2s", NULL }, NULL, 20000);
	ck_assert_msg(r.status == 4 && testutil_one_line(r.err) && strstr(r.err, "no node wrote a result (node 0 of 2 "
	              "wrote a result that does not read: its key is not a string)"), "exit %d: %s", r.status, r.err);
	testutil_run_free(&r);
	redis_proc_stop(&fake);
	/* the run's N as an array: no such run */
	ck_assert_int_eq(fake_redis_start(&fake, (const char *[]){ "GET=*1\\r\\n$1\\r\\n2\\r\\n", NULL }), 0);
	snprintf(url, sizeof(url), "%s/m", fake.url);
	testutil_run(&r, (const char *[]){ "merge", url, "--timeout", "2s", NULL }, NULL, 20000);
	ck_assert_msg(r.status == 4 && testutil_one_line(r.err) && strstr(r.err, "no such run"), "exit %d: %s",
	              r.status, r.err);
	testutil_run_free(&r);
	redis_proc_stop(&fake);
}
END_TEST

/* serve --store on a fake whose SCAN (and script) answer `scan` (and `eval`): /reset and requests leave it up. */
static void store_shape(const char *scan, const char *eval, long want)
{
	char o1[128], o2[256], reset[96], target[96];
	struct redis_proc fake;
	struct test_server s;
	long status = 0;

	snprintf(o1, sizeof(o1), "SCAN=%s", scan);
	snprintf(o2, sizeof(o2), "EVALSHA=%s", eval);
	ck_assert_int_eq(fake_redis_start(&fake, (const char *[]){ o1, o2, NULL }), 0);
	ck_assert_int_eq(testutil_server_start(&s, (const char *[]){ "--store", fake.url, "--store-failure", "closed",
	                                                             "--quiet", NULL }, 5000), 0);
	snprintf(reset, sizeof(reset), "%s/reset", s.url);
	snprintf(target, sizeof(target), "%s/x", s.url);
	ck_assert_int_eq(testutil_http("POST", reset, NULL, &status, NULL, NULL), 0);
	ck_assert_int_eq(status, 200);
	ck_assert_int_eq(testutil_http("GET", target, NULL, &status, NULL, NULL), 0);
	ck_assert_msg(status == want, "EVALSHA %s: %ld, not %ld", eval, status, want);
	ck_assert_int_eq(testutil_server_stop(&s, 5000), 0);
	redis_proc_stop(&fake);
}

/* SCAN's cursor as an integer (killed serve on POST /reset), keys not an array, a key an array; odd script replies. */
START_TEST(store_reply_shapes)
{
	static const char *const ok8 = "*8\\r\\n:1\\r\\n:0\\r\\n:4\\r\\n:5\\r\\n:1000000000\\r\\n:0\\r\\n:0\\r\\n:0\\r\\n";

	store_shape("*2\\r\\n:0\\r\\n*0\\r\\n", ok8, 200);
	store_shape("*2\\r\\n$1\\r\\n0\\r\\n:5\\r\\n", ok8, 200);
	store_shape("*2\\r\\n$1\\r\\n0\\r\\n*1\\r\\n*0\\r\\n", ok8, 200);
	store_shape("*1\\r\\n$1\\r\\n0\\r\\n", ok8, 200);
	/* a script reply that is not 8 or 9 integers fails the decision: closed, 503 */
	store_shape("*2\\r\\n$1\\r\\n0\\r\\n*0\\r\\n", "*7\\r\\n*1\\r\\n:1\\r\\n:0\\r\\n:4\\r\\n:5\\r\\n:1\\r\\n:0\\r\\n:0\\r\\n", 503);
	store_shape("*2\\r\\n$1\\r\\n0\\r\\n*0\\r\\n", "$-1\\r\\n", 503);
	store_shape("*2\\r\\n$1\\r\\n0\\r\\n*0\\r\\n", "*7\\r\\n$1\\r\\n1\\r\\n:0\\r\\n:4\\r\\n:5\\r\\n:1\\r\\n:0\\r\\n:0\\r\\n", 503);
	store_shape("*2\\r\\n$1\\r\\n0\\r\\n*0\\r\\n", "*8\\r\\n:1\\r\\n:0\\r\\n:4\\r\\n:5\\r\\n:1\\r\\n:0\\r\\n:99\\r\\n:0\\r\\n", 503);
	/* the 7 elements of an older script are not enough */
	store_shape("*2\\r\\n$1\\r\\n0\\r\\n*0\\r\\n", "*7\\r\\n:1\\r\\n:0\\r\\n:4\\r\\n:5\\r\\n:1\\r\\n:0\\r\\n:0\\r\\n", 503);
}
END_TEST

/*
 * An array as long as RESP allows (*2147483647): hiredis would calloc 16 GiB
 * for it and walk it when freed, seconds of a core.  serve refuses the reply
 * at once (503, closed) with its virtual memory far below that; a joined
 * hammer whose TIME answers it exits 4, in one line that names the cause.
 */
START_TEST(huge_array_refused)
{
	struct redis_proc fake;
	struct test_server s;
	struct test_run r;
	char target[96], url[96];
	long status = 0, peak;

	ck_assert_int_eq(fake_redis_start(&fake, (const char *[]){ "SCAN=*2\\r\\n$1\\r\\n0\\r\\n*0\\r\\n",
	                                                           "EVALSHA=*2147483647\\r\\n", NULL }), 0);
	ck_assert_int_eq(testutil_server_start(&s, (const char *[]){ "--store", fake.url, "--store-failure", "closed",
	                                                             "--quiet", NULL }, 5000), 0);
	snprintf(target, sizeof(target), "%s/x", s.url);
	ck_assert_int_eq(testutil_http("GET", target, NULL, &status, NULL, NULL), 0);
	ck_assert_int_eq(status, 503);
	peak = testutil_proc_kb(s.pid, "VmPeak");
	ck_assert_msg(!RSS_CHECKED || (peak > 0 && peak < 4L * 1024 * 1024), "serve's VmPeak %ld kB", peak);
	ck_assert_int_eq(testutil_server_stop(&s, 5000), 0);
	redis_proc_stop(&fake);

	ck_assert_int_eq(fake_redis_start(&fake, (const char *[]){ "TIME=*2147483647\\r\\n", NULL }), 0);
	snprintf(url, sizeof(url), "%s/shape", fake.url);
	testutil_run(&r, (const char *[]){ "hammer", "http://127.0.0.1:9/", "--join", url, "--nodes", "1",
	                                   "--join-timeout", "2s", "--requests", "1", NULL }, NULL, 20000);
	ck_assert_msg(r.status == 4 && testutil_one_line(r.err) &&
	              strstr(r.err, "stopped answering (a reply of over 65536 elements)"), "exit %d: %s", r.status, r.err);
	testutil_run_free(&r);
	redis_proc_stop(&fake);
}
END_TEST

/* ---- planted keys in a real Redis ---- */

/* Redis TIME in seconds. */
static long long redis_time_s(redisContext *c)
{
	redisReply *r = must(c, redisCommand(c, "TIME"));
	long long s = atoll(r->element[0]->str);

	freeReplyObject(r);
	return s;
}

/* A start an hour ahead, planted before the run: both nodes refuse it within the join timeout (they waited it out). */
START_TEST(join_far_start_refused)
{
	redisContext *c = real_open();
	char url[96], key[128], start[32];
	struct test_run r;
	pid_t other;
	int st;

	snprintf(url, sizeof(url), "%s/far-%d", real.url, (int)getpid());
	snprintf(key, sizeof(key), "ratelab:join:far-%d:start", (int)getpid());
	snprintf(start, sizeof(start), "%lld000000000", redis_time_s(c) + 3600);
	freeReplyObject(must(c, redisCommand(c, "SET %s %s EX 600", key, start)));
	other = testutil_spawn_quiet((const char *[]){ "hammer", "http://127.0.0.1:9/", "--join", url, "--nodes", "2",
	                                               "--join-timeout", "5s", "--requests", "1", NULL });
	ck_assert_int_gt(other, 0);
	testutil_run(&r, (const char *[]){ "hammer", "http://127.0.0.1:9/", "--join", url, "--nodes", "2",
	                                   "--join-timeout", "5s", "--requests", "1", NULL }, NULL, 20000);
	ck_assert_msg(r.status == 4 && testutil_one_line(r.err) && strstr(r.err, "the start time in Redis is 3") &&
	              strstr(r.err, "s ahead"), "exit %d: %s", r.status, r.err);
	testutil_run_free(&r);
	st = testutil_wait(other, 20000);
	ck_assert_msg(st == 4, "the other node: exit %d", st);
	redisFree(c);
}
END_TEST

struct planted_run {
	char run[64], url[128], json[128];
	struct test_server srv;
	struct test_run r;
};

/*
 * Node 0 is a real hammer; node 1 is played here: it joins, says it is
 * ready and writes `result` as its result (a string, as a node writes it).
 */
static void run_with_node1(struct planted_run *p, const char *tag, const char *result)
{
	redisContext *c = real_open();
	char k[160], target[96];
	pid_t node0;
	int st;

	snprintf(p->run, sizeof(p->run), "%s-%d", tag, (int)getpid());
	snprintf(p->url, sizeof(p->url), "%s/%s", real.url, p->run);
	snprintf(p->json, sizeof(p->json), "/tmp/ratelab-hredis-%s.json", p->run);
	ck_assert_int_eq(testutil_server_start(&p->srv, (const char *[]){ "--limiter", "none", NULL }, 5000), 0);
	snprintf(target, sizeof(target), "%s/", p->srv.url);
	node0 = fork();
	ck_assert_int_ge(node0, 0);
	if (node0 == 0) {
		testutil_run(&p->r, (const char *[]){ "hammer", target, "--requests", "6", "--concurrency", "1", "--join",
		                                      p->url, "--nodes", "2", "--join-timeout", "10s", "--json", p->json,
		                                      "--expect", "requests>=1", NULL }, NULL, 30000);
		_exit(p->r.status < 0 ? 99 : p->r.status);
	}
	/* node 0 has its index (bounded: 10 s of 5 ms polls) */
	snprintf(k, sizeof(k), "ratelab:join:%s:joined", p->run);
	for (int i = 0; i < 2000 && real_int(c, k) < 1; i++)
		nanosleep(&(struct timespec){ 0, 5000000 }, NULL);
	ck_assert_int_eq(real_int(c, k), 1);
	freeReplyObject(must(c, redisCommand(c, "INCR %s", k)));
	snprintf(k, sizeof(k), "ratelab:join:%s:result:1", p->run);
	freeReplyObject(must(c, redisCommand(c, "SET %s %b EX 600", k, result, strlen(result))));
	snprintf(k, sizeof(k), "ratelab:join:%s:ready", p->run);
	freeReplyObject(must(c, redisCommand(c, "INCR %s", k)));
	st = testutil_wait(node0, 40000);
	p->r.status = st;
	testutil_server_stop(&p->srv, 5000);
	redisFree(c);
}

/* Node 1's result set to `text`: merge redis:// --json - leaves it out; the merged JSON (caller decrefs). */
static json_t *merge_with(struct planted_run *p, const char *text, size_t len, int want_status)
{
	redisContext *c = real_open();
	char k[160];
	struct test_run r;
	json_t *j;

	snprintf(k, sizeof(k), "ratelab:join:%s:result:1", p->run);
	freeReplyObject(must(c, redisCommand(c, "SET %s %b EX 600", k, text, len)));
	redisFree(c);
	j = testutil_run_json(&r, (const char *[]){ "merge", p->url, "--json", "-", "--expect", "requests>=1",
	                                            "--timeout", "2s", NULL }, NULL, 30000);
	ck_assert_msg(j != NULL && r.status == want_status, "merge: exit %d: %s", r.status, r.err);
	ck_assert_msg(strstr(r.err, "node 1 of 2 wrote a result that does not read"), "%s", r.err);
	testutil_run_free(&r);
	return j;
}

/*
 * A node whose result is garbage: node 0 still prints and writes its own
 * share, names node 1 and exits 3 (--expect: incomplete), where it exited 4
 * with nothing.  merge redis:// does the same, and leaves out a result with
 * counts past 2^62 (they came out as 200 x9223372036854775810).
 */
START_TEST(corrupt_node_result)
{
	struct planted_run p;
	json_t *j, *mine, *join;
	char *text;

	memset(&p, 0, sizeof(p));
	run_with_node1(&p, "garbage", "garbage{{");
	ck_assert_msg(p.r.status == 3, "node 0: exit %d", p.r.status);
	j = json_load_file(p.json, 0, NULL);
	ck_assert_msg(j != NULL, "node 0 wrote no --json");
	ck_assert_int_eq(testutil_jint(j, "requests", NULL), 3);
	join = json_object_get(j, "join");
	ck_assert(json_is_false(json_object_get(join, "complete")));
	ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(join, "missing"), 0)), 1);
	json_decref(j);
	json_decref(merge_with(&p, "garbage{{", 9, 3));
	/* node 0's own result as node 1's, with counts no run makes */
	{
		redisContext *c = real_open();
		char k[160];
		redisReply *r;

		snprintf(k, sizeof(k), "ratelab:join:%s:result:0", p.run);
		r = must(c, redisCommand(c, "GET %s", k));
		mine = json_loads(r->str, 0, NULL);
		freeReplyObject(r);
		redisFree(c);
	}
	ck_assert_ptr_nonnull(mine);
	json_object_set_new(mine, "node", json_integer(1));
	json_object_set_new(json_object_get(mine, "raw"), "requests", json_integer(4611686018427387905LL));
	json_object_set_new(json_object_get(json_object_get(mine, "raw"), "statuses"), "200",
	                    json_integer(4611686018427387905LL));
	text = json_dumps(mine, JSON_COMPACT);
	j = merge_with(&p, text, strlen(text), 3);
	ck_assert_int_eq(testutil_jint(j, "requests", NULL), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "statuses"), "200")), 3);
	json_decref(j);
	free(text);
	json_decref(mine);
	unlink(p.json);
}
END_TEST

/* A 62 MB result (it took node 0 to 2.2 GB) is not even read: merge stays under 16 MB and names it. */
START_TEST(huge_node_result)
{
	redisContext *c = real_open();
	size_t len = 62u << 20;
	char *big = malloc(len), url[128], k[160];
	long rss = 0;
	int rc;

	ck_assert_ptr_nonnull(big);
	memset(big, '1', len);
	big[0] = '[';
	snprintf(url, sizeof(url), "%s/huge-%d", real.url, (int)getpid());
	snprintf(k, sizeof(k), "ratelab:join:huge-%d:nodes", (int)getpid());
	freeReplyObject(must(c, redisCommand(c, "SET %s 1 EX 600", k)));
	snprintf(k, sizeof(k), "ratelab:join:huge-%d:result:0", (int)getpid());
	freeReplyObject(must(c, redisCommand(c, "SET %s %b EX 600", k, big, len)));
	free(big);
	rc = testutil_run_rss((const char *[]){ "merge", url, "--timeout", "2s", NULL }, &rss);
	ck_assert_msg(rc == 4 && (!RSS_CHECKED || rss < 16 * 1024), "exit %d, %ld KB", rc, rss);
	freeReplyObject(must(c, redisCommand(c, "DEL %s", k)));
	redisFree(c);
}
END_TEST

/*
 * Node i's result as a node writes it, at every bound at once
 * (testutil_bound_text): no requests, as many empty timeline rows as the
 * values allow (plus `extra`), a config padded to the string bytes and 8 MiB
 * of text.  malloc'd.
 */
static char *result_text(int i, int nodes, long extra)
{
	char skel[1200];

	snprintf(skel, sizeof(skel),
	         "{\"node\":%d,\"nodes\":%d,\"clock_offset_ns\":0,\"rtt_ns\":1000,\"start_ns\":1000,"
	         "\"began_ns\":1000,\"config\":{\"url\":\"http://127.0.0.1:9/\",\"pad\":\"@PAD@\"},"
	         "\"raw\":{\"version\":1,\"start_unix_ns\":1000,"
	         "\"start_late_ns\":0,\"requests\":0,\"ok\":0,\"failed\":0,\"calls\":0,\"retries\":0,"
	         "\"answered\":0,\"unfinished\":0,\"dropped\":0,\"budget_refused\":0,\"throttled\":0,"
	         "\"unsent\":0,\"wall_ns\":1000,\"last_ok_ns\":0,\"interrupted\":false,\"transport\":\"wire\","
	         "\"statuses\":{},\"attempt_statuses\":{},\"errors\":{},\"attempt_errors\":{},"
	         "\"gave_up\":{},\"latency\":{\"count\":0,\"min\":0,\"max\":0,\"sum\":0.0,\"buckets\":[]},"
	         "\"lateness\":{\"count\":0,\"min\":0,\"max\":0,\"sum\":0.0,\"buckets\":[]},"
	         "\"by_start\":null,\"servers\":[],\"timeline\":{\"interval_ns\":100000000,\"codes\":[],"
	         "\"rows\":\"@ROWS@\"}}}", i, nodes);
	return testutil_bound_text(skel, RESULT_TEXT_MAX_VALUES, RESULT_TEXT_MAX_STRINGS, RESULT_TEXT_MAX_BYTES, extra);
}

/*
 * Peak RSS of reading results at the bound stays within RSS_RATIO times its
 * 8 MiB of text, the whole process included (measured: 22.3 MB, 2.7 times,
 * for one result; 22.9 MB for twelve).
 */
#define RSS_RATIO 4
#define RSS_MAX_KB ((long)RSS_RATIO * (RESULT_TEXT_MAX_BYTES >> 10))

/* Results of run `name` for nodes 0..n-1 (node i's from result_text with extra(i)), then merge redis://: its exit. */
static int merge_planted(redisContext *c, const char *name, int n, long extra_of_last, long *rss)
{
	char url[128], k[160];
	int rc;

	snprintf(url, sizeof(url), "%s/%s-%d", real.url, name, (int)getpid());
	snprintf(k, sizeof(k), "ratelab:join:%s-%d:nodes", name, (int)getpid());
	freeReplyObject(must(c, redisCommand(c, "SET %s %d EX 600", k, n)));
	for (int i = 0; i < n; i++) {
		char *text = result_text(i, n, i == n - 1 ? extra_of_last : 0);

		snprintf(k, sizeof(k), "ratelab:join:%s-%d:result:%d", name, (int)getpid(), i);
		freeReplyObject(must(c, redisCommand(c, "SET %s %b EX 600", k, text, strlen(text))));
		free(text);
	}
	rc = testutil_run_rss((const char *[]){ "merge", url, "--timeout", "2s", "--expect", "requests=0", NULL }, rss);
	for (int i = 0; i < n; i++) {
		snprintf(k, sizeof(k), "ratelab:join:%s-%d:result:%d", name, (int)getpid(), i);
		freeReplyObject(must(c, redisCommand(c, "DEL %s", k)));
	}
	return rc;
}

/*
 * A result at every bound at once reads, one row more does not (node 1 of
 * 2 is then missing: --expect fails), and one result or twelve at the bound
 * stay within RSS_RATIO times the bound.  The largest result read before (a
 * million values) took 147 MB, and twelve results at the bound took 43 MB
 * while hiredis held a second copy of each text and junk members stayed.
 */
START_TEST(many_results_at_the_bound)
{
	redisContext *c = real_open();
	long rss = 0;
	int rc;

	rc = merge_planted(c, "over", 2, 1, &rss);
	ck_assert_msg(rc == 3, "one row over the bound: exit %d", rc);
	rc = merge_planted(c, "one", 1, 0, &rss);
	ck_assert_msg(rc == 0 && (!RSS_CHECKED || rss <= RSS_MAX_KB), "one at the bound: exit %d, %ld KB (%.2f times)",
	              rc, rss, (double)rss * 1024 / RESULT_TEXT_MAX_BYTES);
	rc = merge_planted(c, "many", 12, 0, &rss);
	ck_assert_msg(rc == 0 && (!RSS_CHECKED || rss <= RSS_MAX_KB), "12 at the bound: exit %d, %ld KB (%.2f times)",
	              rc, rss, (double)rss * 1024 / RESULT_TEXT_MAX_BYTES);
	redisFree(c);
}
END_TEST

/* Three requests from 127.0.0.1 to s; the statuses as "200 200 429". */
static void three(const struct test_server *s, char *out, size_t len)
{
	char target[96];
	size_t n = 0;

	snprintf(target, sizeof(target), "%s/x", s->url);
	out[0] = '\0';
	for (int i = 0; i < 3; i++) {
		long status = 0;

		ck_assert_int_eq(testutil_http("GET", target, NULL, &status, NULL, NULL), 0);
		n += (size_t)snprintf(out + n, len - n, "%s%ld", i ? " " : "", status);
	}
}

/* The value of the metric line starting with `name` in s's /metrics; -1 when absent. */
static long long metric(const struct test_server *s, const char *name)
{
	char url[96], *body = NULL, *at;
	long status = 0;
	long long v = -1;

	snprintf(url, sizeof(url), "%s/metrics", s->url);
	ck_assert_int_eq(testutil_http("GET", url, NULL, &status, NULL, &body), 0);
	at = body ? strstr(body, name) : NULL;
	if (at != NULL)
		v = atoll(at + strlen(name));
	free(body);
	return v;
}

/*
 * Junk in a limiter key (t=1e300, a t a year ahead, a string where a hash
 * belongs, a sorted-set member far ahead): the key is reset and limiting
 * goes on (200 200 429), counted as corrupt, never as Redis unreachable.
 * It failed open (5 x 200) or locked the client out (5 x 429).
 */
START_TEST(corrupt_limiter_keys)
{
	static const char *const gcra_args[] = { "--limiter", "gcra", "--limit", "2", "--window", "1m", "--quiet", NULL };
	static const char *const log_args[] = { "--limiter", "sliding-log", "--limit", "2", "--window", "1m", "--quiet",
	                                        NULL };
	redisContext *c = real_open();
	struct test_server s;
	redisReply *keys;
	char got[64], key[256], prefix[64];

	snprintf(prefix, sizeof(prefix), "hostile%d:", (int)getpid());
	ck_assert_int_eq(testutil_server_start(&s, (const char *[]){ gcra_args[0], gcra_args[1], gcra_args[2],
	                 gcra_args[3], gcra_args[4], gcra_args[5], gcra_args[6], "--store", real.url, "--store-prefix",
	                 prefix, NULL }, 5000), 0);
	three(&s, got, sizeof(got));
	ck_assert_str_eq(got, "200 200 429");
	keys = must(c, redisCommand(c, "KEYS %s*", prefix));
	ck_assert_int_eq(keys->elements, 1);
	snprintf(key, sizeof(key), "%s", keys->element[0]->str);
	freeReplyObject(keys);
	freeReplyObject(must(c, redisCommand(c, "DEL %s", key)));
	freeReplyObject(must(c, redisCommand(c, "HSET %s t 1e300 f 0", key)));
	three(&s, got, sizeof(got));
	ck_assert_msg(strcmp(got, "200 200 429") == 0, "t=1e300: %s", got);
	freeReplyObject(must(c, redisCommand(c, "DEL %s", key)));
	freeReplyObject(must(c, redisCommand(c, "HSET %s t 99999999999999999 f 0", key)));
	three(&s, got, sizeof(got));
	ck_assert_msg(strcmp(got, "200 200 429") == 0, "t a year ahead: %s", got);
	freeReplyObject(must(c, redisCommand(c, "DEL %s", key)));
	freeReplyObject(must(c, redisCommand(c, "SET %s junk", key)));
	three(&s, got, sizeof(got));
	ck_assert_msg(strcmp(got, "200 200 429") == 0, "a string: %s", got);
	ck_assert_int_eq(metric(&s, "ratelab_store_corrupt_total{route=\"/\"} "), 3);
	ck_assert_int_eq(metric(&s, "ratelab_store_errors_total{route=\"/\"} "), 0);
	ck_assert_int_eq(testutil_server_stop(&s, 5000), 0);
	snprintf(prefix, sizeof(prefix), "hostilelog%d:", (int)getpid());
	ck_assert_int_eq(testutil_server_start(&s, (const char *[]){ log_args[0], log_args[1], log_args[2], log_args[3],
	                 log_args[4], log_args[5], log_args[6], "--store", real.url, "--store-prefix", prefix, NULL },
	                 5000), 0);
	three(&s, got, sizeof(got));
	keys = must(c, redisCommand(c, "KEYS %s*", prefix));
	ck_assert_int_eq(keys->elements, 1);
	snprintf(key, sizeof(key), "%s", keys->element[0]->str);
	freeReplyObject(keys);
	freeReplyObject(must(c, redisCommand(c, "DEL %s", key)));
	freeReplyObject(must(c, redisCommand(c, "ZADD %s 1e18 a 1e18 b 1e18 c", key)));
	three(&s, got, sizeof(got));
	ck_assert_msg(strcmp(got, "200 200 429") == 0, "sliding log, members far ahead: %s", got);
	ck_assert_int_eq(metric(&s, "ratelab_store_corrupt_total{route=\"/\"} "), 1);
	ck_assert_int_eq(testutil_server_stop(&s, 5000), 0);
	redisFree(c);
}
END_TEST

Suite *hostile_redis_suite(void)
{
	Suite *s = suite_create("hostile_redis");
	TCase *shapes = tcase_create("shapes"), *planted = tcase_create("planted");

	tcase_set_timeout(shapes, 240);
	tcase_add_test(shapes, join_time_shapes);
	tcase_add_test(shapes, merge_reply_shapes);
	tcase_add_test(shapes, store_reply_shapes);
	tcase_add_test(shapes, huge_array_refused);
	suite_add_tcase(s, shapes);
	tcase_add_unchecked_fixture(planted, real_up, real_down);
	tcase_set_timeout(planted, 120);
	tcase_add_test(planted, join_far_start_refused);
	tcase_add_test(planted, corrupt_node_result);
	tcase_add_test(planted, huge_node_result);
	tcase_add_test(planted, many_results_at_the_bound);
	tcase_add_test(planted, corrupt_limiter_keys);
	suite_add_tcase(s, planted);
	return s;
}
