#ifndef RATELAB_RESPONSES_H
#define RATELAB_RESPONSES_H

#include <microhttpd.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "server/http/headers.h"
#include "server/http/routes.h"
#include "server/limit/limiter.h"
#include "server/server.h"

/*
 * The answers of limited paths as MHD responses: admitted (200 with the
 * RateLimit headers), rejected (the problem body with Retry-After), injected
 * faults, and the constant ones (413, 503 store unavailable, 503 overloaded,
 * 404 no route, 400 bad path),
 * built once at start-up.  Admitted and rejected answers are reused while they
 * say the same thing, so the hot paths seldom allocate or format headers.
 */

#define RESPONSES_CACHE_SLOTS 64

/*
 * The last admitted response of one server thread.  Under steady load most
 * admitted answers say the same thing (same remaining, same t), so a thread
 * re-queues its previous response (MHD counts references) instead of building
 * one.  Only the owning thread touches its slot.
 */
struct responses_slot {
	_Alignas(64) struct MHD_Response *r;
	int route, layer;
	uint64_t remaining, reset_s, next_s;
	uint64_t github_reset;               /* X-RateLimit-Reset, the Unix second (github), else 0 */
};

/*
 * A connection's last rejection.  Its body points at `body`: the connection
 * sends one answer at a time, so the buffer is rewritten only once the
 * previous answer is out.  When the next rejection has the same headers and
 * body length, only the body text is rewritten and the response re-queued:
 * no allocation, no header building.  When it has the same route, layer,
 * quota, window and remaining, the body's head (headers_problem_head) is
 * already in `body`, and only the wait-dependent tail is written.
 */
struct responses_rejection {
	struct MHD_Response *r;
	int route, layer;
	bool has_ra;
	uint64_t limit, remaining, reset_s, window_ns;
	uint64_t github_reset;               /* as in responses_slot */
	size_t len, head_len;
	char ra[40];
	char body[HEADERS_BODY_LEN];
};

struct responses {
	enum headers_mode headers;
	enum headers_retry_after retry_after;
	int reject_status;
	uint64_t gen;                        /* the server's generation: keys the threads' slots */
	struct responses_slot slots[RESPONSES_CACHE_SLOTS];
	_Atomic unsigned next_slot;
	struct MHD_Response *ok;             /* admitted, no RateLimit headers */
	struct MHD_Response *too_big;        /* 413, Connection: close */
	struct MHD_Response *unavailable;    /* 503: the store failed and fails closed */
	struct MHD_Response *no_route;       /* 404 */
	struct MHD_Response *bad_path;       /* 400: a path path_normalize refuses, Connection: close */
	struct MHD_Response *overloaded;     /* 503: the route's backend shed the request */
};

/* What a rejection says, as the request path hands it over. */
struct responses_verdict {
	int route;                           /* the route's index */
	const struct limiter_decision *d;    /* the limiter's decision (not admitted) */
	bool no_retry_after;                 /* a fault leaves Retry-After out */
	struct responses_rejection *kept;    /* the connection's kept rejection, or NULL: a response of its own */
};

/*
 * Take the answer settings of cfg and build the constant responses into rs
 * (which starts zeroed); gen is unique to the server.  Returns 0, or -1 when
 * out of memory (responses_destroy frees what was built).
 */
int responses_init(struct responses *rs, const struct server_config *cfg, uint64_t gen);

/* Free the constant and cached responses.  Only once the daemon has stopped. */
void responses_destroy(struct responses *rs);

/* Drop a connection's kept rejection (when the connection closes). */
void responses_rejection_destroy(struct responses_rejection *rj);

/* Add the RateLimit headers (as rs->headers says) of admission d on route rt to r. */
void responses_add_ratelimit(const struct responses *rs, const struct route *rt, const struct limiter_decision *d,
                             struct MHD_Response *r);

/* 200 for an admission d on route index `route` (rt), from this thread's slot when it still fits. */
enum MHD_Result responses_admitted(struct responses *rs, struct MHD_Connection *c, const struct route *rt,
                                   int route, const struct limiter_decision *d);

/*
 * The rejection v on route rt: the connection's kept response (v->kept)
 * rewritten in place, or (kept NULL) a response of its own.
 */
enum MHD_Result responses_rejected(struct responses *rs, struct MHD_Connection *c, const struct route *rt,
                                   const struct responses_verdict *v);

/*
 * The wait the rejection v announces in its Retry-After, from its send
 * time: the delta-seconds, or the HTTP-date's instant less wall_ns (the wall
 * clock now, read only for that form); 0 when the header is left out.
 */
uint64_t responses_announced_ns(const struct responses *rs, const struct responses_verdict *v, uint64_t wall_ns);

/* An injected fault's answer: `status` with "injected fault: STATUS". */
enum MHD_Result responses_fault(struct MHD_Connection *c, int status);

/*
 * The drain's answer to a request whose body is still arriving, as the raw
 * bytes of a whole HTTP/1.1 response: 503, Connection: close, Retry-After: 1,
 * a text body.  Constant; *len is its length.
 */
const char *responses_draining_raw(size_t *len);

/* The answer to a body not in within --body-timeout, raw as above: 408, Connection: close, a text body. */
const char *responses_body_late_raw(size_t *len);

/* 400 for an ambiguous body framing (framing.h): "bad framing: WHY", Connection: close. */
enum MHD_Result responses_bad_framing(struct MHD_Connection *c, const char *why);

/* 400 for a bad fault query: "bad fault query: WHY" as one line of text. */
enum MHD_Result responses_bad_query(struct MHD_Connection *c, const char *why);

/* Queue r (NULL: MHD_NO, the connection closes) and drop this reference to it. */
enum MHD_Result responses_send(struct MHD_Connection *c, unsigned status, struct MHD_Response *r);

#endif
