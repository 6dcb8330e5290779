/* Scenario scripts: the step syntax and the built-in scenarios. */
#include "server/handlers/scenario_script.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/clock.h"
#include "common/parse.h"
#include "common/retry/retry.h"

#define RATELIMIT_POLICY "\"RateLimit-Policy\":\"\\\"default\\\";q=10;w=60\""

const struct scenario_builtin scenario_builtins[] = {
	{ "retry-after-seconds", "GET",
	  "[{\"status\":429,\"retry_after\":\"2\"},{\"status\":429,\"retry_after\":\"2\"},{\"status\":200}]",
	  "succeeds,honours-retry-after,max-attempts<=3", false,
	  "429 + Retry-After: 2, twice, then 200",
	  "waits 2 s after each 429 and succeeds on the third attempt" },
	{ "retry-after-date", "GET",
	  "[{\"status\":429,\"retry_after\":\"date:2\"},{\"status\":429,\"retry_after\":\"date:2\"},{\"status\":200}]",
	  "succeeds,honours-retry-after,max-attempts<=3", false,
	  "the same wait as an HTTP-date (2-3 s once rounded up to a whole second)",
	  "waits until the date each time and succeeds on the third attempt" },
	{ "no-retry-after", "GET", "[{\"status\":429},{\"status\":429},{\"status\":200}]",
	  "succeeds,backs-off,max-attempts<=3", false,
	  "429 without a wait, twice, then 200",
	  "backs off by itself, the second wait longer than the first, and succeeds" },
	{ "retry-after-too-long", "GET", "[{\"status\":429,\"retry_after\":\"3600\"}]",
	  "gives-up-within=5s,max-attempts<=1", true,
	  "429 + Retry-After: 3600, always",
	  "refuses a wait over its cap and gives up at once; capping the wait and retrying early fails" },
	{ "post-503", "POST", "[{\"status\":503},{\"status\":200}]", "no-retry-non-idempotent", false,
	  "503, then 200, to a POST",
	  "does not send the POST again, unless the retry carries the first attempt's Idempotency-Key" },
	{ "post-429", "POST", "[{\"status\":429,\"retry_after\":\"2\"},{\"status\":200}]",
	  "succeeds,honours-retry-after,max-attempts<=2", false,
	  "429 + Retry-After: 2, then 200, to a POST",
	  "a 429 was not processed, so even a POST may be retried: waits 2 s and succeeds" },
	{ "server-errors", "GET", "[{\"status\":503},{\"status\":502},{\"status\":504},{\"status\":200}]",
	  "succeeds,backs-off,max-attempts<=4", false,
	  "503, 502, 504, then 200",
	  "retries all three with growing waits and succeeds on the fourth attempt" },
	{ "persistent-429", "GET", "[{\"status\":429,\"retry_after\":\"1\"}]",
	  "honours-retry-after,stops-after-attempts,max-attempts<=5", false,
	  "429 + Retry-After: 1, always",
	  "waits 1 s each time and stops on its own within 5 attempts" },
	{ "layered", "GET",
	  "[{\"status\":429,\"retry_after\":\"2\",\"headers\":{"
	  "\"RateLimit-Policy\":\"\\\"minute\\\";q=30;w=60, \\\"hour\\\";q=500;w=3600\","
	  "\"RateLimit\":\"\\\"minute\\\";r=0;t=2\"}},"
	  "{\"status\":200,\"headers\":{\"RateLimit-Policy\":\"\\\"minute\\\";q=30;w=60, \\\"hour\\\";q=500;w=3600\","
	  "\"RateLimit\":\"\\\"minute\\\";r=29;t=60\"}}]",
	  "succeeds,honours-retry-after,max-attempts<=2", false,
	  "429: the per-minute window of a minute/hour policy resets in 2 s (Retry-After and RateLimit), then 200",
	  "waits 2 s and succeeds" },
	{ "maintenance-503", "GET", "[{\"status\":503,\"retry_after\":\"2\"},{\"status\":200}]",
	  "succeeds,honours-retry-after,max-attempts<=2", false,
	  "503 + Retry-After: 2 (maintenance), then 200",
	  "waits the 2 s and succeeds" },
	{ "bad-request-400", "GET", "[{\"status\":400}]", "no-retry", false,
	  "400, always", "does not retry: the same request gets the same 400" },
	{ "unauthorized-401", "GET", "[{\"status\":401}]", "no-retry", false,
	  "401, always", "does not retry with the same credentials" },
	{ "not-found-404", "GET", "[{\"status\":404}]", "no-retry", false,
	  "404, always", "does not retry" },
	{ "not-implemented-501", "GET", "[{\"status\":501}]", "no-retry", false,
	  "501, always", "does not retry: a 5xx that says the method will never work" },
	{ "connection-reset", "GET", "[{\"fault\":\"reset\"},{\"status\":200}]", "succeeds,max-attempts<=2", false,
	  "the connection is reset before any answer, then 200",
	  "retries the GET (it is idempotent) and succeeds" },
	{ "close-mid-body", "GET", "[{\"status\":200,\"fault\":\"close-mid-body\"},{\"status\":200}]",
	  "succeeds,max-attempts<=2", false,
	  "200 whose body is cut off halfway (the connection closes), then 200",
	  "sees the short body as a failure, retries the GET and succeeds" },
	{ "malformed-answer", "GET", "[{\"fault\":\"malformed\"},{\"status\":200}]", "succeeds,max-attempts<=2", false,
	  "bytes that are not an HTTP answer, then 200", "retries the GET and succeeds" },
	{ "slow-get", "GET", "[{\"status\":200,\"delay\":\"10s\"},{\"status\":200}]",
	  "succeeds,gives-up-within=6s", true,
	  "the first answer is held 10 s; the next comes at once",
	  "times out by itself (under 6 s), retries the GET and succeeds" },
	{ "slow-post", "POST", "[{\"status\":200,\"delay\":\"10s\"},{\"status\":200}]", "no-retry-non-idempotent", false,
	  "the first answer to a POST is held 10 s",
	  "may time out, but does not send the POST again: the server may have processed it" },
	{ "ratelimit-only", "GET",
	  "[{\"status\":429,\"headers\":{" RATELIMIT_POLICY ",\"RateLimit\":\"\\\"default\\\";r=0;t=2\"}},"
	  "{\"status\":200}]",
	  "succeeds,honours-ratelimit,max-attempts<=2", false,
	  "429 without Retry-After; RateLimit: \"default\";r=0;t=2, then 200",
	  "reads t=2 from RateLimit, waits 2 s and succeeds" },
	{ "ratelimit-reset", "GET",
	  "[{\"status\":429,\"headers\":{\"RateLimit-Limit\":\"10\",\"RateLimit-Remaining\":\"0\","
	  "\"RateLimit-Reset\":\"2\"}},{\"status\":200}]",
	  "succeeds,honours-ratelimit,max-attempts<=2", false,
	  "429 without Retry-After; RateLimit-Reset: 2 (earlier drafts), then 200",
	  "reads RateLimit-Reset, waits 2 s and succeeds" },
	{ "x-ratelimit-reset", "GET",
	  "[{\"status\":429,\"headers\":{\"X-RateLimit-Limit\":\"10\",\"X-RateLimit-Remaining\":\"0\","
	  "\"X-RateLimit-Reset\":\"2\"}},{\"status\":200}]",
	  "succeeds,honours-ratelimit,max-attempts<=2", false,
	  "429 without Retry-After; X-RateLimit-Reset: 2 (delta seconds), then 200",
	  "reads X-RateLimit-Reset, waits 2 s and succeeds" },
	{ "retry-after-zero", "GET", "[{\"status\":429,\"retry_after\":\"0\"},{\"status\":200}]",
	  "succeeds,max-attempts<=2", false,
	  "429 + Retry-After: 0, then 200", "retries (Retry-After: 0 asks for no wait) and succeeds" },
	{ "retry-after-fraction", "GET", "[{\"status\":429,\"retry_after\":\"1.5\"},{\"status\":200}]",
	  "succeeds,max-attempts<=2", false,
	  "429 + Retry-After: 1.5 (not delta-seconds), then 200",
	  "does not choke on the bad value: honours it, rounds it or backs off by itself, and succeeds" },
	{ "retry-after-past-date", "GET", "[{\"status\":429,\"retry_after\":\"date:-3600\"},{\"status\":200}]",
	  "succeeds,max-attempts<=2,gives-up-within=5s", true,
	  "429 + Retry-After: a date an hour ago, then 200",
	  "a past date asks for no wait: retries soon and succeeds" },
	{ "retry-after-garbage", "GET", "[{\"status\":429,\"retry_after\":\"soon\"},{\"status\":200}]",
	  "succeeds,max-attempts<=2", false,
	  "429 + Retry-After: soon, then 200",
	  "ignores the bad value, backs off by itself and succeeds" },
	{ "retry-after-twice", "GET", "[{\"status\":429,\"retry_after\":[\"1\",\"3\"]},{\"status\":200}]",
	  "succeeds,honours-retry-after,max-attempts<=2", false,
	  "429 with two Retry-After fields, 1 and 3, then 200",
	  "waits at least the longer, 3 s (the only wait that honours both), and succeeds" },
	{ "payload-too-large", "POST", "[{\"status\":413,\"retry_after\":\"2\"},{\"status\":200}]",
	  "honours-retry-after,max-attempts<=2", false,
	  "413 + Retry-After: 2 (the condition is temporary), then 200, to a POST",
	  "gives up, or retries no sooner than 2 s" },
};

