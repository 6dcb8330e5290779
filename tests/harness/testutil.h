#ifndef RATELAB_TESTUTIL_H
#define RATELAB_TESTUTIL_H

#include <check.h>
#include <curl/curl.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * Helpers for integration tests: run the real `ratelab` binary (path from
 * $RATELAB_BIN, set by `make check`) and talk to it over 127.0.0.1.
 * Every wait is bounded; nothing sleeps to wait for readiness.
 */

/* Path of the ratelab binary under test. */
const char *testutil_bin(void);

/* Run `ratelab ARGS...` quietly, at most 30 s: its exit status and its peak RSS in KB (-1: not started, or killed at 30 s). */
int testutil_run_rss(const char *const *args, long *maxrss_kb);

/*
 * What ratelab counts in a result's text before it parses it
 * (hammer/result_codec.h): *values (1, plus each comma and '[' and 3 for
 * each '{' outside strings) and *string_bytes (the bytes inside strings and
 * keys, as written).
 */
void testutil_json_cost(const char *text, size_t len, size_t *values, size_t *string_bytes);

/*
 * A result's text at every bound at once, from skel (compact JSON): its
 * "@ROWS@" (a string) becomes as many timeline rows [0,0,0,0] as keep the
 * values within max_values, plus `extra`; its "@PAD@" a string that brings
 * the string bytes to max_strings; and spaces before its last byte make it
 * exactly `total` bytes.  malloc'd, NUL-terminated.
 */
char *testutil_bound_text(const char *skel, size_t max_values, size_t max_strings, size_t total, long extra);

/* Path of a file under the source tree ($RATELAB_ROOT or "."). Static buffer per call site is not kept: copy it. */
const char *testutil_path(const char *rel, char *buf, size_t len);

struct test_server {
	pid_t pid;
	int port;
	int stdout_fd;      /* the rest of the server's stdout */
	char url[64];       /* "http://127.0.0.1:PORT" (the address serve printed) */
};

/*
 * Start `ratelab serve --port 0 ARGS...` (argv NULL-terminated, without
 * "serve" and "--port") and read its "listening on" line, waiting at most
 * timeout_ms.  Returns 0, or -1 when the server exited or never said it.
 */
int testutil_server_start(struct test_server *s, const char *const *args, int timeout_ms);

/* SIGTERM, then SIGKILL after timeout_ms; returns the exit status as from waitpid decoding (exit code, or 128+signal). */
int testutil_server_stop(struct test_server *s, int timeout_ms);

/* testutil_server_stop with signal sig instead of SIGTERM. */
int testutil_server_kill(struct test_server *s, int sig, int timeout_ms);

/* Start `ratelab ARGS...` (args[0] is the subcommand) with stdout and stderr to /dev/null; its pid, or -1. */
pid_t testutil_spawn_quiet(const char *const *args);

/* Wait for pid at most timeout_ms (then SIGKILL it); its exit status as testutil_server_stop returns it. */
int testutil_wait(pid_t pid, int timeout_ms);

/* testutil_server_start with a 10 s limit, failing the test when the server does not start. */
void testutil_start(struct test_server *s, const char *const *args);

/* testutil_server_stop with a 5 s limit: the exit status. */
int testutil_stop(struct test_server *s);

/* CLOCK_MONOTONIC in milliseconds. */
double testutil_mono_ms(void);

/* Sleep ms milliseconds: only between the polls of a bounded wait, never to order two events. */
void testutil_sleep_ms(long ms);

/*
 * True when RATELAB_LATENCY_GOALS=1 (bench/run section 10 sets it): only then
 * does a suite assert a latency goal.  `make check` asserts behaviour only.
 */
bool testutil_latency_goals(void);

struct test_run {
	int status;         /* exit code, 128+signal, or -1 on timeout (the child is killed) */
	char *out;          /* NUL-terminated stdout, malloc'd */
	char *err;          /* NUL-terminated stderr, malloc'd */
	double seconds;     /* wall time */
};

/*
 * Run `ratelab ARGS...` (argv NULL-terminated, args[0] is the subcommand),
 * with extra environment assignments env (NULL-terminated "K=V" or NULL),
 * capturing output; kill it after timeout_ms.  Free with testutil_run_free.
 */
int testutil_run(struct test_run *r, const char *const *args, const char *const *env, int timeout_ms);
void testutil_run_free(struct test_run *r);

/*
 * Plain HTTP over libcurl: method, url, optional body; fills status and, when
 * headers is not NULL, the raw header block (malloc'd), and body likewise.
 * Returns 0, or -1 on a transport error.
 */
int testutil_http(const char *method, const char *url, const char *body,
                  long *status, char **headers, char **resp_body);

/* One answer, headers and body kept NUL-terminated (cut at the buffer sizes). */
struct test_reply {
	long status;          /* 0 when the connection closed without an answer */
	char headers[4096];
	size_t hlen;
	char body[8192];
	size_t blen;
};

