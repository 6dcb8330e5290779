/*
 * Hammers joined through a private redis-server into one run (hammer --join,
 * ratelab merge): the start spread, the slicing of clients and arrivals, the
 * merged counts against the server's own, a node killed mid-run, Redis
 * unreachable, a node that never comes; and merging --json files on their
 * start times.  Also the many-clients path on one machine: 5,000 clients
 * with their connections spread over loopback source addresses.
 */
#include <check.h>
#include <hiredis/hiredis.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/histogram.h"
#include "tests/harness/redis_proc.h"
#include "tests/harness/testutil.h"

#define NODES 4

/* redis://127.0.0.1:PORT/RUN, RUN unique to this test process. */
static const char *join_url(char *buf, size_t len, const char *tag)
{
	snprintf(buf, len, "%s/%s-%d", redis_proc_shared.url, tag, (int)getpid());
	return buf;
}

/* One Redis command with a string argument; the reply (caller frees). */
static redisReply *redis_cmd(const char *fmt, const char *arg)
{
	struct timeval tv = { .tv_sec = 2, .tv_usec = 0 };
	redisContext *c = redisConnectWithTimeout("127.0.0.1", redis_proc_shared.port, tv);
	redisReply *r;

	ck_assert_msg(c != NULL && !c->err, "cannot connect to redis");
	redisSetTimeout(c, tv);
	r = redisCommand(c, fmt, arg);
	redisFree(c);
	ck_assert_ptr_nonnull(r);
	return r;
}

/* Node i's result as the node wrote it to Redis (caller decrefs). */
static json_t *node_result(const char *tag, int i)
{
	char key[160];
	redisReply *r;
	json_t *j;

	snprintf(key, sizeof(key), "ratelab:join:%s-%d:result:%d", tag, (int)getpid(), i);
	r = redis_cmd("GET %s", key);
	ck_assert_msg(r->type == REDIS_REPLY_STRING, "no result for node %d", i);
	j = json_loads(r->str, 0, NULL);
	freeReplyObject(r);
	ck_assert_ptr_nonnull(j);
	return j;
}

/* ---- several hammers at once ---- */

struct node_run {
	const char *args[48];
	int timeout_ms;
	struct test_run run;
	pthread_t tid;
};

static void *node_main(void *arg)
{
	struct node_run *n = arg;

	testutil_run(&n->run, n->args, NULL, n->timeout_ms);
	return NULL;
}

/* args: "hammer" URL ... (NULL-terminated); node files get --json DIR/node<i>.json. */
static void node_init(struct node_run *n, const char *const *args, const char *json, int timeout_ms)
{
	size_t k = 0;

	memset(n, 0, sizeof(*n));
	for (; args[k] != NULL && k < 40; k++)
		n->args[k] = args[k];
	n->args[k++] = "--json";
	n->args[k++] = json;
	n->args[k] = NULL;
	n->timeout_ms = timeout_ms;
}

static void nodes_start(struct node_run *n, int count)
{
	for (int i = 0; i < count; i++)
		ck_assert_int_eq(pthread_create(&n[i].tid, NULL, node_main, &n[i]), 0);
}

static void nodes_wait(struct node_run *n, int count)
{
	for (int i = 0; i < count; i++)
		pthread_join(n[i].tid, NULL);
}

static void nodes_free(struct node_run *n, int count)
{
	for (int i = 0; i < count; i++)
		testutil_run_free(&n[i].run);
}

/* The --json file that carries the merged result (node 0's): the one with a "join" object. */
static json_t *merged_json(char files[][64], int count, int *which)
{
	json_t *found = NULL;

	for (int i = 0; i < count; i++) {
		json_t *j = json_load_file(files[i], 0, NULL);

		ck_assert_msg(j != NULL, "no JSON in %s", files[i]);
		if (json_object_get(j, "join") != NULL) {
			ck_assert_msg(found == NULL, "two nodes printed a merged result");
			found = j;
			*which = i;
		} else {
			json_decref(j);
		}
	}
	ck_assert_msg(found != NULL, "no node printed the merged result");
	return found;
}

static void json_path(char *buf, size_t len, const char *tag, int i)
{
	snprintf(buf, len, "/tmp/ratelab-join-%d-%s-%d.json", (int)getpid(), tag, i);
}