const size_t scenario_nbuiltins = sizeof(scenario_builtins) / sizeof(scenario_builtins[0]);

static int fail(char *err, size_t errlen, size_t step, const char *why)
{
	snprintf(err, errlen, "step %zu: %s", step + 1, why);
	return -1;
}

/* One Retry-After value: "N" or any verbatim text, "date:N" (N may be negative), or a number. */
static int parse_one_ra(json_t *v, struct scenario_retry_after *ra, size_t i, char *err, size_t errlen)
{
	const char *s;
	char num[32];

	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
		s = num;
	} else if (json_is_string(v)) {
		s = json_string_value(v);
	} else {
		return fail(err, errlen, i, "\"retry_after\" must be a string, a non-negative integer or an array of two");
	}
	if (strncmp(s, "date:", 5) == 0) {
		char *end;
		long n = strtol(s + 5, &end, 10);

		if (end == s + 5 || *end || n < -86400L * 365 || n > 86400L * 365)
			return fail(err, errlen, i, "\"retry_after\" \"date:N\" needs N seconds (-31536000..31536000)");
		ra->date = true;
		ra->offset_s = n;
		return 0;
	}
	if (strlen(s) >= sizeof(ra->text) || strpbrk(s, "\r\n"))
		return fail(err, errlen, i, "\"retry_after\" is too long or has a line break");
	snprintf(ra->text, sizeof(ra->text), "%s", s);
	return 0;
}

