/*
 * The hammer's two transports against the real server on port 0: its own
 * HTTP/1.1 path (wire, the default for http://) and libcurl must count the
 * same, send the same request, and survive the same server behaviour.
 */
#include <check.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tests/harness/testutil.h"

#define RUN_MS 20000

static const char *const TRANSPORTS[] = { "wire", "curl" };

/* A limit of 5 per hour admits exactly 5 of 40, whichever transport sends them. */
START_TEST(same_counts)
{
	static const char *const sargs[] = { "--limiter", "token-bucket", "--limit", "5", "--window", "1h",
	                                     "--key", "global", NULL };
	struct test_server s;
	struct test_run r;
	char url[96], reset[128];
	long status = 0;
	json_t *j;

	ck_assert_int_eq(testutil_server_start(&s, sargs, 5000), 0);
	snprintf(url, sizeof(url), "%s/", s.url);
	for (int t = 0; t < 2; t++) {
		const char *args[] = { "hammer", url, "--requests", "40", "--concurrency", "4", "--no-retry",
		                       "--transport", TRANSPORTS[t], "--json", "-", NULL };

		j = testutil_run_json(&r, args, NULL, RUN_MS);
		ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
		ck_assert_msg(j != NULL, "not JSON: %s / %s", r.out, r.err);
		ck_assert_str_eq(testutil_jstr(j, "config", "transport"), TRANSPORTS[t]);
		ck_assert_int_eq(testutil_jint(j, "ok", NULL), 5);
		ck_assert_int_eq(testutil_jint(j, "statuses", "429"), 35);
		ck_assert_int_eq(testutil_jint(j, "calls", NULL), 40);
		ck_assert_int_eq(testutil_jint(j, "answered", NULL), 40);
		json_decref(j);
		testutil_run_free(&r);
		/* the next transport starts from a full bucket */
		snprintf(reset, sizeof(reset), "%s/reset", s.url);
		ck_assert_int_eq(testutil_http("POST", reset, "", &status, NULL, NULL), 0);
		ck_assert_int_eq(status, 200);
	}
	testutil_server_stop(&s, 3000);
}
END_TEST

/* The method, a header the limiter keys on, and a body all reach the server. */
START_TEST(headers_and_body_arrive)
{
	static const char *const sargs[] = { "--limiter", "fixed-window", "--limit", "2", "--window", "1h",
	                                     "--key", "header:X-Key", NULL };
	struct test_server s;
	struct test_run r;
	char url[96];
	json_t *j;

	ck_assert_int_eq(testutil_server_start(&s, sargs, 5000), 0);
	snprintf(url, sizeof(url), "%s/upload", s.url);
	for (int t = 0; t < 2; t++) {
		/* a key per transport: each gets its own 2 */
		const char *key = t == 0 ? "X-Key: wire" : "X-Key: curl";
		const char *args[] = { "hammer", url, "--requests", "5", "--concurrency", "1", "--no-retry",
		                       "--method", "PUT", "--header", key, "--data", "a=1&b=2",
		                       "--transport", TRANSPORTS[t], "--json", "-", NULL };

		j = testutil_run_json(&r, args, NULL, RUN_MS);
		ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
		ck_assert_msg(j != NULL, "not JSON: %s / %s", r.out, r.err);
		ck_assert_int_eq(testutil_jint(j, "ok", NULL), 2);
		ck_assert_int_eq(testutil_jint(j, "statuses", "429"), 3);
		json_decref(j);
		testutil_run_free(&r);
	}
	testutil_server_stop(&s, 3000);
}
END_TEST

/*
 * The server closes a kept-alive connection after 1 s idle; the next
 * request, 2 s later, opens a new one instead of failing.
 */
