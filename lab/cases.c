/* `ratelab cases FILE`: replay a retry-cases table through the policy engine. */
#include "lab/cases.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/cli.h"
#include "common/clock.h"
#include "common/httpdate.h"
#include "common/junit.h"
#include "common/prng.h"
#include "common/retry/retry.h"

#define CASES_MAX_BYTES (16u << 20)
#define CASES_MAX_ROWS 100000u
#define CASES_MAX_PRELOAD 1000000.0
/* "Sun, 06 Nov 1994 08:49:37 GMT": the default wall clock of a row. */
#define CASES_DEFAULT_WALL 784111777

struct case_row {
	unsigned id;
	const char *name, *seed, *rule;
	struct retry_policy policy;
	struct retry_input in;
	bool budget_given, tokens_given;
	double firsts, retries, tokens;
	uint64_t budget_at_ns;
	bool exp_retry, exp_wait;
	enum retry_reason exp_reason;
	double wait_lo_ms, wait_hi_ms;
};

/* Where each row object starts, by line, found by a small scan of the text. */
struct row_lines {
	unsigned *line;
	size_t n, cap;
};

static int row_lines_push(struct row_lines *rl, unsigned line)
{
	if (rl->n == rl->cap) {
		size_t cap = rl->cap ? rl->cap * 2 : 64;
		unsigned *nl = cap > CASES_MAX_ROWS ? NULL : realloc(rl->line, cap * sizeof(*nl));

		if (nl == NULL)
			return -1;
		rl->line = nl;
		rl->cap = cap;
	}
	rl->line[rl->n++] = line;
	return 0;
}

/* Record the line of every '{' directly inside the rows array: the root when it is an
 * array, else the array under the root's "cases" key. */
static int scan_row_lines(const char *t, struct row_lines *rl)
{
	uint32_t line = 1, depth = 0, rows_depth = 0;
	const char *key = NULL;
	bool in_str = false;

	for (const char *p = t; *p != '\0'; p++) {
		if (*p == '\n')
			line++;
		if (in_str) {
			if (*p == '\\' && p[1] != '\0')
				p++;
			else if (*p == '"')
				in_str = false;
			continue;
		}
		if (*p == '"') {
			in_str = true;
			if (depth == 1)
				key = p;
		} else if (*p == '{' || *p == '[') {
			if (*p == '{' && rows_depth != 0 && depth == rows_depth && row_lines_push(rl, line) != 0)
				return -1;
			if (*p == '[' && rows_depth == 0 && (depth == 0 || (depth == 1 && key != NULL &&
			                                     strncmp(key, "\"cases\"", 7) == 0)))
				rows_depth = depth + 1;
			depth++;
		} else if (*p == '}' || *p == ']') {
			depth = depth ? depth - 1 : 0;
			if (rows_depth != 0 && depth < rows_depth)
				rows_depth = UINT32_MAX;  /* the rows array ended: count nothing more */
		}
	}
	return 0;
}

/* The row's error message, "row N: why". Always returns -1. */
static int row_err(char *why, size_t wl, const char *fmt, const char *arg)
{
	snprintf(why, wl, fmt, arg);
	return -1;
}

/* Optional non-negative number field, in the unit given; -1 when present but not a number. */
static int get_num(json_t *o, const char *key, double *out)
{
	json_t *v = json_object_get(o, key);

	if (v == NULL)
		return 0;
	if (!json_is_number(v) || json_number_value(v) < 0 || !isfinite(json_number_value(v)))
		return -1;
	*out = json_number_value(v);
	return 0;
}

/* Optional string field; -1 when present but not a string. */
static int get_str(json_t *o, const char *key, const char **out)
{
	json_t *v = json_object_get(o, key);

	if (v == NULL)
		return 0;
	if (!json_is_string(v))
		return -1;
	*out = json_string_value(v);
	return 0;
}

static uint64_t ms_to_ns(double ms)
{
	double ns = ms * 1e6;

	return ns >= 1.8e19 ? UINT64_MAX : (uint64_t)llround(ns);
}

