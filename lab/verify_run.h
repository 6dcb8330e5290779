#ifndef RATELAB_VERIFY_RUN_H
#define RATELAB_VERIFY_RUN_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lab/verify_grade.h"
#include "lab/verify_noise.h"
#include "server/handlers/scenario.h"

/*
 * One `ratelab verify` run: a scenario server on a free port, the client
 * command against it, the verdicts.  The run ends when the command exits,
 * at the timeout (killed), when interrupted, or, on a scenario that stops
 * when settled (scenario_stops_when_settled), as soon as one expectation
 * has failed for good.  Runs on different scenarios may go on in parallel
 * threads.
 */

/* What a progress hook is told: when a run starts, every 200 ms while the command runs, when it ends. */
struct verify_progress {
	const char *scenario;
	size_t index, total;        /* this run's place in --all (0 of 1 for a single run) */
	bool done;
	unsigned clients, running;  /* copies of the command, and how many have not ended yet */
	size_t arrivals;            /* at the end */
	uint64_t wall_ns;           /* so far */
};

typedef void (*verify_progress_fn)(void *ctx, const struct verify_progress *p);

struct verify_run_opts {
	char **cmd;                 /* NULL-terminated, from after "--" */
	unsigned clients;           /* copies of the command, 1..VERIFY_CHILD_MAX */
	uint64_t timeout_ns;
	bool quiet_command;         /* drop the command's output (else its stdout goes to stderr) */
	volatile sig_atomic_t *interrupted;  /* non-zero: stop now */
	verify_progress_fn progress;         /* optional */
	void *progress_ctx;
	size_t index, total;        /* for progress */
};

enum verify_state {
	VERIFY_GRADED,              /* the command ran and reached the server */
	VERIFY_NO_ARRIVALS,         /* it ran but never reached the server */
	VERIFY_CANNOT_RUN,          /* it could not be executed (or started) */
	VERIFY_SETUP_FAILED,        /* the scenario server did not start */
	VERIFY_INTERRUPTED,
};

struct verify_result {
	char scenario[256];
	const char *method;                  /* the scenario's */
	enum verify_state state;
	char error[320];                     /* why, for CANNOT_RUN and SETUP_FAILED */
	struct verify_grade_run run;         /* run.stalls points into noise */
	struct verify_noise_report noise;
	unsigned clients;
	struct scenario_arrival *log;        /* malloc'd, n entries */
	size_t n;
	struct verify_grade_expect ex[VERIFY_GRADE_MAX_EXPECT];
	size_t nex;
	struct verify_grade_verdict v[VERIFY_GRADE_MAX_EXPECT];
	char *arrivals_json;                 /* malloc'd, or NULL */
};

/*
 * Run the command against sc and grade ex[0..nex) into *r (which the caller
 * frees with verify_result_free).  Returns 0 when there are verdicts
 * (VERIFY_GRADED or VERIFY_NO_ARRIVALS), -1 otherwise (r->state says why).
 */
int verify_run(struct scenario *sc, const struct verify_grade_expect *ex, size_t nex,
               const struct verify_run_opts *o, struct verify_result *r);

/* Free what a result holds (not r itself). */
void verify_result_free(struct verify_result *r);

#endif