static int parse_retry_after(json_t *v, struct scenario_step *st, size_t i, char *err, size_t errlen)
{
	size_t k;
	json_t *e;

	if (!v)
		return 0;
	if (!json_is_array(v)) {
		st->nra = 1;
		return parse_one_ra(v, &st->ra[0], i, err, errlen);
	}
	if (json_array_size(v) < 1 || json_array_size(v) > SCENARIO_MAX_RA)
		return fail(err, errlen, i, "\"retry_after\" as an array holds one or two values");
	json_array_foreach(v, k, e) {
		if (parse_one_ra(e, &st->ra[k], i, err, errlen) < 0)
			return -1;
	}
	st->nra = json_array_size(v);
	return 0;
}

/* Delta seconds, digits only (at most 9). */
static bool delta_seconds(const char *s, uint64_t *ns)
{
	size_t n = strspn(s, "0123456789");

	if (n == 0 || n > 9 || s[n])
		return false;
	*ns = (uint64_t)strtoull(s, NULL, 10) * NS_PER_SEC;
	return true;
}

/* A wait header among the extra headers: RateLimit t=, then RateLimit-Reset, then X-RateLimit-Reset. */
static void find_header_wait(struct scenario_step *st, const char *name, const char *value)
{
	static const struct {
		const char *name;
		enum scenario_wait_source source;
	} WAITS[] = {
		{ "RateLimit", SCENARIO_WAIT_RATELIMIT },
		{ "RateLimit-Reset", SCENARIO_WAIT_RATELIMIT_RESET },
		{ "X-RateLimit-Reset", SCENARIO_WAIT_X_RATELIMIT_RESET },
	};
	uint64_t ns;

	for (size_t k = 0; k < sizeof(WAITS) / sizeof(WAITS[0]); k++) {
		bool ok;

		if (strcasecmp(name, WAITS[k].name) != 0)
			continue;
		if (st->header_wait != SCENARIO_WAIT_NONE && st->header_wait <= WAITS[k].source)
			return;
		ok = WAITS[k].source == SCENARIO_WAIT_RATELIMIT ? ratelimit_parse_t(value, &ns) == 0
		                                                 : delta_seconds(value, &ns);
		if (ok) {
			st->header_wait = WAITS[k].source;
			st->header_wait_ns = ns;
		}
	}
}

static int parse_headers(json_t *v, struct scenario_step *st, size_t i, char *err, size_t errlen)
{
	const char *k;
	json_t *val;
	size_t used = 0;

	if (!v)
		return 0;
	if (!json_is_object(v))
		return fail(err, errlen, i, "\"headers\" must be an object of strings");
	json_object_foreach(v, k, val) {
		const char *s = json_string_value(val);
		int n;

		if (!s || !*k || strpbrk(k, ":\r\n \t") || strpbrk(s, "\r\n"))
			return fail(err, errlen, i, "\"headers\": each name must be a token and each value one line");
		n = snprintf(st->headers + used, sizeof(st->headers) - used, "%s: %s\n", k, s);
		if (n < 0 || (size_t)n >= sizeof(st->headers) - used)
			return fail(err, errlen, i, "\"headers\" too long (320 bytes in all)");
		used += (size_t)n;
		find_header_wait(st, k, s);
	}
	return 0;
}

