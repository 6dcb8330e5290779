/* The verify grader: expectations over an arrival log and the command's end. */
#include "lab/verify_grade.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/parse.h"
#include "common/retry/retry.h"

#define MAX_DEPTH 16               /* retry numbers compared by backs-off and jitter */
#define MAX_PER_RETRY 64           /* clients compared at one retry number */
#define STALL_JOIN_NS (10ULL * 1000000ULL)   /* stalls this close together are one */
#define STALL_SLACK_NS (15ULL * 1000000ULL)  /* an arrival this soon after a stall was held up by it */
#define SHOWN 6                    /* retries listed in full before only the bad ones are */

/* Who is who in the log: per arrival its client index and the same request's previous arrival. */
struct view {
	size_t n, nclients;
	size_t *cid;
	long *prev;
	const char **names;        /* first arrival's client name per client */
	unsigned *attempts;        /* per client */
};

/* What a grader reads. */
struct grade {
	const struct verify_grade_expect *e;
	const struct scenario_arrival *log;
	const struct view *v;
	const struct verify_grade_run *run;
};

/* Evidence in two parts: details (cut when long) and a summary that always shows. */
struct text {
	char details[1024];
	char summary[320];
};

static void add(char *buf, size_t len, const char *fmt, ...)
{
	size_t used = strlen(buf);
	va_list ap;

	if (used + 1 >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + used, len - used, fmt, ap);
	va_end(ap);
}

#define DETAIL(t, ...) add((t)->details, sizeof((t)->details), __VA_ARGS__)
#define SUMMARY(t, ...) add((t)->summary, sizeof((t)->summary), __VA_ARGS__)

/* out->evidence = details + summary; details are cut ("...") so the summary always fits. */
static void conclude(struct verify_grade_verdict *out, enum verify_outcome o, const struct text *t)
{
	size_t room = sizeof(out->evidence) - 1 - strlen(t->summary);
	size_t dl = strlen(t->details);

	out->outcome = o;
	if (dl > room) {
		dl = room > 4 ? room - 4 : 0;
		snprintf(out->evidence, sizeof(out->evidence), "%.*s...%s%s", (int)dl, t->details,
		         t->summary[0] == ' ' || t->summary[0] == ';' ? "" : " ", t->summary);
	} else {
		/* both fit (dl <= room): copied, not printed, so no compiler sees a truncation that cannot happen */
		memcpy(out->evidence, t->details, dl);
		memcpy(out->evidence + dl, t->summary, strlen(t->summary) + 1);
	}
}

static double secs(int64_t ns)
{
	return (double)ns / 1e9;
}

const char *verify_outcome_name(enum verify_outcome o)
{
	return o == VERIFY_PASS ? "pass" : o == VERIFY_FAIL ? "fail" : "not observed";
}

/* ---- times of one arrival ---- */

/* When arrival a's answer left the server (or failed); planned (t + delay) while it is pending. */
static uint64_t sent_ns(const struct scenario_arrival *a)
{
	return a->end != SCENARIO_END_PENDING ? a->end_ns : a->t_ns + a->delay_ns;
}

/* The wait a's answer asked for, from when it left. */
static int64_t asked_ns(const struct scenario_arrival *a)
{
	int64_t due;

	if (!a->wait_date)
		return (int64_t)a->wait_ns;
	due = (int64_t)(a->t_ns + a->delay_ns + a->wait_ns) - (int64_t)sent_ns(a);
	return due > 0 ? due : 0;
}

/* The gap from p's answer to arrival i (negative: i came while p's answer was still held). */
static int64_t gap_ns(const struct scenario_arrival *log, long p, size_t i)
{
	return (int64_t)log[i].t_ns - (int64_t)sent_ns(&log[p]);
}

/*
 * True when the client got p's answer (or its scripted failure) before
 * arrival i: i can be a reaction to it.  An answer that was not delivered
 * (the client went away) was never got.
 */
static bool answered_before(const struct scenario_arrival *log, long p, size_t i)
{
	return (log[p].end != SCENARIO_END_FAILED || log[p].fault != SCENARIO_FAULT_NONE) && gap_ns(log, p, i) >= 0;
}

