/* The verify grader's retry expectations: honours-retry-after, honours-ratelimit, no-retry-non-idempotent,
 * no-retry (verify_grade_impl.h). */
#include "lab/verify_grade.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/retry/retry.h"
#include "lab/verify_grade_impl.h"

#define SHOWN 6                    /* retries listed in full before only the bad ones are */

/* The wait a's answer asked for, from when it left. */
static int64_t asked_ns(const struct scenario_arrival *a)
{
	int64_t due;

	if (!a->wait_date)
		return (int64_t)a->wait_ns;
	due = (int64_t)(a->t_ns + a->delay_ns + a->wait_ns) - (int64_t)verify_grade_sent_ns(a);
	return due > 0 ? due : 0;
}

/* ---- honours-retry-after, honours-ratelimit ---- */

static bool source_matches(enum verify_grade_kind k, enum scenario_wait_source s)
{
	return k == VERIFY_HONOURS_RETRY_AFTER ? s == SCENARIO_WAIT_RETRY_AFTER
	                                       : s != SCENARIO_WAIT_NONE && s != SCENARIO_WAIT_RETRY_AFTER;
}

/* True when arrival i is a retry after an answer asking (through the graded header) for a wait it broke. */
static bool early_retry(const struct verify_grade_input *g, size_t i, bool *graded)
{
	long p = g->v->prev[i];

	*graded = p >= 0 && g->log[p].has_wait && source_matches(g->e->kind, g->log[p].wait_source) &&
	          verify_grade_answered_before(g->log, p, i);
	return *graded && verify_grade_gap_ns(g->log, p, i) + (int64_t)VERIFY_GRADE_TOLERANCE_NS < asked_ns(&g->log[p]);
}

void verify_grade_honours(const struct verify_grade_input *g, struct verify_grade_verdict *out)
{
	struct verify_grade_text t = { "", "" };
	unsigned seen = 0, bad = 0, asked = 0;

	for (size_t i = 0; i < g->v->n; i++) {
		long p = g->v->prev[i];
		bool graded, early = early_retry(g, i, &graded);

		asked += g->log[i].has_wait && source_matches(g->e->kind, g->log[i].wait_source);
		if (!graded)
			continue;
		seen++;
		bad += early;
		if (seen <= SHOWN || early)
			VERIFY_GRADE_DETAIL(&t, "%s%s: asked %.3fs%s, waited %.3fs%s", seen > 1 ? "; " : "",
			                    g->log[i].client, verify_grade_secs(asked_ns(&g->log[p])),
			                    g->log[p].wait_date ? " (date)" : "",
			                    verify_grade_secs(verify_grade_gap_ns(g->log, p, i) > 0 ? verify_grade_gap_ns(g->log, p, i) : 0),
			                    early ? " (too early)" : "");
	}
	if (seen == 0) {
		VERIFY_GRADE_SUMMARY(&t,
		                     "not observed: no retry followed an answer that asked for a wait (%u such answers, %zu arrivals)",
		                     asked, g->v->n);
		verify_grade_conclude(out, VERIFY_NOT_OBSERVED, &t);
		return;
	}
	VERIFY_GRADE_SUMMARY(&t, " [%u of %u retries too early; tolerance 50ms]", bad, seen);
	verify_grade_conclude(out, bad ? VERIFY_FAIL : VERIFY_PASS, &t);
}

/* ---- no-retry-non-idempotent, no-retry ---- */

/* True when p's answer leaves it unknown whether the server acted on the request. */
static bool maybe_processed(const struct scenario_arrival *log, long p, size_t i)
{
	return log[p].status >= 500 || log[p].fault != SCENARIO_FAULT_NONE || !verify_grade_answered_before(log, p, i);
}

/* Why a resent non-idempotent request i (after p) is unsafe, or NULL when its key makes it safe. */
static const char *unkeyed(const struct scenario_arrival *log, long p, size_t i)
{
	if (!log[i].idempotency_key[0])
		return "without an Idempotency-Key";
	if (!log[p].idempotency_key[0])
		return "with an Idempotency-Key only on the retry";
	if (strcmp(log[p].idempotency_key, log[i].idempotency_key) != 0)
		return "with a new Idempotency-Key";
	return NULL;
}

