/* The verify grader: expectations over an arrival log and the command's exit. */
#include "lab/verify_grade.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/parse.h"
#include "common/retry/retry.h"

/* Who is who in the log: per arrival its client index and the same client's previous arrival. */
struct view {
	size_t n, nclients;
	size_t *cid;
	long *prev;
	const char **names;        /* first arrival's client name per client */
	unsigned *attempts;        /* per client */
};

static const struct {
	const char *name;
	enum verify_grade_kind kind;
	int arg;                   /* 0 none, 1 "<=N", 2 "=DUR" */
} KINDS[] = {
	{ "succeeds", VERIFY_SUCCEEDS, 0 },
	{ "honours-retry-after", VERIFY_HONOURS_RETRY_AFTER, 0 },
	{ "max-attempts", VERIFY_MAX_ATTEMPTS, 1 },
	{ "gives-up-within", VERIFY_GIVES_UP_WITHIN, 2 },
	{ "no-retry-non-idempotent", VERIFY_NO_RETRY_NON_IDEMPOTENT, 0 },
	{ "backs-off", VERIFY_BACKS_OFF, 0 },
	{ "jitter", VERIFY_JITTER, 0 },
	{ "stops-after-attempts", VERIFY_STOPS_AFTER_ATTEMPTS, 0 },
};

#define NKINDS (sizeof(KINDS) / sizeof(KINDS[0]))

const char *verify_grade_names(void)
{
	return "succeeds, honours-retry-after, max-attempts<=N, gives-up-within=DUR, no-retry-non-idempotent, "
	       "backs-off, jitter, stops-after-attempts";
}

