/* ratelab cases: reading one row of a retry-cases table (cases_impl.h). */
#include "lab/cases.h"

#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/httpdate.h"
#include "common/retry/retry.h"
#include "lab/cases_impl.h"

#define CASES_MAX_PRELOAD 1000000.0
/* "Sun, 06 Nov 1994 08:49:37 GMT": the default wall clock of a row. */
#define CASES_DEFAULT_WALL 784111777

static int row_lines_push(struct row_lines *rl, unsigned line)
{
	if (rl->n == rl->cap) {
		size_t cap = rl->cap == 0 ? 64 : rl->cap * 2 < CASES_MAX_ROWS ? rl->cap * 2 : CASES_MAX_ROWS;
		unsigned *nl = rl->cap == CASES_MAX_ROWS ? NULL : realloc(rl->line, cap * sizeof(*nl));

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
int cases_row_lines_scan(const char *t, struct row_lines *rl)
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
int cases_row_err(char *why, size_t wl, const char *fmt, const char *arg)
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
		return cases_row_err(why, wl, "%s", "\"policy\" (a preset name) is missing or not a string");
	if (retry_policy_preset(name, &c->policy) != 0)
		return cases_row_err(why, wl, "unknown policy '%.60s'", name);
	if (set != NULL && !json_is_object(set))
		return cases_row_err(why, wl, "%s", "\"set\" must be an object of knob: \"value\"");
	json_object_foreach(set, knob, v) {
		const char *val = json_is_string(v) ? json_string_value(v) : json_is_true(v) ? "true"
		                  : json_is_false(v) ? "false" : NULL;

		if (val == NULL)
			return cases_row_err(why, wl, "knob '%.60s' needs a string value", knob);
		if (retry_policy_set(&c->policy, knob, val, err, sizeof(err)) != 0)
			return cases_row_err(why, wl, "%s", err);
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
		return cases_row_err(why, wl, "%s", "\"headers\" must be an object");
	json_object_foreach(h, k, v) {
		if (!json_is_string(v))
			return cases_row_err(why, wl, "header '%.60s' must be a string", k);
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
		return cases_row_err(why, wl, "%s", "give exactly one of \"status\" (a number) or \"error\"");
	if (err != NULL && parse_error_kind(err, &c->in.error) != 0)
		return cases_row_err(why, wl, "unknown error '%.40s' (refused, reset, timeout, other)", err);
	if (st != NULL && (!json_is_integer(st) || json_integer_value(st) < 100 ||
	                   json_integer_value(st) >= RETRY_STATUS_MAX))
		return cases_row_err(why, wl, "%s", "\"status\" must be an integer 100-599");
	c->in.status = st != NULL ? (int)json_integer_value(st) : 0;
	c->in.method = "GET";
	if (get_str(row, "method", &c->in.method) != 0)
		return cases_row_err(why, wl, "%s", "\"method\" must be a string");
	if (idem != NULL && !json_is_boolean(idem))
		return cases_row_err(why, wl, "%s", "\"idempotent\" must be true or false");
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
	return cases_row_err(why, wl, "%s", "\"now\" must be epoch seconds or an HTTP-date");
}

/* attempt, elapsed_ms, waited_ms, prev_wait_ms, blind_waits, now_ms. */
static int parse_timing(json_t *row, struct case_row *c, char *why, size_t wl)
{
	double attempt = 1, elapsed = 0, waited = 0, prev = 0, blind = 0, now = -1;

	if (get_num(row, "attempt", &attempt) != 0 || attempt < 1 || attempt > 1000 ||
	    attempt != floor(attempt))
		return cases_row_err(why, wl, "%s", "\"attempt\" must be an integer 1-1000");
	if (get_num(row, "elapsed_ms", &elapsed) != 0 || get_num(row, "waited_ms", &waited) != 0 ||
	    get_num(row, "prev_wait_ms", &prev) != 0 || get_num(row, "now_ms", &now) != 0)
		return cases_row_err(why, wl, "%s", "elapsed_ms, waited_ms, prev_wait_ms, now_ms: numbers >= 0");
	if (get_num(row, "blind_waits", &blind) != 0 || blind > 1000 || blind != floor(blind))
		return cases_row_err(why, wl, "%s", "\"blind_waits\" must be an integer 0-1000");
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
		return cases_row_err(why, wl, "%s", "\"budget\" needs an object and a policy with a budget");
	c->budget_given = true;
	c->tokens_given = json_object_get(b, "tokens") != NULL;
	if (get_num(b, "firsts", &c->firsts) != 0 || get_num(b, "retries", &c->retries) != 0 ||
	    get_num(b, "tokens", &c->tokens) != 0 || get_num(b, "at_ms", &at) != 0 ||
	    c->firsts > CASES_MAX_PRELOAD || c->retries > CASES_MAX_PRELOAD)
		return cases_row_err(why, wl, "%s", "budget firsts, retries (0-1000000), tokens, at_ms: numbers >= 0");
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
		return cases_row_err(why, wl, "%s", "\"expect\" needs \"retry\": true or false");
	c->exp_retry = json_is_true(r);
	c->exp_reason = c->exp_retry ? RETRY_REASON_RETRY : RETRY_REASON_NOT_RETRYABLE;
	if (get_str(e, "reason", &reason) != 0 || (reason == NULL && !c->exp_retry))
		return cases_row_err(why, wl, "%s", "\"expect\" needs a \"reason\" string when retry is false");
	if (reason != NULL && parse_reason(reason, &c->exp_reason) != 0)
		return cases_row_err(why, wl, "unknown reason '%.40s'", reason);
	w = json_object_get(e, "wait_ms");
	c->exp_wait = w != NULL;
	if (json_is_number(w)) {
		c->wait_lo_ms = c->wait_hi_ms = json_number_value(w);
	} else if (json_is_array(w) && json_array_size(w) == 2 && json_is_number(json_array_get(w, 0)) &&
	           json_is_number(json_array_get(w, 1))) {
		c->wait_lo_ms = json_number_value(json_array_get(w, 0));
		c->wait_hi_ms = json_number_value(json_array_get(w, 1));
		if (c->wait_lo_ms > c->wait_hi_ms)
			return cases_row_err(why, wl, "%s", "\"wait_ms\" [lo, hi] has lo over hi");
	} else if (w != NULL) {
		return cases_row_err(why, wl, "%s", "\"wait_ms\" must be a number or [lo, hi]");
	}
	return 0;
}

/* The whole row, or -1 with why. */
int cases_row_parse(json_t *row, unsigned index, struct case_row *c, char *why, size_t wl)
{
	json_t *id = json_object_get(row, "id");

	memset(c, 0, sizeof(*c));
	if (!json_is_object(row))
		return cases_row_err(why, wl, "%s", "a row must be an object");
	c->id = json_is_integer(id) ? (unsigned)json_integer_value(id) : index + 1;
	c->name = c->seed = c->rule = "";
	if (get_str(row, "name", &c->name) != 0 || get_str(row, "seed", &c->seed) != 0 ||
	    get_str(row, "rule", &c->rule) != 0)
		return cases_row_err(why, wl, "%s", "name, seed and rule must be strings");
	if (parse_policy(row, c, why, wl) != 0 || parse_outcome(row, c, why, wl) != 0 ||
	    parse_budget(row, c, why, wl) != 0 || parse_timing(row, c, why, wl) != 0)
		return -1;
	return parse_expect(row, c, why, wl);
}