/* "policy" and the optional "set" overrides. */
static int parse_policy(json_t *row, struct case_row *c, char *why, size_t wl)
{
	const char *name = NULL, *knob;
	json_t *set = json_object_get(row, "set"), *v;
	char err[200];

	if (get_str(row, "policy", &name) != 0 || name == NULL)
		return row_err(why, wl, "%s", "\"policy\" (a preset name) is missing or not a string");
	if (retry_policy_preset(name, &c->policy) != 0)
		return row_err(why, wl, "unknown policy '%.60s'", name);
	if (set != NULL && !json_is_object(set))
		return row_err(why, wl, "%s", "\"set\" must be an object of knob: \"value\"");
	json_object_foreach(set, knob, v) {
		const char *val = json_is_string(v) ? json_string_value(v) : json_is_true(v) ? "true"
		                  : json_is_false(v) ? "false" : NULL;

		if (val == NULL)
			return row_err(why, wl, "knob '%.60s' needs a string value", knob);
		if (retry_policy_set(&c->policy, knob, val, err, sizeof(err)) != 0)
			return row_err(why, wl, "%s", err);
	}
	return 0;
}

static int parse_error_kind(const char *s, enum retry_error *e)
{
	static const char *const NAMES[] = { "refused", "reset", "timeout", "other" };
	static const enum retry_error KINDS[] = { RETRY_ERR_REFUSED, RETRY_ERR_RESET, RETRY_ERR_TIMEOUT,
	                                          RETRY_ERR_OTHER };

	for (size_t i = 0; i < 4; i++)
		if (strcmp(s, NAMES[i]) == 0) {
			*e = KINDS[i];
			return 0;
		}
	return -1;
}

/* "headers": Retry-After and RateLimit, matched case-insensitively; others are ignored. */
static int parse_headers(json_t *row, struct case_row *c, char *why, size_t wl)
{
	json_t *h = json_object_get(row, "headers"), *v;
	const char *k;

	if (h == NULL)
		return 0;
	if (!json_is_object(h))
		return row_err(why, wl, "%s", "\"headers\" must be an object");
	json_object_foreach(h, k, v) {
		if (!json_is_string(v))
			return row_err(why, wl, "header '%.60s' must be a string", k);
		if (strcasecmp(k, "Retry-After") == 0)
			c->in.retry_after = json_string_value(v);
		else if (strcasecmp(k, "RateLimit") == 0)
			c->in.ratelimit = json_string_value(v);
	}
	return 0;
}

/* "status" or "error", "headers", "method", "idempotent". */
static int parse_outcome(json_t *row, struct case_row *c, char *why, size_t wl)
{
	json_t *st = json_object_get(row, "status"), *idem = json_object_get(row, "idempotent");
	const char *err = NULL;

	if (get_str(row, "error", &err) != 0 || (st == NULL) == (err == NULL))
		return row_err(why, wl, "%s", "give exactly one of \"status\" (a number) or \"error\"");
	if (err != NULL && parse_error_kind(err, &c->in.error) != 0)
		return row_err(why, wl, "unknown error '%.40s' (refused, reset, timeout, other)", err);
	if (st != NULL && (!json_is_integer(st) || json_integer_value(st) < 100 ||
	                   json_integer_value(st) >= RETRY_STATUS_MAX))
		return row_err(why, wl, "%s", "\"status\" must be an integer 100-599");
	c->in.status = st != NULL ? (int)json_integer_value(st) : 0;
	c->in.method = "GET";
	if (get_str(row, "method", &c->in.method) != 0)
		return row_err(why, wl, "%s", "\"method\" must be a string");
	if (idem != NULL && !json_is_boolean(idem))
		return row_err(why, wl, "%s", "\"idempotent\" must be true or false");
	c->in.idempotent = idem == NULL ? -1 : json_is_true(idem);
	return parse_headers(row, c, why, wl);
}

