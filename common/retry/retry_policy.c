/* Retry presets (data, one per seed) and the knob overrides behind the hammer's flags. */
#include "common/retry/retry.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/parse.h"

#define MS(x) ((uint64_t)(x) * NS_PER_MS)
#define SEC(x) ((uint64_t)(x) * NS_PER_SEC)

/* The caps of a preset whose source names none: seed 000's, the one seed that
 * gives numbers for a caller that must not hang (10 s per wait, 30 s in all). */
#define HOUSE_MAX_RETRY_AFTER SEC(10)
#define HOUSE_DEADLINE SEC(30)

static const char *const BACKOFF_NAMES[] = { "none", "constant", "exponential", "full",
                                             "equal", "decorrelated", "randomized" };
static const enum backoff_kind BACKOFF_KINDS[] = { BACKOFF_NONE, BACKOFF_CONSTANT, BACKOFF_EXPONENTIAL,
                                                   BACKOFF_FULL, BACKOFF_EQUAL, BACKOFF_DECORRELATED,
                                                   BACKOFF_RANDOMIZED };

static void set_statuses(bool *set, const int *codes, size_t n)
{
	for (size_t i = 0; i < n; i++)
		set[codes[i]] = true;
}

static void base_policy(struct retry_policy *p, const char *name)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->max_attempts = 1;
	p->backoff = BACKOFF_NONE;
	p->multiplier = 2.0;
}

/* No retries.  The house caps still hold for knobs that turn retries on. */
static void preset_none(struct retry_policy *p)
{
	p->max_retry_after_ns = HOUSE_MAX_RETRY_AFTER;
	p->deadline_ns = HOUSE_DEADLINE;
}

/* Seed 002 ("Retry politely"): full jitter 100 ms .. 2 s, 5 attempts, 429 and 503 only,
 * Retry-After honoured plus up to 100 ms (one base) of jitter so clients told the
 * same second do not return in the same millisecond.  The seed names no caps: the
 * house ones, the total as the deadline its "More to try" asks for. */
static void preset_lab(struct retry_policy *p)
{
	static const int on[] = { 429, 503 };

	p->max_attempts = 5;
	p->backoff = BACKOFF_FULL;
	p->base_ns = MS(100);
	p->cap_ns = SEC(2);
	set_statuses(p->retry_on, on, 2);
	p->retry_non_idempotent = true;  /* the chapter's client retries whatever it sent */
	p->honour_retry_after = true;
	p->retry_after_jitter_ns = MS(100);
	p->max_retry_after_ns = HOUSE_MAX_RETRY_AFTER;
	p->deadline_ns = HOUSE_DEADLINE;
}

/* Seed 000 (SignalDB): the status/method matrix, full jitter of 250 ms * 2^n,
 * 10 s per wait, 30 s of waits, fail fast past 10 s, 4 attempts, 30 s per attempt. */
static void preset_signaldb(struct retry_policy *p)
{
	static const int on[] = { 502, 503, 504 };

	p->max_attempts = 4;
	p->backoff = BACKOFF_FULL;
	p->base_ns = MS(250);
	p->cap_ns = SEC(10);
	p->total_wait_cap_ns = SEC(30);
	set_statuses(p->retry_on, on, 3);
	p->retry_on[429] = true;
	p->retry_any_method[429] = true;
	p->retry_conn = true;
	p->retry_timeout = true;
	p->honour_retry_after = true;
	p->max_retry_after_ns = SEC(10);
	p->attempt_timeout_ns = SEC(30);
}

/* Seed 001 (WasmClient retries: 3): 100 ms * 2^n randomised to 50-100 %, maxDelay 10 s
 * also capping Retry-After (clamped, never a fail-fast), retryOn 408 429 500 502 503 504
 * + network + timeout.  Total: the 30 s its 3 retries of at most 10 s imply, stated so
 * that a larger --max-attempts stays bounded. */
