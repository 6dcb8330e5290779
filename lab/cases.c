/* `ratelab cases FILE`: replay a retry-cases table through the policy engine. */
#include "lab/cases.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/cli.h"
#include "common/cli_help.h"
#include "common/clock.h"
#include "common/junit.h"
#include "common/text.h"
#include "common/prng.h"
#include "common/retry/retry.h"
#include "lab/cases_impl.h"

#define CASES_MAX_BYTES (16u << 20)

/* The run's budget in the row's pre-state; *b stays NULL when the policy has none. */
static int preload_budget(const struct case_row *c, struct retry_budget **b, char *why, size_t wl)
{
	*b = NULL;
	if (c->policy.budget.kind == BUDGET_NONE)
		return 0;
	*b = retry_budget_new(&c->policy.budget, c->budget_at_ns);
	if (*b == NULL)
		return cases_row_err(why, wl, "%s", "out of memory");
	for (double i = 0; i < c->firsts; i++)
		retry_budget_on_first(*b, c->budget_at_ns);
	for (double i = 0; i < c->retries; i++)
		if (!retry_budget_spend(*b, c->budget_at_ns, RETRY_ERR_NONE))
			return cases_row_err(why, wl, "%s", "budget \"retries\" is more than the budget allows");
	if (c->tokens_given)
		retry_budget_set_tokens(*b, c->tokens);
	return 0;
}

static void describe_expected(const struct case_row *c, char *buf, size_t len)
{
	if (!c->exp_retry)
		snprintf(buf, len, "give up (%s)", retry_reason_name(c->exp_reason));
	else if (c->exp_wait && c->wait_lo_ms == c->wait_hi_ms)
		snprintf(buf, len, "retry wait %gms", c->wait_lo_ms);
	else if (c->exp_wait)
		snprintf(buf, len, "retry wait %g-%gms", c->wait_lo_ms, c->wait_hi_ms);
	else
		snprintf(buf, len, "retry");
}

static void describe_got(const struct retry_decision *d, char *buf, size_t len)
{
	if (d->retry)
		snprintf(buf, len, "retry wait %.3fms", (double)d->wait_ns / 1e6);
	else
		snprintf(buf, len, "give up (%s)", retry_reason_name(d->reason));
}

static bool row_passes(const struct case_row *c, const struct retry_decision *d)
{
	double ms = (double)d->wait_ns / 1e6;

	if (d->retry != c->exp_retry || d->reason != c->exp_reason)
		return false;
	return !c->exp_wait || (ms >= c->wait_lo_ms - 1e-9 && ms <= c->wait_hi_ms + 1e-9);
}

/* Where the results go: text lines and JUnit testcases (either may be NULL). */
struct sink {
	FILE *out;
	struct junit *junit;
};

/* One row's result into the sink; -1 when the JUnit report ran out of memory. */
static int report_row(const struct sink *k, const struct case_row *c, const struct retry_decision *d, bool pass)
{
	char want[96], got[96], cls[64], name[300], msg[320];

	describe_expected(c, want, sizeof(want));
	describe_got(d, got, sizeof(got));
	if (k->out != NULL && pass)
		fprintf(k->out, "ok   %u %s: %s (%s §%s)\n", c->id, c->policy.name, c->name, c->seed, c->rule);
	if (k->out != NULL && !pass)
		fprintf(k->out, "FAIL %u %s: %s (%s §%s): expected %s got %s\n", c->id, c->policy.name,
		        c->name, c->seed, c->rule, want, got);
	if (k->junit == NULL)
		return 0;
	snprintf(cls, sizeof(cls), "ratelab.cases.%s", c->policy.name);
	snprintf(name, sizeof(name), "%u %.200s", c->id, c->name);
	snprintf(msg, sizeof(msg), "expected %s got %s (%.40s §%.40s)", want, got, c->seed, c->rule);
	return junit_case(k->junit, cls, name, 0, pass ? JUNIT_PASS : JUNIT_FAILURE, msg, msg);
}

/* Replay one parsed row; reports it; returns 1 pass, 0 fail, -1 table error. */
static int run_row(struct case_row *c, uint64_t seed, unsigned index, const struct sink *k, char *why, size_t wl)
{
	struct retry_budget *b;
	struct retry_decision d;
	struct prng rng;
	bool pass;

	if (preload_budget(c, &b, why, wl) != 0) {
		retry_budget_free(b);
		return -1;
	}
	c->in.budget = b;
	prng_seed(&rng, prng_stream_seed(seed, index));
	retry_decide(&c->policy, &c->in, &rng, &d);
	retry_budget_free(b);
	pass = row_passes(c, &d);
	if (report_row(k, c, &d, pass) != 0) {
		snprintf(why, wl, "out of memory");
		return -1;
	}
	return pass ? 1 : 0;
}