/* A scripted failure in prose: "a connection reset", "a body cut off mid-way", "a malformed answer". */
static const char *fault_prose(enum scenario_fault f)
{
	return f == SCENARIO_FAULT_RESET ? "a connection reset"
	       : f == SCENARIO_FAULT_CUT ? "a body cut off mid-way" : "a malformed answer";
}

/* ---- the view ---- */

static void view_free(struct view *v)
{
	free(v->cid);
	free(v->prev);
	free(v->names);
	free(v->attempts);
}

/* The same client's last arrival before i with the same method and path, or -1. */
static long previous(const struct scenario_arrival *log, const struct view *v, size_t i)
{
	for (long j = (long)i - 1; j >= 0; j--)
		if (v->cid[j] == v->cid[i] && strcmp(log[j].method, log[i].method) == 0 &&
		    strcmp(log[j].path, log[i].path) == 0)
			return j;
	return -1;
}

static int view_init(struct view *v, const struct scenario_arrival *log, size_t n)
{
	memset(v, 0, sizeof(*v));
	v->n = n;
	v->cid = calloc(n + 1, sizeof(*v->cid));
	v->prev = calloc(n + 1, sizeof(*v->prev));
	v->names = calloc(n + 1, sizeof(*v->names));
	v->attempts = calloc(n + 1, sizeof(*v->attempts));
	if (!v->cid || !v->prev || !v->names || !v->attempts) {
		view_free(v);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		size_t c = 0;

		while (c < v->nclients && strcmp(v->names[c], log[i].client) != 0)
			c++;
		if (c == v->nclients)
			v->names[v->nclients++] = log[i].client;
		v->cid[i] = c;
		v->prev[i] = previous(log, v, i);
		v->attempts[c]++;
	}
	return 0;
}

/* ---- succeeds, gives-up-within, stops-after-attempts: how the command ended ---- */

/* Why the command is not judged by its exit: killed, or stopped by verify.  False when it exited. */
static bool did_not_exit(const struct verify_grade_run *run, struct text *t)
{
	if (run->killed)
		SUMMARY(t, "still running at the %.1fs timeout: killed", secs((int64_t)run->timeout_ns));
	else if (run->stopped)
		SUMMARY(t, "still running when verify stopped it at %.2fs (the verdict was settled)",
		        secs((int64_t)run->wall_ns));
	return run->killed || run->stopped;
}

/* The last answer the client got, when the command failed: why it may have stopped. */
static void last_answer(const struct grade *g, struct text *t)
{
	const struct scenario_arrival *a;

	if (g->v->n == 0 || g->v->nclients != 1)
		return;
	a = &g->log[g->v->n - 1];
	if (a->fault != SCENARIO_FAULT_NONE)
		SUMMARY(t, "; its last attempt met %s and it did not retry", fault_prose(a->fault));
	else if (a->status < 200 || a->status >= 300)
		SUMMARY(t, "; its last answer was %d to a %s and it did not retry%s", a->status, a->method,
		        !retry_method_idempotent(a->method) ? " (many clients retry only idempotent methods)" : "");
}

static void grade_succeeds(const struct grade *g, struct verify_grade_verdict *out)
{
	struct text t = { "", "" };

	if (did_not_exit(g->run, &t)) {
		conclude(out, g->run->killed ? VERIFY_FAIL : VERIFY_NOT_OBSERVED, &t);
		return;
	}
	SUMMARY(&t, "command exited %d after %.2fs", g->run->exit_status, secs((int64_t)g->run->wall_ns));
	if (g->run->exit_status != 0)
		last_answer(g, &t);
	conclude(out, g->run->exit_status == 0 ? VERIFY_PASS : VERIFY_FAIL, &t);
}