/*
 * Four hammers of 100 requests each, one run under tag, against srv: the
 * merged result (node 0's --json; the caller decrefs).
 */
static json_t *four_nodes(const struct test_server *srv, const char *tag)
{
	struct node_run n[NODES];
	char url[128], target[96], files[NODES][64];
	json_t *merged;
	int m = -1;

	snprintf(target, sizeof(target), "%s/", srv->url);
	join_url(url, sizeof(url), tag);
	for (int i = 0; i < NODES; i++) {
		/* one loop each: four processes of two threads would crowd two shared cores at the start */
		const char *args[] = { "hammer", target, "--concurrency", "40", "--requests", "400", "--no-retry",
		                       "--seed", "5", "--threads", "1", "--join", url, "--nodes", "4", "--quiet", NULL };

		json_path(files[i], sizeof(files[i]), tag, i);
		node_init(&n[i], args, files[i], 30000);
	}
	nodes_start(n, NODES);
	nodes_wait(n, NODES);
	for (int i = 0; i < NODES; i++)
		ck_assert_msg(n[i].run.status == 0, "node %d: exit %d: %s", i, n[i].run.status, n[i].run.err);
	merged = merged_json(files, NODES, &m);
	nodes_free(n, NODES);
	for (int i = 0; i < NODES; i++)
		unlink(files[i]);
	return merged;
}

static double spread_ms(const json_t *merged)
{
	return json_real_value(json_object_get(json_object_get(merged, "join"), "start_spread_ms"));
}

/*
 * Four hammers, one run: each reports its start against the common instant,
 * the merged counts are the server's own, and the merged histogram is the
 * sum of the four nodes' raw ones, bucket by bucket.  That they start within
 * 5 ms of each other is a latency goal (a loaded machine can keep one
 * process off the cores past the instant): asserted with
 * RATELAB_LATENCY_GOALS=1 (make bench, section 13).
 */
START_TEST(four_nodes_merge_exactly)
{
	const char *srv_args[] = { "--limiter", "token-bucket", "--limit", "100", "--burst", "50", "--key", "global", NULL };
	const char *tag = "four";
	struct test_server srv;
	json_t *merged, *stats;
	struct histogram *sum = histogram_new();

	redis_proc_need();
	ck_assert_int_eq(testutil_server_start(&srv, srv_args, 5000), 0);
	merged = four_nodes(&srv, tag);
	ck_assert_int_eq(testutil_jint(merged, "join", "nodes"), 4);
	ck_assert_int_eq(testutil_jint(merged, "join", "merged"), 4);
	ck_assert(json_is_true(json_object_get(json_object_get(merged, "join"), "complete")));
	ck_assert_uint_eq(json_array_size(json_object_get(json_object_get(merged, "join"), "per_node")), 4);
	ck_assert(json_is_real(json_object_get(json_object_get(merged, "join"), "start_spread_ms")) && spread_ms(merged) >= 0);
	fprintf(stderr, "four_nodes_merge_exactly: start spread %.3f ms (goal, in make bench: under 5 ms)\n",
	        spread_ms(merged));
	if (testutil_latency_goals())
		ck_assert_msg(spread_ms(merged) < 5.0, "start spread %.3f ms: %s", spread_ms(merged),
		              json_dumps(json_object_get(json_object_get(merged, "join"), "per_node"), JSON_COMPACT));
	ck_assert_int_eq(testutil_jint(merged, "requests", NULL), 400);
	ck_assert_int_eq(testutil_jint(merged, "calls", NULL), 400);
	/* the server counted what the nodes together say they got */
	stats = testutil_stats(&srv);
	ck_assert_ptr_nonnull(stats);
	ck_assert_int_eq(testutil_jint(stats, "requests", NULL), 400);
	ck_assert_int_eq(testutil_jint(stats, "status", "200"), testutil_jint(merged, "attempt_statuses", "200"));
	ck_assert_int_eq(testutil_jint(stats, "status", "429"), testutil_jint(merged, "attempt_statuses", "429"));
	ck_assert_int_eq(testutil_jint(merged, "attempt_statuses", "200") + testutil_jint(merged, "attempt_statuses", "429"), 400);
	/* the merged histogram is the four raw ones added up */
	for (int i = 0; i < NODES; i++) {
		json_t *r = node_result(tag, i), *pair;
		const json_t *b = json_object_get(json_object_get(json_object_get(r, "raw"), "latency"), "buckets");
		size_t k;

		ck_assert_int_eq(testutil_jint(json_object_get(r, "raw"), "calls", NULL), 100);
		json_array_foreach(b, k, pair)
			histogram_add_bucket(sum, (unsigned)json_integer_value(json_array_get(pair, 0)),
			                     (uint64_t)json_integer_value(json_array_get(pair, 1)));
		json_decref(r);
	}
	{
		const json_t *b = json_object_get(json_object_get(json_object_get(merged, "raw"), "latency"), "buckets"), *pair;
		size_t k, seen = 0;

		ck_assert_int_eq(testutil_jint(json_object_get(merged, "raw"), "latency", "count"), 400);
		json_array_foreach(b, k, pair) {
			unsigned idx = (unsigned)json_integer_value(json_array_get(pair, 0));

			ck_assert_uint_eq((uint64_t)json_integer_value(json_array_get(pair, 1)), histogram_bucket_count(sum, idx));
			seen += (size_t)json_integer_value(json_array_get(pair, 1));
		}
		ck_assert_uint_eq(seen, histogram_count(sum));
	}
	histogram_free(sum);
	json_decref(stats);
	json_decref(merged);
	testutil_server_stop(&srv, 5000);
}
END_TEST

