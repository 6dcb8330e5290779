/* The verify grader's statistical expectations: backs-off and jitter (verify_grade_impl.h). */
#include "lab/verify_grade.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lab/verify_grade_impl.h"

#define MAX_DEPTH 16               /* retry numbers compared by backs-off and jitter */
#define MAX_PER_RETRY 64           /* clients compared at one retry number */
#define STALL_JOIN_NS (10ULL * 1000000ULL)   /* stalls this close together are one */
#define STALL_SLACK_NS (15ULL * 1000000ULL)  /* an arrival this soon after a stall was held up by it */

/* The margin a statistical check needs: at least floor_ns, and NOISE_FACTOR times the run's noise. */
static double margin_s(const struct verify_grade_run *run, uint64_t floor_ns)
{
	uint64_t noisy = run->noise_ns * VERIFY_GRADE_NOISE_FACTOR;

	return verify_grade_secs((int64_t)(noisy > floor_ns ? noisy : floor_ns));
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
static size_t gaps_by_retry(const struct verify_grade_input *g, bool blind_only, double (*lo)[MAX_PER_RETRY],
                            double (*hi)[MAX_PER_RETRY], unsigned *cnt)
{
	unsigned *k = calloc(g->v->nclients + 1, sizeof(*k));
	size_t depth = 0;

	for (size_t i = 0; k && i < g->v->n; i++) {
		long p = g->v->prev[i];
		size_t c = g->v->cid[i], j = k[c];
		const struct scenario_arrival *a = p >= 0 ? &g->log[p] : NULL;
		uint64_t from;

		if (!a || j >= MAX_DEPTH || !verify_grade_answered_before(g->log, p, i) || succeeded(a) ||
		    (blind_only && a->has_wait))
			continue;
		if (cnt[j] < MAX_PER_RETRY) {
			from = stall_start(g->run, g->log[i].t_ns);
			hi[j][cnt[j]] = verify_grade_secs(verify_grade_gap_ns(g->log, p, i));
			lo[j][cnt[j]] = !from ? hi[j][cnt[j]]
			                : from > verify_grade_sent_ns(a)
			                        ? verify_grade_secs((int64_t)(from - verify_grade_sent_ns(a)))
			                        : 0;
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
static enum verify_outcome growth(const double *mlo, const double *mhi, size_t depth, double margin,
                                  struct verify_grade_text *t)
{
	double later_lo[MAX_DEPTH], later_hi[MAX_DEPTH], llo, lhi;

	memcpy(later_lo, mlo + 1, (depth - 1) * sizeof(double));
	memcpy(later_hi, mhi + 1, (depth - 1) * sizeof(double));
	llo = median(later_lo, (unsigned)depth - 1);
	lhi = median(later_hi, (unsigned)depth - 1);
	if (llo - mhi[0] >= growth_needed(mhi[0], margin))
		return VERIFY_PASS;
	if (lhi - mlo[0] < growth_needed(mlo[0], margin)) {
		VERIFY_GRADE_SUMMARY(t, " (the waits do not grow: the later ones are not %.0fms over the first)",
		                     growth_needed(mlo[0], margin) * 1e3);
		return VERIFY_FAIL;
	}
	VERIFY_GRADE_SUMMARY(t,
	                     ": not observed: a stall of the machine held up a retry, so whether the waits grow cannot be told");
	return VERIFY_NOT_OBSERVED;
}

void verify_grade_backoff(const struct verify_grade_input *g, struct verify_grade_verdict *out)
{
	double lo[MAX_DEPTH][MAX_PER_RETRY], hi[MAX_DEPTH][MAX_PER_RETRY], mlo[MAX_DEPTH], mhi[MAX_DEPTH];
	unsigned cnt[MAX_DEPTH] = { 0 };
	size_t depth = gaps_by_retry(g, true, lo, hi, cnt), at_once = 0;
	struct verify_grade_text t = { "", "" };
	/* "At once" grows with the machine's noise as the margins do: a client's own lag under load is no wait. */
	double once = margin_s(g->run, VERIFY_GRADE_MIN_GAP_NS);

	if (depth == 0) {
		VERIFY_GRADE_SUMMARY(&t, "not observed: no retry followed an answer without a wait");
		verify_grade_conclude(out, VERIFY_NOT_OBSERVED, &t);
		return;
	}
	VERIFY_GRADE_DETAIL(&t, "median gap by retry after answers without a wait:");
	for (size_t j = 0; j < depth; j++) {
		mlo[j] = median(lo[j], cnt[j]);
		mhi[j] = median(hi[j], cnt[j]);
		VERIFY_GRADE_DETAIL(&t, mlo[j] < mhi[j] ? " %.3fs (held up by a stall: meant %.3fs or more)" : " %.3fs",
		                    mhi[j], mlo[j]);
		at_once = !at_once && mhi[j] < once ? j + 1 : at_once;
	}
	if (at_once) {
		VERIFY_GRADE_SUMMARY(&t, " (retry %zu came at once: under %.0fms)", at_once, once * 1e3);
		verify_grade_conclude(out, VERIFY_FAIL, &t);
	} else if (depth == 1) {
		VERIFY_GRADE_SUMMARY(&t, ": not observed: whether the waits grow needs two retries");
		verify_grade_conclude(out, VERIFY_NOT_OBSERVED, &t);
	} else {
		enum verify_outcome o = growth(mlo, mhi, depth, margin_s(g->run, VERIFY_GRADE_GROWTH_NS), &t);

		verify_grade_conclude(out, o, &t);
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
                              size_t depth, double *llo, double *lhi, size_t *n, struct verify_grade_text *t)
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
		VERIFY_GRADE_DETAIL(t, "; retry %zu: gaps %.3fs..%.3fs (spread %.0fms)", j + 1, first_hi, last,
		                    (last - first_hi) * 1e3);
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
void verify_grade_jitter(const struct verify_grade_input *g, struct verify_grade_verdict *out)
{
	double lo[MAX_DEPTH][MAX_PER_RETRY], hi[MAX_DEPTH][MAX_PER_RETRY];
	double llo[MAX_DEPTH * MAX_PER_RETRY], lhi[MAX_DEPTH * MAX_PER_RETRY], mlo, mhi;
	unsigned cnt[MAX_DEPTH] = { 0 }, compared;
	double need = margin_s(g->run, VERIFY_GRADE_JITTER_NS);
	size_t nlags, depth = gaps_by_retry(g, false, lo, hi, cnt);
	struct verify_grade_text t = { "", "" };

	VERIFY_GRADE_DETAIL(&t, "%zu clients", g->v->nclients);
	compared = lags_by_retry(lo, hi, cnt, depth, llo, lhi, &nlags, &t);
	if (g->v->nclients < 2 || compared == 0) {
		VERIFY_GRADE_SUMMARY(&t, g->v->nclients < 2
		                                 ? "; not observed: needs a multi-client run (--clients N, N >= 2)"
		                                 : "; not observed: no retry number was reached by two clients");
		verify_grade_conclude(out, VERIFY_NOT_OBSERVED, &t);
		return;
	}
	mlo = median(llo, (unsigned)nlags);
	mhi = median(lhi, (unsigned)nlags);
	if (mlo >= need || mhi < need) {
		VERIFY_GRADE_SUMMARY(&t, "; median lag behind the earliest client %.0fms (%s %.0fms)%s", mhi * 1e3,
		                     mlo >= need ? "at least" : "under", need * 1e3,
		                     mlo >= need ? "" : ": the clients retry in lockstep");
		verify_grade_conclude(out, mlo >= need ? VERIFY_PASS : VERIFY_FAIL, &t);
		return;
	}
	VERIFY_GRADE_SUMMARY(&t,
	                     "; median lag behind the earliest client between %.0fms and %.0fms: not observed: stalls of the "
	                     "machine held up retries, so it cannot be told against %.0fms",
	                     mlo * 1e3, mhi * 1e3, need * 1e3);
	verify_grade_conclude(out, VERIFY_NOT_OBSERVED, &t);
}
