#ifndef RATELAB_WORKLOAD_H
#define RATELAB_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "common/retry/retry.h"

/*
 * What a virtual client sends.  A workload hands each client its next call
 * (one HTTP request), fed what the previous answer said.  The words are the
 * same everywhere in the hammer: a request is what the retry policy retries;
 * each try at it is an attempt; an attempt is one or more calls: one for the
 * plain workload, a GET and then a PUT for optimistic concurrency.
 *
 * The calls a workload makes come in a fixed set of shapes, known before the
 * run, so a transport lays each shape out once; a call may add a few header
 * lines of its own (If-Match), which costs the transport a copy.
 */

#define WORKLOAD_EXTRA_MAX 4

/* One kind of call; a NULL field takes the run's method, the URL's path, or the run's body. */
struct workload_shape {
	const char *method;
	const char *path;    /* replaces the URL's path and query, e.g. "/occ" */
	const char *body;
};

/* The next call of a client. */
struct workload_call {
	uint32_t shape;                        /* index into the workload's shapes */
	uint32_t nextra;
	const char *extra[WORKLOAD_EXTRA_MAX]; /* "Name: value" lines for this call only */
};

/* How a call ended; the strings live only as long as the callback they are handed to. */
struct workload_answer {
	enum retry_error err;      /* RETRY_ERR_NONE: an HTTP answer with status */
	int status;
	const char *retry_after;   /* header values, or NULL (always NULL without an answer) */
	const char *ratelimit;
	const char *etag;
};

enum workload_step {
	WORKLOAD_NEXT,   /* send *call now: the attempt goes on */
	WORKLOAD_END,    /* the attempt is over: the retry policy judges this answer */
};

/*
 * A workload is one table.  Its per-client state (state_size bytes, zeroed
 * by the engine) belongs to one client and so to one thread.  The extra
 * lines a call names may point into that state: they are read when the call
 * begins.
 */
struct workload_ops {
	const char *name;
	const struct workload_shape *shapes;
	uint32_t nshapes;
	size_t state_size;
	/* An attempt begins: fill *call with its first call. */
	void (*begin)(void *state, struct workload_call *call);
	/* A call got an HTTP answer a: WORKLOAD_NEXT with *call filled, or WORKLOAD_END.  A call
	 * that got none (a transport error) ends its attempt without asking. */
	enum workload_step (*answered)(void *state, const struct workload_answer *a, struct workload_call *call);
};

/* The plain request: every attempt is one call of the run's method, URL and body. */
extern const struct workload_ops WORKLOAD_PLAIN;

#endif