/* --rate and --duration are the run's: 4 nodes at 200/s for 2 s send 400 requests, 100 each. */
START_TEST(rate_is_sliced)
{
	const char *srv_args[] = { "--limiter", "none", NULL };
	struct test_server srv;
	struct node_run n[NODES];
	char url[128], target[96], files[NODES][64];
	json_t *merged;
	int m = -1;

	redis_proc_need();
	ck_assert_int_eq(testutil_server_start(&srv, srv_args, 5000), 0);
	snprintf(target, sizeof(target), "%s/", srv.url);
	join_url(url, sizeof(url), "rate");
	for (int i = 0; i < NODES; i++) {
		const char *args[] = { "hammer", target, "--rate", "200/s", "--duration", "2s", "--no-retry",
		                       "--join", url, "--nodes", "4", "--quiet", NULL };

		json_path(files[i], sizeof(files[i]), "rate", i);
		node_init(&n[i], args, files[i], 30000);
	}
	nodes_start(n, NODES);
	nodes_wait(n, NODES);
	for (int i = 0; i < NODES; i++)
		ck_assert_msg(n[i].run.status == 0, "node %d: exit %d: %s", i, n[i].run.status, n[i].run.err);
	merged = merged_json(files, NODES, &m);
	for (int i = 0; i < NODES; i++) {
		json_t *r = node_result("rate", i), *raw = json_object_get(r, "raw");

		ck_assert_msg(testutil_jint(raw, "calls", NULL) == 100, "node %d: %lld calls, %lld unfinished, %lld dropped, "
		              "started %.1f ms late", i, testutil_jint(raw, "calls", NULL), testutil_jint(raw, "unfinished", NULL),
		              testutil_jint(raw, "dropped", NULL), (double)(testutil_jint(r, "began_ns", NULL) -
		              testutil_jint(r, "start_ns", NULL)) / 1e6);
		json_decref(r);
	}
	ck_assert_int_eq(testutil_jint(merged, "calls", NULL), 400);
	json_decref(merged);
	nodes_free(n, NODES);
	for (int i = 0; i < NODES; i++)
		unlink(files[i]);
	testutil_server_stop(&srv, 5000);
}
END_TEST

/* Polls (bounded) until `count` nodes have taken an index in the run. */
static void wait_joined(const char *tag, long long count)
{
	char key[160];

	snprintf(key, sizeof(key), "ratelab:join:%s-%d:joined", tag, (int)getpid());
	for (int i = 0; i < 1000; i++) {
		redisReply *r = redis_cmd("GET %s", key);
		long long v = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;

		freeReplyObject(r);
		if (v >= count)
			return;
		poll(NULL, 0, 10);
	}
	ck_abort_msg("%lld nodes did not join within 10 s", count);
}