static void grade_within(const struct grade *g, struct verify_grade_verdict *out)
{
	const struct verify_grade_run *run = g->run;
	struct text t = { "", "" };
	bool past = run->wall_ns > g->e->arg;

	if (!did_not_exit(run, &t)) {
		SUMMARY(&t, "command exited %d after %.2fs (limit %.2fs)", run->exit_status, secs((int64_t)run->wall_ns),
		        secs((int64_t)g->e->arg));
		conclude(out, past ? VERIFY_FAIL : VERIFY_PASS, &t);
		return;
	}
	if (past) {
		SUMMARY(&t, ", past the %.2fs limit", secs((int64_t)g->e->arg));
		conclude(out, VERIFY_FAIL, &t);
		return;
	}
	SUMMARY(&t, ", before the %.2fs limit%s", secs((int64_t)g->e->arg), run->killed ? ": raise --timeout over it" : "");
	conclude(out, VERIFY_NOT_OBSERVED, &t);
}

static void list_attempts(const struct view *v, struct text *t)
{
	DETAIL(t, "attempts:");
	for (size_t c = 0; c < v->nclients && c < 8; c++)
		DETAIL(t, " %s=%u", v->names[c], v->attempts[c]);
	if (v->nclients > 8)
		DETAIL(t, " ... (%zu clients)", v->nclients);
}

/* The most attempts any client made. */
static unsigned most_attempts(const struct view *v)
{
	unsigned most = 0;

	for (size_t c = 0; c < v->nclients; c++)
		most = v->attempts[c] > most ? v->attempts[c] : most;
	return most;
}

/* Nothing to count: not observed. */
static bool no_arrivals(const struct view *v, struct text *t, struct verify_grade_verdict *out)
{
	if (v->n > 0)
		return false;
	SUMMARY(t, "not observed: no arrivals");
	conclude(out, VERIFY_NOT_OBSERVED, t);
	return true;
}

static void grade_max_attempts(const struct grade *g, struct verify_grade_verdict *out)
{
	struct text t = { "", "" };

	if (no_arrivals(g->v, &t, out))
		return;
	list_attempts(g->v, &t);
	conclude(out, most_attempts(g->v) > g->e->arg ? VERIFY_FAIL : VERIFY_PASS, &t);
}

static void grade_stops(const struct grade *g, struct verify_grade_verdict *out)
{
	struct text t = { "", "" };
	bool many = most_attempts(g->v) > VERIFY_GRADE_STOP_ATTEMPTS;

	if (no_arrivals(g->v, &t, out))
		return;
	list_attempts(g->v, &t);
	SUMMARY(&t, "; ");
	if (!many && did_not_exit(g->run, &t)) {
		conclude(out, g->run->killed ? VERIFY_FAIL : VERIFY_NOT_OBSERVED, &t);
		return;
	}
	if (many)
		SUMMARY(&t, "kept retrying past %d attempts", VERIFY_GRADE_STOP_ATTEMPTS);
	else
		SUMMARY(&t, "ended on its own after %.2fs", secs((int64_t)g->run->wall_ns));
	conclude(out, many ? VERIFY_FAIL : VERIFY_PASS, &t);
}

/* ---- honours-retry-after, honours-ratelimit ---- */

static bool source_matches(enum verify_grade_kind k, enum scenario_wait_source s)
{
	return k == VERIFY_HONOURS_RETRY_AFTER ? s == SCENARIO_WAIT_RETRY_AFTER
	                                       : s != SCENARIO_WAIT_NONE && s != SCENARIO_WAIT_RETRY_AFTER;
}

/* True when arrival i is a retry after an answer asking (through the graded header) for a wait it broke. */
static bool early_retry(const struct grade *g, size_t i, bool *graded)
{
	long p = g->v->prev[i];

	*graded = p >= 0 && g->log[p].has_wait && source_matches(g->e->kind, g->log[p].wait_source) &&
	          answered_before(g->log, p, i);
	return *graded && gap_ns(g->log, p, i) + (int64_t)VERIFY_GRADE_TOLERANCE_NS < asked_ns(&g->log[p]);
}

