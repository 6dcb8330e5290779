/* serve --capacity: the modelled backend over real connections: queue order, sheds, gone clients, triggers, drain. */
#include <check.h>
#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "tests/harness/testutil.h"

#define RUN_MS 20000

struct shot {
	const char *url;
	long timeout_ms;       /* 0: none */
	long status;           /* 0: no answer (timed out) */
	double seconds;
	uint64_t end_ns;       /* CLOCK_MONOTONIC when the answer (or the timeout) came */
};

static size_t discard(char *p, size_t sz, size_t n, void *ud)
{
	(void)p;
	(void)ud;
	return sz * n;
}

static void *fire(void *arg)
{
	struct shot *s = arg;
	CURL *c = curl_easy_init();
	uint64_t t0;

	curl_easy_setopt(c, CURLOPT_URL, s->url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	if (s->timeout_ms)
		curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, s->timeout_ms);
	t0 = clock_monotonic_ns();
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &s->status);
	s->end_ns = clock_monotonic_ns();
	s->seconds = (double)(s->end_ns - t0) / 1e9;
	curl_easy_cleanup(c);
	return NULL;
}

/* n requests at once, each on its own connection. */
static void volley(struct shot *shots, int n, const char *url, long timeout_ms)
{
	pthread_t t[16];

	for (int i = 0; i < n; i++) {
		memset(&shots[i], 0, sizeof(shots[i]));
		shots[i].url = url;
		shots[i].timeout_ms = timeout_ms;
		ck_assert_int_eq(pthread_create(&t[i], NULL, fire, &shots[i]), 0);
	}
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
}

/* /stats' routes[0].backend, parsed (the caller decrefs the root in *root). */
static json_t *backend_stats(const struct test_server *s, json_t **root)
{
	*root = testutil_stats(s);
	ck_assert_ptr_nonnull(*root);
	return json_object_get(json_array_get(json_object_get(*root, "routes"), 0), "backend");
}

/* Wait at most 5 s for /stats' routes[0].backend.arrived to reach n. */
static void wait_arrived(const struct test_server *s, long long n)
{
	json_t *root, *b;
	long long got = -1;

	for (int i = 0; i < 500 && got < n; i++) {
		b = backend_stats(s, &root);
		got = testutil_jint_req(b, "arrived", NULL);
		json_decref(root);
		if (got < n)
			testutil_sleep_ms(10);
	}
	ck_assert_msg(got >= n, "%lld requests arrived at the backend, want %lld", got, n);
}

/*
 * One worker, 500 ms a request, a FIFO queue of 2: of four requests sent one
 * after another (each once the one before has arrived), three are served one
 * after another (each answer at least 0.5 s after the one before) and the
 * fourth finds the queue full: its 503 comes before the first one's 200.
 */
START_TEST(fifo_queue_and_shed)
{
	static const char *const args[] = { "--limiter", "none", "--capacity", "workers=1,service=500ms,queue=fifo:2",
	                                    NULL };
	struct test_server s;
	struct shot sh[4];
	pthread_t t[4];
	json_t *root, *b;
	char url[128];

	ck_assert_int_eq(testutil_server_start(&s, args, 5000), 0);
	snprintf(url, sizeof(url), "%s/", s.url);
	for (int i = 0; i < 4; i++) {
		memset(&sh[i], 0, sizeof(sh[i]));
		sh[i].url = url;
		ck_assert_int_eq(pthread_create(&t[i], NULL, fire, &sh[i]), 0);
		wait_arrived(&s, i + 1);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < 3; i++)
		ck_assert_msg(sh[i].status == 200, "request %d: %ld", i, sh[i].status);
	ck_assert_int_eq(sh[3].status, 503);
	ck_assert_msg(sh[3].end_ns < sh[0].end_ns, "the refusal (%.3fs) waited for the first answer (%.3fs)",
	              sh[3].seconds, sh[0].seconds);
	ck_assert_msg(sh[0].seconds >= 0.49 && sh[1].end_ns - sh[0].end_ns >= 490 * NS_PER_MS &&
	              sh[2].end_ns - sh[1].end_ns >= 490 * NS_PER_MS, "answers at %.3f s, then %.3f and %.3f s apart",
	              sh[0].seconds, (double)(sh[1].end_ns - sh[0].end_ns) / 1e9, (double)(sh[2].end_ns - sh[1].end_ns) / 1e9);
	b = backend_stats(&s, &root);
	ck_assert_int_eq(testutil_jint_req(b, "arrived", NULL), 4);
	ck_assert_int_eq(testutil_jint_req(b, "served", NULL), 3);
	ck_assert_int_eq(testutil_jint_req(b, "served_gone", NULL), 0);
	ck_assert_int_eq(testutil_jint_req(b, "queue_peak", NULL), 2);
	ck_assert_int_eq(testutil_jint_req(b, "queue", NULL), 0);
	ck_assert_int_eq(testutil_jint_req(b, "shed", "full"), 1);
	ck_assert(json_real_value(json_object_get(b, "work_s")) == 1.5);
	ck_assert_int_eq(testutil_jint(root, "status", "503"), 1);
	json_decref(root);
	ck_assert_int_eq(testutil_server_stop(&s, 5000), 0);
}
END_TEST