/* The whole file as a NUL-terminated string, or NULL with err: at most CASES_MAX_BYTES. */
static char *read_text(const char *path, char *err, size_t errlen)
{
	enum text_read_error why;
	char *text = text_read_file(path, CASES_MAX_BYTES, NULL, &why);

	if (text == NULL && why == TEXT_READ_OPEN)
		snprintf(err, errlen, "%s: cannot open", path);
	else if (text == NULL && why == TEXT_READ_NOMEM)
		snprintf(err, errlen, "%s: out of memory", path);
	else if (text == NULL)
		snprintf(err, errlen, "%s: unreadable or larger than %u bytes", path, CASES_MAX_BYTES);
	return text;
}

/* The rows array (root array, or root object's "cases") and the RNG seed (a given one wins). */
static json_t *table_rows(json_t *root, int64_t given, uint64_t *seed)
{
	json_t *s;

	*seed = given >= 0 ? (uint64_t)given : 1;
	if (json_is_array(root))
		return root;
	if (!json_is_object(root))
		return NULL;
	s = json_object_get(root, "rng_seed");
	if (given < 0 && json_is_integer(s) && json_integer_value(s) >= 0)
		*seed = (uint64_t)json_integer_value(s);
	return json_is_array(json_object_get(root, "cases")) ? json_object_get(root, "cases") : NULL;
}

/* Replay every row of a parsed table. */
static int replay(const char *path, json_t *rows, const struct row_lines *rl, uint64_t seed, const struct sink *k,
                  unsigned *counts, char *err, size_t errlen)
{
	struct case_row *c = malloc(sizeof(*c));
	char why[240];
	size_t i;
	int rc = 0;

	if (c == NULL) {
		snprintf(err, errlen, "%s: out of memory", path);
		return -1;
	}
	/* Pass 0 validates every row, so a malformed table prints no results at all. */
	for (i = 0; i < 2 * json_array_size(rows) && rc == 0; i++) {
		size_t row = i % json_array_size(rows);
		bool run = i >= json_array_size(rows);
		int r = cases_row_parse(json_array_get(rows, row), (unsigned)row, c, why, sizeof(why));

		if (r == 0 && !run)
			continue;
		if (r == 0)
			r = run_row(c, seed, (unsigned)row, k, why, sizeof(why));
		if (r < 0) {
			snprintf(err, errlen, "%s:%u: row %zu: %s", path, row < rl->n ? rl->line[row] : 0, row + 1, why);
			rc = -1;
		} else {
			counts[r ? 0 : 1]++;
		}
	}
	free(c);
	return rc;
}

int cases_run_file(const char *path, int64_t seed_given, FILE *out, unsigned *passed, unsigned *failed,
                   char *err, size_t errlen)
{
	return cases_run_junit(path, seed_given, out, NULL, passed, failed, err, errlen);
}

int cases_run_junit(const char *path, int64_t seed_given, FILE *out, struct junit *junit, unsigned *passed,
                    unsigned *failed, char *err, size_t errlen)
{
	struct sink k = { out, junit };
	struct row_lines rl = { 0 };
	unsigned counts[2] = { 0, 0 };
	json_error_t jerr;
	json_t *root = NULL, *rows;
	uint64_t seed;
	char *text = read_text(path, err, errlen);
	int rc = -1;

	if (text == NULL)
		return -1;
	root = json_loads(text, 0, &jerr);
	if (root == NULL) {
		snprintf(err, errlen, "%s:%d: %s", path, jerr.line, jerr.text);
		goto free_text;
	}
	rows = table_rows(root, seed_given, &seed);
	if (rows == NULL || json_array_size(rows) == 0) {
		snprintf(err, errlen, "%s:1: want a non-empty array of rows, or {\"cases\": [...]}", path);
		goto free_root;
	}
	if (json_array_size(rows) > CASES_MAX_ROWS) {
		snprintf(err, errlen, "%s:1: %zu rows, more than the %u a table may have", path, json_array_size(rows),
		         CASES_MAX_ROWS);
		goto free_root;
	}
	if (cases_row_lines_scan(text, &rl) != 0 || (junit && junit_suite(junit, path, 0) != 0)) {
		snprintf(err, errlen, "%s: out of memory", path);
		goto free_root;
	}
	rc = replay(path, rows, &rl, seed, &k, counts, err, errlen);
	if (rc == 0 && out != NULL)
		fprintf(out, "%u passed, %u failed\n", counts[0], counts[1]);
	*passed = counts[0];
	*failed = counts[1];
	free(rl.line);
free_root:
	json_decref(root);
free_text:
	free(text);
	return rc;
}

