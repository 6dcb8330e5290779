#ifndef RATELAB_VERIFY_GRADE_H
#define RATELAB_VERIFY_GRADE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/handlers/scenario.h"

/*
 * The grader of `ratelab verify`: a pure function from an arrival log (what
 * the scenario server saw, what it answered and when each answer left) plus
 * the command's end to one verdict per expectation, each with its evidence.
 * Every verdict is pass, fail or not observed (the run showed nothing that
 * decides it).  No clock, no I/O: the machine's measured noise comes in with
 * the run.
 *
 * Times: a retry's gap is counted from the moment the previous answer's last
 * byte left the server (or the scripted failure happened), and a wait asked
 * with an HTTP-date from then to the date.
 */

#define VERIFY_GRADE_MAX_EXPECT 16
#define VERIFY_GRADE_TOLERANCE_NS (50ULL * 1000000ULL)  /* honours-*: a retry may come this early */
#define VERIFY_GRADE_MIN_GAP_NS (50ULL * 1000000ULL)    /* backs-off: "at once" is under this (or the noise margin) */
#define VERIFY_GRADE_GROWTH_NS (50ULL * 1000000ULL)     /* backs-off: the later gaps beat the first by this, */
#define VERIFY_GRADE_GROWTH_PCT 25                       /* and by this share of the first */
#define VERIFY_GRADE_JITTER_NS (20ULL * 1000000ULL)     /* jitter: median lag behind the earliest client */
#define VERIFY_GRADE_NOISE_FACTOR 4                      /* margins are at least this many times the noise */
#define VERIFY_GRADE_STOP_ATTEMPTS 10                    /* stops-after-attempts: more is not stopping */

enum verify_grade_kind {
	VERIFY_SUCCEEDS,
	VERIFY_HONOURS_RETRY_AFTER,
	VERIFY_HONOURS_RATELIMIT,
	VERIFY_MAX_ATTEMPTS,
	VERIFY_GIVES_UP_WITHIN,
	VERIFY_NO_RETRY_NON_IDEMPOTENT,
	VERIFY_NO_RETRY,
	VERIFY_BACKS_OFF,
	VERIFY_JITTER,
	VERIFY_STOPS_AFTER_ATTEMPTS,
};

enum verify_outcome {
	VERIFY_PASS,
	VERIFY_FAIL,
	VERIFY_NOT_OBSERVED,
};

struct verify_grade_expect {
	enum verify_grade_kind kind;
	uint64_t arg;           /* N for max-attempts, ns for gives-up-within */
	char text[48];          /* as written, e.g. "max-attempts<=3" */
};

#define VERIFY_GRADE_MAX_STALLS 64

/* A moment the whole machine stalled (monotonic ns): a sleeper meant to wake at from_ns woke at to_ns. */
struct verify_grade_stall {
	uint64_t from_ns, to_ns;
};

/* How the command ended (or, for verify_grade_failed, how far it has got). */
struct verify_grade_run {
	int exit_status;        /* exit code, or 128+signal */
	bool killed;            /* still running at the timeout, so killed */
	bool stopped;           /* ended by verify once a verdict had failed for good */
	bool listened;          /* verify --listen: no command; its end is the end of serving */
	uint64_t wall_ns;       /* from start to exit (or to the kill); while running, so far */
	uint64_t timeout_ns;
	uint64_t dropped;       /* arrivals that came after the log was full (not in the log) */
	const struct scenario_count *counts;  /* every client's attempts in full (past the log); NULL: the log's */
	size_t ncounts;
	uint64_t noise_ns;      /* the machine's scheduling noise during the run; 0 when unknown */
	const struct verify_grade_stall *stalls;  /* when the machine stalled, in time order */
	size_t nstalls;
};

struct verify_grade_verdict {
	char name[48];
	enum verify_outcome outcome;
	char evidence[1024];
};

/*
 * Parse a comma-separated expectation list ("succeeds,max-attempts<=3,
 * gives-up-within=5s").  Fills out[0..*n).  Returns 0, or -1 with a reason
 * naming the bad item in err.
 */
int verify_grade_parse(const char *list, struct verify_grade_expect *out, size_t max, size_t *n, char *err,
                       size_t errlen);

/*
 * Grade one expectation over log[0..n) (arrival order) and the run.  Fills
 * *out.  Pure and thread-safe.
 */
void verify_grade_one(const struct verify_grade_expect *e, const struct scenario_arrival *log, size_t n,
                      const struct verify_grade_run *run, struct verify_grade_verdict *out);

/*
 * While the command still runs (run->wall_ns is the time so far): true when
 * the expectation has already failed for good, so no later arrival or exit
 * can make it hold.  Pure and thread-safe.
 */
bool verify_grade_failed(const struct verify_grade_expect *e, const struct scenario_arrival *log, size_t n,
                         const struct verify_grade_run *run);

/* "pass", "fail", "not observed". */
const char *verify_outcome_name(enum verify_outcome o);

/* The expectation names, for --help: "succeeds, honours-retry-after, ...". */
const char *verify_grade_names(void);

#endif
