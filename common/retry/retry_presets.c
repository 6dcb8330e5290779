/* Retry presets (data, one per seed) and the one-line description of a policy's caps. */
#include "common/retry/retry.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"

#define MS(x) ((uint64_t)(x) * NS_PER_MS)
#define SEC(x) ((uint64_t)(x) * NS_PER_SEC)

/* The caps of a preset whose source names none: seed 000's, the one seed that
 * gives numbers for a caller that must not hang (10 s per wait, 30 s in all). */
#define HOUSE_MAX_RETRY_AFTER SEC(10)
#define HOUSE_DEADLINE SEC(30)

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
		append(buf, len, off, "; backoff %s %s-%s", retry_backoff_name(p->backoff), a, p->cap_ns ? b : "uncapped");
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