START_TEST(idle_connection_closed_by_server)
{
	static const char *const sargs[] = { "--limiter", "none", "--connection-timeout", "1s", NULL };
	struct test_server s;
	struct test_run r;
	char url[96];
	json_t *j;

	ck_assert_int_eq(testutil_server_start(&s, sargs, 5000), 0);
	snprintf(url, sizeof(url), "%s/", s.url);
	const char *args[] = { "hammer", url, "--requests", "3", "--rate", "1/1500ms", "--concurrency", "1",
	                       "--threads", "1", "--no-retry", "--transport", "wire", "--json", "-", NULL };
	j = testutil_run_json(&r, args, NULL, RUN_MS);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_msg(j != NULL, "not JSON: %s / %s", r.out, r.err);
	ck_assert_int_eq(testutil_jint(j, "ok", NULL), 3);
	ck_assert_int_eq(testutil_jint(j, "calls", NULL), 3);
	ck_assert_int_eq(testutil_jint(j, "transport_errors", "reset"), 0);
	ck_assert_int_eq(testutil_jint(j, "transport_errors", "other"), 0);
	json_decref(j);
	testutil_run_free(&r);
	testutil_server_stop(&s, 3000);
}
END_TEST

/*
 * One client alternating between two servers must reach each: the first
 * admits everything, the second one request per hour.
 */
START_TEST(each_request_reaches_its_server)
{
	static const char *const open_args[] = { "--limiter", "none", NULL };
	static const char *const tight_args[] = { "--limiter", "fixed-window", "--limit", "1", "--window",
	                                          "1h", "--key", "global", NULL };
	struct test_server a, b;
	struct test_run r;
	char ua[96], ub[96], reset[128];
	long status = 0;
	json_t *j;

	ck_assert_int_eq(testutil_server_start(&a, open_args, 5000), 0);
	ck_assert_int_eq(testutil_server_start(&b, tight_args, 5000), 0);
	snprintf(ua, sizeof(ua), "%s/", a.url);
	snprintf(ub, sizeof(ub), "%s/", b.url);
	snprintf(reset, sizeof(reset), "%s/reset", b.url);
	for (int t = 0; t < 2; t++) {
		const char *args[] = { "hammer", ua, ub, "--requests", "10", "--concurrency", "1", "--threads",
		                       "1", "--no-retry", "--transport", TRANSPORTS[t], "--json", "-", NULL };

		j = testutil_run_json(&r, args, NULL, RUN_MS);
		ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
		ck_assert_msg(j != NULL, "not JSON: %s / %s", r.out, r.err);
		ck_assert_int_eq(testutil_jint(testutil_jserver(j, 0), "ok", NULL), 5);
		ck_assert_int_eq(testutil_jint(testutil_jserver(j, 1), "ok", NULL), 1);
		ck_assert_int_eq(testutil_jint(testutil_jserver(j, 1), "failed", NULL), 4);
		ck_assert_int_eq(testutil_jint(j, "calls", NULL), 10);
		json_decref(j);
		testutil_run_free(&r);
		ck_assert_int_eq(testutil_http("POST", reset, "", &status, NULL, NULL), 0);
		ck_assert_int_eq(status, 200);
	}
	testutil_server_stop(&a, 3000);
	testutil_server_stop(&b, 3000);
}
END_TEST

/*
 * A scripted peer: answers every request with the same bytes, written in
 * pieces 5 ms apart, and closes after each answer when told.  It is the
 * odd server (chunked, HTTP/1.0, garbage, silence) that ratelab serve
 * never is.  Every wait is bounded; it stops when told or after 10 s.
 */
struct script {
	int lfd, port;
	const char *const *pieces;
	size_t npieces;
	bool close_after;
	atomic_int conns, stop;
	pthread_t t;
};

/* Read one request's head (up to the blank line); false on EOF, error or 5 s of nothing. */
static bool read_head(int fd)
{
	char buf[4096];
	size_t n = 0;
	struct pollfd p = { .fd = fd, .events = POLLIN };

	while (n < sizeof(buf) - 1) {
		ssize_t r;

		if (poll(&p, 1, 5000) != 1)
			return false;
		r = recv(fd, buf + n, sizeof(buf) - 1 - n, 0);
		if (r <= 0)
			return false;
		n += (size_t)r;
		buf[n] = '\0';
		if (strstr(buf, "\r\n\r\n") != NULL)
			return true;
	}
	return false;
}

