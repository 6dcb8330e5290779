/* A limited path: faults, the decision, a delay fault, the answer. */
#include "server/http/limited.h"

#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>

#include "common/clock.h"
#include "common/prng.h"
#include "common/text.h"
#include "server/http/backend.h"
#include "server/http/daemon.h"
#include "server/http/proxied.h"
#include "server/http/request.h"

static _Thread_local struct prng tl_rng;
static _Thread_local uint64_t tl_gen;

/* This thread's fault PRNG for server s: a stream of the seed per thread. */
static struct prng *thread_rng(struct server *s)
{
	if (tl_gen != s->gen) {
		prng_seed(&tl_rng, prng_stream_seed(s->cfg.seed, atomic_fetch_add(&s->streams, 1)));
		tl_gen = s->gen;
	}
	return &tl_rng;
}

/*
 * The faults of this request: --faults, or ?status=&delay= with --query-faults.
 * Returns 0, or -1 (reason in err) when the query does not parse.
 */
static int pick_faults(struct server *s, struct MHD_Connection *c, struct request *rq, char *err, size_t errlen)
{
	const struct faults *f = &s->cfg.faults;
	struct faults q = { 0 };

	if (s->cfg.query_faults) {
		const char *st = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "status");
		const char *dl = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "delay");

		if ((st || dl) && faults_parse_query(st, dl, &q, err, errlen) < 0)
			return -1;
		if (st || dl)
			f = &q;
	}
	if (faults_empty(f))
		memset(&rq->fault, 0, sizeof(rq->fault));
	else
		faults_pick(f, thread_rng(s), &rq->fault);
	return 0;
}

/* What the store's answer rc (store_ops.decide) means for rq, whose decision is in rq->d. */
static void take_store_answer(struct request *rq, int rc)
{
	rq->phase = rc < 0 ? REQUEST_STORE_FAILED : REQUEST_DECIDED;
	/* A fail-open admission (STORE_UNHELD) took no slot, so it gives none back. */
	rq->holds_slot = rc == 0 && rq->d.admitted;
}

/* The store's thread is done with rq->d: wake the request so the handler answers. */
static void on_decided(void *arg, int rc)
{
	struct request *rq = arg;

	if (!lifecycle_claim(&rq->park))
		return;
	take_store_answer(rq, rc);
	lifecycle_resume(&rq->park, LIFECYCLE_DUE);
}

/*
 * Decide once per request.  True when the connection was suspended until an
 * asynchronous store (Redis) answers; MHD calls the handler again then.
 */
static bool decide(struct server *s, const struct route *rt, struct MHD_Connection *c, struct request *rq,
                   uint64_t now)
{
	if (rt->stateless) {
		rt->ops->decide(&rt->params, NULL, now, 1, &rq->d);
		rq->phase = REQUEST_DECIDED;
		return false;
	}
	rq->keylen = routes_client_key(rt, c, rq->key);
	/* Parked before submit: the store's thread may answer (on_decided) before submit returns. */
	if (rt->async && lifecycle_park(&s->life, &rq->park, c, LIFECYCLE_STORE)) {
		rq->phase = REQUEST_DECIDING;
		rq->conn = c;
		if (rt->store->ops->submit(rt->store, rq->key, rq->keylen, now, 1, &rq->d, on_decided, rq) == 0)
			return true;
		/* Not queued (stopping): decide on this thread. */
		lifecycle_wake(&rq->park, LIFECYCLE_DUE);
	}
	take_store_answer(rq, rt->store->ops->decide(rt->store, rq->key, rq->keylen, now, 1, &rq->d));
	return false;
}

/* Once the decision is in: true when the answer must wait for a delay fault (connection suspended). */
static bool hold(struct server *s, struct MHD_Connection *c, struct request *rq, uint64_t now)
{
	if (rq->fault.delay_ns == 0 ||
	    !lifecycle_park_until(&s->life, &rq->park, c, LIFECYCLE_DELAY, now + rq->fault.delay_ns))
		return false;
	rq->phase = REQUEST_HELD;
	return true;
}

/* Once the decision is in (and a delay fault's hold is over): true when the route's backend now holds rq. */
static bool enter_backend(struct server *s, struct MHD_Connection *c, struct request *rq)
{
	struct backend *b = s->routes.r[rq->route].backend;

	if (b == NULL || !rq->d.admitted || rq->fault.status)
		return false;
	return backend_enter(b, &s->life, c, rq);
}

/*
 * Make the close a TCP RST (linger 0).  A plain close (FIN) on a kept-alive
 * connection looks to libcurl like a stale connection, and it silently resends
 * the request on a fresh one: the client would never see the fault.
 */