/* "now": the wall clock, epoch seconds or an HTTP-date (for date-form Retry-After). */
static int parse_wall(json_t *row, struct case_row *c, char *why, size_t wl)
{
	json_t *v = json_object_get(row, "now");
	time_t t;

	c->in.now_wall_s = CASES_DEFAULT_WALL;
	if (v == NULL)
		return 0;
	if (json_is_integer(v)) {
		c->in.now_wall_s = json_integer_value(v);
		return 0;
	}
	if (json_is_string(v) && httpdate_parse(json_string_value(v), &t) == 0) {
		c->in.now_wall_s = (int64_t)t;
		return 0;
	}
	return row_err(why, wl, "%s", "\"now\" must be epoch seconds or an HTTP-date");
}

/* attempt, elapsed_ms, waited_ms, prev_wait_ms, blind_waits, now_ms. */
static int parse_timing(json_t *row, struct case_row *c, char *why, size_t wl)
{
	double attempt = 1, elapsed = 0, waited = 0, prev = 0, blind = 0, now = -1;

	if (get_num(row, "attempt", &attempt) != 0 || attempt < 1 || attempt > 1000 ||
	    attempt != floor(attempt))
		return row_err(why, wl, "%s", "\"attempt\" must be an integer 1-1000");
	if (get_num(row, "elapsed_ms", &elapsed) != 0 || get_num(row, "waited_ms", &waited) != 0 ||
	    get_num(row, "prev_wait_ms", &prev) != 0 || get_num(row, "now_ms", &now) != 0)
		return row_err(why, wl, "%s", "elapsed_ms, waited_ms, prev_wait_ms, now_ms: numbers >= 0");
	if (get_num(row, "blind_waits", &blind) != 0 || blind > 1000 || blind != floor(blind))
		return row_err(why, wl, "%s", "\"blind_waits\" must be an integer 0-1000");
	c->in.attempt = (unsigned)attempt;
	c->in.elapsed_ns = ms_to_ns(elapsed);
	c->in.waited_ns = ms_to_ns(waited);
	c->in.prev_wait_ns = ms_to_ns(prev);
	c->in.blind_waits = (unsigned)blind;
	c->in.now_ns = now >= 0 ? ms_to_ns(now) : c->budget_at_ns;
	return parse_wall(row, c, why, wl);
}

/* "budget": the pre-state of the policy's budget: firsts, retries (at at_ms) or tokens. */
static int parse_budget(json_t *row, struct case_row *c, char *why, size_t wl)
{
	json_t *b = json_object_get(row, "budget");
	double at = 0;

	if (b == NULL)
		return 0;
	if (!json_is_object(b) || c->policy.budget.kind == BUDGET_NONE)
		return row_err(why, wl, "%s", "\"budget\" needs an object and a policy with a budget");
	c->budget_given = true;
	c->tokens_given = json_object_get(b, "tokens") != NULL;
	if (get_num(b, "firsts", &c->firsts) != 0 || get_num(b, "retries", &c->retries) != 0 ||
	    get_num(b, "tokens", &c->tokens) != 0 || get_num(b, "at_ms", &at) != 0 ||
	    c->firsts > CASES_MAX_PRELOAD || c->retries > CASES_MAX_PRELOAD)
		return row_err(why, wl, "%s", "budget firsts, retries (0-1000000), tokens, at_ms: numbers >= 0");
	c->budget_at_ns = ms_to_ns(at);
	return 0;
}

static int parse_reason(const char *s, enum retry_reason *r)
{
	for (int i = 0; i < RETRY_REASON_COUNT; i++)
		if (strcmp(s, retry_reason_name((enum retry_reason)i)) == 0) {
			*r = (enum retry_reason)i;
			return 0;
		}
	return -1;
}

