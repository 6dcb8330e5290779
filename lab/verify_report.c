/* verify's output: text, JSON, JUnit, the --all table, exit codes. */
#include "lab/verify_report.h"

#include <string.h>

#include "common/clock.h"

#define SHOW_ARRIVALS 24

/* The mark of a verdict line: PASS, FAIL, N/O. */
static const char *mark(enum verify_outcome o)
{
	return o == VERIFY_PASS ? "PASS" : o == VERIFY_FAIL ? "FAIL" : "N/O ";
}

static bool fails(enum verify_outcome o, bool strict)
{
	return o == VERIFY_FAIL || (strict && o == VERIFY_NOT_OBSERVED);
}

static double secs(uint64_t ns)
{
	return (double)ns / 1e9;
}

static void print_header(FILE *f, const struct verify_result *r)
{
	const struct verify_grade_run *run = &r->run;

	fprintf(f, "scenario %s: %zu arrivals", r->scenario, r->n);
	if (r->listened)
		fprintf(f, "; served %.2fs, %s", secs(run->wall_ns),
		        r->listen_end == VERIFY_LISTEN_TIMEOUT ? "to the timeout"
		        : r->listen_end == VERIFY_LISTEN_SIGNAL ? "until a signal" : "until idle");
	else if (run->killed)
		fprintf(f, "; command killed at the %.2fs timeout", secs(run->timeout_ns));
	else if (run->stopped)
		fprintf(f, "; command stopped after %.2fs: a verdict had failed for good", secs(run->wall_ns));
	else
		fprintf(f, "; command exited %d after %.2fs", run->exit_status, secs(run->wall_ns));
	if (run->dropped)
		fprintf(f, " (%llu more not logged: the log holds %d)", (unsigned long long)run->dropped, SCENARIO_LOG_MAX);
	fputc('\n', f);
}

/* What the server did with one arrival: "429", "reset", "200 cut mid-body", "malformed", "200 from the upstream". */
static void answer_text(const struct scenario_arrival *a, char *buf, size_t len)
{
	if (a->fault == SCENARIO_FAULT_CUT)
		snprintf(buf, len, "%d cut mid-body", a->status);
	else if (a->fault != SCENARIO_FAULT_NONE)
		snprintf(buf, len, "%s", scenario_fault_name(a->fault));
	else if (a->relayed)
		snprintf(buf, len, "%d from the upstream", a->status);
	else
		snprintf(buf, len, "%d", a->status);
}

static void print_arrival(FILE *f, const struct scenario_arrival *a, uint64_t t0)
{
	char what[48];

	answer_text(a, what, sizeof(what));
	fprintf(f, "  +%7.3fs  %-6s %-18s %-4s -> %s", secs(a->t_ns - t0), a->method, a->client, a->path, what);
	if (a->delay_ns)
		fprintf(f, "  (held %.3fs)", secs(a->delay_ns));
	if (a->has_wait && a->wait_source == SCENARIO_WAIT_RETRY_AFTER)
		fprintf(f, "  (asked to wait %.3fs)", secs(a->wait_ns));
	else if (a->has_wait)
		fprintf(f, "  (asked to wait %.3fs by %s)", secs(a->wait_ns), scenario_wait_source_name(a->wait_source));
	if (a->end == SCENARIO_END_FAILED && a->fault == SCENARIO_FAULT_NONE)
		fprintf(f, "  (not delivered)");
	if (a->idempotency_key[0])
		fprintf(f, "  Idempotency-Key: %s", a->idempotency_key);
	fputc('\n', f);
}

void verify_report_text(FILE *f, const struct verify_result *r, bool quiet, bool strict)
{
	size_t held = 0, unseen = 0;

	print_header(f, r);
	for (size_t i = 0; !quiet && i < r->n && i < SHOW_ARRIVALS; i++)
		print_arrival(f, &r->log[i], r->log[0].t_ns);
	if (!quiet && r->n > SHOW_ARRIVALS)
		fprintf(f, "  ... %zu more\n", r->n - SHOW_ARRIVALS);
	for (size_t i = 0; i < r->nex; i++) {
		held += r->v[i].outcome == VERIFY_PASS;
		unseen += r->v[i].outcome == VERIFY_NOT_OBSERVED;
		fprintf(f, "%s  %-24s %s\n", mark(r->v[i].outcome), r->v[i].name, r->v[i].evidence);
	}
	fprintf(f, "%zu of %zu expectations hold", held, r->nex);
	if (unseen)
		fprintf(f, ", %zu not observed%s", unseen, strict ? " (failures with --strict)" : "");
	if (unseen == r->nex && r->nex > 0 && !strict)
		fprintf(f, ": nothing was observed, which is not a pass (exit %d)", VERIFY_EXIT_NOTHING_OBSERVED);
	fputc('\n', f);
}

