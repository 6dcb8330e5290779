#ifndef RATELAB_SCENARIO_SCRIPT_H
#define RATELAB_SCENARIO_SCRIPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/handlers/scenario.h"

/*
 * A scenario's script: the steps parsed from JSON, and the built-in scripts
 * with what each one expects of a client.  Private to server/handlers/.
 */

#define SCENARIO_MAX_STEPS 32
#define SCENARIO_HEADERS_LEN 320
#define SCENARIO_MAX_RA 2

/* One Retry-After field of a step. */
struct scenario_retry_after {
	char text[SCENARIO_RA_LEN];          /* verbatim value (unused for a date) */
	bool date;                           /* send the answer's time + offset_s as an HTTP-date */
	int64_t offset_s;
};

struct scenario_step {
	int status;                          /* 200..599 */
	struct scenario_retry_after ra[SCENARIO_MAX_RA];
	size_t nra;                          /* 0, 1, or 2 (a doubled header) */
	char headers[SCENARIO_HEADERS_LEN];  /* extra "Name: value\n" lines */
	uint64_t delay_ns;                   /* hold the answer this long (capped at SCENARIO_MAX_DELAY_NS) */
	enum scenario_fault fault;
	/* A wait the extra headers give (RateLimit t=, RateLimit-Reset, X-RateLimit-Reset), found at parse time. */
	enum scenario_wait_source header_wait;
	uint64_t header_wait_ns;
};

/* A built-in scenario: its script and what it expects of a client. */
struct scenario_builtin {
	const char *name;
	const char *method;                  /* the method the scenario is for: GET or POST */
	const char *json;
	const char *expect;                  /* the default expectation list */
	bool stop_when_settled;              /* verify may end the run at the first failure for good */
	const char *answers;                 /* what the server answers, one line */
	const char *correct;                 /* what a correct client does, one line */
};

/* The built-ins, in the order `ratelab verify --all` runs them. */
extern const struct scenario_builtin scenario_builtins[];
extern const size_t scenario_nbuiltins;

/*
 * Parse a JSON array of steps into steps[0..*n).  Returns 0, or -1 with the
 * reason ("step 2: ...") in err.
 */
int scenario_script_parse(const char *json, struct scenario_step *steps, size_t *n, char *err, size_t errlen);

#endif