/* Start `ratelab ARGS...` (NULL-terminated) with its output to /dev/null; its pid. */
static pid_t spawn_quiet(const char *const *args)
{
	const char *argv[52] = { testutil_bin() };
	size_t n = 1;
	pid_t pid;

	for (; args[n - 1] != NULL && n < 51; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	pid = fork();
	if (pid == 0) {
		freopen("/dev/null", "w", stdout);
		freopen("/dev/null", "w", stderr);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

/*
 * Wait until the server has admitted at least want requests on its route
 * (bounded: 20 s).  The route's count, not /stats' "requests": that one counts
 * these /stats polls too.
 */
static void wait_requests(struct test_server *srv, long long want)
{
	for (double end = testutil_mono_ms() + 20000; testutil_mono_ms() < end; poll(NULL, 0, 20)) {
		json_t *st = testutil_stats(srv);
		long long got = st ? testutil_jint(json_array_get(json_object_get(st, "routes"), 0), "admitted", NULL) : 0;

		json_decref(st);
		if (got >= want)
			return;
	}
	ck_abort_msg("the server did not see %lld requests within 20 s", want);
}

/*
 * A node killed mid-run: node 0 waits for its heartbeat to lapse, names it
 * and marks the merged result incomplete, and --expect fails with exit 3;
 * ratelab merge afterwards says the same.
 */
START_TEST(killed_node_is_named)
{
	const char *srv_args[] = { "--limiter", "none", NULL };
	struct test_server srv;
	struct node_run n[NODES];
	char url[128], target[96], files[NODES][64];
	int m = -1;
	json_t *merged;
	struct test_run mr;
	pid_t last;
	int st;

	redis_proc_need();
	ck_assert_int_eq(testutil_server_start(&srv, srv_args, 5000), 0);
	snprintf(target, sizeof(target), "%s/", srv.url);
	join_url(url, sizeof(url), "kill");
	for (int i = 0; i < NODES; i++) {
		const char *args[] = { "hammer", target, "--rate", "100/s", "--duration", "6s", "--no-retry",
		                       "--join", url, "--nodes", "4", "--expect", "requests>=1", NULL };

		json_path(files[i], sizeof(files[i]), "kill", i);
		node_init(&n[i], args, files[i], 30000);
	}
	nodes_start(n, NODES - 1);
	wait_joined("kill", NODES - 1);
	/* the last to join is killed (SIGKILL) once the run is under way: all four joined and 100 of the
	 * run's 600 requests (100/s over all four nodes for 6 s) answered, about 1 s in */
	last = spawn_quiet(n[NODES - 1].args);
	ck_assert_int_gt(last, 0);
	wait_joined("kill", NODES);
	wait_requests(&srv, 100);
	kill(last, SIGKILL);
	ck_assert_int_eq(waitpid(last, &st, 0), last);
	ck_assert_msg(WIFSIGNALED(st), "the killed node exited %d before the kill", WEXITSTATUS(st));
	nodes_wait(n, NODES - 1);
	merged = merged_json(files, NODES - 1, &m);
	ck_assert_msg(n[m].run.status == 3, "node 0: exit %d: %s", n[m].run.status, n[m].run.err);
	ck_assert_ptr_nonnull(strstr(n[m].run.out, "4 nodes (3 merged, the result is incomplete)"));
	ck_assert_ptr_nonnull(strstr(n[m].run.out, "node 3 of 4 stopped without a result"));
	ck_assert_msg(strstr(n[m].run.err, "expect failed: the merged result is incomplete: node 3 of 4") != NULL &&
	              testutil_one_line(n[m].run.err), "%s", n[m].run.err);
	ck_assert(json_is_false(json_object_get(json_object_get(merged, "join"), "complete")));
	ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(json_object_get(merged, "join"), "missing"), 0)), 3);
	for (int i = 0; i < NODES - 1; i++)
		if (i != m)
			ck_assert_msg(n[i].run.status == 0, "node %d: exit %d: %s", i, n[i].run.status, n[i].run.err);
	testutil_run(&mr, (const char *[]){ "merge", url, "--expect", "requests>=1", NULL }, NULL, 30000);
	ck_assert_msg(mr.status == 3, "merge: exit %d: %s", mr.status, mr.err);
	ck_assert_ptr_nonnull(strstr(mr.out, "node 3 of 4 stopped without a result"));
	testutil_run_free(&mr);
	json_decref(merged);
	nodes_free(n, NODES - 1);
	for (int i = 0; i < NODES; i++)
		unlink(files[i]);
	testutil_server_stop(&srv, 5000);
}
END_TEST

