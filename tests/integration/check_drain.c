/*
 * The drain of the real `ratelab serve`: stops under load exit 0, every
 * time.  127.0.0.1 only; every wait is bounded.
 */
#include <check.h>
#include <jansson.h>
#include <poll.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/harness/testutil.h"

/* Sanitized builds run several times slower: fewer stops, and more time for "at once". */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define STOPS 10
#define AT_ONCE_MS 3000
#else
#define STOPS 50
#define AT_ONCE_MS 1000
#endif

/* The drain's own deadline (DRAIN_NS in server/http/daemon.c). */
#define DRAIN_MS 5000

/* The server's "requests" count from /stats; -1 when it does not answer. */
static long long requests_seen(const struct test_server *s)
{
	json_t *j = testutil_stats(s);
	long long n = j ? testutil_jint(j, "requests", NULL) : -1;

	json_decref(j);
	return n;
}

/* Poll /stats until the server has answered at least n requests (at most timeout_ms); the count seen. */
static long long wait_for_load(const struct test_server *s, long long n, int timeout_ms)
{
	double deadline = testutil_mono_ms() + timeout_ms;
	long long seen;

	do {
		seen = requests_seen(s);
		if (seen >= n)
			break;
		poll(NULL, 0, 5);
	} while (testutil_mono_ms() < deadline);
	return seen;
}

/*
 * Stop a loaded server STOPS times, SIGTERM, SIGINT and SIGHUP (a closed
 * terminal; it killed the server outright) in turn: each time a
 * hammer keeps 16 connections busy, and the stop comes once the server has
 * answered 300 requests.  Every exit is 0 (an abort in the drain is 134).
 */
START_TEST(stops_under_load)
{
	/* an address of its own: the hammer fires until it is killed, after its server is gone */
	static const char *const args[] = { "--limiter", "token-bucket", "--limit", "1000", "--quiet", "--bind",
		                            "127.0.0.63", NULL };
	int fails = 0, last = 0;
	double t0 = testutil_mono_ms();

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
		rc = testutil_server_kill(&s, i % 3 == 0 ? SIGTERM : i % 3 == 1 ? SIGINT : SIGHUP, 10000);
		kill(h, SIGKILL);
		testutil_wait(h, 5000);
		if (rc != 0) {
			fails++;
			last = rc;
		}
	}
	fprintf(stderr, "drain: %d stops under load, %d not exit 0, in %.1f s\n", STOPS, fails, (testutil_mono_ms() - t0) / 1e3);
	ck_assert_msg(fails == 0, "%d of %d stops did not exit 0 (last: %d)", fails, STOPS, last);
}
END_TEST

/*
 * A slow upload caught by the drain: its head is in (the server said 100
 * Continue), 10 of its 100 bytes sent when SIGTERM comes, nothing more.  It
 * gets 503 with Connection: close at once, well before the drain's 5 s
 * deadline, and the server exits 0.
 */
START_TEST(slow_upload_answered)
{
	static const char *const args[] = { "--limiter", "none", NULL };
	static const char head[] = "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n";
	static const char cont[] = "HTTP/1.1 100 Continue\r\n";
	struct test_server s;
	char buf[1024];
	double t0, ms;
	int fd;

	ck_assert_int_eq(testutil_server_start(&s, args, 10000), 0);
	fd = testutil_raw_connect(s.port, 1);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(send(fd, head, sizeof(head) - 1, MSG_NOSIGNAL), (ssize_t)(sizeof(head) - 1));
	testutil_raw_read_until(fd, buf, sizeof(buf), "\r\n\r\n", 2000);
	ck_assert_msg(strncmp(buf, cont, sizeof(cont) - 1) == 0, "interim answer: '%.200s'", buf);
	ck_assert_int_eq(send(fd, "0123456789", 10, MSG_NOSIGNAL), 10);
	t0 = testutil_mono_ms();
	kill(s.pid, SIGTERM);
	testutil_raw_read(fd, buf, sizeof(buf), 5000);
	ms = testutil_mono_ms() - t0;
	close(fd);
	ck_assert_msg(strncmp(buf, "HTTP/1.1 503 ", 13) == 0, "answer: '%.200s'", buf);
	ck_assert_ptr_nonnull(strstr(buf, "\r\nConnection: close\r\n"));
	ck_assert_msg(ms < AT_ONCE_MS, "answered %.0f ms after SIGTERM", ms);
	ck_assert_int_eq(testutil_wait(s.pid, 5000), 0);
	close(s.stdout_fd);
}
END_TEST