/* "expect": {"retry": bool, "reason": name, "wait_ms": n | [lo, hi]}. */
static int parse_expect(json_t *row, struct case_row *c, char *why, size_t wl)
{
	json_t *e = json_object_get(row, "expect"), *r, *w;
	const char *reason = NULL;

	if (!json_is_object(e) || !json_is_boolean(r = json_object_get(e, "retry")))
		return row_err(why, wl, "%s", "\"expect\" needs \"retry\": true or false");
	c->exp_retry = json_is_true(r);
	c->exp_reason = c->exp_retry ? RETRY_REASON_RETRY : RETRY_REASON_NOT_RETRYABLE;
	if (get_str(e, "reason", &reason) != 0 || (reason == NULL && !c->exp_retry))
		return row_err(why, wl, "%s", "\"expect\" needs a \"reason\" string when retry is false");
	if (reason != NULL && parse_reason(reason, &c->exp_reason) != 0)
		return row_err(why, wl, "unknown reason '%.40s'", reason);
	w = json_object_get(e, "wait_ms");
	c->exp_wait = w != NULL;
	if (json_is_number(w)) {
		c->wait_lo_ms = c->wait_hi_ms = json_number_value(w);
	} else if (json_is_array(w) && json_array_size(w) == 2 && json_is_number(json_array_get(w, 0)) &&
	           json_is_number(json_array_get(w, 1))) {
		c->wait_lo_ms = json_number_value(json_array_get(w, 0));
		c->wait_hi_ms = json_number_value(json_array_get(w, 1));
	} else if (w != NULL) {
		return row_err(why, wl, "%s", "\"wait_ms\" must be a number or [lo, hi]");
	}
	return 0;
}

/* The whole row, or -1 with why. */
static int parse_row(json_t *row, unsigned index, struct case_row *c, char *why, size_t wl)
{
	json_t *id = json_object_get(row, "id");

	memset(c, 0, sizeof(*c));
	if (!json_is_object(row))
		return row_err(why, wl, "%s", "a row must be an object");
	c->id = json_is_integer(id) ? (unsigned)json_integer_value(id) : index + 1;
	c->name = c->seed = c->rule = "";
	if (get_str(row, "name", &c->name) != 0 || get_str(row, "seed", &c->seed) != 0 ||
	    get_str(row, "rule", &c->rule) != 0)
		return row_err(why, wl, "%s", "name, seed and rule must be strings");
	if (parse_policy(row, c, why, wl) != 0 || parse_outcome(row, c, why, wl) != 0 ||
	    parse_budget(row, c, why, wl) != 0 || parse_timing(row, c, why, wl) != 0)
		return -1;
	return parse_expect(row, c, why, wl);
}