static void preset_wasm(struct retry_policy *p)
{
	static const int on[] = { 408, 429, 500, 502, 503, 504 };

	p->max_attempts = 4;
	p->backoff = BACKOFF_RANDOMIZED;
	p->base_ns = MS(100);
	p->cap_ns = SEC(10);
	set_statuses(p->retry_on, on, 6);
	p->retry_conn = true;
	p->retry_timeout = true;
	p->honour_retry_after = true;
	p->clamp_retry_after = true;
	p->total_wait_cap_ns = SEC(30);
}

/* Seed 004 (saia-python ADR): honour a reset within max_waiting_time (60 s), fail fast on
 * a longer or zero one, blind 31 s x 2 without a header, 429 on idempotent calls only.
 * Total: 120 s of waits, the 2 retries of at most max_waiting_time the ADR bounds it by
 * (max_waiting_time is per wait: the blind fallback alone waits 62 s). */
static void preset_saia(struct retry_policy *p)
{
	p->max_attempts = 3;
	p->backoff = BACKOFF_CONSTANT;
	p->base_ns = SEC(31);
	p->retry_on[429] = true;
	p->honour_retry_after = true;
	p->max_retry_after_ns = SEC(60);
	p->zero_retry_after_fails = true;
	p->blind_wait_ns = SEC(31);
	p->blind_max = 2;
	p->total_wait_cap_ns = SEC(120);
}

/* AWS SDK standard mode: 3 attempts, rand * min(2^(n-1), 20) s, retry quota 500.  The SDKs
 * compute their own waits, so Retry-After is ignored; honoured (--retry-after honour), a
 * wait past MAX_BACKOFF (20 s) fails fast.  Total: the 40 s its 2 retries of at most 20 s
 * imply (the SDKs have no total of their own). */
static void preset_aws(struct retry_policy *p)
{
	static const int on[] = { 429, 500, 502, 503, 504 };

	p->max_attempts = 3;
	p->backoff = BACKOFF_FULL;
	p->base_ns = SEC(1);
	p->cap_ns = SEC(20);
	set_statuses(p->retry_on, on, 5);
	p->retry_conn = true;
	p->retry_timeout = true;
	p->retry_non_idempotent = true;  /* the SDKs retry every operation */
	p->budget.kind = BUDGET_AWS_QUOTA;
	p->budget.max_tokens = 500;
	p->budget.retry_cost = 5;
	p->budget.timeout_cost = 10;
	p->max_retry_after_ns = SEC(20);
	p->total_wait_cap_ns = SEC(40);
}

/* gRPC: the service-config example (maxAttempts 4, initialBackoff 0.1 s, maxBackoff
 * 1 s, multiplier 2, full jitter), UNAVAILABLE = 429 502 503 504 and connection
 * failures per the HTTP-to-gRPC mapping, throttling maxTokens 10, tokenRatio 0.1.
 * Retry-After is not gRPC's pushback, so it is ignored; honoured, the house 10 s cap
 * holds.  Total: a deadline over the whole call, attempts included, as a gRPC call
 * deadline is; gRPC sets none by default, so the house 30 s. */
static void preset_grpc(struct retry_policy *p)
{
	static const int on[] = { 429, 502, 503, 504 };

	p->max_attempts = 4;
	p->backoff = BACKOFF_FULL;
	p->base_ns = MS(100);
	p->cap_ns = SEC(1);
	set_statuses(p->retry_on, on, 4);
	p->retry_conn = true;
	p->retry_non_idempotent = true;  /* the service config declares the methods */
	p->budget.kind = BUDGET_GRPC;
	p->budget.max_tokens = 10;
	p->budget.token_ratio = 0.1;
	p->max_retry_after_ns = HOUSE_MAX_RETRY_AFTER;
	p->deadline_ns = HOUSE_DEADLINE;
}

/* The storm's naive retrier (seed 002's "try again right away"): 5 attempts with no
 * wait at all, on overload, gateway and connection failures and timeouts, whatever
 * the method, Retry-After ignored.  House caps. */