static void grade_honours(const struct grade *g, struct verify_grade_verdict *out)
{
	struct text t = { "", "" };
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
			DETAIL(&t, "%s%s: asked %.3fs%s, waited %.3fs%s", seen > 1 ? "; " : "", g->log[i].client,
			       secs(asked_ns(&g->log[p])), g->log[p].wait_date ? " (date)" : "", secs(gap_ns(g->log, p, i)),
			       early ? " (too early)" : "");
	}
	if (seen == 0) {
		SUMMARY(&t, "not observed: no retry followed an answer that asked for a wait (%u such answers, %zu arrivals)",
		        asked, g->v->n);
		conclude(out, VERIFY_NOT_OBSERVED, &t);
		return;
	}
	SUMMARY(&t, " [%u of %u retries too early; tolerance 50ms]", bad, seen);
	conclude(out, bad ? VERIFY_FAIL : VERIFY_PASS, &t);
}

/* ---- no-retry-non-idempotent, no-retry ---- */

/* True when p's answer leaves it unknown whether the server acted on the request. */
static bool maybe_processed(const struct scenario_arrival *log, long p, size_t i)
{
	return log[p].status >= 500 || log[p].fault != SCENARIO_FAULT_NONE || !answered_before(log, p, i);
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
	if (!answered_before(log, p, i))
		snprintf(buf, len, "%.3fs after the first attempt, whose answer (held %.1fs) it never got,",
		         secs((int64_t)(log[i].t_ns - log[p].t_ns)), secs((int64_t)log[p].delay_ns));
	else if (log[p].fault != SCENARIO_FAULT_NONE)
		snprintf(buf, len, "%.3fs after %s", secs(gap_ns(log, p, i)), fault_prose(log[p].fault));
	else
		snprintf(buf, len, "%.3fs after %d", secs(gap_ns(log, p, i)), log[p].status);
}

static void grade_idempotent(const struct grade *g, struct verify_grade_verdict *out)
{
	struct text t = { "", "" };
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
			DETAIL(&t, "%s sent again %s %s (%s); ", g->log[i].method, how, why, g->log[i].client);
		}
	}
	SUMMARY(&t, "%u non-idempotent arrivals, %u unsafe retries, %u retries with the same Idempotency-Key", unsafe,
	        retried, keyed);
	if (unsafe == 0)
		SUMMARY(&t, ": not observed (send the scenario's method: $RATELAB_METHOD)");
	conclude(out, retried ? VERIFY_FAIL : unsafe ? VERIFY_PASS : VERIFY_NOT_OBSERVED, &t);
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

static void grade_no_retry(const struct grade *g, struct verify_grade_verdict *out)
{
	struct text t = { "", "" };
	unsigned finals = 0, again = 0;

	for (size_t i = 0; i < g->v->n; i++) {
		long p = g->v->prev[i];

		finals += final_answer(&g->log[i]);
		if (p < 0 || !final_answer(&g->log[p]))
			continue;
		if (++again <= 3)
			DETAIL(&t, "%s %s sent again %.3fs after %d (%s); ", g->log[i].method, g->log[i].path,
			       secs(gap_ns(g->log, p, i)), g->log[p].status, g->log[i].client);
	}
	SUMMARY(&t, "%u answers that must not be retried, %u retries after one", finals, again);
	if (finals == 0)
		SUMMARY(&t, ": not observed");
	conclude(out, again ? VERIFY_FAIL : finals ? VERIFY_PASS : VERIFY_NOT_OBSERVED, &t);
}

/* ---- backs-off, jitter ---- */

