#ifndef RATELAB_SCENARIO_H
#define RATELAB_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * Scripted misbehaviour for client conformance.  A scenario is a list of
 * steps (status, Retry-After, extra headers, delay, or a transport failure); every client
 * walks it from the first step, and the last step repeats forever.  Clients
 * are keyed as the server keys them (server/http/client_key.h), plus
 * the "/client-N" path prefix that `ratelab verify --clients N` gives each
 * copy of the command, so N processes on one address are N clients.
 *
 * Every arrival is recorded (bounded log) with what it was answered and when
 * that answer left the server, so a grader (lab/verify_grade.h) can set the
 * waits asked next to the gaps observed.  All functions on one scenario are
 * thread-safe (one mutex).
 */

#define SCENARIO_CLIENT_LEN 64
#define SCENARIO_LOG_MAX 4096
#define SCENARIO_MAX_CLIENTS 1024
#define SCENARIO_MAX_DELAY_NS (10ULL * 1000000000ULL)
#define SCENARIO_RA_LEN 48
#define SCENARIO_KEY_LEN 80

/* A scripted transport failure instead of an answer. */
enum scenario_fault {
	SCENARIO_FAULT_NONE,
	SCENARIO_FAULT_RESET,               /* "reset": the connection is reset before any byte */
	SCENARIO_FAULT_CUT,                 /* "close-mid-body": status, headers, half the body, close */
	SCENARIO_FAULT_MALFORMED,           /* "malformed": bytes that are not an HTTP answer, close */
};

/* Where the wait an answer asks for comes from: the first of these it carries. */
enum scenario_wait_source {
	SCENARIO_WAIT_NONE,
	SCENARIO_WAIT_RETRY_AFTER,          /* Retry-After (the longer of two) */
	SCENARIO_WAIT_RATELIMIT,            /* RateLimit: ...;t=N (IETF draft) */
	SCENARIO_WAIT_RATELIMIT_RESET,      /* RateLimit-Reset: N (earlier drafts) */
	SCENARIO_WAIT_X_RATELIMIT_RESET,    /* X-RateLimit-Reset: N (delta seconds) */
};

/* How an arrival's answer ended. */
enum scenario_end {
	SCENARIO_END_PENDING,               /* not yet: held, or being sent */
	SCENARIO_END_SENT,                  /* the answer's last byte was handed to the socket */
	SCENARIO_END_FAILED,                /* not delivered: a scripted failure, or the client went away */
};

/* One request, as the server hands it to the scenario. */
struct scenario_request {
	const char *method;
	const char *path;
	const char *key;                     /* the server's client key bytes (may be binary), or NULL */
	size_t keylen;
	const char *idempotency_key;         /* header value or NULL */
	const char *traceparent;             /* header value or NULL */
	uint64_t now_ns;                     /* monotonic */
	uint64_t wall_ns;                    /* wall clock, for HTTP-date Retry-After */
	const void *conn;                    /* the connection it came on (identity only), or NULL */
};

/* The scripted answer. */
struct scenario_answer {
	int status;
	enum scenario_fault fault;
	uint64_t delay_ns;
	bool has_wait;
	enum scenario_wait_source wait_source;
	uint64_t wait_ns;                    /* the wait asked, counted from when the answer goes out */
	bool wait_date;                      /* the wait runs to an instant (an HTTP-date) */
	char headers[416];                   /* "Name: value\n" lines, Retry-After included */
	char body[96];
	uint64_t token;                      /* for scenario_done */
};

/* One recorded arrival. */
struct scenario_arrival {
	uint64_t t_ns;                       /* monotonic arrival time */
	uint64_t delay_ns;                   /* how long the answer was held */
	uint64_t end_ns;                     /* monotonic: when the answer left, or failed; 0 while pending */
	enum scenario_end end;
	char method[12];
	char path[64];
	char client[SCENARIO_CLIENT_LEN];    /* printable client key, e.g. "127.0.0.1" or "127.0.0.1/client-2" */
	char idempotency_key[SCENARIO_KEY_LEN]; /* "" when absent */
	char traceparent[64];                /* "" when absent */
	unsigned step;                       /* index of the step answered (0-based) */
	int status;
	enum scenario_fault fault;
	bool has_wait;
	enum scenario_wait_source wait_source;
	bool wait_date;                      /* an HTTP-date: the wait ends at t + delay + wait, whenever it left */
	uint64_t wait_ns;                    /* asked, from the planned send (t + delay) */
	bool relayed;                        /* passed to the upstream (serve --upstream): status is its answer's */
	const void *conn;                    /* its connection (identity only, never dereferenced), or NULL */
};

/* One client's attempts, counted past the log's cap. */
struct scenario_count {
	char client[SCENARIO_CLIENT_LEN];
	uint64_t attempts;
};