static void preset_naive(struct retry_policy *p)
{
	static const int on[] = { 429, 502, 503, 504 };

	p->max_attempts = 5;
	p->backoff = BACKOFF_NONE;
	set_statuses(p->retry_on, on, 4);
	p->retry_conn = true;
	p->retry_timeout = true;
	p->retry_non_idempotent = true;
	p->max_retry_after_ns = HOUSE_MAX_RETRY_AFTER;
	p->deadline_ns = HOUSE_DEADLINE;
}

/* Exponential backoff with full jitter (lab's 100 ms .. 2 s, 5 attempts) on overload,
 * gateway and connection failures and timeouts, Retry-After honoured, plus the SRE
 * book's adaptive throttling of every attempt (K = 2 over 2 minutes).  House caps. */
static void preset_sre_adaptive(struct retry_policy *p)
{
	static const int on[] = { 429, 502, 503, 504 };

	p->max_attempts = 5;
	p->backoff = BACKOFF_FULL;
	p->base_ns = MS(100);
	p->cap_ns = SEC(2);
	set_statuses(p->retry_on, on, 4);
	p->retry_conn = true;
	p->retry_timeout = true;
	p->honour_retry_after = true;
	p->max_retry_after_ns = HOUSE_MAX_RETRY_AFTER;
	p->deadline_ns = HOUSE_DEADLINE;
	p->throttle.kind = RETRY_THROTTLE_SRE;
	p->throttle.k = RETRY_THROTTLE_K_DEFAULT;
	p->throttle.window_ns = RETRY_THROTTLE_WINDOW_DEFAULT_NS;
}

static const struct {
	const char *name;
	void (*fill)(struct retry_policy *p);
} PRESETS[] = {
	{ "none", preset_none },
	{ "lab", preset_lab },
	{ "signaldb", preset_signaldb },
	{ "wasm", preset_wasm },
	{ "saia", preset_saia },
	{ "aws-standard", preset_aws },
	{ "grpc", preset_grpc },
	{ "naive", preset_naive },
	{ "sre-adaptive", preset_sre_adaptive },
};

int retry_policy_preset(const char *name, struct retry_policy *out)
{
	for (size_t i = 0; i < sizeof(PRESETS) / sizeof(PRESETS[0]); i++) {
		if (name == NULL || strcmp(name, PRESETS[i].name) != 0)
			continue;
		base_policy(out, name);
		PRESETS[i].fill(out);
		return 0;
	}
	return -1;
}

const char *retry_preset_names(void)
{
	return "none, lab, signaldb, wasm, saia, aws-standard, grpc, naive, sre-adaptive";
}

/* Write "--knob: why" into err.  Always returns -1. */
static int knob_error(char *err, size_t errlen, const char *knob, const char *why)
{
	if (err != NULL && errlen > 0)
		snprintf(err, errlen, "--%s: %s", knob, why);
	return -1;
}

static int set_backoff(struct retry_policy *p, const char *v, char *err, size_t errlen)
{
	char why[160];

	for (size_t i = 0; i < sizeof(BACKOFF_NAMES) / sizeof(BACKOFF_NAMES[0]); i++)
		if (strcmp(v, BACKOFF_NAMES[i]) == 0) {
			p->backoff = BACKOFF_KINDS[i];
			p->blind_wait_ns = 0;  /* an explicit backoff replaces saia's blind fallback */
			return 0;
		}
	snprintf(why, sizeof(why), "unknown backoff '%.40s' (none, constant, exponential, full, "
	         "equal, decorrelated, randomized)", v);
	return knob_error(err, errlen, "backoff", why);
}