static void answer(struct script *sc, int fd)
{
	struct timespec gap = { 0, 5 * 1000 * 1000 };

	while (!atomic_load(&sc->stop) && read_head(fd)) {
		for (size_t i = 0; i < sc->npieces; i++) {
			if (i > 0)
				nanosleep(&gap, NULL);
			if (send(fd, sc->pieces[i], strlen(sc->pieces[i]), MSG_NOSIGNAL) < 0)
				return;
		}
		if (sc->close_after)
			return;
	}
}

static void *script_main(void *arg)
{
	struct script *sc = arg;
	struct pollfd p = { .fd = sc->lfd, .events = POLLIN };

	for (int ticks = 0; ticks < 100 && !atomic_load(&sc->stop); ticks++) {
		int fd;

		if (poll(&p, 1, 100) != 1)
			continue;
		fd = accept(sc->lfd, NULL, NULL);
		if (fd < 0)
			continue;
		atomic_fetch_add(&sc->conns, 1);
		answer(sc, fd);
		close(fd);
	}
	return NULL;
}

static void script_start(struct script *sc, const char *const *pieces, size_t n, bool close_after)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);

	sc->pieces = pieces;
	sc->npieces = n;
	sc->close_after = close_after;
	atomic_store(&sc->conns, 0);
	atomic_store(&sc->stop, 0);
	sc->lfd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(sc->lfd, 0);
	ck_assert_int_eq(bind(sc->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(sc->lfd, 16), 0);
	ck_assert_int_eq(getsockname(sc->lfd, (struct sockaddr *)&a, &len), 0);
	sc->port = ntohs(a.sin_port);
	ck_assert_int_eq(pthread_create(&sc->t, NULL, script_main, sc), 0);
}

static void script_stop(struct script *sc)
{
	atomic_store(&sc->stop, 1);
	pthread_join(sc->t, NULL);
	close(sc->lfd);
}

/* Run the hammer at the scripted peer: `requests` requests, one client, no retry. */
static json_t *hammer_at(struct script *sc, const char *transport, const char *requests, struct test_run *r,
                         int want_exit)
{
	char url[64];
	json_t *j;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", sc->port);
	const char *args[] = { "hammer", url, "--requests", requests, "--concurrency", "1", "--threads", "1",
	                       "--no-retry", "--timeout", "3s", "--transport", transport, "--json", "-", NULL };
	j = testutil_run_json(r, args, NULL, RUN_MS);
	ck_assert_msg(r->status == want_exit, "%s: exit %d: %s", transport, r->status, r->err);
	ck_assert_msg(j != NULL, "not JSON: %s / %s", r->out, r->err);
	return j;
}

/* A chunked 429 that arrives in three pieces, three times on one kept-alive connection. */
START_TEST(chunked_answer_in_pieces)
{
	static const char *const pieces[] = {
		"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nTransfer-Enc",
		"oding: chunked\r\n\r\n4\r\nab", "cd\r\n0\r\n\r\n",
	};
	struct script sc;
	struct test_run r;

	for (int t = 0; t < 2; t++) {
		script_start(&sc, pieces, 3, false);
		json_t *j = hammer_at(&sc, TRANSPORTS[t], "3", &r, 0);
		script_stop(&sc);
		ck_assert_int_eq(testutil_jint(j, "statuses", "429"), 3);
		ck_assert_int_eq(testutil_jint(j, "calls", NULL), 3);
		ck_assert_int_eq(testutil_jint(j, "transport_errors", "other"), 0);
		ck_assert_int_eq(atomic_load(&sc.conns), 1);
		json_decref(j);
		testutil_run_free(&r);
	}
}
END_TEST

