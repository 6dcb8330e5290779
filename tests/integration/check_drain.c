/*
 * The drain of the real `ratelab serve`: stops under load exit 0, every
 * time.  127.0.0.1 only; every wait is bounded.
 */
#include <check.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/harness/testutil.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define STOPS 10
#else
#define STOPS 50
#endif

static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The server's "requests" count from /stats; -1 when it does not answer. */
static long long requests_seen(const struct test_server *s)
{
	char url[128], *body = NULL;
	long st = 0;
	long long n = -1;
	json_t *j;

	snprintf(url, sizeof(url), "%s/stats", s->url);
	if (testutil_http("GET", url, NULL, &st, NULL, &body) == 0 && st == 200 && (j = json_loads(body, 0, NULL))) {
		n = testutil_jint(j, "requests", NULL);
		json_decref(j);
	}
	free(body);
	return n;
}

/* Poll /stats until the server has answered at least n requests (at most timeout_ms); the count seen. */
static long long wait_for_load(const struct test_server *s, long long n, int timeout_ms)
{
	double deadline = mono_ms() + timeout_ms;
	long long seen;

	do {
		seen = requests_seen(s);
		if (seen >= n)
			break;
		poll(NULL, 0, 5);
	} while (mono_ms() < deadline);
	return seen;
}

/*
 * Stop a loaded server STOPS times, SIGTERM and SIGINT in turn: each time a
 * hammer keeps 16 connections busy, and the stop comes once the server has
 * answered 300 requests.  Every exit is 0 (an abort in the drain is 134).
 */
START_TEST(stops_under_load)
{
	static const char *const args[] = { "--limiter", "token-bucket", "--limit", "1000", "--quiet", NULL };
	int fails = 0, last = 0;
	double t0 = mono_ms();

	for (int i = 0; i < STOPS; i++) {
		struct test_server s;
		char url[96];
		pid_t h;
		int rc;

		ck_assert_msg(testutil_server_start(&s, args, 10000) == 0, "round %d: serve did not start", i);
		snprintf(url, sizeof(url), "%s/", s.url);
		const char *const hargs[] = { "hammer", url, "--duration", "10s", "--concurrency", "16", "--threads", "1",
			                      "--no-retry", NULL };
		h = testutil_spawn_quiet(hargs);
		ck_assert_int_gt(h, 0);
		ck_assert_msg(wait_for_load(&s, 300, 5000) >= 300, "round %d: the hammer got no answers", i);
		rc = testutil_server_kill(&s, i % 2 ? SIGINT : SIGTERM, 10000);
		kill(h, SIGKILL);
		testutil_wait(h, 5000);
		if (rc != 0) {
			fails++;
			last = rc;
		}
	}
	fprintf(stderr, "drain: %d stops under load, %d not exit 0, in %.1f s\n", STOPS, fails, (mono_ms() - t0) / 1e3);
	ck_assert_msg(fails == 0, "%d of %d stops did not exit 0 (last: %d)", fails, STOPS, last);
}
END_TEST

Suite *drain_suite(void)
{
	const struct { const char *name; const TTest *test; } tests[] = {
		{ "stops_under_load", stops_under_load },
	};
	Suite *s = suite_create("drain");

	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		TCase *tc = tcase_create(tests[i].name);

		tcase_set_timeout(tc, 60);
		tcase_add_test(tc, tests[i].test);
		suite_add_tcase(s, tc);
	}
	return s;
}