/* One item of --retry-on: a status 100-599, "conn" or "timeout". */
static int retry_on_item(struct retry_policy *p, const bool *any_before, const char *item, size_t n)
{
	char buf[16];
	uint64_t code;

	if (n == 0 || n >= sizeof(buf))
		return -1;
	memcpy(buf, item, n);
	buf[n] = '\0';
	if (strcmp(buf, "conn") == 0) {
		p->retry_conn = true;
		return 0;
	}
	if (strcmp(buf, "timeout") == 0) {
		p->retry_timeout = true;
		return 0;
	}
	if (parse_u64(buf, 100, RETRY_STATUS_MAX - 1, &code, NULL, 0) != 0)
		return -1;
	p->retry_on[code] = true;
	p->retry_any_method[code] = any_before[code];
	return 0;
}

/* Replaces what is retried; a status the preset retried on any method keeps that. */
static int set_retry_on(struct retry_policy *p, const char *v, char *err, size_t errlen)
{
	bool any_before[RETRY_STATUS_MAX];
	struct retry_policy q = *p;
	char why[160];
	const char *s = v;

	memcpy(any_before, p->retry_any_method, sizeof(any_before));
	memset(q.retry_on, 0, sizeof(q.retry_on));
	memset(q.retry_any_method, 0, sizeof(q.retry_any_method));
	q.retry_conn = false;
	q.retry_timeout = false;
	for (;;) {
		size_t n = strcspn(s, ",");

		if (retry_on_item(&q, any_before, s, n) != 0) {
			snprintf(why, sizeof(why), "bad item '%.*s' in '%.60s' (statuses 100-599, conn, timeout)",
			         (int)(n > 20 ? 20 : n), s, v);
			return knob_error(err, errlen, "retry-on", why);
		}
		if (s[n] == '\0')
			break;
		s += n + 1;
	}
	*p = q;
	return 0;
}

/* One "key=value" of --budget into *bp; -1 with why filled. */
static int budget_item(struct retry_budget_params *bp, const char *item, size_t n, char *why, size_t wl)
{
	char buf[64], perr[96];
	char *val;
	int rc = -1;

	if (n == 0 || n >= sizeof(buf) || memchr(item, '=', n) == NULL) {
		snprintf(why, wl, "bad item '%.*s' (want ratio=R,min=N,window=DUR or sre,k=K,window=DUR)",
		         (int)(n > 40 ? 40 : n), item);
		return -1;
	}
	memcpy(buf, item, n);
	buf[n] = '\0';
	val = strchr(buf, '=');
	*val++ = '\0';
	perr[0] = '\0';
	if (strcmp(buf, "ratio") == 0)
		rc = parse_double(val, 0, 100, &bp->ratio, perr, sizeof(perr));
	else if (strcmp(buf, "min") == 0)
		rc = parse_double(val, 0, 1e6, &bp->min_per_sec, perr, sizeof(perr));
	else if (strcmp(buf, "window") == 0)
		rc = parse_duration(val, &bp->window_ns, perr, sizeof(perr));
	else
		snprintf(perr, sizeof(perr), "unknown key '%.30s' (ratio, min, window; or sre,k=K,window=DUR)", buf);
	if (rc == 0 && bp->window_ns < MS(10)) {
		snprintf(perr, sizeof(perr), "window '%.30s' is under 10ms", val);
		rc = -1;
	}
	if (rc != 0)
		snprintf(why, wl, "%s", perr);
	return rc;
}

/* One "key=value" of --budget sre,... into *tp; -1 with why filled. */
static int throttle_item(struct retry_throttle_params *tp, const char *item, size_t n, char *why, size_t wl)
{
	char buf[64], perr[96];
	char *val;
	int rc = -1;

	if (n == 0 || n >= sizeof(buf) || memchr(item, '=', n) == NULL) {
		snprintf(why, wl, "bad item '%.*s' (want sre,k=K,window=DUR)", (int)(n > 40 ? 40 : n), item);
		return -1;
	}
	memcpy(buf, item, n);
	buf[n] = '\0';
	val = strchr(buf, '=');
	*val++ = '\0';
	perr[0] = '\0';
	if (strcmp(buf, "k") == 0)
		rc = parse_double(val, 1, 100, &tp->k, perr, sizeof(perr));
	else if (strcmp(buf, "window") == 0)
		rc = parse_duration(val, &tp->window_ns, perr, sizeof(perr));
	else
		snprintf(perr, sizeof(perr), "unknown key '%.30s' (k, window)", buf);
	if (rc == 0 && tp->window_ns < MS(10)) {
		snprintf(perr, sizeof(perr), "window '%.30s' is under 10ms", val);
		rc = -1;
	}
	if (rc != 0)
		snprintf(why, wl, "%s", perr);
	return rc;
}