/*
 * Clients that give up after 100 ms on 300 ms services: all three are served
 * anyway, one after another, and the work counts as done for clients that
 * had gone (their sockets read end-of-file when the service ends).
 */
START_TEST(gone_clients_still_served)
{
	static const char *const args[] = { "--limiter", "none", "--capacity", "workers=1,service=300ms", NULL };
	struct test_server s;
	struct shot sh[3];
	json_t *root, *b;
	char url[128], murl[128], *metrics = NULL;
	long status;
	int n = 0;

	ck_assert_int_eq(testutil_server_start(&s, args, 5000), 0);
	snprintf(url, sizeof(url), "%s/", s.url);
	volley(sh, 3, url, 100);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(sh[i].status, 0);
	/* the last service ends 0.9 s after the first arrival: poll for it, at most 5 s */
	do {
		struct timespec ts = { 0, 50 * 1000000L };

		b = backend_stats(&s, &root);
		if (testutil_jint_req(b, "served", NULL) == 3)
			break;
		json_decref(root);
		nanosleep(&ts, NULL);
	} while (++n < 100);
	ck_assert_int_eq(testutil_jint_req(b, "served", NULL), 3);
	ck_assert_int_eq(testutil_jint_req(b, "served_gone", NULL), 3);
	ck_assert(json_real_value(json_object_get(b, "work_gone_s")) == 0.9);
	json_decref(root);
	snprintf(murl, sizeof(murl), "%s/metrics", s.url);
	ck_assert_int_eq(testutil_http("GET", murl, NULL, &status, NULL, &metrics), 0);
	ck_assert_ptr_nonnull(strstr(metrics, "ratelab_backend_served_total{route=\"/\",client=\"gone\"} 3\n"));
	ck_assert_ptr_nonnull(strstr(metrics, "ratelab_backend_work_seconds_total{route=\"/\",client=\"gone\"} 0.900000\n"));
	ck_assert_ptr_nonnull(strstr(metrics, "ratelab_backend_queue{route=\"/\"} 0\n"));
	free(metrics);
	ck_assert_int_eq(testutil_server_stop(&s, 5000), 0);
}
END_TEST

/*
 * A trigger of no workers for 600 ms from POST /reset: a request sent right
 * after the reset waits for the capacity to come back, then its 100 ms.
 */
START_TEST(trigger_holds_requests)
{
	static const char *const args[] = { "--limiter", "none", "--capacity", "workers=2,service=100ms",
	                                    "--trigger", "0%@0s+600ms", NULL };
	struct test_server s;
	struct shot sh[1];
	char url[128];
	long status = 0;
	json_t *root, *b;

	ck_assert_int_eq(testutil_server_start(&s, args, 5000), 0);
	snprintf(url, sizeof(url), "%s/reset", s.url);
	ck_assert_int_eq(testutil_http("POST", url, NULL, &status, NULL, NULL), 0);
	ck_assert_int_eq(status, 200);
	snprintf(url, sizeof(url), "%s/", s.url);
	volley(sh, 1, url, 0);
	ck_assert_int_eq(sh[0].status, 200);
	ck_assert_msg(sh[0].seconds >= 0.55 && sh[0].seconds < 2.0, "%.3fs", sh[0].seconds);
	b = backend_stats(&s, &root);
	ck_assert_int_eq(testutil_jint_req(b, "workers", NULL), 2);
	ck_assert_int_eq(testutil_jint_req(b, "served", NULL), 1);
	json_decref(root);
	ck_assert_int_eq(testutil_server_stop(&s, 5000), 0);
}
END_TEST

