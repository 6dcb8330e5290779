#include "tests/harness/testutil.h"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/proc_threads.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

const char *testutil_bin(void)
{
	const char *b = getenv("RATELAB_BIN");

	return b && *b ? b : "./ratelab";
}

const char *testutil_path(const char *rel, char *buf, size_t len)
{
	const char *root = getenv("RATELAB_ROOT");

	snprintf(buf, len, "%s/%s", root && *root ? root : ".", rel);
	return buf;
}

static int decode_status(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return -1;
}

static pid_t spawn(const char *const *argv, const char *const *env, int out_fd, int err_fd)
{
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	setpgid(0, 0);
	/* A test that fails or times out must not leave a server behind holding
	 * the runner's pipes: the child dies with the test process. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (out_fd >= 0)
		dup2(out_fd, 1);
	if (err_fd >= 0)
		dup2(err_fd, 2);
	for (int fd = 3; fd < 256; fd++)
		close(fd);
	for (size_t i = 0; env && env[i]; i++)
		putenv((char *)env[i]);
	execv(argv[0], (char *const *)argv);
	_exit(127);
}

int testutil_server_start(struct test_server *s, const char *const *args, int timeout_ms)
{
	const char *argv[64];
	char line[256];
	size_t n = 0, used = 0;
	int pfd[2];
	double deadline = now_s() + timeout_ms / 1000.0;

	argv[n++] = testutil_bin();
	argv[n++] = "serve";
	argv[n++] = "--port";
	argv[n++] = "0";
	for (size_t i = 0; args && args[i] && n < 63; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	if (pipe(pfd) < 0)
		return -1;
	s->pid = spawn(argv, NULL, pfd[1], -1);
	close(pfd[1]);
	s->stdout_fd = pfd[0];
	s->port = 0;
	while (used < sizeof(line) - 1) {
		struct pollfd p = { pfd[0], POLLIN, 0 };
		int left = (int)((deadline - now_s()) * 1000);
		ssize_t r;

		if (left <= 0 || poll(&p, 1, left) <= 0)
			break;
		r = read(pfd[0], line + used, 1);
		if (r <= 0)
			break;
		if (line[used] == '\n') {
			const char *colon;

			line[used] = '\0';
			colon = strrchr(line, ':');
			if (strncmp(line, "listening on http://", 20) == 0 && colon && sscanf(colon + 1, "%d", &s->port) == 1)
				break;
			used = 0;
			continue;
		}
		used++;
	}
	if (s->port <= 0) {
		testutil_server_stop(s, 1000);
		return -1;
	}
	snprintf(s->url, sizeof(s->url), "%.63s", line + 13);
	return 0;
}

/*
 * Every other task of the machine in uninterruptible sleep (state D), at most
 * 30, with its command and wait channel: when a process's teardown waits on a
 * lock, these are the ones in the same queue, or the one that holds it.
 */
static void print_blocked(void)
{
	char path[300], stat[512], wchan[64], *st;
	struct dirent *p;
	DIR *d = opendir("/proc");
	int n = 0;

	if (!d)
		return;
	fprintf(stderr, "testutil: tasks in state D now (pid command wchan):");
	while (n < 30 && (p = readdir(d))) {
		FILE *f;

		if (p->d_name[0] < '1' || p->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", p->d_name);
		stat[0] = wchan[0] = '\0';
		if (!(f = fopen(path, "r")))
			continue;
		if (!fgets(stat, sizeof(stat), f))
			stat[0] = '\0';
		fclose(f);
		if (!(st = strrchr(stat, ')')) || st[1] != ' ' || st[2] != 'D')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/wchan", p->d_name);
		if ((f = fopen(path, "r"))) {
			if (!fgets(wchan, sizeof(wchan), f))
				wchan[0] = '\0';
			fclose(f);
		}
		*st = '\0';
		fprintf(stderr, " %s:%s %s;", p->d_name, strchr(stat, '(') ? strchr(stat, '(') + 1 : "?", wchan);
		n++;
	}
	fputc('\n', stderr);
	closedir(d);
}

/*
 * What a process that outlived its bound is doing, on stderr: each thread's
 * name, state and the kernel function it sleeps in (/proc), so a hang in a
 * test run says where it was, and the machine's other D-state tasks.
 */
static void print_threads(pid_t pid, const char *what)
{
	fprintf(stderr, "testutil: pid %d %s; its threads (id:name state wchan):", (int)pid, what);
	proc_threads_describe(pid, stderr);
	fputc('\n', stderr);
	print_blocked();
}

/*
 * Processes that ended (proc_threads_exiting) but that the kernel had not yet
 * released: reaped on later calls, so no zombie is left for long.  At most
 * 64; past that a zombie is left to the test process's own end.
 */
static pid_t unreaped[64];

static void reap_later(pid_t pid)
{
	for (size_t i = 0; i < sizeof(unreaped) / sizeof(unreaped[0]); i++)
		if (unreaped[i] <= 0) {
			unreaped[i] = pid;
			return;
		}
}

static void reap_unreaped(void)
{
	for (size_t i = 0; i < sizeof(unreaped) / sizeof(unreaped[0]); i++)
		if (unreaped[i] > 0 && waitpid(unreaped[i], NULL, WNOHANG) != 0)
			unreaped[i] = 0;
}

/* Seconds a process may be seen exiting, not yet released, before its status is taken from /proc. */
#define EXIT_WAIT_S 2.0

/*
 * Wait at most timeout_ms for pid to end; past it, kill it and return -1
 * (*timed_out).  A process counts as ended once every thread of it is
 * exiting: it did its part, and only the kernel's teardown is left.  On a
 * busy machine that teardown has taken from seconds to over a minute (soak
 * runs: the last thread in exit_mmap, state D, queued behind dozens of
 * other exiting processes, python3 and curl among them), so once it has
 * lasted EXIT_WAIT_S, or past the bound, the exit status is read from /proc,
 * said on stderr, and the process reaped later.
 */
static int wait_bounded(pid_t pid, int timeout_ms, bool *timed_out)
{
	double deadline = now_s() + timeout_ms / 1000.0, exiting = 0;
	int st, early;

	*timed_out = false;
	reap_unreaped();
	for (unsigned polls = 0;; polls++) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			return decode_status(st);
		if (r < 0)
			return -1;
		/* every 50 ms, and at the bound */
		if ((polls % 10 == 0 || now_s() > deadline) && proc_threads_exiting(pid, &early)) {
			if (exiting == 0)
				exiting = now_s();
			if (now_s() - exiting >= EXIT_WAIT_S || now_s() > deadline) {
				print_threads(pid, "has ended (every thread exiting), and the kernel has not released it");
				fprintf(stderr, "testutil: pid %d: its exit status (%d) is taken from /proc; it is reaped later\n",
				        (int)pid, decode_status(early));
				reap_later(pid);
				return decode_status(early);
			}
		}
		if (now_s() > deadline) {
			*timed_out = true;
			print_threads(pid, "outlived its bound");
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -1;
		}
		poll(NULL, 0, 5);
	}
}

int testutil_server_stop(struct test_server *s, int timeout_ms)
{
	return testutil_server_kill(s, SIGTERM, timeout_ms);
}

int testutil_server_kill(struct test_server *s, int sig, int timeout_ms)
{
	bool to;
	int rc;

	if (s->pid <= 0)
		return -1;
	kill(s->pid, sig);
	rc = wait_bounded(s->pid, timeout_ms, &to);
	/* Killed at the bound: what it printed since the banner (did its drain end: "stopped after"?). */
	if (to && s->stdout_fd >= 0) {
		char out[512];
		ssize_t n;

		fcntl(s->stdout_fd, F_SETFL, fcntl(s->stdout_fd, F_GETFL) | O_NONBLOCK);
		n = read(s->stdout_fd, out, sizeof(out) - 1);
		out[n > 0 ? n : 0] = '\0';
		fprintf(stderr, "testutil: server %d killed %d ms after signal %d; it had printed since: '%s'\n",
		        (int)s->pid, timeout_ms, sig, out);
	}
	if (s->stdout_fd >= 0)
		close(s->stdout_fd);
	s->pid = 0;
	s->stdout_fd = -1;
	return rc;
}

struct buf {
	char *p;
	size_t n;
};

static void buf_read(struct buf *b, int fd, bool *open)
{
	char tmp[4096];
	ssize_t r = read(fd, tmp, sizeof(tmp));

	if (r <= 0) {
		*open = false;
		return;
	}
	b->p = realloc(b->p, b->n + (size_t)r + 1);
	memcpy(b->p + b->n, tmp, (size_t)r);
	b->n += (size_t)r;
	b->p[b->n] = '\0';
}

int testutil_run(struct test_run *r, const char *const *args, const char *const *env, int timeout_ms)
{
	const char *argv[128];
	struct buf out = { calloc(1, 1), 0 }, err = { calloc(1, 1), 0 };
	int po[2], pe[2];
	bool oo = true, eo = true, to = false;
	size_t n = 0;
	double t0 = now_s(), deadline = t0 + timeout_ms / 1000.0, exiting = 0;
	pid_t pid;

	argv[n++] = testutil_bin();
	for (size_t i = 0; args[i] && n < 127; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	if (pipe(po) < 0 || pipe(pe) < 0) {
		/* leave *r an empty, freeable result so callers can print and free it */
		*r = (struct test_run){ -1, out.p, err.p, 0.0 };
		return -1;
	}
	pid = spawn(argv, env, po[1], pe[1]);
	close(po[1]);
	close(pe[1]);
	while ((oo || eo) && now_s() < deadline) {
		struct pollfd p[2] = { { oo ? po[0] : -1, POLLIN, 0 }, { eo ? pe[0] : -1, POLLIN, 0 } };
		int early;

		if (poll(p, 2, 50) <= 0) {
			/*
			 * A command closes its pipes only once the kernel's teardown of
			 * it is done: one seen exiting for EXIT_WAIT_S has written all it
			 * will, and wait_bounded below takes its status.
			 */
			if (!proc_threads_exiting(pid, &early))
				exiting = 0;
			else if (exiting == 0)
				exiting = now_s();
			else if (now_s() - exiting >= EXIT_WAIT_S)
				break;
			continue;
		}
		if (p[0].revents)
			buf_read(&out, po[0], &oo);
		if (p[1].revents)
			buf_read(&err, pe[0], &eo);
	}
	/* What is still in the pipes (a command that ended without closing them yet). */
	fcntl(po[0], F_SETFL, O_NONBLOCK);
	fcntl(pe[0], F_SETFL, O_NONBLOCK);
	while (oo)
		buf_read(&out, po[0], &oo);
	while (eo)
		buf_read(&err, pe[0], &eo);
	close(po[0]);
	close(pe[0]);
	r->status = wait_bounded(pid, (int)((deadline - now_s()) * 1000) + 1, &to);
	if (to)
		r->status = -1;
	r->out = out.p;
	r->err = err.p;
	r->seconds = now_s() - t0;
	return 0;
}

void testutil_run_free(struct test_run *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

static size_t collect(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct buf *b = ud;
	size_t n = size * nmemb;

	b->p = realloc(b->p, b->n + n + 1);
	memcpy(b->p + b->n, ptr, n);
	b->n += n;
	b->p[b->n] = '\0';
	return n;
}

int testutil_http(const char *method, const char *url, const char *body,
                  long *status, char **headers, char **resp_body)
{
	struct buf h = { calloc(1, 1), 0 }, b = { calloc(1, 1), 0 };
	CURL *c = curl_easy_init();
	/* An empty body goes without libcurl's form Content-Type (admin endpoints refuse that type). */
	struct curl_slist *no_type = body && !body[0] ? curl_slist_append(NULL, "Content-Type:") : NULL;
	CURLcode rc;

	if (!c) {
		curl_slist_free_all(no_type);
		return -1;
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, no_type);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (strcmp(method, "HEAD") == 0)
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	if (body)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	rc = curl_easy_perform(c);
	if (rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	curl_easy_cleanup(c);
	curl_slist_free_all(no_type);
	if (headers)
		*headers = h.p;
	else
		free(h.p);
	if (resp_body)
		*resp_body = b.p;
	else
		free(b.p);
	return rc == CURLE_OK ? 0 : -1;
}

bool testutil_header(const char *headers, const char *name, char *buf, size_t len)
{
	size_t nl = strlen(name);

	for (const char *line = headers; line && *line;) {
		const char *eol = strchr(line, '\n');
		size_t ll = eol ? (size_t)(eol - line) : strlen(line);

		if (ll > nl && strncasecmp(line, name, nl) == 0 && line[nl] == ':') {
			const char *v = line + nl + 1;
			size_t vl;

			while (*v == ' ')
				v++;
			vl = (size_t)(line + ll - v);
			while (vl && (v[vl - 1] == '\r' || v[vl - 1] == ' '))
				vl--;
			if (vl >= len)
				vl = len - 1;
			memcpy(buf, v, vl);
			buf[vl] = '\0';
			return true;
		}
		line = eol ? eol + 1 : NULL;
	}
	return false;
}

static size_t reply_take(char *dst, size_t *len, size_t cap, const char *p, size_t n)
{
	size_t k = n < cap - 1 - *len ? n : cap - 1 - *len;

	memcpy(dst + *len, p, k);
	*len += k;
	dst[*len] = '\0';
	return n;
}

static size_t reply_header(char *p, size_t sz, size_t n, void *ud)
{
	struct test_reply *r = ud;

	return reply_take(r->headers, &r->hlen, sizeof(r->headers), p, sz * n);
}

static size_t reply_body(char *p, size_t sz, size_t n, void *ud)
{
	struct test_reply *r = ud;

	return reply_take(r->body, &r->blen, sizeof(r->body), p, sz * n);
}

CURLcode testutil_fire(CURL *c, const char *method, const char *url, const char *header, struct test_reply *r)
{
	struct curl_slist *h = header ? curl_slist_append(NULL, header) : NULL;
	CURLcode rc;

	/*
	 * No body, so no Content-Type: CURLOPT_POSTFIELDS (set to "" or NULL) would
	 * make libcurl send its form type with any method, which admin endpoints refuse.
	 */
	if (!(header && strncasecmp(header, "Content-Type:", 13) == 0))
		h = curl_slist_append(h, "Content-Type:");
	memset(r, 0, sizeof(*r));
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, strcmp(method, "POST") == 0 ? "" : NULL);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, reply_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, reply_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	rc = curl_easy_perform(c);
	if (rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(h);
	return rc;
}

json_t *testutil_run_json(struct test_run *r, const char *const *args, const char *const *env, int timeout_ms)
{
	json_error_t je;
	json_t *j;

	if (testutil_run(r, args, env, timeout_ms) < 0) {
		fprintf(stderr, "testutil_run_json: could not run %s\n", args[0]);
		return NULL;
	}
	j = json_loads(r->out, 0, &je);
	if (j == NULL)
		fprintf(stderr, "testutil_run_json: not JSON (line %d: %s)\n", je.line, je.text);
	return j;
}

json_t *testutil_stats(const struct test_server *s)
{
	char url[128], *body = NULL;
	long status = 0;
	json_error_t je;
	json_t *j = NULL;

	snprintf(url, sizeof(url), "%s/stats", s->url);
	if (testutil_http("GET", url, NULL, &status, NULL, &body) != 0)
		fprintf(stderr, "testutil_stats: GET %s: no answer\n", url);
	else if (status != 200)
		fprintf(stderr, "testutil_stats: GET %s: status %ld\n", url, status);
	else if ((j = json_loads(body, 0, &je)) == NULL)
		fprintf(stderr, "testutil_stats: GET %s: not JSON (line %d: %s)\n", url, je.line, je.text);
	free(body);
	return j;
}

long long testutil_jint(json_t *j, const char *k1, const char *k2)
{
	json_t *v = json_object_get(j, k1);

	if (k2 != NULL)
		v = json_object_get(v, k2);
	return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

long long testutil_jint_req(json_t *j, const char *k1, const char *k2)
{
	json_t *v = json_object_get(j, k1);

	if (json_is_array(v))
		v = json_array_get(v, 0);
	if (k2 != NULL)
		v = json_object_get(v, k2);
	ck_assert_msg(json_is_integer(v), "no integer at %s%s%s in the JSON", k1, k2 ? "." : "", k2 ? k2 : "");
	return (long long)json_integer_value(v);
}

const char *testutil_jstr(json_t *j, const char *k1, const char *k2)
{
	json_t *v = json_object_get(j, k1);

	if (k2 != NULL)
		v = json_object_get(v, k2);
	return json_is_string(v) ? json_string_value(v) : "";
}

json_t *testutil_jserver(json_t *j, size_t i)
{
	return json_array_get(json_object_get(j, "servers"), i);
}

int testutil_free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;

	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && getsockname(fd, (struct sockaddr *)&sa, &sl) == 0)
		port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

int testutil_dead_port(int *holder)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	*holder = -1;
	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || getsockname(fd, (struct sockaddr *)&sa, &sl) != 0) {
		close(fd);
		return -1;
	}
	*holder = fd;
	return ntohs(sa.sin_port);
}

/* The receive queue of the server's end of our connection fd (from /proc/net/tcp); -1 when not listed. */
static long server_rx_queue(int server_port, int fd)
{
	struct sockaddr_in me;
	socklen_t len = sizeof(me);
	char line[512];
	unsigned lport, rport, st;
	unsigned long tx, rx;
	long q = -1;
	FILE *f;

	if (getsockname(fd, (struct sockaddr *)&me, &len) != 0 || !(f = fopen("/proc/net/tcp", "r")))
		return -1;
	while (q < 0 && fgets(line, sizeof(line), f))
		if (sscanf(line, " %*d: %*8x:%x %*8x:%x %x %lx:%lx", &lport, &rport, &st, &tx, &rx) == 5 &&
		    lport == (unsigned)server_port && rport == ntohs(me.sin_port))
			q = (long)rx;
	fclose(f);
	return q;
}

bool testutil_server_has_read(int server_port, const int *fds, int n, int timeout_ms)
{
	double deadline = testutil_mono_ms() + timeout_ms;

	do {
		int k = 0;

		while (k < n && server_rx_queue(server_port, fds[k]) == 0)
			k++;
		if (k == n)
			return true;
		poll(NULL, 0, 1);
	} while (testutil_mono_ms() < deadline);
	return false;
}

bool testutil_one_line(const char *s)
{
	const char *nl = strchr(s, '\n');

	return nl != NULL && nl[1] == '\0';
}

/* Prints one summary line and one line per testcase; exits 1 when the file is not well-formed XML. */
static const char JUNIT_PY[] =
	"import sys, xml.etree.ElementTree as ET\n"
	"root = ET.parse(sys.argv[1]).getroot()\n"
	"assert root.tag == 'testsuites', root.tag\n"
	"suites = root.findall('testsuite')\n"
	"print('suites=%d tests=%s failures=%s skipped=%s errors=%s' % (len(suites), root.get('tests'),\n"
	"      root.get('failures'), root.get('skipped'), root.get('errors')))\n"
	"for s in suites:\n"
	"    cases = s.findall('testcase')\n"
	"    assert int(s.get('tests')) == len(cases), s.get('name')\n"
	"    for c in cases:\n"
	"        kids = [k for k in c]\n"
	"        res = kids[0].tag if kids else 'pass'\n"
	"        msg = kids[0].get('message') if kids else ''\n"
	"        print('%s | %s | %s | %s | %s' % (s.get('name'), c.get('classname'), c.get('name'), res, msg))\n";

int testutil_junit_read(const char *path, char **out)
{
	char cmd[4096];
	char *buf = NULL;
	size_t len = 0;
	FILE *p, *mem;
	int c, st;

	*out = NULL;
	snprintf(cmd, sizeof(cmd), "python3 -c \"$RATELAB_JUNIT_PY\" '%s' 2>&1", path);
	setenv("RATELAB_JUNIT_PY", JUNIT_PY, 1);
	if (!(p = popen(cmd, "r")))
		return -1;
	if (!(mem = open_memstream(&buf, &len))) {
		pclose(p);
		return -1;
	}
	while ((c = fgetc(p)) != EOF)
		fputc(c, mem);
	fclose(mem);
	st = pclose(p);
	*out = buf;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

pid_t testutil_find_process(const char *cmdline)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	pid_t found = 0;

	while (d && !found && (de = readdir(d))) {
		char path[300], buf[512];
		ssize_t n;
		int fd;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", de->d_name);
		if ((fd = open(path, O_RDONLY)) < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		for (ssize_t i = 0; i < n; i++)
			buf[i] = buf[i] == '\0' ? ' ' : buf[i];
		if (n > 0 && buf[n - 1] == ' ')
			n--;
		buf[n > 0 ? n : 0] = '\0';
		if (n > 0 && strcmp(buf, cmdline) == 0)
			found = (pid_t)atoi(de->d_name);
	}
	if (d)
		closedir(d);
	return found;
}

pid_t testutil_spawn_quiet(const char *const *args)
{
	const char *argv[64];
	size_t n = 0;
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	pid_t pid;

	argv[n++] = testutil_bin();
	for (size_t i = 0; args[i] && n < 63; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	pid = spawn(argv, NULL, null, null);
	if (null >= 0)
		close(null);
	return pid;
}

int testutil_wait(pid_t pid, int timeout_ms)
{
	bool to;

	return pid > 0 ? wait_bounded(pid, timeout_ms, &to) : -1;
}

int testutil_raw_connect(int port, int src)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
	                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in from = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000000u | (unsigned)src) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&from, sizeof(from)) != 0 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

size_t testutil_raw_read(int fd, char *buf, size_t cap, int timeout_ms)
{
	return testutil_raw_read_until(fd, buf, cap, NULL, timeout_ms);
}

size_t testutil_raw_read_until(int fd, char *buf, size_t cap, const char *end, int timeout_ms)
{
	double deadline = now_s() + timeout_ms / 1000.0;
	size_t used = 0;

	buf[0] = '\0';
	while (used + 1 < cap && !(end && strstr(buf, end))) {
		struct pollfd p = { fd, POLLIN, 0 };
		int left = (int)((deadline - now_s()) * 1000), ready;
		ssize_t r;

		if (left <= 0)
			break;
		/* A signal is no answer: poll again for what is left of the bound. */
		if ((ready = poll(&p, 1, left)) < 0 && errno == EINTR)
			continue;
		if (ready <= 0)
			break;
		r = recv(fd, buf + used, cap - 1 - used, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		used += (size_t)r;
		buf[used] = '\0';
	}
	buf[used] = '\0';
	return used;
}

Suite *testutil_suite_per_test(const char *name, const struct testutil_case *tests, size_t n, double timeout_s)
{
	Suite *s = suite_create(name);

	for (size_t i = 0; i < n; i++) {
		TCase *tc = tcase_create(tests[i].name);

		tcase_set_timeout(tc, timeout_s);
		tcase_add_test(tc, tests[i].test);
		suite_add_tcase(s, tc);
	}
	return s;
}

void testutil_json_cost(const char *text, size_t len, size_t *values, size_t *string_bytes)
{
	bool in_str = false, esc = false;

	*values = 1;
	*string_bytes = 0;
	for (size_t i = 0; i < len; i++) {
		if (in_str) {
			in_str = esc || text[i] != '"';
			esc = !esc && text[i] == '\\';
			*string_bytes += in_str;
			continue;
		}
		in_str = text[i] == '"';
		*values += text[i] == ',' || text[i] == '[' ? 1 : text[i] == '{' ? 3 : 0;
	}
}

char *testutil_bound_text(const char *skel, size_t max_values, size_t max_strings, size_t total, long extra)
{
	size_t values, strings, len = 0, pad;
	char *text = malloc(total + 1);
	long rows;

	ck_assert_ptr_nonnull(text);
	/* with [] and "" in their places: n rows then add 5n - 1 values; the pad, the string bytes left */
	testutil_json_cost(skel, strlen(skel), &values, &strings);
	values += 1;
	strings -= 11;
	rows = (long)(max_values - values + 1) / 5 + extra;
	pad = max_strings - strings;
	for (const char *p = skel; *p != '\0';) {
		ck_assert_uint_lt(len + (size_t)rows * 10 + pad, total);
		if (strncmp(p, "\"@ROWS@\"", 8) == 0) {
			text[len++] = '[';
			for (long i = 0; i < rows; i++)
				len += (size_t)sprintf(text + len, "%s[0,0,0,0]", i ? "," : "");
			text[len++] = ']';
			rows = 0;
			p += 8;
		} else if (strncmp(p, "\"@PAD@\"", 7) == 0) {
			text[len++] = '"';
			memset(text + len, 'x', pad);
			len += pad;
			text[len++] = '"';
			pad = 0;
			p += 7;
		} else {
			text[len++] = *p++;
		}
	}
	ck_assert_uint_le(len, total);
	memset(text + len - 1, ' ', total - len);
	text[total - 1] = skel[strlen(skel) - 1];
	text[total] = '\0';
	return text;
}

/* Run `ratelab ARGS...` quietly, at most 30 s (polled): its exit status and its peak RSS in KB; -1 when it could not start or was killed at 30 s. */
int testutil_run_rss(const char *const *args, long *maxrss_kb)
{
	const char *argv[24] = { testutil_bin() };
	struct rusage ru;
	pid_t pid;
	int st = 0, n = 1;

	while (args[n - 1] != NULL && n < 23) {
		argv[n] = args[n - 1];
		n++;
	}
	argv[n] = NULL;
	/*
	 * The child's peak RSS counts its pages before exec, which are this
	 * process's: give back what this process has freed, so that the figure
	 * is ratelab's own (the tests' buffers of results took it to 35 MB).
	 */
	malloc_trim(0);
	pid = fork();
	if (pid < 0)
		return -1;
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
		nanosleep(&(struct timespec){ 0, 5000000 }, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

void testutil_start(struct test_server *s, const char *const *args)
{
	ck_assert_msg(testutil_server_start(s, args, 10000) == 0, "ratelab serve did not start (bin %s)",
	              testutil_bin());
}

int testutil_stop(struct test_server *s)
{
	return testutil_server_stop(s, 5000);
}

double testutil_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

void testutil_sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

bool testutil_latency_goals(void)
{
	const char *v = getenv("RATELAB_LATENCY_GOALS");

	return v != NULL && strcmp(v, "1") == 0;
}

long testutil_proc_kb(pid_t pid, const char *field)
{
	char path[64], line[256];
	size_t fl = strlen(field);
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, fl) == 0 && line[fl] == ':')
			kb = strtol(line + fl + 1, NULL, 10);
	fclose(f);
	return kb;
}
