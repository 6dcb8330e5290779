/* A private redis-server for the tests (redis_proc.h). */
#include "tests/harness/redis_proc.h"

#include <hiredis/hiredis.h>
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

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

bool redis_proc_available(void)
{
	char buf[512];

	if (system("command -v redis-server >/dev/null 2>&1") == 0)
		return true;
	snprintf(buf, sizeof(buf), "%s redis-server >&2",
	         testutil_path("scripts/install-deps", (char[512]){ 0 }, 512));
	return system(buf) == 0 && system("command -v redis-server >/dev/null 2>&1") == 0;
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
	for (int i = 0; i < 300; i++) {
		if (redis_proc_ping(r->port))
			return 0;
		if (waitpid(r->pid, NULL, WNOHANG) == r->pid)
			break;
		sleep_ms(10);
	}
	return -1;
}

void redis_proc_stop(struct redis_proc *r)
{
	if (r->pid <= 0)
		return;
	kill(r->pid, SIGKILL);
	waitpid(r->pid, NULL, 0);
	r->pid = 0;
}