/*
 * One request on the reused easy handle c, so the connection is kept alive
 * between calls: method, url and an optional extra header line.  Fills *r and
 * returns the CURLcode.
 */
CURLcode testutil_fire(CURL *c, const char *method, const char *url, const char *header, struct test_reply *r);

/* The value of header `name` (case-insensitive) in a raw header block, copied into buf; false when absent. */
bool testutil_header(const char *headers, const char *name, char *buf, size_t len);

/*
 * testutil_run, then parse its stdout as JSON.  Returns the parsed value (the
 * caller decrefs it and frees *r), or NULL when the binary could not be run or
 * stdout is not JSON (the parse error goes to stderr); *r is filled either way,
 * so the caller can assert on r->status and print r->out / r->err.
 */
json_t *testutil_run_json(struct test_run *r, const char *const *args, const char *const *env, int timeout_ms);

/*
 * GET s's /stats and parse it.  Returns the JSON (the caller decrefs it), or
 * NULL when the server did not answer, answered other than 200, or sent no
 * JSON (which of them goes to stderr).
 */
json_t *testutil_stats(const struct test_server *s);

/* The integer at j.k1, or j.k1.k2 when k2 is not NULL; -1 when absent or not an integer. */
long long testutil_jint(json_t *j, const char *k1, const char *k2);

/*
 * The integer at j.k1 (j.k1[0] when j.k1 is an array), or j.k1.k2 when k2 is
 * not NULL; fails the test, naming the key, when it is absent or not an integer.
 */
long long testutil_jint_req(json_t *j, const char *k1, const char *k2);

/* The string at j.k1, or j.k1.k2 when k2 is not NULL; "" when absent or not a string. */
const char *testutil_jstr(json_t *j, const char *k1, const char *k2);

/* Element i of j's "servers" array; NULL when there is no such array or element. */
json_t *testutil_jserver(json_t *j, size_t i);

/*
 * A TCP port on 127.0.0.1 with nothing listening (bound, read back, released); -1 on failure.
 * Free when asked: another job running beside may take it (use testutil_dead_port for a port
 * that must refuse).
 */
int testutil_free_port(void);

/*
 * A TCP port on 127.0.0.1 that refuses connections for as long as *holder is open: a socket
 * bound to it that never listens, so no other process can take it.  Close *holder when done.
 * -1 on failure.
 */
int testutil_dead_port(int *holder);

/*
 * Parse the JUnit XML file at path with a real XML parser (python3's
 * xml.etree) into *out (malloc'd, caller frees): a first line
 * "suites=N tests=N failures=N skipped=N errors=N", then one line per
 * testcase "SUITE | CLASSNAME | NAME | RESULT | MESSAGE" (RESULT: pass,
 * failure, skipped or error).  Returns 0, or -1 when it does not parse (the
 * parser's error is in *out then).
 */
int testutil_junit_read(const char *path, char **out);

/* The pid of a process whose command line (arguments joined by spaces) is cmdline exactly, or 0. */
pid_t testutil_find_process(const char *cmdline);

/* A blocking TCP connection from 127.0.0.<src> to 127.0.0.1:port; -1 on failure. */
int testutil_raw_connect(int port, int src);

/*
 * Read from fd until the peer closes, cap - 1 bytes, or timeout_ms; buf is
 * NUL-terminated.  Returns the bytes read.
 */
size_t testutil_raw_read(int fd, char *buf, size_t cap, int timeout_ms);

/* testutil_raw_read that also stops once buf holds `end`. */
size_t testutil_raw_read_until(int fd, char *buf, size_t cap, const char *end, int timeout_ms);

/*
 * Wait at most timeout_ms until the server on 127.0.0.1:server_port has
 * read what was sent on each of our n connections fds: the receive queues
 * of its ends are empty (/proc/net/tcp).  With `serve --threads 1` the
 * listener has one thread, which handles a request in the same turn as it
 * reads it: a request sent after this is handled after those n.
 */
bool testutil_server_has_read(int server_port, const int *fds, int n, int timeout_ms);

/* True when s holds exactly one line: its only newline is its last character. */
bool testutil_one_line(const char *s);

/* One test of a suite built by testutil_suite_per_test. */
struct testutil_case {
	const char *name;
	const TTest *test;
};

/*
 * A suite `name` with one case per test, named after it (so CK_RUN_CASE=<name>
 * runs one), each with a timeout of timeout_s seconds.  The runner owns it.
 */
Suite *testutil_suite_per_test(const char *name, const struct testutil_case *tests, size_t n, double timeout_s);

/* A /proc/PID/status field in kB ("VmRSS", "VmHWM"), or -1 when it cannot be read. */
long testutil_proc_kb(pid_t pid, const char *field);

#endif