/* "sre" or "sre,k=2,window=2m" (missing keys default): adaptive throttling instead of a budget. */
static int set_throttle(struct retry_policy *p, const char *v, char *err, size_t errlen)
{
	struct retry_throttle_params tp = { .kind = RETRY_THROTTLE_SRE, .k = RETRY_THROTTLE_K_DEFAULT,
	                                    .window_ns = RETRY_THROTTLE_WINDOW_DEFAULT_NS };
	char why[160];
	const char *s = v + 3;

	while (*s == ',') {
		size_t n = strcspn(++s, ",");

		if (throttle_item(&tp, s, n, why, sizeof(why)) != 0)
			return knob_error(err, errlen, "budget", why);
		s += n;
	}
	memset(&p->budget, 0, sizeof(p->budget));
	p->throttle = tp;
	return 0;
}

/* "none"/"off", "on" (0.2, 10, 10 s), "ratio=0.2,min=10,window=10s" (missing keys default),
 * or "sre[,k=K,window=DUR]" (set_throttle).  A ratio budget replaces a throttle. */
static int set_budget(struct retry_policy *p, const char *v, char *err, size_t errlen)
{
	struct retry_budget_params bp = { .kind = BUDGET_RATIO, .ratio = 0.2, .min_per_sec = 10,
	                                  .window_ns = SEC(10) };
	char why[160];
	const char *s = v;

	if (strncmp(v, "sre", 3) == 0 && (v[3] == '\0' || v[3] == ','))
		return set_throttle(p, v, err, errlen);
	if (strcmp(v, "none") == 0 || strcmp(v, "off") == 0) {
		memset(&p->budget, 0, sizeof(p->budget));
		memset(&p->throttle, 0, sizeof(p->throttle));
		return 0;
	}
	while (strcmp(v, "on") != 0) {
		size_t n = strcspn(s, ",");

		if (budget_item(&bp, s, n, why, sizeof(why)) != 0)
			return knob_error(err, errlen, "budget", why);
		if (s[n] == '\0')
			break;
		s += n + 1;
	}
	p->budget = bp;
	memset(&p->throttle, 0, sizeof(p->throttle));
	return 0;
}

/* true for "", "1", "true", "yes", "on"; false for "0", "false", "no", "off". */
static int parse_flag_bool(const char *v, bool *out)
{
	static const char *const T[] = { "", "1", "true", "yes", "on" };
	static const char *const F[] = { "0", "false", "no", "off" };

	for (size_t i = 0; i < 5; i++)
		if (strcmp(v, T[i]) == 0)
			return (*out = true), 0;
	for (size_t i = 0; i < 4; i++)
		if (strcmp(v, F[i]) == 0)
			return (*out = false), 0;
	return -1;
}

/* The knobs that take a duration, and where each lands. */
static uint64_t *duration_knob(struct retry_policy *p, const char *knob)
{
	if (strcmp(knob, "base") == 0)
		return &p->base_ns;
	if (strcmp(knob, "cap") == 0)
		return &p->cap_ns;
	if (strcmp(knob, "deadline") == 0)
		return &p->deadline_ns;
	if (strcmp(knob, "max-retry-after") == 0)
		return &p->max_retry_after_ns;
	if (strcmp(knob, "total-wait-cap") == 0)
		return &p->total_wait_cap_ns;
	return NULL;
}