/* ---- nodes that end while the merge looks ---- */

#define ENDING 200

/* One connection for a run of commands (the nodes below); freed by the caller. */
static redisContext *redis_open(void)
{
	struct timeval tv = { .tv_sec = 2, .tv_usec = 0 };
	redisContext *c = redisConnectWithTimeout("127.0.0.1", redis_proc_shared.port, tv);

	ck_assert_msg(c != NULL && !c->err, "cannot connect to redis");
	redisSetTimeout(c, tv);
	return c;
}

static void redis_do(redisContext *c, const char *fmt, const char *key, const char *val)
{
	redisReply *r = val ? redisCommand(c, fmt, key, val) : redisCommand(c, fmt, key);

	ck_assert_msg(r != NULL && r->type != REDIS_REPLY_ERROR, "redis: %s %s", fmt, key);
	freeReplyObject(r);
}

struct merge_run {
	const char *url, *json;
	struct test_run run;
};

static void *merge_main(void *arg)
{
	struct merge_run *m = arg;

	testutil_run(&m->run, (const char *[]){ "merge", m->url, "--json", m->json, NULL }, NULL, 30000);
	return NULL;
}

/*
 * Nodes that write their result and end their heartbeat while the merge is
 * polling are all merged, none called "stopped without a result".  The 200
 * nodes are played here on Redis with a node's own two steps (SET its result,
 * a real one-node run's with the node index changed, then DEL its heartbeat),
 * one about every millisecond, across several of the merge's polls.  A merge that
 * read a node's result before its heartbeat would, for a node ending between
 * the two reads, see neither.
 */
START_TEST(ending_nodes_all_merged)
{
	const char *srv_args[] = { "--limiter", "none", NULL };
	struct test_server srv;
	struct test_run one;
	struct merge_run m;
	pthread_t tid;
	char url[128], target[96], key[200], n[16], file[64];
	redisContext *c;
	json_t *tmpl, *merged, *join;

	redis_proc_need();
	ck_assert_int_eq(testutil_server_start(&srv, srv_args, 5000), 0);
	snprintf(target, sizeof(target), "%s/", srv.url);
	testutil_run(&one, (const char *[]){ "hammer", target, "--requests", "3", "--concurrency", "1", "--no-retry",
	                                     "--join", join_url(url, sizeof(url), "tmpl"), "--nodes", "1", "--quiet",
	                                     NULL }, NULL, 30000);
	ck_assert_msg(one.status == 0, "one-node run: exit %d: %s", one.status, one.err);
	testutil_run_free(&one);
	testutil_server_stop(&srv, 5000);
	tmpl = node_result("tmpl", 0);

	c = redis_open();
	join_url(url, sizeof(url), "ending");
	snprintf(n, sizeof(n), "%d", ENDING);
	snprintf(key, sizeof(key), "ratelab:join:ending-%d:nodes", (int)getpid());
	redis_do(c, "SET %s %s", key, n);
	snprintf(key, sizeof(key), "ratelab:join:ending-%d:joined", (int)getpid());
	redis_do(c, "SET %s %s", key, n);
	for (int i = 0; i < ENDING; i++) {
		snprintf(key, sizeof(key), "ratelab:join:ending-%d:alive:%d", (int)getpid(), i);
		redis_do(c, "SET %s %s PX 20000", key, "1");
	}
	json_path(file, sizeof(file), "ending", 0);
	m = (struct merge_run){ .url = url, .json = file };
	ck_assert_int_eq(pthread_create(&tid, NULL, merge_main, &m), 0);
	for (int i = 0; i < ENDING; i++) {
		char *text;

		json_object_set_new(tmpl, "node", json_integer(i));
		text = json_dumps(tmpl, JSON_COMPACT);
		snprintf(key, sizeof(key), "ratelab:join:ending-%d:result:%d", (int)getpid(), i);
		redis_do(c, "SET %s %s", key, text);
		free(text);
		snprintf(key, sizeof(key), "ratelab:join:ending-%d:alive:%d", (int)getpid(), i);
		redis_do(c, "DEL %s", key, NULL);
		poll(NULL, 0, 1);
	}
	redisFree(c);
	pthread_join(tid, NULL);
	ck_assert_msg(m.run.status == 0, "merge: exit %d: %s%s", m.run.status, m.run.out, m.run.err);
	ck_assert_msg(strstr(m.run.out, "200 nodes, start spread") != NULL && strstr(m.run.out, "incomplete") == NULL,
	              "%s", m.run.out);
	merged = json_load_file(file, 0, NULL);
	ck_assert_ptr_nonnull(merged);
	join = json_object_get(merged, "join");
	ck_assert_int_eq(json_integer_value(json_object_get(join, "merged")), ENDING);
	ck_assert(json_is_true(json_object_get(join, "complete")));
	ck_assert_int_eq(json_integer_value(json_object_get(merged, "requests")), 3 * ENDING);
	json_decref(merged);
	json_decref(tmpl);
	testutil_run_free(&m.run);
	unlink(file);
}
END_TEST

