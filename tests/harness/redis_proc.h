#ifndef RATELAB_TEST_REDIS_PROC_H
#define RATELAB_TEST_REDIS_PROC_H

#include <stdbool.h>
#include <sys/types.h>

/*
 * A private redis-server for the tests: on 127.0.0.1, on a free port, with no
 * persistence, killed with the test process.  Every wait is bounded.
 */
struct redis_proc {
	pid_t pid;          /* 0: not running */
	int port;
	char url[64];       /* "redis://127.0.0.1:PORT" */
	int keep_fd;        /* fake_redis_start: the write end of its stdin (it exits when closed); 0 none */
};

/* True when redis-server is on PATH (scripts/install-deps installs it; tests never do). */
bool redis_proc_available(void);

/* Start redis-server on `port` (0 picks a free one) and wait up to 3 s for PONG.  Returns 0 or -1. */
int redis_proc_start(struct redis_proc *r, int port);

/* True when a Redis on 127.0.0.1:port answers PING within 200 ms. */
bool redis_proc_ping(int port);

/*
 * Start tests/harness/fake_redis.py, a hostile Redis speaking RESP on
 * 127.0.0.1 (a free port): it answers like Redis except for the commands
 * given in overrides ("NAME=RAW RESP" or "GET:KEY=RAW RESP", NULL-terminated;
 * see the script).  Waits up to 20 s for its port.  Stop it with
 * redis_proc_stop.  Returns 0 or -1.
 */
int fake_redis_start(struct redis_proc *r, const char *const *overrides);

/* SIGKILL it and reap it; a no-op when it is not running. */
void redis_proc_stop(struct redis_proc *r);

/* The Redis that a suite's tcases share, started by redis_proc_shared_up. */
extern struct redis_proc redis_proc_shared;

/*
 * Unchecked fixtures (they run in the runner): start redis_proc_shared, or
 * leave it stopped for redis_proc_need to report; stop it.
 */
void redis_proc_shared_up(void);
void redis_proc_shared_down(void);

/* Fails the test, saying why, unless redis_proc_shared runs. */
void redis_proc_need(void);

#endif