static void abort_connection(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct linger lg = { 1, 0 };

	if (ci) {
		if (send(ci->connect_fd, "HTTP/1.1 200 OK\r\n", 17, MSG_NOSIGNAL) < 0)
			return;
		setsockopt(ci->connect_fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
}

/* What Retry-Attempt says (clients.h): digits only, else nothing. */
static enum clients_said attempt_said(const char *v)
{
	size_t n = v ? strspn(v, "0123456789") : 0;

	if (n == 0 || n > 9 || v[n] != '\0')
		return CLIENTS_SAID_NOTHING;
	return strspn(v, "0") == n ? CLIENTS_SAID_FIRST : CLIENTS_SAID_RETRY;
}

/*
 * Count rq in the per-client figures: under the name the client gives
 * itself, else its limiter key when the limiter keys per client, else its
 * address.
 */
static void count_client(struct server *s, struct MHD_Connection *c, const struct route *rt,
                         const struct request *rq, uint64_t announced_ns, uint64_t now)
{
	const char *name = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Client-Name");
	struct clients_event e = { .id = rq->key, .idlen = rq->keylen, .route = rq->route, .admitted = rq->d.admitted,
	                          .announced_ns = announced_ns, .remaining = rq->d.remaining, .limit = rq->d.limit };
	const char *idem = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Retry-Request");
	char own[CLIENT_KEY_LEN];
	size_t namelen;

	e.said = attempt_said(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Retry-Attempt"));
	if (!idem)
		idem = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Idempotency-Key");
	if (idem) {
		e.request = idem;
		e.requestlen = strnlen(idem, CLIENT_KEY_LEN);
	}
	if (name && (namelen = text_field_len(name)) > 0) {
		e.idlen = client_key_named(own, name, namelen);
		e.id = own;
	} else if (rq->keylen == 0 || rt->key == CONFIG_KEY_GLOBAL) {
		e.idlen = routes_client_address(c, s->cfg.ipv6_prefix, own);
		e.id = own;
	}
	clients_record(s->clients, &e, now);
}

/* The answer of a decided (or held, or failed) request, counted. */
static enum MHD_Result answer(struct server *s, struct MHD_Connection *c, struct request *rq, uint64_t now)
{
	const struct route *rt = &s->routes.r[rq->route];
	struct responses_verdict v = { rq->route, &rq->d, rq->fault.no_retry_after, rq->pooled ? &rq->rej : NULL };
	uint64_t announced = 0;
	enum MHD_Result ret;
	int status;

	if (rq->phase == REQUEST_STORE_FAILED) {
		stats_record(s->stats, rq->route, MHD_HTTP_SERVICE_UNAVAILABLE, STATS_NONE, now);
		return MHD_queue_response(c, MHD_HTTP_SERVICE_UNAVAILABLE, s->resp.unavailable);
	}
	if (rq->phase == REQUEST_SHED) {
		/* the limiter admitted it; the backend behind it could not serve it */
		stats_record(s->stats, rq->route, MHD_HTTP_SERVICE_UNAVAILABLE, STATS_ADMITTED, now);
		return MHD_queue_response(c, MHD_HTTP_SERVICE_UNAVAILABLE, s->resp.overloaded);
	}
	if (!rq->d.admitted) {
		ret = responses_rejected(&s->resp, c, rt, &v);
		announced = responses_announced_ns(&s->resp, &v,
		                                   s->resp.retry_after == HEADERS_RA_HTTPDATE ? clock_wall_ns() : 0);
		status = s->cfg.reject_status;
	} else if (rq->fault.status) {
		ret = responses_fault(c, rq->fault.status);
		status = rq->fault.status;
		stats_record_fault(s->stats);
	} else if (proxied_wants(s)) {
		ret = proxied_answer(s, c, rt, rq, &status);
	} else {
		ret = responses_admitted(&s->resp, c, rt, rq->route, &rq->d);
		status = MHD_HTTP_OK;
	}
	stats_record(s->stats, rq->route, status, rq->d.admitted ? STATS_ADMITTED : STATS_REJECTED, now);
	count_client(s, c, rt, rq, announced, now);
	return ret;
}

enum MHD_Result limited_serve(struct server *s, struct MHD_Connection *c, struct request *rq)
{
	uint64_t now = clock_monotonic_ns();
	char why[160];

	if (rq->phase == REQUEST_NEW) {
		if (pick_faults(s, c, rq, why, sizeof(why)) < 0) {
			stats_record(s->stats, rq->route, MHD_HTTP_BAD_REQUEST, STATS_NONE, now);
			return responses_bad_query(c, why);
		}
		if (rq->fault.reset) {
			stats_record(s->stats, rq->route, STATS_STATUS_RESET, STATS_NONE, now);
			stats_record_fault(s->stats);
			abort_connection(c);
			return MHD_NO;
		}
		if (decide(s, &s->routes.r[rq->route], c, rq, now - s->epoch_ns))
			return MHD_YES;
	}
	/* Woken by the drain in a virtual worker's hands: its service ends early, answered as served. */
	if (rq->phase == REQUEST_SERVING)
		rq->phase = REQUEST_SERVED;
	else if (rq->phase == REQUEST_QUEUED)
		rq->phase = REQUEST_SHED;
	if (rq->phase == REQUEST_DECIDED && hold(s, c, rq, now))
		return MHD_YES;
	if ((rq->phase == REQUEST_DECIDED || rq->phase == REQUEST_HELD) && enter_backend(s, c, rq))
		return MHD_YES;
	if (proxied_wants(s) && proxied_start(s, c, rq))
		return MHD_YES;
	return answer(s, c, rq, now);
}

void limited_end(struct server *s, struct request *rq)
{
	const struct route *rt;

	if (!rq->holds_slot)
		return;
	rt = &s->routes.r[rq->route];
	if (rt->releases)
		rt->store->ops->release(rt->store, rq->key, rq->keylen, clock_monotonic_ns() - s->epoch_ns);
}
