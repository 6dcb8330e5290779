/* The verify grader: expectations over an arrival log and the command's end. */
#include "lab/verify_grade.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/parse.h"
#include "common/retry/retry.h"
#include "lab/verify_grade_impl.h"

void verify_grade_add(char *buf, size_t len, const char *fmt, ...)
{
	size_t used = strlen(buf);
	va_list ap;

	if (used + 1 >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + used, len - used, fmt, ap);
	va_end(ap);
}

void verify_grade_conclude(struct verify_grade_verdict *out, enum verify_outcome o, const struct verify_grade_text *t)
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

const char *verify_outcome_name(enum verify_outcome o)
{
	return o == VERIFY_PASS ? "pass" : o == VERIFY_FAIL ? "fail" : "not observed";
}

/* ---- the view ---- */

static void view_free(struct verify_grade_view *v)
{
	free(v->cid);
	free(v->prev);
	free(v->names);
	free(v->attempts);
}

/* The same client's last arrival before i with the same method and path, or -1. */
static long previous(const struct scenario_arrival *log, const struct verify_grade_view *v, size_t i)
{
	for (long j = (long)i - 1; j >= 0; j--)
		if (v->cid[j] == v->cid[i] && strcmp(log[j].method, log[i].method) == 0 &&
		    strcmp(log[j].path, log[i].path) == 0)
			return j;
	return -1;
}

static int view_init(struct verify_grade_view *v, const struct scenario_arrival *log, size_t n)
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
static bool did_not_exit(const struct verify_grade_run *run, struct verify_grade_text *t)
{
	if (run->killed)
		VERIFY_GRADE_SUMMARY(t, "still running at the %.1fs timeout: killed",
		                     verify_grade_secs((int64_t)run->timeout_ns));
	else if (run->stopped)
		VERIFY_GRADE_SUMMARY(t, "still running when verify stopped it at %.2fs (the verdict was settled)",
		                     verify_grade_secs((int64_t)run->wall_ns));
	return run->killed || run->stopped;
}

/* The last answer the client got, when the command failed: why it may have stopped. */
static void last_answer(const struct verify_grade_input *g, struct verify_grade_text *t)
{
	const struct scenario_arrival *a;

	if (g->v->n == 0 || g->v->nclients != 1)
		return;
	a = &g->log[g->v->n - 1];
	if (a->fault != SCENARIO_FAULT_NONE)
		VERIFY_GRADE_SUMMARY(t, "; its last attempt met %s and it did not retry",
		                     verify_grade_fault_prose(a->fault));
	else if (a->status < 200 || a->status >= 300)
		VERIFY_GRADE_SUMMARY(t, "; its last answer was %d to a %s and it did not retry%s", a->status, a->method,
		                     !retry_method_idempotent(a->method) ? " (many clients retry only idempotent methods)"
		                                                         : "");
}

/* The last arrival of client c in the log, or -1. */
static long last_of(const struct verify_grade_view *v, size_t c)
{
	for (long i = (long)v->n - 1; i >= 0; i--)
		if (v->cid[i] == c)
			return i;
	return -1;
}

/*
 * succeeds with no command (verify --listen): every client's last answer was
 * a 2xx that went out.  When serving ended at the timeout, a client whose
 * last answer was not might still have come back: not observed.
 */
static void grade_served(const struct verify_grade_input *g, struct verify_grade_verdict *out)
{
	struct verify_grade_text t = { "", "" };
	size_t bad = 0;

	for (size_t c = 0; c < g->v->nclients; c++) {
		const struct scenario_arrival *a = &g->log[last_of(g->v, c)];
		bool ok = a->fault == SCENARIO_FAULT_NONE && a->end == SCENARIO_END_SENT && a->status >= 200 &&
		          a->status < 300;

		if (!ok && ++bad <= 3)
			VERIFY_GRADE_DETAIL(&t, "%s's last answer was %d%s; ", a->client, a->status,
			                    a->fault != SCENARIO_FAULT_NONE ? " (a scripted failure)" : "");
	}
	VERIFY_GRADE_SUMMARY(&t, "%zu of %zu clients ended on a 2xx (seen from the server: no command)",
	                     g->v->nclients - bad, g->v->nclients);
	if (bad && g->run->killed)
		VERIFY_GRADE_SUMMARY(&t, "; not observed: serving ended at the timeout");
	verify_grade_conclude(out, !bad ? VERIFY_PASS : g->run->killed ? VERIFY_NOT_OBSERVED : VERIFY_FAIL, &t);
}

/* gives-up-within with no command: fails when a client's attempts spanned more; else when it gave up is not seen. */
static void grade_within_served(const struct verify_grade_input *g, struct verify_grade_verdict *out)
{
	struct verify_grade_text t = { "", "" };
	uint64_t span = 0;

	for (size_t i = 0; i < g->v->n; i++) {
		size_t c = g->v->cid[i];
		long first = 0;

		while (g->v->cid[first] != c)
			first++;
		span = g->log[i].t_ns - g->log[first].t_ns > span ? g->log[i].t_ns - g->log[first].t_ns : span;
	}
	VERIFY_GRADE_SUMMARY(&t, "attempts spanned %.2fs (limit %.2fs)", verify_grade_secs((int64_t)span),
	                     verify_grade_secs((int64_t)g->e->arg));
	if (span <= g->e->arg)
		VERIFY_GRADE_SUMMARY(&t, "; not observed: no command, so when the app gave up is not seen");
	verify_grade_conclude(out, span > g->e->arg ? VERIFY_FAIL : VERIFY_NOT_OBSERVED, &t);
}

