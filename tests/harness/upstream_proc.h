#ifndef RATELAB_TEST_UPSTREAM_PROC_H
#define RATELAB_TEST_UPSTREAM_PROC_H

#include <sys/types.h>

/*
 * tests/harness/upstream.py, the test upstream of `serve --upstream`: a
 * python HTTP server on 127.0.0.1 (a free port) for echoes and hostile
 * answers, ended when its stdin closes.  Every wait is bounded.
 */
struct py_upstream {
	pid_t pid;
	int in_fd;          /* its stdin: closing it ends the script */
	int port;
	char url[64];       /* "http://127.0.0.1:PORT" */
};

/* Start it and read its "listening on PORT" (at most 10 s); 0 or -1. */
int py_start(struct py_upstream *u);

/* End it (closes its stdin, waits at most 5 s, then kills it). */
void py_stop(struct py_upstream *u);

/* The script's count of requests of `kind` (its /stats); -1 when it does not answer. */
long long py_count(const struct py_upstream *u, const char *kind);

#endif
