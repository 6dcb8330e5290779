/* An admitted request proxied to the upstream: sent, parked, answered with the upstream's answer. */
#include "server/http/proxied.h"

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/http/daemon.h"
#include "server/http/request.h"
#include "server/proxy/upstream.h"

bool proxied_wants(const struct server *s)
{
	return s->upstream != NULL;
}

struct forward {
	struct upstream_call *call;
	const char *connection;   /* the request's Connection header, or NULL */
};

/* A request header to forward: not hop-by-hop (by name or by its Connection header), not one libcurl writes. */
static enum MHD_Result forward_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct forward *fw = cls;

	(void)kind;
	if (upstream_hop_by_hop(key) || upstream_connection_lists(fw->connection, key) || strcasecmp(key, "Host") == 0 ||
	    strcasecmp(key, "Content-Length") == 0 || strcasecmp(key, "Expect") == 0)
		return MHD_YES;
	return upstream_call_header(fw->call, key, value) == 0 ? MHD_YES : MHD_NO;
}

/*
 * The upstream thread: the answer's head is in (or it failed), or more of
 * its body, for a reader parked on rq->park; wake the request (it has not
 * let go of the call, or this is not called).
 */
static void on_answer(void *arg)
{
	struct request *rq = arg;

	lifecycle_wake(&rq->park, LIFECYCLE_DUE);
}

/* The client's address as text ("127.0.0.1", "::1") into buf; false when it has none. */
static bool peer_text(const struct sockaddr *sa, char *buf, size_t len)
{
	socklen_t sl;

	if (!sa || (sa->sa_family != AF_INET && sa->sa_family != AF_INET6))
		return false;
	sl = sa->sa_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	return getnameinfo(sa, sl, buf, (socklen_t)len, NULL, 0, NI_NUMERICHOST) == 0;
}

/* rq's call: its method, target, headers and body; NULL when out of memory. */
static struct upstream_call *build_call(struct MHD_Connection *c, const struct request *rq)
{
	struct upstream_call *call = upstream_call_new(rq->method ? rq->method : "GET", rq->target ? rq->target : "/",
	                                               rq->body, rq->body_len);
	const union MHD_ConnectionInfo *peer = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS), *sock;
	char addr[NI_MAXHOST];
	struct forward fw = { call, MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONNECTION) };

	if (!call)
		return NULL;
	MHD_get_connection_values(c, MHD_HEADER_KIND, forward_header, &fw);
	/* The upstream sees the client's headers, not libcurl's Accept in their place. */
	if (!MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT) &&
	    upstream_call_header(call, MHD_HTTP_HEADER_ACCEPT, NULL) < 0) {
		upstream_call_release(call);
		return NULL;
	}
	if (peer && peer_text(peer->client_addr, addr, sizeof(addr)) && upstream_call_header(call, "X-Forwarded-For", addr) < 0) {
		upstream_call_release(call);
		return NULL;
	}
	/* A connection suspended while it waits is not watched by MHD: a call that goes on watches it for a hang-up. */
	if ((sock = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD)))
		upstream_call_watch(call, sock->connect_fd);
	return call;
}

bool proxied_start(struct server *s, struct MHD_Connection *c, struct request *rq)
{
	if (!rq->d.admitted || rq->fault.status ||
	    (rq->phase != REQUEST_DECIDED && rq->phase != REQUEST_HELD && rq->phase != REQUEST_SERVED))
		return false;
	return proxied_send(s, c, rq);
}

bool proxied_send(struct server *s, struct MHD_Connection *c, struct request *rq)
{
	if (!s->upstream || rq->call)
		return false;
	if (!(rq->call = build_call(c, rq)))
		return false;
	/* Parked before the submit: the upstream's thread may answer before submit returns. */
	if (!lifecycle_park(&s->life, &rq->park, c, LIFECYCLE_UPSTREAM))
		return false;
	rq->phase = REQUEST_UPSTREAM;
	if (upstream_submit(s->upstream, rq->call, on_answer, rq) < 0)
		lifecycle_wake(&rq->park, LIFECYCLE_DUE);
	return true;
}

struct header_copy {
	struct MHD_Response *r;
	bool drop_ratelimit;   /* ratelab's own RateLimit headers replace the upstream's */
};

static void copy_header(void *ctx, const char *name, const char *value)
{
	struct header_copy *hc = ctx;

	if (hc->drop_ratelimit &&
	    (strncasecmp(name, "RateLimit", 9) == 0 || strncasecmp(name, "X-RateLimit-", 12) == 0))
		return;
	/* MHD writes its own Date. */
	if (strcasecmp(name, "Date") == 0)
		return;
	MHD_add_response_header(hc->r, name, value);
}

/* What a failure's detail says, by upstream result. */
static const char *failure_detail(enum upstream_result r)
{
	switch (r) {
	case UPSTREAM_CONNECT:
		return "no connection to the upstream";
	case UPSTREAM_TIMEOUT:
		return "the upstream did not answer in time";
	case UPSTREAM_TOO_BIG:
		return "the upstream's answer is over the size bound";
	case UPSTREAM_BUSY:
		return "too many requests wait for the upstream";
	case UPSTREAM_CLIENT_GONE:
		return "the client hung up before the upstream answered";
	default:
		return "the upstream's answer is not HTTP or ended early";
	}
}