static void grade_succeeds(const struct verify_grade_input *g, struct verify_grade_verdict *out)
{
	struct verify_grade_text t = { "", "" };

	if (g->run->listened && g->v->n > 0) {
		grade_served(g, out);
		return;
	}
	if (did_not_exit(g->run, &t)) {
		verify_grade_conclude(out, g->run->killed ? VERIFY_FAIL : VERIFY_NOT_OBSERVED, &t);
		return;
	}
	VERIFY_GRADE_SUMMARY(&t, "command exited %d after %.2fs", g->run->exit_status,
	                     verify_grade_secs((int64_t)g->run->wall_ns));
	if (g->run->exit_status != 0)
		last_answer(g, &t);
	verify_grade_conclude(out, g->run->exit_status == 0 ? VERIFY_PASS : VERIFY_FAIL, &t);
}

static void grade_within(const struct verify_grade_input *g, struct verify_grade_verdict *out)
{
	const struct verify_grade_run *run = g->run;
	struct verify_grade_text t = { "", "" };
	bool past = run->wall_ns > g->e->arg;

	if (run->listened) {
		grade_within_served(g, out);
		return;
	}
	if (!did_not_exit(run, &t)) {
		VERIFY_GRADE_SUMMARY(&t, "command exited %d after %.2fs (limit %.2fs)", run->exit_status,
		                     verify_grade_secs((int64_t)run->wall_ns), verify_grade_secs((int64_t)g->e->arg));
		verify_grade_conclude(out, past ? VERIFY_FAIL : VERIFY_PASS, &t);
		return;
	}
	if (past) {
		VERIFY_GRADE_SUMMARY(&t, ", past the %.2fs limit", verify_grade_secs((int64_t)g->e->arg));
		verify_grade_conclude(out, VERIFY_FAIL, &t);
		return;
	}
	VERIFY_GRADE_SUMMARY(&t, ", before the %.2fs limit%s", verify_grade_secs((int64_t)g->e->arg),
	                     run->killed ? ": raise --timeout over it" : "");
	verify_grade_conclude(out, VERIFY_NOT_OBSERVED, &t);
}

/* Every client's attempts: the full counts when the run has them, else the log's. */
static void list_attempts(const struct verify_grade_input *g, struct verify_grade_text *t)
{
	size_t n = g->run->counts ? g->run->ncounts : g->v->nclients;

	VERIFY_GRADE_DETAIL(t, "attempts:");
	for (size_t c = 0; c < n && c < 8; c++)
		if (g->run->counts)
			VERIFY_GRADE_DETAIL(t, " %s=%llu", g->run->counts[c].client,
			                    (unsigned long long)g->run->counts[c].attempts);
		else
			VERIFY_GRADE_DETAIL(t, " %s=%u", g->v->names[c], g->v->attempts[c]);
	if (n > 8)
		VERIFY_GRADE_DETAIL(t, " ... (%zu clients)", n);
}

/* The most attempts any client made (counted in full when the run has the counts). */
static uint64_t most_attempts(const struct verify_grade_input *g)
{
	uint64_t most = 0;

	for (size_t c = 0; c < g->v->nclients; c++)
		most = g->v->attempts[c] > most ? g->v->attempts[c] : most;
	for (size_t c = 0; g->run->counts && c < g->run->ncounts; c++)
		most = g->run->counts[c].attempts > most ? g->run->counts[c].attempts : most;
	return most;
}

/* Nothing to count: not observed. */
static bool no_arrivals(const struct verify_grade_input *g, struct verify_grade_text *t,
                        struct verify_grade_verdict *out)
{
	if (g->v->n > 0 || most_attempts(g) > 0)
		return false;
	VERIFY_GRADE_SUMMARY(t, "not observed: no arrivals");
	verify_grade_conclude(out, VERIFY_NOT_OBSERVED, t);
	return true;
}

/*
 * max-attempts<=N: over N fails; at most N holds when the command ended on
 * its own, but when verify stopped it (timeout, settled) the count is only a
 * lower bound, so it is not observed.
 */
static void grade_max_attempts(const struct verify_grade_input *g, struct verify_grade_verdict *out)
{
	struct verify_grade_text t = { "", "" };
	bool over = most_attempts(g) > g->e->arg;

	if (no_arrivals(g, &t, out))
		return;
	list_attempts(g, &t);
	if (!over && (g->run->killed || g->run->stopped)) {
		VERIFY_GRADE_SUMMARY(&t, "; a lower bound: ");
		did_not_exit(g->run, &t);
		verify_grade_conclude(out, VERIFY_NOT_OBSERVED, &t);
		return;
	}
	verify_grade_conclude(out, over ? VERIFY_FAIL : VERIFY_PASS, &t);
}