/* The machine's stalls during the run, [from_ms, to_ms] from the first arrival. */
static json_t *stalls_json(const struct verify_result *r)
{
	json_t *a = json_array();
	uint64_t t0 = r->n ? r->log[0].t_ns : 0;

	for (size_t i = 0; a && i < r->run.nstalls; i++)
		json_array_append_new(a, json_pack("[f,f]", ((double)r->run.stalls[i].from_ns - (double)t0) / 1e6,
		                                   ((double)r->run.stalls[i].to_ns - (double)t0) / 1e6));
	return a;
}

json_t *verify_report_json(const struct verify_result *r, bool strict)
{
	static const char *const STATE[] = { "graded", "no arrivals", "cannot run", "setup failed", "interrupted" };
	json_t *root = json_pack("{s:s,s:s,s:s,s:i,s:b,s:b,s:f,s:I,s:f,s:I,s:b,s:[]}", "scenario", r->scenario, "method",
	                         r->method, "state", STATE[r->state], "exit_status", r->run.exit_status, "killed",
	                         r->run.killed, "stopped", r->run.stopped, "wall_s", secs(r->run.wall_ns), "clients",
	                         (json_int_t)r->clients, "noise_ms", (double)r->run.noise_ns / 1e6, "arrivals_dropped",
	                         (json_int_t)r->run.dropped, "pass", verify_report_exit(r, strict) == 0, "verdicts");
	json_t *arrivals = r->arrivals_json ? json_loads(r->arrivals_json, 0, NULL) : json_array();

	if (!root || !arrivals) {
		json_decref(root);
		json_decref(arrivals);
		return NULL;
	}
	for (size_t i = 0; i < r->nex; i++)
		json_array_append_new(json_object_get(root, "verdicts"),
		                      json_pack("{s:s,s:s,s:b,s:s}", "name", r->v[i].name, "outcome",
		                                verify_outcome_name(r->v[i].outcome), "pass",
		                                r->v[i].outcome == VERIFY_PASS, "evidence", r->v[i].evidence));
	json_object_set_new(root, "arrivals", arrivals);
	json_object_set_new(root, "stalls", stalls_json(r));
	if (r->state == VERIFY_CANNOT_RUN || r->state == VERIFY_SETUP_FAILED)
		json_object_set_new(root, "error", json_string(r->error));
	return root;
}

int verify_report_junit(struct junit *j, const struct verify_result *r, bool strict)
{
	char suite[300], cls[300];

	snprintf(suite, sizeof(suite), "verify %s", r->scenario);
	snprintf(cls, sizeof(cls), "ratelab.verify.%s", r->scenario);
	if (junit_suite(j, suite, secs(r->run.wall_ns)) < 0)
		return -1;
	for (size_t i = 0; i < r->nex; i++) {
		const struct verify_grade_verdict *v = &r->v[i];
		enum junit_result jr = r->state != VERIFY_GRADED ? JUNIT_ERROR
		                       : fails(v->outcome, strict) ? JUNIT_FAILURE
		                       : v->outcome == VERIFY_NOT_OBSERVED ? JUNIT_SKIPPED : JUNIT_PASS;

		if (junit_case(j, cls, v->name, secs(r->run.wall_ns), jr, v->evidence, v->evidence) < 0)
			return -1;
	}
	return 0;
}

int verify_report_exit(const struct verify_result *r, bool strict)
{
	if (r->state == VERIFY_INTERRUPTED)
		return VERIFY_EXIT_INTERRUPTED;
	if (r->state != VERIFY_GRADED)
		return VERIFY_EXIT_NOT_RUN;
	for (size_t i = 0; i < r->nex; i++)
		if (fails(r->v[i].outcome, strict))
			return VERIFY_EXIT_FAILED;
	for (size_t i = 0; i < r->nex; i++)
		if (r->v[i].outcome == VERIFY_PASS)
			return VERIFY_EXIT_OK;
	return VERIFY_EXIT_NOTHING_OBSERVED;
}

int verify_report_exit_all(const struct verify_result *rs, size_t n, bool strict)
{
	size_t reached = 0;
	int worst = VERIFY_EXIT_OK;

	for (size_t i = 0; i < n; i++) {
		int e = verify_report_exit(&rs[i], strict);

		if (e == VERIFY_EXIT_INTERRUPTED)
			return e;
		reached += rs[i].state == VERIFY_GRADED;
		if (e == VERIFY_EXIT_NOTHING_OBSERVED && worst == VERIFY_EXIT_OK)
			worst = e;
		else if (e != VERIFY_EXIT_OK && e != VERIFY_EXIT_NOTHING_OBSERVED)
			worst = VERIFY_EXIT_FAILED;
	}
	return reached == 0 ? VERIFY_EXIT_NOT_RUN : worst;
}

/* ---- the --all table ---- */