/* A failure's answer: status (502, 503 or 504) with a problem+json body saying what failed. */
static enum MHD_Result failure(struct MHD_Connection *c, int status, const char *what)
{
	char body[256];
	int n = snprintf(body, sizeof(body), "{\"type\":\"about:blank\",\"title\":\"%s\",\"status\":%d,\"detail\":\"%s\"}\n",
	                 status == 504 ? "Gateway Timeout" : status == 503 ? "Service Unavailable" : "Bad Gateway",
	                 status, what);
	struct MHD_Response *r = MHD_create_response_from_buffer((size_t)n, body, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/problem+json");
	ret = MHD_queue_response(c, (unsigned)status, r);
	MHD_destroy_response(r);
	return ret;
}

static ssize_t no_body(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)cls;
	(void)pos;
	(void)buf;
	(void)max;
	return MHD_CONTENT_READER_END_OF_STREAM;
}

/* A streamed answer body: the call (held), and where its reader parks while no byte is in. */
struct stream {
	struct upstream_call *call;
	struct server *s;
	struct request *rq;          /* valid while MHD reads the body: the request is not over before */
	struct MHD_Connection *conn;
};

/* No byte is in: park the request until the upstream's thread has more (on_answer); false when draining. */
static bool stream_wait(void *arg)
{
	struct stream *st = arg;

	return lifecycle_park(&st->s->life, &st->rq->park, st->conn, LIFECYCLE_UPSTREAM);
}

/* MHD asks for the next bytes of the body: what is in, the end, a cut (the exchange failed), or suspend until more. */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct stream *st = cls;
	ssize_t n = upstream_call_read(st->call, buf, max, stream_wait, st);

	(void)pos;
	if (n == UPSTREAM_READ_END)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (n < 0)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	return n;
}

static void stream_free(void *cls)
{
	struct stream *st = cls;

	upstream_call_drop(st->call);
	free(st);
}

/*
 * The response carrying call's answer: for a HEAD, one of the length the
 * upstream announced (MHD sends no body for it); else its body streamed as
 * it comes, of that length (MHD_SIZE_UNKNOWN, chunked, when none was
 * announced).  NULL when out of memory.
 */
static struct MHD_Response *answer_of(struct server *s, struct MHD_Connection *c, struct request *rq,
                                      struct upstream_call *call)
{
	int64_t cl = upstream_call_content_length(call);
	uint64_t size = cl >= 0 ? (uint64_t)cl : MHD_SIZE_UNKNOWN;
	struct stream *st;
	struct MHD_Response *r;

	if (rq->method && strcmp(rq->method, MHD_HTTP_METHOD_HEAD) == 0 && cl >= 0)
		return MHD_create_response_from_callback((uint64_t)cl, 4096, no_body, NULL, NULL);
	if (!(st = malloc(sizeof(*st))))
		return NULL;
	*st = (struct stream){ upstream_call_hold(call), s, rq, c };
	/* MHD's buffer for the body is block bytes: no more than a short answer needs. */
	if (!(r = MHD_create_response_from_callback(size, cl >= 0 && cl < 32 * 1024 ? (size_t)cl + 1 : 32 * 1024,
	                                            stream_read, st, stream_free)))
		stream_free(st);
	return r;
}

/* The upstream's answer to rq (its head in, its body streamed), with ratelab's RateLimit headers of rt (NULL: none). */
static enum MHD_Result relay(struct server *s, struct MHD_Connection *c, const struct route *rt,
                             struct request *rq, int *status)
{
	struct upstream_call *call = rq->call;
	struct MHD_Response *r = answer_of(s, c, rq, call);
	struct header_copy hc = { r, rt && s->resp.headers != HEADERS_NONE };
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	upstream_call_headers(call, copy_header, &hc);
	if (rt)
		responses_add_ratelimit(&s->resp, rt, &rq->d, r);
	*status = upstream_call_status(call);
	ret = MHD_queue_response(c, (unsigned)*status, r);
	MHD_destroy_response(r);
	return ret;
}

enum MHD_Result proxied_answer(struct server *s, struct MHD_Connection *c, const struct route *rt,
                               struct request *rq, int *status)
{
	enum upstream_result res;

	*status = MHD_HTTP_SERVICE_UNAVAILABLE;
	if (rq->phase != REQUEST_UPSTREAM)
		return failure(c, *status, rq->call ? "the server is stopping" : "out of memory");
	if (rq->park.outcome == LIFECYCLE_SHED)
		return failure(c, *status, "the server stopped before the upstream answered");
	if (upstream_call_head(rq->call))
		return relay(s, c, rt, rq, status);
	res = upstream_call_result(rq->call);
	*status = res == UPSTREAM_TIMEOUT ? MHD_HTTP_GATEWAY_TIMEOUT : MHD_HTTP_BAD_GATEWAY;
	return failure(c, *status, failure_detail(res));
}

void proxied_end(struct request *rq)
{
	upstream_call_release(rq->call);
	rq->call = NULL;
	free(rq->target);
	rq->target = NULL;
}
