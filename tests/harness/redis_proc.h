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
};

/* True when redis-server is on PATH (scripts/install-deps installs it; tests never do). */
bool redis_proc_available(void);

/* Start redis-server on `port` (0 picks a free one) and wait up to 3 s for PONG.  Returns 0 or -1. */
int redis_proc_start(struct redis_proc *r, int port);

/* True when a Redis on 127.0.0.1:port answers PING within 200 ms. */
bool redis_proc_ping(int port);

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