/* max-attempts, multiplier, retry-non-idempotent, retry-after. */
static int set_scalar(struct retry_policy *p, const char *knob, const char *v, char *why, size_t wl)
{
	uint64_t u;
	bool b;

	if (strcmp(knob, "max-attempts") == 0) {
		if (parse_u64(v, 1, 100, &u, why, wl) != 0)
			return -1;
		p->max_attempts = (unsigned)u;
		return 0;
	}
	if (strcmp(knob, "multiplier") == 0)
		return parse_double(v, 1, 100, &p->multiplier, why, wl);
	if (strcmp(knob, "retry-non-idempotent") == 0) {
		if (parse_flag_bool(v, &b) != 0)
			return snprintf(why, wl, "bad value '%.40s' (true or false)", v), -1;
		p->retry_non_idempotent = b;
		return 0;
	}
	if (strcmp(v, "honour") == 0 || strcmp(v, "honor") == 0 || strcmp(v, "ignore") == 0) {
		p->honour_retry_after = v[0] == 'h';
		return 0;
	}
	return snprintf(why, wl, "bad value '%.40s' (honour or ignore)", v), -1;
}

int retry_policy_set(struct retry_policy *p, const char *knob, const char *value, char *err, size_t errlen)
{
	static const char *const SCALARS[] = { "max-attempts", "multiplier", "retry-non-idempotent",
	                                       "retry-after" };
	const char *v = value != NULL ? value : "";
	char why[160];
	uint64_t *dur;

	if (knob == NULL)
		return knob_error(err, errlen, "?", "no knob named");
	if (strcmp(knob, "backoff") == 0)
		return set_backoff(p, v, err, errlen);
	if (strcmp(knob, "retry-on") == 0)
		return set_retry_on(p, v, err, errlen);
	if (strcmp(knob, "budget") == 0)
		return set_budget(p, v, err, errlen);
	dur = duration_knob(p, knob);
	if (dur != NULL)
		return parse_duration(v, dur, why, sizeof(why)) == 0 ? 0 : knob_error(err, errlen, knob, why);
	for (size_t i = 0; i < sizeof(SCALARS) / sizeof(SCALARS[0]); i++)
		if (strcmp(knob, SCALARS[i]) == 0)
			return set_scalar(p, knob, v, why, sizeof(why)) == 0 ? 0 : knob_error(err, errlen, knob, why);
	snprintf(why, sizeof(why), "unknown retry knob (value '%.40s')", v);
	return knob_error(err, errlen, knob, why);
}

/* Append to buf at *off, like snprintf; stops quietly when buf is full. */
static void append(char *buf, size_t len, size_t *off, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*off >= len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *off, len - *off, fmt, ap);
	va_end(ap);
	if (n > 0)
		*off = *off + (size_t)n < len ? *off + (size_t)n : len;
}

/* A duration as written on the command line: "100ms", "2s", "1m", or "1.5s" when it is not whole. */
static void short_duration(uint64_t ns, char *buf, size_t len)
{
	if (ns >= SEC(60) && ns % SEC(60) == 0)
		snprintf(buf, len, "%llum", (unsigned long long)(ns / SEC(60)));
	else if (ns >= SEC(1) && ns % SEC(1) == 0)
		snprintf(buf, len, "%llus", (unsigned long long)(ns / SEC(1)));
	else if (ns % MS(1) == 0)
		snprintf(buf, len, "%llums", (unsigned long long)(ns / MS(1)));
	else
		snprintf(buf, len, "%gs", (double)ns / 1e9);
}

static const char *backoff_name(enum backoff_kind k)
{
	for (size_t i = 0; i < sizeof(BACKOFF_KINDS) / sizeof(BACKOFF_KINDS[0]); i++)
		if (BACKOFF_KINDS[i] == k)
			return BACKOFF_NAMES[i];
	return "?";
}

