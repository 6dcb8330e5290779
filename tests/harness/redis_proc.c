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
	for (int i = 0; i < 300; i++) {
		if (redis_proc_ping(r->port))
			return 0;
		if (waitpid(r->pid, NULL, WNOHANG) == r->pid)
			break;
		testutil_sleep_ms(10);
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