/* HTTP/1.0 with no length: the body ends at the close, and each request opens a connection. */
START_TEST(body_ends_at_the_close)
{
	static const char *const pieces[] = { "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nhel", "lo" };
	struct script sc;
	struct test_run r;

	for (int t = 0; t < 2; t++) {
		script_start(&sc, pieces, 2, true);
		json_t *j = hammer_at(&sc, TRANSPORTS[t], "2", &r, 0);
		script_stop(&sc);
		ck_assert_int_eq(testutil_jint(j, "ok", NULL), 2);
		ck_assert_int_eq(atomic_load(&sc.conns), 2);
		json_decref(j);
		testutil_run_free(&r);
	}
}
END_TEST

/* Not HTTP at all, and no answer at all: both transports name the same error; exit 1 (no HTTP answer). */
START_TEST(garbage_and_silence)
{
	static const char *const garbage[] = { "SSH-2.0-OpenSSH_9.2\r\n\r\n" };
	struct script sc;
	struct test_run r;

	for (int t = 0; t < 2; t++) {
		script_start(&sc, garbage, 1, true);
		json_t *j = hammer_at(&sc, TRANSPORTS[t], "1", &r, 1);
		script_stop(&sc);
		ck_assert_msg(testutil_jint(j, "errors", "other") == 1, "%s: %s", TRANSPORTS[t], r.out);
		json_decref(j);
		testutil_run_free(&r);
		script_start(&sc, NULL, 0, true);
		j = hammer_at(&sc, TRANSPORTS[t], "1", &r, 1);
		script_stop(&sc);
		ck_assert_msg(testutil_jint(j, "errors", "reset") == 1, "%s: %s", TRANSPORTS[t], r.out);
		json_decref(j);
		testutil_run_free(&r);
	}
}
END_TEST

START_TEST(transport_usage_errors)
{
	static const char *const bad[][5] = {
		{ "hammer", "--transport", "tcp", NULL },
		{ "hammer", "https://127.0.0.1:1/", "--transport", "wire", NULL },
		{ "hammer", "http://u:p@127.0.0.1:1/", "--transport", "wire", NULL },
	};
	static const char *const line[] = {
		"ratelab hammer: --transport: 'tcp' is not one of auto, wire, curl\n",
		"ratelab hammer: URL: 'https://127.0.0.1:1/' is not a plain http://HOST[:PORT]/PATH URL "
		"(--transport wire takes no other)\n",
		"ratelab hammer: URL: 'http://u:p@127.0.0.1:1/' is not a plain http://HOST[:PORT]/PATH URL "
		"(--transport wire takes no other)\n",
	};
	struct test_run r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(testutil_run(&r, (const char *const *)bad[i], NULL, RUN_MS), 0);
		ck_assert_msg(r.status == 2, "case %zu: exit %d", i, r.status);
		ck_assert_str_eq(r.err, line[i]);
		testutil_run_free(&r);
	}
}
END_TEST

/* A host that does not resolve stops the run before it starts: exit 1 with one line, no summary. */
START_TEST(unknown_host)
{
	struct test_run r;
	const char *args[] = { "hammer", "http://no-such-host.invalid/", "--requests", "3", NULL };

	ck_assert_int_eq(testutil_run(&r, args, NULL, RUN_MS), 0);
	ck_assert_int_eq(r.status, 1);
	ck_assert_msg(strstr(r.err, "cannot resolve no-such-host.invalid") != NULL, "'%s'", r.err);
	ck_assert_msg(testutil_one_line(r.err), "not one line: '%s'", r.err);
	ck_assert_str_eq(r.out, "");
	testutil_run_free(&r);
}
END_TEST

Suite *transport_suite(void)
{
	Suite *s = suite_create("transport");
	TCase *tc = tcase_create("integration");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, same_counts);
	tcase_add_test(tc, headers_and_body_arrive);
	tcase_add_test(tc, idle_connection_closed_by_server);
	tcase_add_test(tc, each_request_reaches_its_server);
	tcase_add_test(tc, chunked_answer_in_pieces);
	tcase_add_test(tc, body_ends_at_the_close);
	tcase_add_test(tc, garbage_and_silence);
	tcase_add_test(tc, transport_usage_errors);
	tcase_add_test(tc, unknown_host);
	suite_add_tcase(s, tc);
	return s;
}