static int parse_item(const char *item, struct verify_grade_expect *e, char *err, size_t errlen)
{
	char why[160];

	for (size_t k = 0; k < NKINDS; k++) {
		size_t len = strlen(KINDS[k].name);
		const char *rest = item + len;

		if (strncmp(item, KINDS[k].name, len) != 0)
			continue;
		e->kind = KINDS[k].kind;
		e->arg = 0;
		snprintf(e->text, sizeof(e->text), "%s", item);
		if (KINDS[k].arg == 0 && *rest == '\0')
			return 0;
		if (KINDS[k].arg == 1 && strncmp(rest, "<=", 2) == 0 &&
		    parse_u64(rest + 2, 1, 1000000, &e->arg, why, sizeof(why)) == 0)
			return 0;
		if (KINDS[k].arg == 2 && rest[0] == '=' && parse_duration(rest + 1, &e->arg, why, sizeof(why)) == 0)
			return 0;
		snprintf(err, errlen, "--expect: bad item '%.60s' (%s)", item,
		         KINDS[k].arg == 1 ? "write max-attempts<=N" : KINDS[k].arg == 2 ? "write gives-up-within=DUR"
		                                                                          : "takes no value");
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

static void view_free(struct view *v)
{
	free(v->cid);
	free(v->prev);
	free(v->names);
	free(v->attempts);
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
		v->prev[i] = -1;
		for (long j = (long)i - 1; j >= 0; j--)
			if (v->cid[j] == c) {
				v->prev[i] = j;
				break;
			}
		v->attempts[c]++;
	}
	return 0;
}

/* The gap between the answer to arrival p (sent after its delay) and arrival i, in ns (may be negative). */
static int64_t gap_ns(const struct scenario_arrival *log, long p, size_t i)
{
	return (int64_t)log[i].t_ns - (int64_t)(log[p].t_ns + log[p].delay_ns);
}

static void say(struct verify_grade_verdict *out, const char *fmt, ...)
{
	size_t used = strlen(out->evidence);
	va_list ap;
	int r;

	if (used + 1 >= sizeof(out->evidence))
		return;
	va_start(ap, fmt);
	r = vsnprintf(out->evidence + used, sizeof(out->evidence) - used, fmt, ap);
	va_end(ap);
	if (r < 0 || (size_t)r >= sizeof(out->evidence) - used)
		snprintf(out->evidence + sizeof(out->evidence) - 5, 5, "...");
}

static double secs(int64_t ns)
{
	return (double)ns / 1e9;
}

static void grade_exit(const struct verify_grade_expect *e, const struct verify_grade_run *run,
                       struct verify_grade_verdict *out)
{
	if (run->killed) {
		say(out, "still running at the %.1fs timeout: killed", secs((int64_t)run->timeout_ns));
		out->pass = false;
		return;
	}
	say(out, "command exited %d after %.2fs", run->exit_status, secs((int64_t)run->wall_ns));
	if (e->kind == VERIFY_SUCCEEDS) {
		out->pass = run->exit_status == 0;
	} else {
		out->pass = run->wall_ns <= e->arg;
		say(out, " (limit %.2fs)", secs((int64_t)e->arg));
	}
}

static void grade_retry_after(const struct scenario_arrival *log, const struct view *v,
                              struct verify_grade_verdict *out)
{
	unsigned seen = 0, bad = 0;

	out->pass = true;
	for (size_t i = 0; i < v->n; i++) {
		long p = v->prev[i];
		int64_t gap;

		if (p < 0 || !log[p].has_wait)
			continue;
		gap = gap_ns(log, p, i);
		seen++;
		if (gap + (int64_t)VERIFY_GRADE_TOLERANCE_NS < (int64_t)log[p].wait_ns) {
			out->pass = false;
			bad++;
		}
		if (seen <= 6 || gap + (int64_t)VERIFY_GRADE_TOLERANCE_NS < (int64_t)log[p].wait_ns)
			say(out, "%s%s: asked %.3fs, waited %.3fs%s", seen > 1 ? "; " : "", log[i].client,
			    secs((int64_t)log[p].wait_ns), secs(gap),
			    gap + (int64_t)VERIFY_GRADE_TOLERANCE_NS < (int64_t)log[p].wait_ns ? " (too early)" : "");
	}
	if (seen == 0)
		say(out, "no retry followed an answer that asked for a wait (%zu arrivals)", v->n);
	else
		say(out, " [%u of %u retries too early; tolerance 50ms]", bad, seen);
}

static void grade_attempts(const struct verify_grade_expect *e, const struct view *v, struct verify_grade_verdict *out)
{
	out->pass = true;
	say(out, "attempts:");
	for (size_t c = 0; c < v->nclients; c++) {
		if (e->kind == VERIFY_MAX_ATTEMPTS && v->attempts[c] > e->arg)
			out->pass = false;
		if (e->kind == VERIFY_STOPS_AFTER_ATTEMPTS && v->attempts[c] > VERIFY_GRADE_STOP_ATTEMPTS)
			out->pass = false;
		if (c < 8)
			say(out, " %s=%u", v->names[c], v->attempts[c]);
	}
	if (v->nclients == 0)
		say(out, " none (no arrivals)");
	if (v->nclients > 8)
		say(out, " ... (%zu clients)", v->nclients);
}

static void grade_stops(const struct verify_grade_expect *e, const struct view *v, const struct verify_grade_run *run,
                        struct verify_grade_verdict *out)
{
	grade_attempts(e, v, out);
	if (run->killed) {
		out->pass = false;
		say(out, "; still running at the %.1fs timeout: killed", secs((int64_t)run->timeout_ns));
	} else if (v->n == 0) {
		out->pass = false;
		say(out, "; the command never reached the server");
	} else {
		say(out, "; ended on its own after %.2fs%s", secs((int64_t)run->wall_ns),
		    out->pass ? "" : " but kept retrying past 10 attempts");
	}
}

static void grade_idempotent(const struct scenario_arrival *log, const struct view *v,
                             struct verify_grade_verdict *out)
{
	unsigned unsafe = 0, retried = 0, keyed = 0;

	out->pass = true;
	for (size_t i = 0; i < v->n; i++) {
		long p = v->prev[i];

		if (retry_method_idempotent(log[i].method))
			continue;
		unsafe++;
		if (p < 0 || retry_method_idempotent(log[p].method) || log[p].status < 500)
			continue;
		if (log[i].idempotency_key[0]) {
			keyed++;
			continue;
		}
		retried++;
		out->pass = false;
		if (retried <= 3)
			say(out, "%s retried %.3fs after %d without an Idempotency-Key (%s); ", log[i].method,
			    secs(gap_ns(log, p, i)), log[p].status, log[i].client);
	}
	say(out, "%u non-idempotent arrivals, %u unsafe retries after a 5xx, %u retries with an Idempotency-Key",
	    unsafe, retried, keyed);
}

/* Mean gap at each wait-less retry number k (after a non-2xx answer without a wait), across clients. */
static size_t blind_gaps(const struct scenario_arrival *log, const struct view *v, double *mean, size_t max)
{
	unsigned *count = calloc(max, sizeof(*count)), *k = calloc(v->nclients + 1, sizeof(*k));
	size_t depth = 0;

	for (size_t i = 0; count && k && i < v->n; i++) {
		long p = v->prev[i];
		size_t c = v->cid[i];

		if (p < 0 || log[p].has_wait || (log[p].status >= 200 && log[p].status < 300) || k[c] >= max)
			continue;
		if (count[k[c]] == 0)
			mean[k[c]] = 0;
		mean[k[c]] += secs(gap_ns(log, p, i));
		count[k[c]]++;
		k[c]++;
		depth = k[c] > depth ? k[c] : depth;
	}
	for (size_t j = 0; count && j < depth; j++)
		mean[j] /= count[j];
	free(count);
	free(k);
	return depth;
}

static void grade_backoff(const struct scenario_arrival *log, const struct view *v, struct verify_grade_verdict *out)
{
	double mean[16];
	size_t depth = blind_gaps(log, v, mean, 16);

	out->pass = true;
	if (depth == 0) {
		say(out, "no retry followed an answer without a wait");
		return;
	}
	say(out, "mean gap by retry after answers without a wait:");
	for (size_t j = 0; j < depth; j++) {
		say(out, " %.3fs", mean[j]);
		if (mean[j] < secs((int64_t)VERIFY_GRADE_MIN_GAP_NS))
			out->pass = false;
	}
	if (!out->pass)
		say(out, " (a retry came at once: under 10ms)");
	else if (depth > 1 && mean[depth - 1] <= mean[0]) {
		out->pass = false;
		say(out, " (the gaps do not grow)");
	}
}

/* Spread across clients of the gap before each retry number. */
static void grade_jitter(const struct scenario_arrival *log, const struct view *v, struct verify_grade_verdict *out)
{
	double lo[16], hi[16];
	unsigned cnt[16] = { 0 }, *k = calloc(v->nclients + 1, sizeof(*k)), compared = 0, spread = 0;
	size_t depth = 0;

	for (size_t i = 0; k && i < v->n; i++) {
		long p = v->prev[i];
		size_t c = v->cid[i], j = k[c];
		double g;

		if (p < 0 || j >= 16)
			continue;
		g = secs(gap_ns(log, p, i));
		lo[j] = cnt[j] == 0 || g < lo[j] ? g : lo[j];
		hi[j] = cnt[j] == 0 || g > hi[j] ? g : hi[j];
		cnt[j]++;
		k[c]++;
		depth = k[c] > depth ? k[c] : depth;
	}
	free(k);
	say(out, "%zu clients", v->nclients);
	for (size_t j = 0; j < depth; j++) {
		if (cnt[j] < 2)
			continue;
		say(out, "; retry %zu: gaps %.3fs..%.3fs (spread %.0fms)", j + 1, lo[j], hi[j], (hi[j] - lo[j]) * 1e3);
		compared++;
		spread += hi[j] - lo[j] >= secs((int64_t)VERIFY_GRADE_JITTER_NS);
	}
	/* More than half, so one retry skewed by a busy machine does not pass a lockstep client. */
	out->pass = v->nclients >= 2 && compared > 0 && 2 * spread > compared;
	if (v->nclients < 2)
		say(out, "; needs a multi-client run (--clients N, N >= 2)");
	else if (!out->pass)
		say(out, "; %u of %u retry numbers spread 10ms or more: the clients retry in lockstep", spread, compared);
}

void verify_grade_one(const struct verify_grade_expect *e, const struct scenario_arrival *log, size_t n,
                      const struct verify_grade_run *run, struct verify_grade_verdict *out)
{
	struct view v;

	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", e->text);
	if (view_init(&v, log, n) < 0) {
		say(out, "out of memory");
		return;
	}
	switch (e->kind) {
	case VERIFY_SUCCEEDS:
	case VERIFY_GIVES_UP_WITHIN: grade_exit(e, run, out); break;
	case VERIFY_HONOURS_RETRY_AFTER: grade_retry_after(log, &v, out); break;
	case VERIFY_MAX_ATTEMPTS: grade_attempts(e, &v, out); break;
	case VERIFY_STOPS_AFTER_ATTEMPTS: grade_stops(e, &v, run, out); break;
	case VERIFY_NO_RETRY_NON_IDEMPOTENT: grade_idempotent(log, &v, out); break;
	case VERIFY_BACKS_OFF: grade_backoff(log, &v, out); break;
	case VERIFY_JITTER: grade_jitter(log, &v, out); break;
	}
	view_free(&v);
}
