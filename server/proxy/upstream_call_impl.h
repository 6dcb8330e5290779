#ifndef RATELAB_UPSTREAM_CALL_IMPL_H
#define RATELAB_UPSTREAM_CALL_IMPL_H

/*
 * The inside of an upstream call, shared by the call (upstream_call.c) and
 * the client thread that runs it (upstream.c) only.
 */

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/proxy/upstream_call.h"

struct upstream_call {
	pthread_mutex_t lock;        /* the caller's release against the thread's done call */
	_Atomic int refs;
	bool released;               /* under lock: done is not called from now on */
	void (*done)(void *arg);
	void *arg;
	struct upstream_call *prev, *next;  /* the pending or the active list (the thread's) */
	CURL *easy;
	char *method, *target, *req_body;
	size_t req_len;
	struct curl_slist *hdrs;
	enum upstream_result result;
	int status;
	char *hbuf;                  /* "name\0value\0" pairs */
	size_t hlen;
	char *body;
	size_t body_len, body_cap;
	uint64_t max_body;
	int64_t content_length;      /* the answer's Content-Length, -1 when it sent none */
	_Atomic uint64_t *buffered;  /* once submitted: the client's budget of body bytes held, */
	uint64_t max_buffered;       /* and its bound */
	bool over;                   /* the answer went past a bound */
};

/* Drop one hold on c (the caller's, or the thread's); the last frees it and gives its body bytes back to the budget. */
void upstream_call_unref(struct upstream_call *c);

/*
 * libcurl's header and write callbacks for c (arg): keep the answer's
 * headers (hop-by-hop ones and Content-Length aside) and body within the
 * bounds; past one, mark c over and stop the transfer.  The client thread's.
 */
size_t upstream_call_on_header(char *buf, size_t size, size_t n, void *arg);
size_t upstream_call_on_body(char *buf, size_t size, size_t n, void *arg);

#endif