/* The presets a row's "policy" names, wrapped. */
static void cases_presets(FILE *f)
{
	fputc('\n', f);
	cli_help_write_wrapped(f, "presets:", 10, retry_preset_names());
}

struct cases_opts {
	const char *path;
	const char *junit;
	uint64_t seed;
	bool seed_given;
};

static const struct cli_option CASES_OPTIONS[] = {
	{ "--seed", CLI_U64, CLI_FIELD(struct cases_opts, seed), .max = INT64_MAX,
	  CLI_GIVEN(struct cases_opts, seed_given), .arg = "N", .section = CLI_SEC_DOES,
	  .help = "replay with RNG seed N instead of the table's \"rng_seed\" (default 1): a row "
	          "whose wait bounds are right passes under any seed" },
	{ "--junit", CLI_STRING, CLI_FIELD(struct cases_opts, junit), .arg = "FILE|-", .section = CLI_SEC_OUTPUT,
	  .help = "the rows as JUnit XML for CI: one testcase per row (with -, the rows' lines go to "
	          "stderr)" },
	{ "FILE", CLI_STRING, CLI_FIELD(struct cases_opts, path), .required = true },
	{ NULL },
};

static const struct cli_option *const CASES_TABLES[] = { CASES_OPTIONS, NULL };

static const struct cli_help CASES_HELP = {
	.usage = "ratelab cases FILE [options]",
	.about = "Replays a retry-cases table (JSON) through the retry-policy engine with a fixed "
	         "RNG and prints 'ok' or 'FAIL' per row, then 'N passed, N failed'.",
	.tables = CASES_TABLES,
	.notes = "a row: {\"id\", \"seed\", \"rule\", \"name\", \"policy\": preset,\n"
	         "  \"set\": {knob: value}, \"method\", \"idempotent\",\n"
	         "  \"status\" + \"headers\" | \"error\": refused|reset|timeout|other,\n"
	         "  \"attempt\", \"elapsed_ms\", \"waited_ms\", \"prev_wait_ms\", \"blind_waits\",\n"
	         "  \"now\", \"now_ms\", \"budget\": {\"firsts\", \"retries\", \"at_ms\", \"tokens\"},\n"
	         "  \"expect\": {\"retry\": bool, \"reason\", \"wait_ms\": n | [lo, hi]}}\n",
	.more = cases_presets,
	.exits = "0\tevery row passed\n"
	         "1\ta row failed\n"
	         "2\ta bad flag or value, or a malformed table (named as FILE:LINE)\n"
	         CLI_EXIT_WRITE_LINE,
};

static const struct cli_command CASES_CLI = { "cases", NULL, &CASES_HELP };

int cases_main(int argc, char **argv)
{
	struct cases_opts o = { 0 };
	struct cli_group g = { CASES_OPTIONS, &o };
	struct junit *j = NULL;
	unsigned passed = 0, failed = 0;
	char err[1024], why[512];
	int rc = cli_parse(&CASES_CLI, &g, 1, argc, argv, err, sizeof(err));
	/* --junit - takes standard output: the rows' lines go to stderr */
	FILE *text = o.junit && strcmp(o.junit, "-") == 0 ? stderr : stdout;

	if (rc == 0)
		rc = cli_check_output(err, sizeof(err), "cases", "--junit", o.junit);
	if (rc != 0)
		return cli_exit(&CASES_CLI, rc, err);
	if (o.junit && !(j = junit_new("ratelab cases"))) {
		fprintf(stderr, "ratelab cases: out of memory\n");
		return 1;
	}
	if (cases_run_junit(o.path, o.seed_given ? (int64_t)o.seed : -1, text, j, &passed, &failed, why,
	                    sizeof(why)) != 0) {
		fflush(text);
		junit_free(j);
		return cli_exit(&CASES_CLI, cli_fail(err, sizeof(err), "cases", "%s", why), err);
	}
	rc = failed > 0 ? 1 : 0;
	if (j && junit_write(j, o.junit) != 0) {
		fprintf(stderr, "ratelab cases: --junit: cannot write '%s'\n", o.junit);
		rc = CLI_EXIT_WRITE;
	}
	junit_free(j);
	return rc;
}
