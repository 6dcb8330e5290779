/* The knob overrides behind the hammer's retry flags (retry_policy_set). */
#include "common/retry/retry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/parse.h"

#define MS(x) ((uint64_t)(x) * NS_PER_MS)
#define SEC(x) ((uint64_t)(x) * NS_PER_SEC)

static const char *const BACKOFF_NAMES[] = { "none", "constant", "exponential", "full",
                                             "equal", "decorrelated", "randomized" };
static const enum backoff_kind BACKOFF_KINDS[] = { BACKOFF_NONE, BACKOFF_CONSTANT, BACKOFF_EXPONENTIAL,
                                                   BACKOFF_FULL, BACKOFF_EQUAL, BACKOFF_DECORRELATED,
                                                   BACKOFF_RANDOMIZED };

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

const char *retry_backoff_name(enum backoff_kind k)
{
	for (size_t i = 0; i < sizeof(BACKOFF_KINDS) / sizeof(BACKOFF_KINDS[0]); i++)
		if (BACKOFF_KINDS[i] == k)
			return BACKOFF_NAMES[i];
	return "?";
}