/* The row of `policy` in a herd table: ok and calls; false when there is none. */
static bool herd_row(const char *out, const char *policy, long *ok, long *calls)
{
	const char *p = out;
	size_t n = strlen(policy);

	while ((p = strstr(p, policy)) != NULL) {
		long failed;

		if ((p == out || p[-1] == '\n') && p[n] == ' ' && sscanf(p + n, "%ld %ld %ld", ok, &failed, calls) == 3)
			return true;
		p += n;
	}
	return false;
}

/*
 * herd --join: two nodes make one herd of 60 clients per policy; node 0
 * resets the server before each policy and prints the merged table, whose
 * last row's calls are the server's own count since that reset (the reset
 * itself aside).
 */
START_TEST(herd_joined)
{
	const char *srv_args[] = { "--limiter", "token-bucket", "--limit", "50", "--burst", "20", "--key", "global", NULL };
	struct test_server srv;
	struct node_run n[2];
	char url[128];
	json_t *stats;
	long ok = 0, calls = 0;
	int m;

	redis_proc_need();
	ck_assert_int_eq(testutil_server_start(&srv, srv_args, 5000), 0);
	join_url(url, sizeof(url), "herd");
	for (int i = 0; i < 2; i++) {
		const char *args[] = { "herd", "--url", srv.url, "--clients", "60", "--policies", "none,full",
		                       "--max-time", "20s", "--join", url, "--nodes", "2", NULL };

		memset(&n[i], 0, sizeof(n[i]));
		memcpy(n[i].args, args, sizeof(args));
		n[i].timeout_ms = 50000;
	}
	nodes_start(n, 2);
	nodes_wait(n, 2);
	for (int i = 0; i < 2; i++)
		ck_assert_msg(n[i].run.status == 0, "node %d: exit %d: %s", i, n[i].run.status, n[i].run.err);
	m = strstr(n[0].run.out, "full: 2 nodes, start spread ") != NULL ? 0 : 1;
	ck_assert_msg(strstr(n[m].run.out, "none: 2 nodes, start spread ") != NULL, "%s", n[m].run.out);
	ck_assert_ptr_nonnull(strstr(n[1 - m].run.out, "node 1 of 2 of redis://"));
	ck_assert(herd_row(n[m].run.out, "full", &ok, &calls));
	ck_assert_int_eq(ok, 60);
	stats = testutil_stats(&srv);
	ck_assert_ptr_nonnull(stats);
	/* the server also counted node 0's POST /reset that began the policy */
	ck_assert_int_eq(testutil_jint(stats, "requests", NULL), calls + 1);
	json_decref(stats);
	nodes_free(n, 2);
	testutil_server_stop(&srv, 5000);
}
END_TEST