/*
 * Poll /stats until the pipelined connection is stuck: three reads in a row
 * each add exactly one request (their own).  The listener has one thread,
 * so a connection that could still write would finish an answer and take
 * its next request between two reads (the server runs with --threads 1).
 * True when seen within timeout_ms.
 */
static bool wait_stuck(const struct test_server *s, int timeout_ms)
{
	double deadline = testutil_mono_ms() + timeout_ms;
	long long a = requests_seen(s), b;
	int still = 0;

	while (still < 3 && testutil_mono_ms() < deadline) {
		b = requests_seen(s);
		still = b == a + 1 ? still + 1 : 0;
		a = b;
	}
	return still == 3;
}

/* Connect until the server turns a new connection away unanswered (its drain); true when seen within timeout_ms. */
static bool wait_turned_away(int port, int timeout_ms)
{
	static const char req[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	double deadline = testutil_mono_ms() + timeout_ms;
	char buf[256];

	do {
		int fd = testutil_raw_connect(port, 1);
		size_t n = 0;

		if (fd < 0)
			return true; /* refused: not accepting at all (the waitpid after tells whether it is gone) */
		if ( send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) == (ssize_t)(sizeof(req) - 1))
			n = testutil_raw_read(fd, buf, sizeof(buf), 1000);
		close(fd);
		if (n == 0)
			return true;
	} while (testutil_mono_ms() < deadline);
	return false;
}

/* A connection whose receive buffer is as small as the kernel allows, so answers back up unread. */
static int tiny_window_connect(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
	                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), small = 1;

	ck_assert_int_ge(fd, 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* Send all n bytes within timeout_ms (the peer may read slowly); false when it could not. */
static bool send_all(int fd, const char *p, size_t n, int timeout_ms)
{
	double deadline = testutil_mono_ms() + timeout_ms;

	while (n > 0 && testutil_mono_ms() < deadline) {
		struct pollfd pf = { fd, POLLOUT, 0 };
		ssize_t w;

		if (poll(&pf, 1, 50) <= 0)
			continue;
		w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
		}
	}
	return n == 0;
}

/*
 * A second SIGTERM during the drain ends the process at once, with its own
 * exit code (3).  The drain is held by a client that pipelines 3,000 GET
 * /stats (9 MB of answers, more than the socket buffers hold) and reads
 * none: one request stays in flight, its answer unsent, so the drain would
 * wait out its 5 s.
 */
START_TEST(second_signal_exits_at_once)
{
	/* one listener thread: the /stats reads and the stuck connection are served by the same loop */
	static const char *const args[] = { "--limiter", "none", "--threads", "1", NULL };
	static const char req[] = "GET /stats HTTP/1.1\r\nHost: x\r\n\r\n";
	enum { PIPELINED = 3000 };
	static char reqs[PIPELINED * (sizeof(req) - 1)];
	struct test_server s;
	double t0;
	int fd, st;

	for (int i = 0; i < PIPELINED; i++)
		memcpy(reqs + (size_t)i * (sizeof(req) - 1), req, sizeof(req) - 1);
	ck_assert_int_eq(testutil_server_start(&s, args, 10000), 0);
	fd = tiny_window_connect(s.port);
	ck_assert(send_all(fd, reqs, sizeof(reqs), 5000));
	ck_assert_int_ge(wait_for_load(&s, 100, 10000), 100);
	ck_assert_msg(wait_stuck(&s, 10000), "the pipelined answers never backed up");
	t0 = testutil_mono_ms();
	kill(s.pid, SIGTERM);
	/* the drain has begun (a new connection is turned away) and is waiting on the stuck answer */
	ck_assert_msg(wait_turned_away(s.port, 5000), "no drain seen after SIGTERM");
	ck_assert_msg(waitpid(s.pid, &st, WNOHANG) == 0, "the drain did not wait for the stuck answer");
	kill(s.pid, SIGTERM);
	ck_assert_int_eq(testutil_wait(s.pid, 5000), 3);
	/* exit 3 is the second signal's; and it came before the drain's own 5 s deadline, however late things ran */
	ck_assert_msg(testutil_mono_ms() - t0 < DRAIN_MS, "exited %.0f ms after the first signal", testutil_mono_ms() - t0);
	close(fd);
	close(s.stdout_fd);
}
END_TEST

Suite *drain_suite(void)
{
	const struct testutil_case tests[] = {
		{ "stops_under_load", stops_under_load }, { "slow_upload_answered", slow_upload_answered },
		{ "second_signal", second_signal_exits_at_once },
	};

	return testutil_suite_per_test("drain", tests, sizeof(tests) / sizeof(tests[0]), 60);
}
