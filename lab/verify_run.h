#ifndef RATELAB_VERIFY_RUN_H
#define RATELAB_VERIFY_RUN_H

#include <signal.h>
#include <stdatomic.h>
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
	atomic_int *interrupted;             /* non-zero: stop now (set by a signal handler) */
	verify_progress_fn progress;         /* optional */
	void *progress_ctx;
	size_t index, total;        /* for progress */
};

/* What verify_listen serves and until when. */
struct verify_listen_opts {
	const char *bind;           /* an IPv4 or IPv6 address */
	unsigned port;              /* the first scenario's; 0: each its own free port; else PORT+i */
	uint64_t idle_ns;           /* end once nothing arrived (and nothing was held) this long; 0: only a signal */
	uint64_t timeout_ns;        /* end here at the latest */
	atomic_int *interrupted;             /* non-zero: stop serving and grade (set by a signal handler) */
	FILE *announce;             /* one "listening" line per scenario */
	const char *upstream;       /* NULL: the scenarios answer; else 2xx steps pass to this URL (serve --upstream) */
};

/* How a --listen run ended. */
enum verify_listen_end {
	VERIFY_LISTEN_IDLE,
	VERIFY_LISTEN_SIGNAL,
	VERIFY_LISTEN_TIMEOUT,
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
	struct scenario_count *counts;       /* malloc'd, every client's attempts in full */
	bool listened;                       /* verify --listen: no command, ended as listen_end says */
	enum verify_listen_end listen_end;
	uint64_t idle_ns;
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

/*
 * verify --listen: serve each of sc[0..n) on its own port (announced as
 * "ratelab verify: scenario NAME listening on URL") until nothing arrived
 * for o->idle_ns, a signal (*o->interrupted), or o->timeout_ns, then grade
 * scenario i's ex[i][0..nex[i]) into rs[i] (each freed with
 * verify_result_free).  Returns 0 when graded, -1 when a server could not
 * start (rs[i].state and error say which).
 */
int verify_listen(struct scenario **sc, const struct verify_grade_expect (*ex)[VERIFY_GRADE_MAX_EXPECT],
                  const size_t *nex, size_t n, const struct verify_listen_opts *o, struct verify_result *rs);

/* Free what a result holds (not r itself). */
void verify_result_free(struct verify_result *r);

#endif