/* Every failure to join is one line and exit 4; a bad --join or a missing --nodes is exit 2. */
START_TEST(join_failures_exit_4)
{
	char url[128], dead[96], nodes1[128];
	struct test_run r;
	int hold, port = testutil_dead_port(&hold);

	ck_assert_int_gt(port, 0);
	redis_proc_need();
	snprintf(dead, sizeof(dead), "redis://127.0.0.1:%d/x", port);
	testutil_run(&r, (const char *[]){ "hammer", "http://127.0.0.1:9/", "--join", dead, "--nodes", "2", NULL }, NULL, 10000);
	ck_assert_msg(r.status == 4 && testutil_one_line(r.err) && strstr(r.err, "cannot reach Redis at 127.0.0.1:"),
	              "exit %d: %s", r.status, r.err);
	testutil_run_free(&r);
	join_url(url, sizeof(url), "alone");
	testutil_run(&r, (const char *[]){ "hammer", "http://127.0.0.1:9/", "--join", url, "--nodes", "2",
	                                   "--join-timeout", "1s", NULL }, NULL, 10000);
	ck_assert_msg(r.status == 4 && testutil_one_line(r.err) && strstr(r.err, "1 of 2 nodes joined"),
	              "exit %d: %s", r.status, r.err);
	testutil_run_free(&r);
	/* the run is now set up for 2 nodes: one that says 3 is turned away */
	testutil_run(&r, (const char *[]){ "hammer", "http://127.0.0.1:9/", "--join", url, "--nodes", "3", NULL }, NULL, 10000);
	ck_assert_msg(r.status == 4 && testutil_one_line(r.err) && strstr(r.err, "was started with --nodes 2, not 3"),
	              "exit %d: %s", r.status, r.err);
	testutil_run_free(&r);
	testutil_run(&r, (const char *[]){ "hammer", "--join", url, NULL }, NULL, 10000);
	ck_assert_msg(r.status == 2 && testutil_one_line(r.err) && strstr(r.err, "--join needs --nodes"), "%s", r.err);
	testutil_run_free(&r);
	snprintf(nodes1, sizeof(nodes1), "%s/bad id", redis_proc_shared.url);
	testutil_run(&r, (const char *[]){ "hammer", "--join", nodes1, "--nodes", "2", NULL }, NULL, 10000);
	ck_assert_msg(r.status == 2 && testutil_one_line(r.err) && strstr(r.err, "--join"), "%s", r.err);
	testutil_run_free(&r);
	testutil_run(&r, (const char *[]){ "herd", "--join", url, "--nodes", "2", NULL }, NULL, 10000);
	ck_assert_msg(r.status == 2 && testutil_one_line(r.err) && strstr(r.err, "--join needs --url"), "%s", r.err);
	testutil_run_free(&r);
	testutil_run(&r, (const char *[]){ "merge", dead, NULL }, NULL, 10000);
	ck_assert_msg(r.status == 4 && testutil_one_line(r.err), "exit %d: %s", r.status, r.err);
	testutil_run_free(&r);
	close(hold);
}
END_TEST

/* A --json file with its start moved by `shift_ns`. */
static void shifted_copy(const char *from, const char *to, int64_t shift_ns)
{
	json_t *j = json_load_file(from, 0, NULL), *raw;

	ck_assert_ptr_nonnull(j);
	raw = json_object_get(j, "raw");
	json_object_set_new(raw, "start_unix_ns",
	                    json_integer(json_integer_value(json_object_get(raw, "start_unix_ns")) + shift_ns));
	ck_assert_int_eq(json_dump_file(j, to, 0), 0);
	json_decref(j);
}

/* Files of separate runs: a start 1 s apart is refused, and with --max-skew 2s laid 10 intervals later. */
START_TEST(merge_files_on_start_times)
{
	const char *srv_args[] = { "--limiter", "none", NULL };
	struct test_server srv;
	struct test_run r;
	char target[96], a[64], b[64];
	json_t *j, *rows;

	ck_assert_int_eq(testutil_server_start(&srv, srv_args, 5000), 0);
	snprintf(target, sizeof(target), "%s/", srv.url);
	json_path(a, sizeof(a), "file", 0);
	json_path(b, sizeof(b), "file", 1);
	testutil_run(&r, (const char *[]){ "hammer", target, "--requests", "30", "--json", a, "--quiet", NULL }, NULL, 20000);
	ck_assert_msg(r.status == 0, "%s", r.err);
	testutil_run_free(&r);
	shifted_copy(a, b, 1000 * NS_PER_MS);
	testutil_run(&r, (const char *[]){ "merge", a, b, NULL }, NULL, 10000);
	ck_assert_msg(r.status == 2 && testutil_one_line(r.err) && strstr(r.err, "more than --max-skew 100ms apart"),
	              "exit %d: %s", r.status, r.err);
	testutil_run_free(&r);
	j = testutil_run_json(&r, (const char *[]){ "merge", b, a, "--max-skew", "2s", "--json", "-", NULL }, NULL, 10000);
	ck_assert_msg(r.status == 0 && j != NULL, "exit %d: %s", r.status, r.err);
	ck_assert_ptr_nonnull(strstr(r.err, "60 requests in "));
	ck_assert_ptr_nonnull(strstr(r.err, "2 runs, start spread 1000.0 ms"));
	ck_assert_int_eq(testutil_jint(j, "requests", NULL), 60);
	ck_assert_int_eq(testutil_jint(j, "statuses", "200"), 60);
	/* the two runs are the same run 1 s apart: the later one's first row is row 10 of the merged timeline */
	rows = json_object_get(json_object_get(json_object_get(j, "raw"), "timeline"), "rows");
	ck_assert_uint_ge(json_array_size(rows), 11);
	ck_assert_int_gt(json_integer_value(json_array_get(json_array_get(rows, 0), 0)), 0);
	ck_assert_int_eq(json_integer_value(json_array_get(json_array_get(rows, 10), 0)),
	                 json_integer_value(json_array_get(json_array_get(rows, 0), 0)));
	ck_assert_int_eq(testutil_jint(j, "join", "runs"), 2);
	testutil_run_free(&r);
	json_decref(j);
	unlink(a);
	unlink(b);
	testutil_server_stop(&srv, 5000);
}
END_TEST