/* SIGTERM with requests waiting: they are shed (503) at once and the server exits 0. */
START_TEST(drain_sheds_the_queue)
{
	static const char *const args[] = { "--limiter", "none", "--capacity", "workers=1,service=3s", NULL };
	struct test_server s;
	struct shot sh[3];
	pthread_t t[3];
	char url[128];
	int n = 0;
	json_t *root, *b;

	ck_assert_int_eq(testutil_server_start(&s, args, 5000), 0);
	snprintf(url, sizeof(url), "%s/", s.url);
	for (int i = 0; i < 3; i++) {
		memset(&sh[i], 0, sizeof(sh[i]));
		sh[i].url = url;
		ck_assert_int_eq(pthread_create(&t[i], NULL, fire, &sh[i]), 0);
	}
	do {   /* until all three are in: one served, two waiting; at most 5 s */
		struct timespec ts = { 0, 20 * 1000000L };
		long long q;

		b = backend_stats(&s, &root);
		q = testutil_jint_req(b, "queue", NULL);
		json_decref(root);
		if (q == 2)
			break;
		nanosleep(&ts, NULL);
	} while (++n < 250);
	ck_assert_int_eq(testutil_server_stop(&s, 5000), 0);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	/* the one in service finishes early (200), the two waiting are shed */
	ck_assert_int_eq((sh[0].status == 503) + (sh[1].status == 503) + (sh[2].status == 503), 2);
	ck_assert_int_eq((sh[0].status == 200) + (sh[1].status == 200) + (sh[2].status == 200), 1);
	for (int i = 0; i < 3; i++)
		ck_assert_msg(sh[i].seconds < 2.5, "request %d took %.3fs", i, sh[i].seconds);
}
END_TEST

START_TEST(bad_flags_exit_2)
{
	static const char *const bad[][6] = {
		{ "serve", "--capacity", "workers=4,service=-5ms", NULL },
		{ "serve", "--capacity", "workers=x", NULL },
		{ "serve", "--capacity", "workers=4,queue=heap", NULL },
		{ "serve", "--trigger", "25%@5s+3s", NULL },
		{ "serve", "--capacity", "workers=4", "--trigger", "25%@5s", NULL },
	};
	static const char *const line[] = {
		"ratelab serve: --capacity: 'workers=4,service=-5ms' is not a backend such as "
		"workers=4,service=10ms,queue=fifo:1000 (service time '-5ms' is negative)\n",
		"ratelab serve: --capacity: 'workers=x' is not a backend such as workers=4,service=10ms,queue=fifo:1000 "
		"(workers 'x' is not a number from 1 to 10000)\n",
		"ratelab serve: --capacity: 'workers=4,queue=heap' is not a backend such as "
		"workers=4,service=10ms,queue=fifo:1000 (queue 'heap' is not fifo, lifo, fifo:N or lifo:N)\n",
		"ratelab serve: --trigger needs --capacity (a trigger takes capacity away)\n",
		"ratelab serve: --trigger: '25%@5s' is not a trigger such as 25%@5s+3s (it has no F@START+LEN: the "
		"capacity left, when, how long)\n",
	};
	struct test_run r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(testutil_run(&r, bad[i], NULL, RUN_MS), 0);
		ck_assert_msg(r.status == 2, "case %zu: exit %d", i, r.status);
		ck_assert_str_eq(r.err, line[i]);
		ck_assert(testutil_one_line(r.err));
		testutil_run_free(&r);
	}
}
END_TEST

Suite *backend_suite(void)
{
	Suite *s = suite_create("backend");
	TCase *tc = tcase_create("serve");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, fifo_queue_and_shed);
	tcase_add_test(tc, gone_clients_still_served);
	tcase_add_test(tc, trigger_holds_requests);
	tcase_add_test(tc, drain_sheds_the_queue);
	tcase_add_test(tc, bad_flags_exit_2);
	suite_add_tcase(s, tc);
	return s;
}
