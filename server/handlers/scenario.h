#ifndef RATELAB_SCENARIO_H
#define RATELAB_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * Scripted misbehaviour for client conformance.  A scenario is a
 * list of steps (status, Retry-After, extra headers, delay); every client
 * walks it from the first step, and the last step repeats forever.  Clients
 * are keyed as the server keys them (server/http/client_key.h), plus
 * the "/client-N" path prefix that `ratelab verify --clients N` gives each
 * copy of the command, so N processes on one address are N clients.
 *
 * Every arrival is recorded (bounded log) with what it was answered, so a
 * grader (lab/verify_grade.h) can set the waits asked next to the gaps
 * observed.  All functions on one scenario are thread-safe (one mutex).
 */

#define SCENARIO_MAX_STEPS 32
#define SCENARIO_HEADERS_LEN 320
#define SCENARIO_CLIENT_LEN 64
#define SCENARIO_LOG_MAX 4096
#define SCENARIO_MAX_CLIENTS 1024
#define SCENARIO_MAX_DELAY_NS (10ULL * 1000000000ULL)
#define SCENARIO_RA_LEN 48

struct scenario_step {
	int status;                          /* 100..599 */
	char retry_after[SCENARIO_RA_LEN];   /* verbatim value, or "" for none */
	bool retry_after_date;               /* retry_after holds delta seconds, sent as an HTTP-date */
	char headers[SCENARIO_HEADERS_LEN];  /* extra "Name: value\n" lines */
	uint64_t delay_ns;                   /* hold the answer this long (capped at SCENARIO_MAX_DELAY_NS) */
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
};

/* The scripted answer. */
struct scenario_answer {
	int status;
	uint64_t delay_ns;
	uint64_t wait_ns;                    /* the wait Retry-After asks for (exact, from the wall clock) */
	bool has_wait;
	char headers[SCENARIO_HEADERS_LEN + 96]; /* "Name: value\n" lines, Retry-After included */
	char body[96];
};

/* One recorded arrival. */
struct scenario_arrival {
	uint64_t t_ns;                       /* monotonic arrival time */
	uint64_t delay_ns;                   /* how long the answer was held */
	char method[12];
	char path[64];
	char client[SCENARIO_CLIENT_LEN];    /* printable client key, e.g. "127.0.0.1" or "127.0.0.1/client-2" */
	char idempotency_key[48];            /* "" when absent */
	char traceparent[64];                /* "" when absent */
	unsigned step;                       /* index of the step answered (0-based) */
	int status;
	bool has_wait;
	uint64_t wait_ns;
};

struct scenario;

/*
 * A built-in by name, or else a JSON script file at that path.  Returns the
 * scenario (free with scenario_free), or NULL with a one-line reason in err.
 */
struct scenario *scenario_new(const char *name_or_file, char *err, size_t errlen);

/*
 * Parse a JSON script, e.g. [{"status":429,"retry_after":"2"},{"status":200}].
 * Step keys: status (required), retry_after (string or number; "date:N" sends
 * now+N s as an HTTP-date), headers (object of strings), delay (duration
 * string or milliseconds).  `name` labels it.  NULL with the reason in err.
 */
struct scenario *scenario_parse(const char *json, const char *name, char *err, size_t errlen);

/* Free a scenario; NULL is a no-op. */
void scenario_free(struct scenario *sc);

/* The scenario's name (built-in name or file path). */
const char *scenario_name(const struct scenario *sc);

/* The default expectation list, e.g. "succeeds,honours-retry-after,max-attempts<=3". */
const char *scenario_default_expect(const struct scenario *sc);

/* "retry-after-seconds, retry-after-date, ...": the built-in names. */
const char *scenario_builtin_names(void);

/*
 * Answer one request from the script and record the arrival.  Advances the
 * client's position.  Returns 0; thread-safe.
 */
int scenario_answer(struct scenario *sc, const struct scenario_request *req, struct scenario_answer *out);

/*
 * Copy up to max recorded arrivals (oldest first) into out; returns how many
 * were recorded in all (may exceed max).  *dropped (may be NULL) gets the
 * arrivals that did not fit in the log.  Thread-safe.
 */
size_t scenario_arrivals(struct scenario *sc, struct scenario_arrival *out, size_t max, uint64_t *dropped);

/* Forget every client's position and the log.  Thread-safe. */
void scenario_reset(struct scenario *sc);

/* The printable client name of a server key (+ /client-N path prefix) into buf. */
void scenario_client_name(const char *key, size_t keylen, const char *path, char *buf, size_t len);

/*
 * The arrival log as a JSON array (malloc'd, caller frees), times in ms from
 * the first arrival; NULL when out of memory.  Thread-safe.
 */
char *scenario_arrivals_json(struct scenario *sc);

/* ---- the server side: `ratelab serve --scenario NAME|FILE` ---- */

struct server;
struct server_config;
struct server_request;
struct server_reply;

/*
 * A server_handler_fn answering a limited path from the scenario `ctx`
 * (holding the answer for its step's delay).  Thread-safe.
 */
int scenario_server_handler(struct server *srv, void *ctx, const struct server_request *req,
                            struct server_reply *out);

/* The --scenario lines of `ratelab serve --help`. */
void scenario_usage(FILE *f);

/*
 * Make c answer every limited path from sc, GET /scenario list the arrivals
 * as JSON, and POST /reset start every client at the first step again (and
 * empty the log).  sc must outlive the server.  Returns 0, or -1 (no room).
 */
int scenario_register(struct server_config *c, struct scenario *sc);

#endif