/* The run's budget in the row's pre-state; *b stays NULL when the policy has none. */
static int preload_budget(const struct case_row *c, struct retry_budget **b, char *why, size_t wl)
{
	*b = NULL;
	if (c->policy.budget.kind == BUDGET_NONE)
		return 0;
	*b = retry_budget_new(&c->policy.budget, c->budget_at_ns);
	if (*b == NULL)
		return row_err(why, wl, "%s", "out of memory");
	for (double i = 0; i < c->firsts; i++)
		retry_budget_on_first(*b, c->budget_at_ns);
	for (double i = 0; i < c->retries; i++)
		if (!retry_budget_spend(*b, c->budget_at_ns, RETRY_ERR_NONE))
			return row_err(why, wl, "%s", "budget \"retries\" is more than the budget allows");
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

/* The whole file as a NUL-terminated string, or NULL with err.  The buffer grows
 * with the file (a table is a few kB), up to CASES_MAX_BYTES. */
static char *read_text(const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL, *grown;
	size_t n = 0, cap = 0;

	if (f == NULL) {
		snprintf(err, errlen, "%s: cannot open", path);
		return NULL;
	}
	for (;;) {
		if (n == cap) {
			cap = cap ? 2 * cap : 64u << 10;
			if (cap > CASES_MAX_BYTES + 1)
				cap = CASES_MAX_BYTES + 1;
			if (n == cap || !(grown = realloc(buf, cap + 1))) {
				snprintf(err, errlen, n == cap ? "%s: unreadable or larger than %u bytes"
				                               : "%s: out of memory", path, CASES_MAX_BYTES);
				goto fail;
			}
			buf = grown;
		}
		n += fread(buf + n, 1, cap - n, f);
		if (ferror(f)) {
			snprintf(err, errlen, "%s: unreadable or larger than %u bytes", path, CASES_MAX_BYTES);
			goto fail;
		}
		if (feof(f))
			break;
	}
	if (n > CASES_MAX_BYTES) {
		snprintf(err, errlen, "%s: unreadable or larger than %u bytes", path, CASES_MAX_BYTES);
		goto fail;
	}
	buf[n] = '\0';
	fclose(f);
	return buf;
fail:
	free(buf);
	fclose(f);
	return NULL;
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
		int r = parse_row(json_array_get(rows, row), (unsigned)row, c, why, sizeof(why));

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
	if (rows == NULL || json_array_size(rows) == 0 || json_array_size(rows) > CASES_MAX_ROWS) {
		snprintf(err, errlen, "%s:1: want a non-empty array of rows, or {\"cases\": [...]}", path);
		goto free_root;
	}
	if (scan_row_lines(text, &rl) != 0 || (junit && junit_suite(junit, path, 0) != 0)) {
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

static void cases_usage(FILE *f)
{
	fprintf(f, "usage: ratelab cases FILE [--seed N] [--junit FILE|-]\n\n"
	        "Replays a retry-cases table (JSON) through the retry-policy engine with a fixed RNG\n"
	        "and prints 'ok' or 'FAIL' per row, then 'N passed, N failed'.  Exit: 0 all pass,\n"
	        "1 a row failed, 2 usage error or malformed table (named as FILE:LINE).\n\n"
	        "  --seed N   replay with RNG seed N instead of the table's \"rng_seed\" (default 1):\n"
	        "             a row whose wait bounds are right passes under any seed\n"
	        "  --junit FILE|-  the rows as JUnit XML for CI: one testcase per row\n\n"
	        "Row: {\"id\", \"seed\", \"rule\", \"name\", \"policy\": preset, \"set\": {knob: value},\n"
	        "  \"method\", \"idempotent\", \"status\" + \"headers\" | \"error\": refused|reset|timeout|other,\n"
	        "  \"attempt\", \"elapsed_ms\", \"waited_ms\", \"prev_wait_ms\", \"blind_waits\", \"now\",\n"
	        "  \"now_ms\", \"budget\": {\"firsts\", \"retries\", \"at_ms\", \"tokens\"},\n"
	        "  \"expect\": {\"retry\": bool, \"reason\", \"wait_ms\": n | [lo, hi]}}\n"
	        "Presets: %s.\n", retry_preset_names());
}

struct cases_opts {
	const char *path;
	const char *junit;
	uint64_t seed;
	bool seed_given;
};

static const struct cli_option CASES_OPTIONS[] = {
	{ "--seed", CLI_U64, CLI_FIELD(struct cases_opts, seed), .max = INT64_MAX,
	  CLI_GIVEN(struct cases_opts, seed_given) },
	{ "--junit", CLI_STRING, CLI_FIELD(struct cases_opts, junit) },
	{ "FILE", CLI_STRING, CLI_FIELD(struct cases_opts, path), .required = true },
	{ NULL },
};

static const struct cli_command CASES_CLI = { "cases", cases_usage };

int cases_main(int argc, char **argv)
{
	struct cases_opts o = { 0 };
	struct cli_group g = { CASES_OPTIONS, &o };
	struct junit *j = NULL;
	unsigned passed = 0, failed = 0;
	char err[1024], why[512];
	int rc = cli_parse(&CASES_CLI, &g, 1, argc, argv, err, sizeof(err));

	if (rc == 0)
		rc = cli_check_output(err, sizeof(err), "cases", "--junit", o.junit);
	if (rc != 0)
		return cli_exit(&CASES_CLI, rc, err);
	if (o.junit && !(j = junit_new("ratelab cases"))) {
		fprintf(stderr, "ratelab cases: out of memory\n");
		return 1;
	}
	if (cases_run_junit(o.path, o.seed_given ? (int64_t)o.seed : -1, stdout, j, &passed, &failed, why,
	                    sizeof(why)) != 0) {
		fflush(stdout);
		junit_free(j);
		return cli_exit(&CASES_CLI, cli_fail(err, sizeof(err), "cases", "%s", why), err);
	}
	rc = failed > 0 ? 1 : 0;
	if (j && junit_write(j, o.junit) != 0) {
		fprintf(stderr, "ratelab cases: --junit: cannot write '%s'\n", o.junit);
		rc = 1;
	}
	junit_free(j);
	return rc;
}