static void grade_stops(const struct verify_grade_input *g, struct verify_grade_verdict *out)
{
	struct verify_grade_text t = { "", "" };
	bool many = most_attempts(g) > VERIFY_GRADE_STOP_ATTEMPTS;

	if (no_arrivals(g, &t, out))
		return;
	list_attempts(g, &t);
	VERIFY_GRADE_SUMMARY(&t, "; ");
	if (!many && did_not_exit(g->run, &t)) {
		verify_grade_conclude(out, g->run->killed ? VERIFY_FAIL : VERIFY_NOT_OBSERVED, &t);
		return;
	}
	if (many)
		VERIFY_GRADE_SUMMARY(&t, "kept retrying past %d attempts", VERIFY_GRADE_STOP_ATTEMPTS);
	else
		VERIFY_GRADE_SUMMARY(&t, "ended on its own after %.2fs", verify_grade_secs((int64_t)g->run->wall_ns));
	verify_grade_conclude(out, many ? VERIFY_FAIL : VERIFY_PASS, &t);
}

/* ---- failed for good, while the command runs ---- */

static bool failed_within(const struct verify_grade_input *g)
{
	return g->run->wall_ns > g->e->arg;
}

static bool failed_attempts(const struct verify_grade_input *g)
{
	uint64_t cap = g->e->kind == VERIFY_MAX_ATTEMPTS ? g->e->arg : VERIFY_GRADE_STOP_ATTEMPTS;

	return most_attempts(g) > cap;
}

/* The other retry graders fail on what they have seen so far: grade and look. */
static bool failed_graded(const struct verify_grade_input *g);

/* ---- the table ---- */

enum arg_kind { ARG_NONE, ARG_COUNT, ARG_DURATION };

/* One expectation kind, at its enum's index. */
static const struct kind_ops {
	const char *name;
	enum arg_kind arg;
	void (*grade)(const struct verify_grade_input *g, struct verify_grade_verdict *out);
	bool (*failed)(const struct verify_grade_input *g); /* NULL: never fails for good before the command ends */
	bool counts;            /* graded on the attempt counts alone (which go on past the log) */
} KINDS[] = {
	[VERIFY_SUCCEEDS] = { "succeeds", ARG_NONE, grade_succeeds, NULL },
	[VERIFY_HONOURS_RETRY_AFTER] = { "honours-retry-after", ARG_NONE, verify_grade_honours,
	                                 verify_grade_failed_honours },
	[VERIFY_HONOURS_RATELIMIT] = { "honours-ratelimit", ARG_NONE, verify_grade_honours, verify_grade_failed_honours },
	[VERIFY_MAX_ATTEMPTS] = { "max-attempts", ARG_COUNT, grade_max_attempts, failed_attempts, true },
	[VERIFY_GIVES_UP_WITHIN] = { "gives-up-within", ARG_DURATION, grade_within, failed_within },
	[VERIFY_NO_RETRY_NON_IDEMPOTENT] = { "no-retry-non-idempotent", ARG_NONE, verify_grade_idempotent, failed_graded },
	[VERIFY_NO_RETRY] = { "no-retry", ARG_NONE, verify_grade_no_retry, failed_graded },
	[VERIFY_BACKS_OFF] = { "backs-off", ARG_NONE, verify_grade_backoff, NULL },
	[VERIFY_JITTER] = { "jitter", ARG_NONE, verify_grade_jitter, NULL },
	[VERIFY_STOPS_AFTER_ATTEMPTS] = { "stops-after-attempts", ARG_NONE, grade_stops, failed_attempts, true },
};

#define NKINDS (sizeof(KINDS) / sizeof(KINDS[0]))

static bool failed_graded(const struct verify_grade_input *g)
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
	struct verify_grade_view v;
	struct verify_grade_input g = { e, log, &v, run };
	struct verify_grade_text t = { "", "" };

	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", e->text);
	if (view_init(&v, log, n) < 0) {
		VERIFY_GRADE_SUMMARY(&t, "out of memory");
		verify_grade_conclude(out, VERIFY_FAIL, &t);
		return;
	}
	KINDS[e->kind].grade(&g, out);
	if (run->dropped && strlen(out->evidence) + 96 < sizeof(out->evidence))
		verify_grade_add(out->evidence, sizeof(out->evidence),
		                 run->counts && KINDS[e->kind].counts
		                         ? " (every attempt counted; the log holds the first %zu arrivals, %llu more not logged)"
		                         : " (graded on the first %zu arrivals; %llu more not logged)",
		                 n, (unsigned long long)run->dropped);
	view_free(&v);
}

bool verify_grade_failed(const struct verify_grade_expect *e, const struct scenario_arrival *log, size_t n,
                         const struct verify_grade_run *run)
{
	struct verify_grade_view v;
	struct verify_grade_input g = { e, log, &v, run };
	bool failed;

	if (!KINDS[e->kind].failed || view_init(&v, log, n) < 0)
		return false;
	failed = KINDS[e->kind].failed(&g);
	view_free(&v);
	return failed;
}