/* The table's columns: which expectation kinds each holds, and its heading. */
static const struct {
	const char *head;
	enum verify_grade_kind kinds[2];
	size_t nkinds;
} COLUMNS[] = {
	{ "succeeds", { VERIFY_SUCCEEDS }, 1 },
	{ "honours", { VERIFY_HONOURS_RETRY_AFTER, VERIFY_HONOURS_RATELIMIT }, 2 },
	{ "attempts", { VERIFY_MAX_ATTEMPTS }, 1 },
	{ "within", { VERIFY_GIVES_UP_WITHIN }, 1 },
	{ "idempotent", { VERIFY_NO_RETRY_NON_IDEMPOTENT }, 1 },
	{ "no-retry", { VERIFY_NO_RETRY }, 1 },
	{ "backs-off", { VERIFY_BACKS_OFF }, 1 },
	{ "stops", { VERIFY_STOPS_AFTER_ATTEMPTS }, 1 },
	{ "jitter", { VERIFY_JITTER }, 1 },
};

#define NCOLUMNS (sizeof(COLUMNS) / sizeof(COLUMNS[0]))

/* The cell of column c in row r: "pass", "FAIL", "n/o" or "-" (not expected). */
static const char *cell(const struct verify_result *r, size_t c, bool strict)
{
	for (size_t i = 0; i < r->nex; i++)
		for (size_t k = 0; k < COLUMNS[c].nkinds; k++) {
			if (r->ex[i].kind != COLUMNS[c].kinds[k])
				continue;
			if (r->state != VERIFY_GRADED || fails(r->v[i].outcome, strict))
				return "FAIL";
			return r->v[i].outcome == VERIFY_PASS ? "pass" : "n/o";
		}
	return "-";
}

/* True when some row expects column c. */
static bool column_used(const struct verify_result *rs, size_t n, size_t c)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(cell(&rs[i], c, false), "-") != 0)
			return true;
	return false;
}

/* One row: the cells padded to their headings, no trailing blanks. */
static void print_row(FILE *f, const char *name, const char *method, const char *const *cells, const bool *used)
{
	char line[256];
	size_t n = (size_t)snprintf(line, sizeof(line), "%-22s %-6s", name, method);

	for (size_t c = 0; c < NCOLUMNS && n < sizeof(line); c++)
		if (used[c])
			n += (size_t)snprintf(line + n, sizeof(line) - n, " %-*s", (int)strlen(COLUMNS[c].head), cells[c]);
	while (n > 0 && n < sizeof(line) && line[n - 1] == ' ')
		line[--n] = '\0';
	fprintf(f, "%s\n", line);
}

static void print_rows(FILE *f, const struct verify_result *rs, size_t n, bool strict, const bool *used)
{
	const char *cells[NCOLUMNS];

	for (size_t c = 0; c < NCOLUMNS; c++)
		cells[c] = COLUMNS[c].head;
	print_row(f, "scenario", "method", cells, used);
	for (size_t i = 0; i < n; i++) {
		for (size_t c = 0; c < NCOLUMNS; c++)
			cells[c] = cell(&rs[i], c, strict);
		print_row(f, rs[i].scenario, rs[i].method, cells, used);
	}
}

/* One line per failed expectation (and per scenario the command never reached). */
static void print_failures(FILE *f, const struct verify_result *rs, size_t n, bool strict)
{
	for (size_t i = 0; i < n; i++) {
		if (rs[i].state == VERIFY_CANNOT_RUN || rs[i].state == VERIFY_SETUP_FAILED) {
			fprintf(f, "FAIL  %s: %s\n", rs[i].scenario, rs[i].error);
			continue;
		}
		for (size_t k = 0; k < rs[i].nex; k++)
			if (rs[i].state != VERIFY_GRADED || fails(rs[i].v[k].outcome, strict))
				fprintf(f, "FAIL  %s %s: %s\n", rs[i].scenario, rs[i].v[k].name, rs[i].v[k].evidence);
		if (verify_report_exit(&rs[i], strict) == VERIFY_EXIT_NOTHING_OBSERVED)
			fprintf(f, "N/O   %s: no expectation observed\n", rs[i].scenario);
	}
}

void verify_report_table(FILE *f, const struct verify_result *rs, size_t n, bool strict)
{
	bool used[NCOLUMNS];
	size_t ok = 0, unseen = 0, nothing = 0;

	for (size_t c = 0; c < NCOLUMNS; c++)
		used[c] = column_used(rs, n, c);
	print_rows(f, rs, n, strict, used);
	for (size_t i = 0; i < n; i++) {
		bool any_unseen = false;

		for (size_t k = 0; k < rs[i].nex; k++)
			any_unseen |= rs[i].v[k].outcome == VERIFY_NOT_OBSERVED;
		ok += verify_report_exit(&rs[i], strict) == VERIFY_EXIT_OK;
		unseen += any_unseen && verify_report_exit(&rs[i], strict) == VERIFY_EXIT_OK;
		nothing += verify_report_exit(&rs[i], strict) == VERIFY_EXIT_NOTHING_OBSERVED;
	}
	fprintf(f, "%zu of %zu scenarios hold (%zu of them with a verdict not observed)", ok, n, unseen);
	if (nothing)
		fprintf(f, "; %zu observed nothing", nothing);
	fprintf(f, "%s\n", strict ? "; --strict: not observed fails" : "");
	print_failures(f, rs, n, strict);
}