/* The margin a statistical check needs: at least floor_ns, and NOISE_FACTOR times the run's noise. */
static double margin_s(const struct verify_grade_run *run, uint64_t floor_ns)
{
	uint64_t noisy = run->noise_ns * VERIFY_GRADE_NOISE_FACTOR;

	return secs((int64_t)(noisy > floor_ns ? noisy : floor_ns));
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* A success: what follows it is a new request, not a retry. */
static bool succeeded(const struct scenario_arrival *a)
{
	return a->fault == SCENARIO_FAULT_NONE && a->status >= 200 && a->status < 300;
}

/* The start of the machine stall arrival time t fell in, or came just after (stalls close together count as one); 0 if none. */
static uint64_t stall_start(const struct verify_grade_run *run, uint64_t t)
{
	for (size_t k = 0; k < run->nstalls; k++) {
		uint64_t from = run->stalls[k].from_ns;

		if (from > t || t > run->stalls[k].to_ns + STALL_SLACK_NS)
			continue;
		for (size_t j = k; j > 0 && run->stalls[j - 1].to_ns + STALL_JOIN_NS >= from; j--)
			from = run->stalls[j - 1].from_ns;
		return from;
	}
	return 0;
}

/*
 * The gaps before each retry number j across clients, as bounds on the wait
 * the client meant: hi is the gap observed; lo is lower when the retry came
 * in a stall of the whole machine (the client meant to wake somewhere in it,
 * no earlier than its start).  lo[j], hi[j] hold cnt[j] gaps.  Only retries
 * after an answer the client got count; with blind_only, only after answers
 * without a wait.  Returns the depth.
 */
static size_t gaps_by_retry(const struct grade *g, bool blind_only, double (*lo)[MAX_PER_RETRY],
                            double (*hi)[MAX_PER_RETRY], unsigned *cnt)
{
	unsigned *k = calloc(g->v->nclients + 1, sizeof(*k));
	size_t depth = 0;

	for (size_t i = 0; k && i < g->v->n; i++) {
		long p = g->v->prev[i];
		size_t c = g->v->cid[i], j = k[c];
		const struct scenario_arrival *a = p >= 0 ? &g->log[p] : NULL;
		uint64_t from;

		if (!a || j >= MAX_DEPTH || !answered_before(g->log, p, i) || succeeded(a) || (blind_only && a->has_wait))
			continue;
		if (cnt[j] < MAX_PER_RETRY) {
			from = stall_start(g->run, g->log[i].t_ns);
			hi[j][cnt[j]] = secs(gap_ns(g->log, p, i));
			lo[j][cnt[j]] = !from ? hi[j][cnt[j]] : from > sent_ns(a) ? secs((int64_t)(from - sent_ns(a))) : 0;
			cnt[j]++;
		}
		k[c]++;
		depth = k[c] > depth ? k[c] : depth;
	}
	free(k);
	return depth;
}

/* The median of v[0..n) (sorts it). */
static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The growth a backs-off needs over a first wait of first_s: 25 % of it, and at least margin_s. */
static double growth_needed(double first_s, double margin)
{
	return first_s * VERIFY_GRADE_GROWTH_PCT / 100 > margin ? first_s * VERIFY_GRADE_GROWTH_PCT / 100 : margin;
}

/*
 * The verdict on growth, from bounds: the later waits' median against the
 * first (one late wake-up does not make constant waits grow).  Pass when even
 * the lowest later wait beats the highest first; fail when even the highest
 * does not beat the lowest; else a stall leaves it undecided.
 */
static enum verify_outcome growth(const double *mlo, const double *mhi, size_t depth, double margin, struct text *t)
{
	double later_lo[MAX_DEPTH], later_hi[MAX_DEPTH], llo, lhi;

	memcpy(later_lo, mlo + 1, (depth - 1) * sizeof(double));
	memcpy(later_hi, mhi + 1, (depth - 1) * sizeof(double));
	llo = median(later_lo, (unsigned)depth - 1);
	lhi = median(later_hi, (unsigned)depth - 1);
	if (llo - mhi[0] >= growth_needed(mhi[0], margin))
		return VERIFY_PASS;
	if (lhi - mlo[0] < growth_needed(mlo[0], margin)) {
		SUMMARY(t, " (the waits do not grow: the later ones are not %.0fms over the first)",
		        growth_needed(mlo[0], margin) * 1e3);
		return VERIFY_FAIL;
	}
	SUMMARY(t, ": not observed: a stall of the machine held up a retry, so whether the waits grow cannot be told");
	return VERIFY_NOT_OBSERVED;
}

static void grade_backoff(const struct grade *g, struct verify_grade_verdict *out)
{
	double lo[MAX_DEPTH][MAX_PER_RETRY], hi[MAX_DEPTH][MAX_PER_RETRY], mlo[MAX_DEPTH], mhi[MAX_DEPTH];
	unsigned cnt[MAX_DEPTH] = { 0 };
	size_t depth = gaps_by_retry(g, true, lo, hi, cnt), at_once = 0;
	struct text t = { "", "" };

	if (depth == 0) {
		SUMMARY(&t, "not observed: no retry followed an answer without a wait");
		conclude(out, VERIFY_NOT_OBSERVED, &t);
		return;
	}
	DETAIL(&t, "median gap by retry after answers without a wait:");
	for (size_t j = 0; j < depth; j++) {
		mlo[j] = median(lo[j], cnt[j]);
		mhi[j] = median(hi[j], cnt[j]);
		DETAIL(&t, mlo[j] < mhi[j] ? " %.3fs (held up by a stall: meant %.3fs or more)" : " %.3fs", mhi[j], mlo[j]);
		at_once = !at_once && mhi[j] < secs((int64_t)VERIFY_GRADE_MIN_GAP_NS) ? j + 1 : at_once;
	}
	if (at_once) {
		SUMMARY(&t, " (retry %zu came at once: under 10ms)", at_once);
		conclude(out, VERIFY_FAIL, &t);
	} else if (depth == 1) {
		SUMMARY(&t, ": not observed: whether the waits grow needs two retries");
		conclude(out, VERIFY_NOT_OBSERVED, &t);
	} else {
		enum verify_outcome o = growth(mlo, mhi, depth, margin_s(g->run, VERIFY_GRADE_GROWTH_NS), &t);

		conclude(out, o, &t);
	}
}

/*
 * How much later than the earliest client each other client retried, at
 * every retry number reached by two or more, as bounds: a retry held up by a
 * stall meant to come anywhere from the stall's start (lo) to its arrival
 * (hi), so its lag lies between llo and lhi.  The gap lists go into t.
 * Returns how many retry numbers were compared; *n lags are in llo, lhi.
 */
static unsigned lags_by_retry(double (*lo)[MAX_PER_RETRY], double (*hi)[MAX_PER_RETRY], const unsigned *cnt,
                              size_t depth, double *llo, double *lhi, size_t *n, struct text *t)
{
	unsigned compared = 0;

	*n = 0;
	for (size_t j = 0; j < depth; j++) {
		double first_hi = hi[j][0], first_lo = lo[j][0], last = hi[j][0];
		unsigned earliest = 0;

		if (cnt[j] < 2)
			continue;
		for (unsigned k = 1; k < cnt[j]; k++) {
			earliest = hi[j][k] < first_hi ? k : earliest;
			first_hi = hi[j][k] < first_hi ? hi[j][k] : first_hi;
			first_lo = lo[j][k] < first_lo ? lo[j][k] : first_lo;
			last = hi[j][k] > last ? hi[j][k] : last;
		}
		DETAIL(t, "; retry %zu: gaps %.3fs..%.3fs (spread %.0fms)", j + 1, first_hi, last, (last - first_hi) * 1e3);
		for (unsigned k = 0; k < cnt[j]; k++) {
			if (k == earliest)
				continue;
			llo[*n] = lo[j][k] > first_hi ? lo[j][k] - first_hi : 0;
			lhi[(*n)++] = hi[j][k] - first_lo;
		}
		compared++;
	}
	return compared;
}

/*
 * Jitter: the clients' retries are spread apart.  The statistic is the median
 * lag behind the earliest client over every retry number: a machine too busy
 * to wake one client on time makes one lag long, not the median.  Retries a
 * stall of the whole machine held up give bounds: pass when even the lowest
 * median clears the margin, fail when even the highest does not, else the
 * stalls leave it undecided.
 */
static void grade_jitter(const struct grade *g, struct verify_grade_verdict *out)
{
	double lo[MAX_DEPTH][MAX_PER_RETRY], hi[MAX_DEPTH][MAX_PER_RETRY];
	double llo[MAX_DEPTH * MAX_PER_RETRY], lhi[MAX_DEPTH * MAX_PER_RETRY], mlo, mhi;
	unsigned cnt[MAX_DEPTH] = { 0 }, compared;
	double need = margin_s(g->run, VERIFY_GRADE_JITTER_NS);
	size_t nlags, depth = gaps_by_retry(g, false, lo, hi, cnt);
	struct text t = { "", "" };

	DETAIL(&t, "%zu clients", g->v->nclients);
	compared = lags_by_retry(lo, hi, cnt, depth, llo, lhi, &nlags, &t);
	if (g->v->nclients < 2 || compared == 0) {
		SUMMARY(&t, g->v->nclients < 2 ? "; not observed: needs a multi-client run (--clients N, N >= 2)"
		                               : "; not observed: no retry number was reached by two clients");
		conclude(out, VERIFY_NOT_OBSERVED, &t);
		return;
	}
	mlo = median(llo, (unsigned)nlags);
	mhi = median(lhi, (unsigned)nlags);
	if (mlo >= need || mhi < need) {
		SUMMARY(&t, "; median lag behind the earliest client %.0fms (%s %.0fms)%s", mhi * 1e3,
		        mlo >= need ? "at least" : "under", need * 1e3, mlo >= need ? "" : ": the clients retry in lockstep");
		conclude(out, mlo >= need ? VERIFY_PASS : VERIFY_FAIL, &t);
		return;
	}
	SUMMARY(&t, "; median lag behind the earliest client between %.0fms and %.0fms: not observed: stalls of the "
	        "machine held up retries, so it cannot be told against %.0fms", mlo * 1e3, mhi * 1e3, need * 1e3);
	conclude(out, VERIFY_NOT_OBSERVED, &t);
}

/* ---- failed for good, while the command runs ---- */

static bool failed_within(const struct grade *g)
{
	return g->run->wall_ns > g->e->arg;
}

static bool failed_attempts(const struct grade *g)
{
	unsigned cap = g->e->kind == VERIFY_MAX_ATTEMPTS ? (unsigned)g->e->arg : VERIFY_GRADE_STOP_ATTEMPTS;

	return most_attempts(g->v) > cap;
}

static bool failed_honours(const struct grade *g)
{
	bool graded;

	for (size_t i = 0; i < g->v->n; i++)
		if (early_retry(g, i, &graded))
			return true;
	return false;
}

/* The other retry graders fail on what they have seen so far: grade and look. */
static bool failed_graded(const struct grade *g);

/* ---- the table ---- */

enum arg_kind { ARG_NONE, ARG_COUNT, ARG_DURATION };

/* One expectation kind, at its enum's index. */
static const struct kind_ops {
	const char *name;
	enum arg_kind arg;
	void (*grade)(const struct grade *g, struct verify_grade_verdict *out);
	bool (*failed)(const struct grade *g);     /* NULL: never fails for good before the command ends */
} KINDS[] = {
	[VERIFY_SUCCEEDS] = { "succeeds", ARG_NONE, grade_succeeds, NULL },
	[VERIFY_HONOURS_RETRY_AFTER] = { "honours-retry-after", ARG_NONE, grade_honours, failed_honours },
	[VERIFY_HONOURS_RATELIMIT] = { "honours-ratelimit", ARG_NONE, grade_honours, failed_honours },
	[VERIFY_MAX_ATTEMPTS] = { "max-attempts", ARG_COUNT, grade_max_attempts, failed_attempts },
	[VERIFY_GIVES_UP_WITHIN] = { "gives-up-within", ARG_DURATION, grade_within, failed_within },
	[VERIFY_NO_RETRY_NON_IDEMPOTENT] = { "no-retry-non-idempotent", ARG_NONE, grade_idempotent, failed_graded },
	[VERIFY_NO_RETRY] = { "no-retry", ARG_NONE, grade_no_retry, failed_graded },
	[VERIFY_BACKS_OFF] = { "backs-off", ARG_NONE, grade_backoff, NULL },
	[VERIFY_JITTER] = { "jitter", ARG_NONE, grade_jitter, NULL },
	[VERIFY_STOPS_AFTER_ATTEMPTS] = { "stops-after-attempts", ARG_NONE, grade_stops, failed_attempts },
};

#define NKINDS (sizeof(KINDS) / sizeof(KINDS[0]))

static bool failed_graded(const struct grade *g)
{
	struct verify_grade_verdict v;

	memset(&v, 0, sizeof(v));
	KINDS[g->e->kind].grade(g, &v);
	return v.outcome == VERIFY_FAIL;
}

const char *verify_grade_names(void)
{
	return "succeeds, honours-retry-after, honours-ratelimit, max-attempts<=N, gives-up-within=DUR, "
	       "no-retry-non-idempotent, no-retry, backs-off, jitter, stops-after-attempts";
}

static int parse_item(const char *item, struct verify_grade_expect *e, char *err, size_t errlen)
{
	char why[160];

	for (size_t k = 0; k < NKINDS; k++) {
		size_t len = strlen(KINDS[k].name);
		const char *rest = item + len;

		if (strncmp(item, KINDS[k].name, len) != 0 || (*rest && *rest != '<' && *rest != '='))
			continue;
		e->kind = (enum verify_grade_kind)k;
		e->arg = 0;
		snprintf(e->text, sizeof(e->text), "%s", item);
		if (KINDS[k].arg == ARG_NONE && *rest == '\0')
			return 0;
		if (KINDS[k].arg == ARG_COUNT && strncmp(rest, "<=", 2) == 0 &&
		    parse_u64(rest + 2, 1, 1000000, &e->arg, why, sizeof(why)) == 0)
			return 0;
		if (KINDS[k].arg == ARG_DURATION && rest[0] == '=' && parse_duration(rest + 1, &e->arg, why, sizeof(why)) == 0)
			return 0;
		snprintf(err, errlen, "--expect: bad item '%.60s' (%s)", item,
		         KINDS[k].arg == ARG_COUNT ? "write max-attempts<=N"
		         : KINDS[k].arg == ARG_DURATION ? "write gives-up-within=DUR" : "takes no value");
		return -1;
	}
	snprintf(err, errlen, "--expect: unknown expectation '%.60s' (%s)", item, verify_grade_names());
	return -1;
}

int verify_grade_parse(const char *list, struct verify_grade_expect *out, size_t max, size_t *n, char *err,
                       size_t errlen)
{
	char buf[512], *save = NULL;

	*n = 0;
	if (strlen(list) >= sizeof(buf)) {
		snprintf(err, errlen, "--expect: list too long");
		return -1;
	}
	snprintf(buf, sizeof(buf), "%s", list);
	for (char *it = strtok_r(buf, ", ", &save); it; it = strtok_r(NULL, ", ", &save)) {
		if (*n == max) {
			snprintf(err, errlen, "--expect: at most %zu expectations", max);
			return -1;
		}
		if (parse_item(it, &out[*n], err, errlen) < 0)
			return -1;
		(*n)++;
	}
	if (*n == 0) {
		snprintf(err, errlen, "--expect: empty list (%s)", verify_grade_names());
		return -1;
	}
	return 0;
}

void verify_grade_one(const struct verify_grade_expect *e, const struct scenario_arrival *log, size_t n,
                      const struct verify_grade_run *run, struct verify_grade_verdict *out)
{
	struct view v;
	struct grade g = { e, log, &v, run };
	struct text t = { "", "" };

	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", e->text);
	if (view_init(&v, log, n) < 0) {
		SUMMARY(&t, "out of memory");
		conclude(out, VERIFY_FAIL, &t);
		return;
	}
	KINDS[e->kind].grade(&g, out);
	if (run->dropped && strlen(out->evidence) + 64 < sizeof(out->evidence))
		add(out->evidence, sizeof(out->evidence), " (graded on the first %zu arrivals; %llu more not logged)", n,
		    (unsigned long long)run->dropped);
	view_free(&v);
}

bool verify_grade_failed(const struct verify_grade_expect *e, const struct scenario_arrival *log, size_t n,
                         const struct verify_grade_run *run)
{
	struct view v;
	struct grade g = { e, log, &v, run };
	bool failed;

	if (!KINDS[e->kind].failed || view_init(&v, log, n) < 0)
		return false;
	failed = KINDS[e->kind].failed(&g);
	view_free(&v);
	return failed;
}