static int parse_delay(json_t *v, struct scenario_step *st, size_t i, char *err, size_t errlen)
{
	char why[160];

	if (!v)
		return 0;
	/* milliseconds are compared before they are scaled: 2^64 ns / 10^6 ms would wrap to nearly nothing */
	if (json_is_integer(v) && json_integer_value(v) >= 0 &&
	    (uint64_t)json_integer_value(v) > SCENARIO_MAX_DELAY_NS / NS_PER_MS)
		return fail(err, errlen, i, "\"delay\" is over the 10s cap");
	if (json_is_integer(v) && json_integer_value(v) >= 0)
		st->delay_ns = (uint64_t)json_integer_value(v) * NS_PER_MS;
	else if (!json_is_string(v) || parse_duration(json_string_value(v), &st->delay_ns, why, sizeof(why)) < 0)
		return fail(err, errlen, i, "\"delay\" must be milliseconds or a duration like \"250ms\"");
	if (st->delay_ns > SCENARIO_MAX_DELAY_NS)
		return fail(err, errlen, i, "\"delay\" is over the 10s cap");
	return 0;
}

static int parse_fault(json_t *v, struct scenario_step *st, size_t i, char *err, size_t errlen)
{
	static const enum scenario_fault FAULTS[] = { SCENARIO_FAULT_RESET, SCENARIO_FAULT_CUT,
		                                      SCENARIO_FAULT_MALFORMED };

	if (!v)
		return 0;
	for (size_t k = 0; json_is_string(v) && k < sizeof(FAULTS) / sizeof(FAULTS[0]); k++)
		if (strcmp(json_string_value(v), scenario_fault_name(FAULTS[k])) == 0) {
			st->fault = FAULTS[k];
			return 0;
		}
	return fail(err, errlen, i, "\"fault\" is one of \"reset\", \"close-mid-body\", \"malformed\"");
}

static bool known_key(const char *k)
{
	static const char *const KEYS[] = { "status", "retry_after", "headers", "delay", "fault" };

	for (size_t i = 0; i < sizeof(KEYS) / sizeof(KEYS[0]); i++)
		if (strcmp(k, KEYS[i]) == 0)
			return true;
	return false;
}

/* The status: required, 200..599 (a 1xx is no final answer), unless the step's fault sends no status line. */
static int parse_status(json_t *status, struct scenario_step *st, size_t i, char *err, size_t errlen)
{
	bool statusless = st->fault == SCENARIO_FAULT_RESET || st->fault == SCENARIO_FAULT_MALFORMED;

	if (!status && statusless)
		return 0;
	if (!json_is_integer(status) || json_integer_value(status) < 200 || json_integer_value(status) > 599)
		return fail(err, errlen, i, "\"status\" must be an integer 200..599 (a 1xx is no final answer)");
	st->status = (int)json_integer_value(status);
	return 0;
}

static int parse_step(json_t *o, struct scenario_step *st, size_t i, char *err, size_t errlen)
{
	const char *k;
	json_t *v;

	memset(st, 0, sizeof(*st));
	if (!json_is_object(o))
		return fail(err, errlen, i, "each step must be an object");
	json_object_foreach(o, k, v)
		if (!known_key(k)) {
			char why[96];

			snprintf(why, sizeof(why), "unknown key \"%.40s\"", k);
			return fail(err, errlen, i, why);
		}
	if (parse_fault(json_object_get(o, "fault"), st, i, err, errlen) < 0 ||
	    parse_status(json_object_get(o, "status"), st, i, err, errlen) < 0 ||
	    parse_retry_after(json_object_get(o, "retry_after"), st, i, err, errlen) < 0 ||
	    parse_headers(json_object_get(o, "headers"), st, i, err, errlen) < 0 ||
	    parse_delay(json_object_get(o, "delay"), st, i, err, errlen) < 0)
		return -1;
	return 0;
}

int scenario_script_parse(const char *json, struct scenario_step *steps, size_t *n, char *err, size_t errlen)
{
	json_error_t je;
	json_t *root = json_loads(json, 0, &je);
	int rc = -1;

	*n = 0;
	if (!root) {
		snprintf(err, errlen, "not JSON: %s (line %d)", je.text, je.line);
		return -1;
	}
	if (!json_is_array(root) || json_array_size(root) == 0 || json_array_size(root) > SCENARIO_MAX_STEPS) {
		snprintf(err, errlen, "a scenario is a JSON array of 1..%d steps", SCENARIO_MAX_STEPS);
		goto free_root;
	}
	for (size_t i = 0; i < json_array_size(root); i++)
		if (parse_step(json_array_get(root, i), &steps[i], i, err, errlen) < 0)
			goto free_root;
	*n = json_array_size(root);
	rc = 0;
free_root:
	json_decref(root);
	return rc;
}
