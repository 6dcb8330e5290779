/* The retry-policy engine: retry_decide, retry_backoff, reasons, idempotency. */
#include "common/retry/retry.h"

#include <math.h>
#include <string.h>
#include <strings.h>

static const char *const REASON_NAMES[RETRY_REASON_COUNT] = {
	"ok", "retry", "attempts", "deadline", "budget", "retry-after-too-long", "not-retryable", "throttled",
};

const char *retry_reason_name(enum retry_reason r)
{
	if ((int)r < 0 || r >= RETRY_REASON_COUNT)
		return "?";
	return REASON_NAMES[r];
}

bool retry_method_idempotent(const char *method)
{
	static const char *const IDEM[] = { "GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE" };

	if (method == NULL)
		return true;  /* the hammer's default method is GET */
	for (size_t i = 0; i < sizeof(IDEM) / sizeof(IDEM[0]); i++)
		if (strcasecmp(method, IDEM[i]) == 0)
			return true;
	return false;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* A double number of ns to uint64, saturating at RETRY_WAIT_MAX_NS. */
static uint64_t ns_from_double(double x)
{
	if (!(x > 0))
		return 0;
	if (x >= (double)RETRY_WAIT_MAX_NS)
		return RETRY_WAIT_MAX_NS;
	return (uint64_t)x;
}

/* min(cap, base * mult^(n-1)) in ns; n = 1 is the first retry. */
static double backoff_ceiling(const struct retry_policy *p, unsigned n)
{
	double mult = p->multiplier > 0 ? p->multiplier : 2.0;
	double e = (double)p->base_ns * pow(mult, n > 0 ? (double)(n - 1) : 0.0);

	if (p->cap_ns > 0 && e > (double)p->cap_ns)
		e = (double)p->cap_ns;
	return e;
}

uint64_t retry_backoff(const struct retry_policy *p, unsigned n, uint64_t prev_wait_ns, struct prng *rng)
{
	double e = backoff_ceiling(p, n);
	double lo, hi, w;

	switch (p->backoff) {
	case BACKOFF_NONE:
		return 0;
	case BACKOFF_CONSTANT:
		w = (double)p->base_ns;
		if (p->cap_ns > 0 && w > (double)p->cap_ns)
			w = (double)p->cap_ns;
		return ns_from_double(w);
	case BACKOFF_EXPONENTIAL:
		return ns_from_double(e);
	case BACKOFF_FULL:
		return ns_from_double(prng_double(rng) * e);
	case BACKOFF_EQUAL:
		return ns_from_double(e / 2 + prng_double(rng) * (e / 2));
	case BACKOFF_RANDOMIZED:
		return ns_from_double((0.5 + prng_double(rng) / 2) * e);
	case BACKOFF_DECORRELATED:
		lo = (double)p->base_ns;
		hi = 3.0 * (double)(prev_wait_ns > 0 ? prev_wait_ns : p->base_ns);
		if (hi < lo)
			hi = lo;
		w = lo + prng_double(rng) * (hi - lo);
		if (p->cap_ns > 0 && w > (double)p->cap_ns)
			w = (double)p->cap_ns;
		return ns_from_double(w);
	}
	return 0;
}

/* May this outcome be retried at all under p, whatever the attempt? */
static bool outcome_retryable(const struct retry_policy *p, const struct retry_input *in)
{
	bool idem = in->idempotent < 0 ? retry_method_idempotent(in->method) : in->idempotent != 0;
	bool method_ok = idem || p->retry_non_idempotent;

	switch (in->error) {
	case RETRY_ERR_NONE:
		if (in->status < 0 || in->status >= RETRY_STATUS_MAX)
			return false;
		return p->retry_any_method[in->status] || (p->retry_on[in->status] && method_ok);
	case RETRY_ERR_REFUSED:
	case RETRY_ERR_RESET:
		return p->retry_conn && method_ok;
	case RETRY_ERR_TIMEOUT:
		return p->retry_timeout && method_ok;
	case RETRY_ERR_OTHER:
		break;
	}
	return false;
}

/* The wait the server asked for: Retry-After, else RateLimit t=.  False when none. */
static bool server_wait(const struct retry_input *in, uint64_t *wait_ns)
{
	if (in->error != RETRY_ERR_NONE)
		return false;
	if (in->retry_after != NULL)
		return retry_after_parse(in->retry_after, in->now_wall_s, wait_ns) == 0;
	if (in->ratelimit != NULL)
		return ratelimit_parse_t(in->ratelimit, wait_ns) == 0;
	return false;
}

/* Fill out->wait_ns from the server's wait, the blind fallback or the backoff;
 * returns a give-up reason, or RETRY_REASON_RETRY. */
static enum retry_reason choose_wait(const struct retry_policy *p, const struct retry_input *in,
                                     struct prng *rng, struct retry_decision *out)
{
	uint64_t sw;

	if (p->honour_retry_after && server_wait(in, &sw)) {
		out->server_wait = true;
		out->wait_ns = sw;  /* kept on a fail-fast, for "server asked for ..." */
		if (sw == 0 && p->zero_retry_after_fails)
			return RETRY_REASON_RETRY_AFTER_TOO_LONG;
		if (p->max_retry_after_ns > 0 && sw > p->max_retry_after_ns)
			return RETRY_REASON_RETRY_AFTER_TOO_LONG;
		if (p->clamp_retry_after && p->cap_ns > 0 && sw > p->cap_ns)
			sw = p->cap_ns;
		if (p->retry_after_jitter_ns > 0)
			sw = sat_add(sw, ns_from_double(prng_double(rng) * (double)p->retry_after_jitter_ns));
		out->wait_ns = sw;
		return RETRY_REASON_RETRY;
	}
	if (p->blind_wait_ns > 0) {
		if (p->blind_max > 0 && in->blind_waits >= p->blind_max)
			return RETRY_REASON_ATTEMPTS;
		out->wait_ns = p->blind_wait_ns;
		out->blind = true;
		return RETRY_REASON_RETRY;
	}
	out->wait_ns = retry_backoff(p, in->attempt, in->prev_wait_ns, rng);
	return RETRY_REASON_RETRY;
}

/* Everything but success: the reason, with out->wait_ns filled when it is RETRY. */
static enum retry_reason decide_reason(const struct retry_policy *p, const struct retry_input *in,
                                       struct prng *rng, struct retry_decision *out)
{
	enum retry_reason r;

	if (!outcome_retryable(p, in))
		return RETRY_REASON_NOT_RETRYABLE;
	if (in->attempt >= p->max_attempts)
		return RETRY_REASON_ATTEMPTS;
	r = choose_wait(p, in, rng, out);
	if (r != RETRY_REASON_RETRY)
		return r;
	if (p->deadline_ns > 0 && sat_add(in->elapsed_ns, out->wait_ns) > p->deadline_ns)
		return RETRY_REASON_DEADLINE;
	if (p->total_wait_cap_ns > 0 && sat_add(in->waited_ns, out->wait_ns) > p->total_wait_cap_ns)
		return RETRY_REASON_DEADLINE;
	if (in->budget != NULL && !retry_budget_check(in->budget, in->now_ns, in->error)) {
		retry_budget_note_refused(in->budget);
		return RETRY_REASON_BUDGET;
	}
	return RETRY_REASON_RETRY;
}

void retry_decide(const struct retry_policy *p, const struct retry_input *in, struct prng *rng,
                  struct retry_decision *out)
{
	memset(out, 0, sizeof(*out));
	if (in->error == RETRY_ERR_NONE && in->status >= 100 && in->status < 400) {
		out->reason = RETRY_REASON_OK;
		return;
	}
	out->reason = decide_reason(p, in, rng, out);
	out->retry = out->reason == RETRY_REASON_RETRY;
	if (!out->retry && out->reason != RETRY_REASON_RETRY_AFTER_TOO_LONG) {
		out->wait_ns = 0;
		out->blind = false;
	}
}