/* Fail naming what became of the requests that got no 200: the hammer's and the server's counts. */
static void fail_unanswered(json_t *run, json_t *stats)
{
	char *st = json_dumps(json_object_get(run, "statuses"), JSON_COMPACT);
	char *er = json_dumps(json_object_get(run, "errors"), JSON_COMPACT);
	char *rf = json_dumps(json_object_get(stats, "refused"), JSON_COMPACT);

	ck_abort_msg("%lld of 5000 answered 200: statuses %s, errors %s; the server saw %lld requests, refused %s",
	             testutil_jint(run, "statuses", "200"), st ? st : "-", er ? er : "-",
	             testutil_jint(stats, "requests", NULL), rf ? rf : "-");
}

/*
 * 5,000 clients on one machine, each with its own connection, spread over
 * 25 loopback source addresses: the server keys its limit by address and
 * sees 25 keys and all 5,000 requests.
 */
START_TEST(many_clients_over_many_sources)
{
	const char *srv_args[] = { "--limiter", "token-bucket", "--limit", "100000", "--key", "ip",
	                           "--max-connections", "6000", NULL };
	struct test_server srv;
	struct test_run r;
	char target[96];
	json_t *j, *stats;

	ck_assert_int_eq(testutil_server_start(&srv, srv_args, 5000), 0);
	snprintf(target, sizeof(target), "%s/", srv.url);
	j = testutil_run_json(&r, (const char *[]){ "hammer", target, "--concurrency", "5000", "--requests", "5000",
	                                            "--start", "herd", "--sources", "25", "--no-retry", "--json", "-",
	                                            NULL }, NULL, 60000);
	ck_assert_msg(r.status == 0 && j != NULL, "exit %d: %s", r.status, r.err);
	stats = testutil_stats(&srv);
	ck_assert_ptr_nonnull(stats);
	if (testutil_jint(j, "statuses", "200") != 5000)
		fail_unanswered(j, stats);
	ck_assert_int_eq(testutil_jint(stats, "requests", NULL), 5000);
	ck_assert_int_eq(testutil_jint(stats, "live_keys", NULL), 25);
	json_decref(stats);
	json_decref(j);
	testutil_run_free(&r);
	testutil_server_stop(&srv, 5000);
}
END_TEST

Suite *join_suite(void)
{
	Suite *s = suite_create("join");
	TCase *tc = tcase_create("redis");
	TCase *one = tcase_create("one machine");

	tcase_add_unchecked_fixture(tc, redis_proc_shared_up, redis_proc_shared_down);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, four_nodes_merge_exactly);
	tcase_add_test(tc, rate_is_sliced);
	tcase_add_test(tc, killed_node_is_named);
	tcase_add_test(tc, herd_joined);
	tcase_add_test(tc, join_failures_exit_4);
	tcase_add_test(tc, ending_nodes_all_merged);
	suite_add_tcase(s, tc);
	tcase_set_timeout(one, 60);
	tcase_add_test(one, merge_files_on_start_times);
	tcase_add_test(one, many_clients_over_many_sources);
	suite_add_tcase(s, one);
	return s;
}
