#ifndef RATELAB_VERIFY_GRADE_IMPL_H
#define RATELAB_VERIFY_GRADE_IMPL_H

/*
 * Inside the verify grader (verify_grade.c: the expectations' table and
 * parser, the view of the log, the evidence text and the graders of how the
 * command ended; verify_grade_retry.c: honours-*, no-retry-non-idempotent
 * and no-retry; verify_grade_stats.c: the statistical ones, backs-off and
 * jitter).  Not an interface: only those three files include it.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lab/verify_grade.h"
#include "server/handlers/scenario.h"

/* Who is who in the log: per arrival its client index and the same request's previous arrival. */
struct verify_grade_view {
	size_t n, nclients;
	size_t *cid;
	long *prev;
	const char **names;        /* first arrival's client name per client */
	unsigned *attempts;        /* per client */
};

/* What a grader reads. */
struct verify_grade_input {
	const struct verify_grade_expect *e;
	const struct scenario_arrival *log;
	const struct verify_grade_view *v;
	const struct verify_grade_run *run;
};

/* Evidence in two parts: details (cut when long) and a summary that always shows. */
struct verify_grade_text {
	char details[1024];
	char summary[320];
};

static inline double verify_grade_secs(int64_t ns)
{
	return (double)ns / 1e9;
}

/* When arrival a's answer left the server (or failed); planned (t + delay) while it is pending. */
static inline uint64_t verify_grade_sent_ns(const struct scenario_arrival *a)
{
	return a->end != SCENARIO_END_PENDING ? a->end_ns : a->t_ns + a->delay_ns;
}

/* The gap from p's answer to arrival i (negative: i came while p's answer was still held). */
static inline int64_t verify_grade_gap_ns(const struct scenario_arrival *log, long p, size_t i)
{
	return (int64_t)log[i].t_ns - (int64_t)verify_grade_sent_ns(&log[p]);
}

/*
 * True when the client got p's answer (or its scripted failure) before
 * arrival i: i can be a reaction to it.  An answer that was not delivered
 * (the client went away) was never got.  An answer sent at once (not
 * held) has its end stamped when the server's thread is told it left,
 * which can come after the client had it and sent i from another
 * connection (under ASan, 1 ms later): an arrival up to the grading
 * tolerance before that stamp still follows it.  A held answer's stamp is
 * when it really went (a drain may send it after i came), so no slack.
 */
static inline bool verify_grade_answered_before(const struct scenario_arrival *log, long p, size_t i)
{
	int64_t slack = log[p].end == SCENARIO_END_SENT && log[p].delay_ns == 0 ? (int64_t)VERIFY_GRADE_TOLERANCE_NS : 0;

	return (log[p].end != SCENARIO_END_FAILED || log[p].fault != SCENARIO_FAULT_NONE) &&
	       verify_grade_gap_ns(log, p, i) + slack >= 0;
}

/* A scripted failure in prose: "a connection reset", "a body cut off mid-way", "a malformed answer". */
static inline const char *verify_grade_fault_prose(enum scenario_fault f)
{
	return f == SCENARIO_FAULT_RESET ? "a connection reset"
	       : f == SCENARIO_FAULT_CUT ? "a body cut off mid-way" : "a malformed answer";
}

/* Append printf-formatted text to buf (NUL-terminated, len bytes), cut at its end; nothing when it is full. */
void verify_grade_add(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define VERIFY_GRADE_DETAIL(t, ...) verify_grade_add((t)->details, sizeof((t)->details), __VA_ARGS__)
#define VERIFY_GRADE_SUMMARY(t, ...) verify_grade_add((t)->summary, sizeof((t)->summary), __VA_ARGS__)

/* out->outcome = o; out->evidence = details + summary, details cut ("...") so the summary always fits. */
void verify_grade_conclude(struct verify_grade_verdict *out, enum verify_outcome o, const struct verify_grade_text *t);

/* honours-retry-after, honours-ratelimit: no retry came before the wait its answer asked for
 * (verify_grade_retry.c). */
void verify_grade_honours(const struct verify_grade_input *g, struct verify_grade_verdict *out);

/* honours-*, while the command runs: true once a retry broke an asked wait (verify_grade_retry.c). */
bool verify_grade_failed_honours(const struct verify_grade_input *g);

/*
 * no-retry-non-idempotent: no non-idempotent request was sent again, after an
 * answer that leaves unknown whether the server acted on it, without the same
 * Idempotency-Key (verify_grade_retry.c).
 */
void verify_grade_idempotent(const struct verify_grade_input *g, struct verify_grade_verdict *out);

/* no-retry: no request was sent again after a final answer (verify_grade_retry.c). */
void verify_grade_no_retry(const struct verify_grade_input *g, struct verify_grade_verdict *out);

/* backs-off: the waits after answers without a wait grow, and none comes at once (verify_grade_stats.c). */
void verify_grade_backoff(const struct verify_grade_input *g, struct verify_grade_verdict *out);

/* jitter: the clients' retries are spread apart, not in lockstep (verify_grade_stats.c). */
void verify_grade_jitter(const struct verify_grade_input *g, struct verify_grade_verdict *out);

#endif