struct scenario;

/*
 * A built-in by name, or else a JSON script file at that path.  Returns the
 * scenario (free with scenario_free), or NULL with a one-line reason in err.
 */
struct scenario *scenario_new(const char *name_or_file, char *err, size_t errlen);

/*
 * Parse a JSON script, e.g. [{"status":429,"retry_after":"2"},{"status":200}].
 * Step keys: status (required unless fault is "reset" or "malformed"),
 * retry_after (a string, a number, or an array of two for a doubled header;
 * "date:N" sends the answer's time + N s, rounded up, as an HTTP-date; N may
 * be negative), headers (object of strings), delay (duration string or
 * milliseconds), fault ("reset", "close-mid-body" or "malformed").  `name`
 * labels it.  NULL with the reason in err.
 */
struct scenario *scenario_parse(const char *json, const char *name, char *err, size_t errlen);

/* Free a scenario; NULL is a no-op. */
void scenario_free(struct scenario *sc);

/* The scenario's name (built-in name or file path). */
const char *scenario_name(const struct scenario *sc);

/* The default expectation list, e.g. "succeeds,honours-retry-after,max-attempts<=3". */
const char *scenario_default_expect(const struct scenario *sc);

/* The method the scenario is written for ("GET" or "POST"; a script: "GET"). */
const char *scenario_method(const struct scenario *sc);

/* True when a run may end as soon as one expectation has failed for good (no later arrival can help). */
bool scenario_stops_when_settled(const struct scenario *sc);

/* "retry-after-seconds, retry-after-date, ...": the built-in names. */
const char *scenario_builtin_names(void);

/* How many built-ins there are, and the name of built-in i (NULL past the end), in --all order. */
size_t scenario_builtin_count(void);
const char *scenario_builtin_name(size_t i);

/*
 * One built-in's lines for `ratelab verify --list`: name, method, what the
 * server answers, what a correct client does, the default expectations, and
 * the rate-limit dialect it speaks (serve --headers' names: ietf, draft-03,
 * x-ratelimit, github, legacy, retry-after-only, none).
 */
void scenario_builtin_describe(size_t i, FILE *f);

/* "reset", "close-mid-body", "malformed" ("" for none). */
const char *scenario_fault_name(enum scenario_fault f);

/* "Retry-After", "RateLimit", "RateLimit-Reset", "X-RateLimit-Reset" ("" for none). */
const char *scenario_wait_source_name(enum scenario_wait_source w);

/*
 * Answer one request from the script and record the arrival.  Advances the
 * client's position.  Returns 0; thread-safe.
 */
int scenario_answer(struct scenario *sc, const struct scenario_request *req, struct scenario_answer *out);

/*
 * The answer that carried `token` (scenario_answer) ended at now_ns: sent
 * (its last byte left) or not.  Stale tokens (from before a reset, or past the
 * log) are ignored.  Thread-safe.
 */
void scenario_done(struct scenario *sc, uint64_t token, bool sent, uint64_t now_ns);

/*
 * The answer that carried `token` was passed to the upstream (a 2xx step
 * under serve --upstream) and its client answered `status`: the arrival
 * records that status, marked relayed.  Stale tokens are ignored.
 * Thread-safe.
 */
void scenario_relayed(struct scenario *sc, uint64_t token, int status);

/*
 * Copy up to max recorded arrivals (oldest first) into out; returns how many
 * are in the log (at most SCENARIO_LOG_MAX).  *dropped (may be NULL) gets the
 * arrivals that came after the log was full.  Thread-safe.
 */
size_t scenario_arrivals(struct scenario *sc, struct scenario_arrival *out, size_t max, uint64_t *dropped);

/*
 * Every client's attempts so far, counted in full (not only the logged
 * ones), into out[0..max); returns how many clients there are (at most
 * SCENARIO_MAX_CLIENTS; past that cap the last slot counts the rest).
 * Thread-safe.
 */
size_t scenario_counts(struct scenario *sc, struct scenario_count *out, size_t max);

/* The time (monotonic ns) of the last arrival, or 0 before the first; *pending gets the answers still held or being
 * sent.  Thread-safe. */
uint64_t scenario_last_activity(struct scenario *sc, size_t *pending);

/* Forget every client's position and the log.  Thread-safe. */
void scenario_reset(struct scenario *sc);

/* The printable client name of a server key (+ /client-N path prefix) into buf. */
void scenario_client_name(const char *key, size_t keylen, const char *path, char *buf, size_t len);

/*
 * The arrival log as a JSON array (malloc'd, caller frees), times in ms from
 * the first arrival; NULL when out of memory.  Thread-safe.
 */
char *scenario_arrivals_json(struct scenario *sc);

#endif