/* "; backoff full 100ms-2s", or the blind fallback, or "; retries at once". */
static void describe_backoff(const struct retry_policy *p, char *buf, size_t len, size_t *off)
{
	char a[32], b[32];

	short_duration(p->base_ns, a, sizeof(a));
	short_duration(p->cap_ns, b, sizeof(b));
	if (p->blind_wait_ns > 0) {
		short_duration(p->blind_wait_ns, a, sizeof(a));
		append(buf, len, off, "; no wait given: %s", a);
		if (p->blind_max > 0)
			append(buf, len, off, " x%u", p->blind_max);
	} else if (p->backoff == BACKOFF_NONE) {
		append(buf, len, off, "; retries at once");
	} else if (p->backoff == BACKOFF_CONSTANT) {
		append(buf, len, off, "; backoff constant %s", p->cap_ns > 0 && p->cap_ns < p->base_ns ? b : a);
	} else {
		append(buf, len, off, "; backoff %s %s-%s", backoff_name(p->backoff), a, p->cap_ns ? b : "uncapped");
	}
}

/* "; Retry-After up to 10s, longer fails fast" and its jitter. */
static void describe_waits(const struct retry_policy *p, char *buf, size_t len, size_t *off)
{
	char a[32], b[32];

	short_duration(p->cap_ns, b, sizeof(b));
	short_duration(p->max_retry_after_ns, a, sizeof(a));
	if (!p->honour_retry_after)
		append(buf, len, off, "; Retry-After ignored");
	else if (p->max_retry_after_ns > 0)
		append(buf, len, off, "; Retry-After up to %s, longer fails fast", a);
	else if (p->clamp_retry_after && p->cap_ns > 0)
		append(buf, len, off, "; Retry-After clamped to %s", b);
	else
		append(buf, len, off, "; Retry-After uncapped");
	if (p->honour_retry_after && p->zero_retry_after_fails)
		append(buf, len, off, ", 0 fails fast");
	short_duration(p->retry_after_jitter_ns, a, sizeof(a));
	if (p->honour_retry_after && p->retry_after_jitter_ns > 0)
		append(buf, len, off, " (+%s jitter)", a);
}

/* "; deadline 30s" / "; waits 30s in all", then the budget or throttle. */
static void describe_totals(const struct retry_policy *p, char *buf, size_t len, size_t *off)
{
	char a[32];

	short_duration(p->deadline_ns, a, sizeof(a));
	if (p->deadline_ns > 0)
		append(buf, len, off, "; deadline %s", a);
	short_duration(p->total_wait_cap_ns, a, sizeof(a));
	if (p->total_wait_cap_ns > 0)
		append(buf, len, off, "; waits %s in all", a);
	if (p->deadline_ns == 0 && p->total_wait_cap_ns == 0)
		append(buf, len, off, "; no total cap");
	short_duration(p->budget.kind == BUDGET_RATIO ? p->budget.window_ns : p->throttle.window_ns,
	               a, sizeof(a));
	if (p->budget.kind == BUDGET_RATIO)
		append(buf, len, off, "; budget ratio %g + %g/s over %s", p->budget.ratio, p->budget.min_per_sec, a);
	else if (p->budget.kind == BUDGET_AWS_QUOTA)
		append(buf, len, off, "; AWS retry quota %g", p->budget.max_tokens);
	else if (p->budget.kind == BUDGET_GRPC)
		append(buf, len, off, "; gRPC retry throttling %g tokens, ratio %g", p->budget.max_tokens, p->budget.token_ratio);
	if (p->throttle.kind == RETRY_THROTTLE_SRE)
		append(buf, len, off, "; adaptive throttling K=%g over %s", p->throttle.k, a);
}

void retry_policy_describe(const struct retry_policy *p, char *buf, size_t len)
{
	size_t off = 0;

	if (buf == NULL || len == 0)
		return;
	buf[0] = '\0';
	if (p->max_attempts <= 1) {
		append(buf, len, &off, "1 attempt (no retries)");
	} else {
		append(buf, len, &off, "%u attempts", p->max_attempts);
		describe_backoff(p, buf, len, &off);
		describe_waits(p, buf, len, &off);
	}
	describe_totals(p, buf, len, &off);
}