/* How resent request i followed p: "1.000s after 503", "1.500s after the first, before its answer (held 3.0s)". */
static void resent_text(const struct scenario_arrival *log, long p, size_t i, char *buf, size_t len)
{
	if (!verify_grade_answered_before(log, p, i))
		snprintf(buf, len, "%.3fs after the first attempt, whose answer (held %.1fs) it never got,",
		         verify_grade_secs((int64_t)(log[i].t_ns - log[p].t_ns)),
		         verify_grade_secs((int64_t)log[p].delay_ns));
	else if (log[p].fault != SCENARIO_FAULT_NONE)
		snprintf(buf, len, "%.3fs after %s", verify_grade_secs(verify_grade_gap_ns(log, p, i)),
		         verify_grade_fault_prose(log[p].fault));
	else
		snprintf(buf, len, "%.3fs after %d", verify_grade_secs(verify_grade_gap_ns(log, p, i)), log[p].status);
}

void verify_grade_idempotent(const struct verify_grade_input *g, struct verify_grade_verdict *out)
{
	struct verify_grade_text t = { "", "" };
	unsigned unsafe = 0, retried = 0, keyed = 0;

	for (size_t i = 0; i < g->v->n; i++) {
		long p = g->v->prev[i];
		const char *why;
		char how[128];

		if (retry_method_idempotent(g->log[i].method))
			continue;
		unsafe++;
		if (p < 0 || !maybe_processed(g->log, p, i))
			continue;
		if (!(why = unkeyed(g->log, p, i))) {
			keyed++;
			continue;
		}
		if (++retried <= 3) {
			resent_text(g->log, p, i, how, sizeof(how));
			VERIFY_GRADE_DETAIL(&t, "%s sent again %s %s (%s); ", g->log[i].method, how, why,
			                    g->log[i].client);
		}
	}
	VERIFY_GRADE_SUMMARY(&t,
	                     "%u non-idempotent arrivals, %u unsafe retries, %u retries with the same Idempotency-Key",
	                     unsafe, retried, keyed);
	if (unsafe == 0)
		VERIFY_GRADE_SUMMARY(&t, ": not observed (send the scenario's method: $RATELAB_METHOD)");
	verify_grade_conclude(out, retried ? VERIFY_FAIL : unsafe ? VERIFY_PASS : VERIFY_NOT_OBSERVED, &t);
}

/* A final answer: the same request gets the same one (429, 408, 425, and 413/503 with a wait are not). */
static bool final_answer(const struct scenario_arrival *a)
{
	if (a->fault != SCENARIO_FAULT_NONE)
		return false;
	if (a->status == 408 || a->status == 425 || a->status == 429 || (a->status == 413 && a->has_wait))
		return false;
	return (a->status >= 400 && a->status < 500) || a->status == 501 || a->status == 505;
}

void verify_grade_no_retry(const struct verify_grade_input *g, struct verify_grade_verdict *out)
{
	struct verify_grade_text t = { "", "" };
	unsigned finals = 0, again = 0;

	for (size_t i = 0; i < g->v->n; i++) {
		long p = g->v->prev[i];

		finals += final_answer(&g->log[i]);
		if (p < 0 || !final_answer(&g->log[p]))
			continue;
		if (++again <= 3)
			VERIFY_GRADE_DETAIL(&t, "%s %s sent again %.3fs after %d (%s); ", g->log[i].method,
			                    g->log[i].path, verify_grade_secs(verify_grade_gap_ns(g->log, p, i)),
			                    g->log[p].status, g->log[i].client);
	}
	VERIFY_GRADE_SUMMARY(&t, "%u answers that must not be retried, %u retries after one", finals, again);
	if (finals == 0)
		VERIFY_GRADE_SUMMARY(&t, ": not observed");
	verify_grade_conclude(out, again ? VERIFY_FAIL : finals ? VERIFY_PASS : VERIFY_NOT_OBSERVED, &t);
}

/* honours-*: fails for good at the first retry that broke an asked wait. */
bool verify_grade_failed_honours(const struct verify_grade_input *g)
{
	bool graded;

	for (size_t i = 0; i < g->v->n; i++)
		if (early_retry(g, i, &graded))
			return true;
	return false;
}
