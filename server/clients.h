#ifndef RATELAB_CLIENTS_H
#define RATELAB_CLIENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/siphash.h"

/*
 * The per-client figures of a server: for each client identity (the name
 * a client gives itself in X-Client-Name, else its limiter key, else its
 * address: server/http/client_key.h) its requests, admissions, rejections,
 * retries and early retries.
 *
 * The rule.  A rejection opens an episode for its client and announces a
 * wait (Retry-After; none when the header is left out).  The client's
 * requests from then until its next admission are its retries.  A retry that
 * arrives before the rejection's send time plus the announced wait (the
 * last rejection's, to the millisecond below) is early, by the difference.
 * The verdict over a client's retries: polite when none was early, ignores
 * Retry-After when at least half were, too early otherwise.
 *
 * A client that sends several requests at once (four connections, each
 * honouring its own Retry-After) can say which request each attempt belongs
 * to, so that each retry is judged against its own rejection: it sends
 * `Retry-Attempt: N` (0 on a request's first attempt, 1 on its first retry)
 * and the same `Retry-Request: ID` on every attempt of one request (an
 * Idempotency-Key does as well when there is no Retry-Request: a client
 * that already sends one is paired as it is; ratelab's own clients do not
 * send one, as it would claim a retried POST is safe to replay).  A
 * retry with a key is paired with that request's last rejection and is
 * early only when it came back before that rejection's own wait was over.
 * An attempt that says it is a request's first is never a retry; when it
 * arrives while the client's latest announced wait is still running it
 * counts as a new request sent while told to wait (unless it came within
 * CLIENTS_HEARD_NS of the rejection that announced the wait, when it may
 * have left before the 429 reached the client): not early, not rude by the
 * verdict, but the thing a shared wait (hammer --shared-wait) removes.
 * A client that sends neither header is judged as above.
 *
 * Recording is per thread: each server thread counts into a shard of its
 * own, behind a mutex that only that thread takes on the request path, so
 * recording never contends.  The announced instants live in one table of
 * atomic words that every thread reads, so a client whose requests land on
 * different threads is still judged by its last announcement.  Both tables
 * are bounded: a shard evicts its least recently seen client into one
 * summed row, the instants table its oldest instant.  Readers merge the
 * shards (clients_snapshot).  Time comes in as an argument; thread-safe.
 */

#define CLIENTS_NAME_LEN 48
/* The name of the row that sums everyone past the top; a client that calls itself this shows as "others (a client)". */
#define CLIENTS_REST_NAME "others"
#define CLIENTS_TOP_DEFAULT 50
#define CLIENTS_MAX_ROUTES 16
/*
 * A 429's time to reach its client and be acted on, at most: 250 ms, so a
 * phone on a crowded room's Wi-Fi (or a page on a starved renderer) whose
 * other request left before the 429 reached it is not counted as sending
 * while told to wait (100 ms was passed beside two busy loops on loopback).
 */
#define CLIENTS_HEARD_NS (250 * 1000 * 1000ULL)

enum clients_verdict {
	CLIENTS_POLITE,
	CLIENTS_TOO_EARLY,
	CLIENTS_IGNORES_RETRY_AFTER,
};

/* What a request's Retry-Attempt header says it is. */
enum clients_said {
	CLIENTS_SAID_NOTHING,    /* no header, or one that does not parse */
	CLIENTS_SAID_FIRST,      /* Retry-Attempt: 0 */
	CLIENTS_SAID_RETRY,      /* Retry-Attempt: N, N >= 1 */
};

/* One limited request's decision, as clients_record takes it. */
struct clients_event {
	const char *id;          /* the identity's bytes (client_key format) */
	size_t idlen;
	int route;               /* the route's index (< CLIENTS_MAX_ROUTES), for the live quota */
	bool admitted;
	uint64_t announced_ns;   /* a rejection: the wait its Retry-After announced (0: none) */
	uint64_t remaining;      /* the decision's quota left and quota */
	uint64_t limit;
	enum clients_said said;  /* what its Retry-Attempt header said */
	const char *request;     /* its Retry-Request (or Idempotency-Key) bytes: pairs a retry with its rejection; or NULL */
	size_t requestlen;
};

/* One client's figures, or the sum of several. */
struct clients_row {
	char name[CLIENTS_NAME_LEN];
	uint64_t clients;        /* identities in this row: 1, or how many were summed */
	uint64_t requests, admitted, rejected, retries, early;
	uint64_t early_ns;       /* summed over the early retries: how early */
	uint64_t early_max_ns;
	uint64_t paired;         /* retries judged against their own request's rejection */
	uint64_t waiting_new;    /* first attempts sent while the client's announced wait ran */
	uint64_t last_ns;        /* its last request (the time clients_record was given) */
};

/* A route's last decision: its quota as the limiter last reported it. */
struct clients_quota {
	bool known;
	uint64_t remaining, limit, at_ns;
};

struct clients_snapshot {
	struct clients_row *rows;   /* the most active `top` clients, most requests first (malloc'd) */
	size_t n;
	struct clients_row rest;    /* everyone else summed; rest.clients of them (name "others") */
	struct clients_quota quota[CLIENTS_MAX_ROUTES];
};

struct clients;

/* A table started at now_ns, its hash keyed by *key (copied).  NULL when out of memory. */
struct clients *clients_new(const struct siphash_key *key, uint64_t now_ns);
void clients_free(struct clients *c);

/* Count one decided request of e->id at now_ns.  Thread-safe; contends only past 16 threads. */
void clients_record(struct clients *c, const struct clients_event *e, uint64_t now_ns);

/* Forget every client and instant (POST /reset).  Thread-safe (a racing record may survive). */
void clients_reset(struct clients *c);

/*
 * The most active `top` clients (by requests, then name) into *out, the
 * rest summed.  Returns 0, or -1 when out of memory.  Free with
 * clients_snapshot_destroy.  Thread-safe.
 */
int clients_snapshot(struct clients *c, size_t top, struct clients_snapshot *out);
void clients_snapshot_destroy(struct clients_snapshot *s);

/* The verdict over r's retries (the rule above).  Pure. */
enum clients_verdict clients_verdict_of(const struct clients_row *r);

/* "polite", "too early", "ignores Retry-After". */
const char *clients_verdict_name(enum clients_verdict v);

/*
 * One sentence for an attendee about r's retries and waits, e.g. "every
 * retry waited its own Retry-After; 12 new requests went out while told to
 * wait", into buf (len bytes, always terminated).  Pure.
 */
void clients_explain(const struct clients_row *r, char *buf, size_t len);

#endif
