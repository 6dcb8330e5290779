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

#include "server/proxy/upstream.h"

/* What every call of one client shares with the client's thread (a part of struct upstream). */
struct upstream_hub {
	CURLM *multi;                /* the client's; a call wakes it when its reader made room or let go */
	_Atomic uint64_t buffered;   /* the bodies' capacity held by live calls */
	uint64_t max_buffered;       /* its bound */
	_Atomic bool resume_any;     /* some call's reader made room: look for calls to resume */
	bool kick_any;               /* the thread's: some active call has a kick */
};

struct upstream_call {
	pthread_mutex_t lock;        /* the caller's side (release, read) against the thread's (notify, body) */
	_Atomic int refs;
	bool released;               /* under lock: done is not called from now on, and the exchange stops */
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
	char *body;                  /* bytes in and not yet read: body[body_head, body_head + body_len) */
	size_t body_head, body_len, body_cap;
	uint64_t body_total;         /* bytes of the body taken in so far (against max_body) */
	uint64_t max_body;
	int64_t content_length;      /* the answer's Content-Length, -1 when it sent none */
	struct upstream_hub *hub;    /* once submitted: its client's budget, flags and multi handle */
	bool over;                   /* the answer went past a bound */
	bool gone;                   /* the thread's: on_body refused bytes because the caller let go */
	bool head;                   /* under lock: status and headers are in (readable from then on) */
	bool notified;               /* under lock: done was called for the head or the end */
	bool ended;                  /* under lock: the exchange is over, result set */
	bool waiting;                /* under lock: the reader waits for bytes; done wakes it */
	bool paused;                 /* under lock: the buffer was full, the thread paused the transfer */
	bool resume;                 /* under lock: the reader made room; the thread resumes the transfer */
	bool kick;                   /* the thread's: the head or bytes came this round; notify after it */
	int client_fd;               /* the client's socket, to watch if the call goes on: set by the caller before
	                              * submit, then the thread's (-1 once tried, or none) */
	bool scanned;                /* the thread's: a watch scan saw c in flight; the next one watches it */
	int watch_fd;                /* the thread's: a dup of client_fd, watched for its hang-up; -1 none */
};

/* Wake the client's thread out of curl_multi_poll (its poll bound covers a failed wakeup).  Thread-safe. */
void upstream_hub_wakeup(struct upstream_hub *h);

/*
 * Tell c's caller (done) that the head, more bytes or the end came: once
 * for the head or the end, then each time its reader waits.  Call with
 * c's lock held.
 */
void upstream_call_notify(struct upstream_call *c);

/*
 * Every option of c's exchange on e (a fresh or reset handle) for url
 * under cfg's timeouts and body bound, with libcurl's header and body
 * callbacks that collect c's answer.  Returns 0, or -1 when libcurl
 * refused one.  The client thread's.
 */
int upstream_call_set_options(struct upstream_call *c, CURL *e, const char *url, const struct upstream_config *cfg);

#endif
