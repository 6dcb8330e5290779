/* A private redis-server for the tests (redis_proc.h). */
#include "tests/harness/redis_proc.h"

#include <hiredis/hiredis.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/harness/testutil.h"

bool redis_proc_ping(int port)
{
	struct timeval tv = { .tv_sec = 0, .tv_usec = 200000 };
	redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
	redisReply *r = NULL;
	bool ok = false;

	if (c != NULL && !c->err) {
		redisSetTimeout(c, tv);
		r = redisCommand(c, "PING");
		ok = r != NULL && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;
	}
	if (r != NULL)
		freeReplyObject(r);
	if (c != NULL)
		redisFree(c);
	return ok;
}

bool redis_proc_available(void)
{
	return system("command -v redis-server >/dev/null 2>&1") == 0;
}

int redis_proc_start(struct redis_proc *r, int port)
{
	char portbuf[16];

	r->port = port > 0 ? port : testutil_free_port();
	snprintf(portbuf, sizeof(portbuf), "%d", r->port);
	snprintf(r->url, sizeof(r->url), "redis://127.0.0.1:%d", r->port);
	r->pid = fork();
	if (r->pid < 0)
		return -1;
	if (r->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);  /* never outlive the tests */
		freopen("/dev/null", "w", stdout);
		execlp("redis-server", "redis-server", "--port", portbuf, "--bind", "127.0.0.1", "--save", "",
		       "--appendonly", "no", "--dir", "/tmp", "--logfile", "", (char *)NULL);
		_exit(127);
	}
	/* answering within 20 s: it starts in milliseconds, but a loaded machine may not run it for seconds */
	for (double deadline = testutil_mono_ms() + 20000; testutil_mono_ms() < deadline;) {
		if (redis_proc_ping(r->port))
			return 0;
		if (waitpid(r->pid, NULL, WNOHANG) == r->pid)
			break;
		testutil_sleep_ms(10);
	}
	return -1;
}

/* The child of fake_redis_start: python3 on the script, stdin the pipe, stdout the other. */
static void fake_exec(int in, int out, const char *const *overrides)
{
	const char *argv[24] = { "python3", NULL };
	char script[512];
	int n = 2;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	dup2(in, 0);
	dup2(out, 1);
	argv[1] = testutil_path("tests/harness/fake_redis.py", script, sizeof(script));
	for (int i = 0; overrides != NULL && overrides[i] != NULL && n < 23; i++)
		argv[n++] = overrides[i];
	argv[n] = NULL;
	execvp("python3", (char *const *)argv);
	_exit(127);
}

int fake_redis_start(struct redis_proc *r, const char *const *overrides)
{
	int in[2], out[2];
	char line[64] = "";
	struct pollfd pf;
	ssize_t got = 0;

	memset(r, 0, sizeof(*r));
	if (pipe(in) != 0 || pipe(out) != 0)
		return -1;
	r->pid = fork();
	if (r->pid == 0)
		fake_exec(in[0], out[1], overrides);
	close(in[0]);
	close(out[1]);
	r->keep_fd = in[1];
	pf = (struct pollfd){ out[0], POLLIN, 0 };
	/* "port N\n" within 20 s (python3 starts slowly on a loaded machine) */
	while (r->pid > 0 && (size_t)got < sizeof(line) - 1 && strchr(line, '\n') == NULL && poll(&pf, 1, 20000) == 1) {
		ssize_t n = read(out[0], line + got, sizeof(line) - 1 - (size_t)got);

		if (n <= 0)
			break;
		got += n;
		line[got] = '\0';
	}
	close(out[0]);
	if (r->pid <= 0 || sscanf(line, "port %d", &r->port) != 1) {
		redis_proc_stop(r);
		return -1;
	}
	snprintf(r->url, sizeof(r->url), "redis://127.0.0.1:%d", r->port);
	return 0;
}

void redis_proc_stop(struct redis_proc *r)
{
	if (r->keep_fd > 0)
		close(r->keep_fd);
	r->keep_fd = 0;
	if (r->pid <= 0)
		return;
	kill(r->pid, SIGKILL);
	waitpid(r->pid, NULL, 0);
	r->pid = 0;
}

struct redis_proc redis_proc_shared;

void redis_proc_shared_up(void)
{
	if (!redis_proc_available() || redis_proc_start(&redis_proc_shared, 0) < 0)
		redis_proc_stop(&redis_proc_shared);
}

void redis_proc_shared_down(void)
{
	redis_proc_stop(&redis_proc_shared);
}

void redis_proc_need(void)
{
	ck_assert_msg(redis_proc_available(), "redis-server is not installed: run `make deps` (scripts/install-deps)");
	ck_assert_msg(redis_proc_shared.pid > 0, "redis-server did not start");
}
