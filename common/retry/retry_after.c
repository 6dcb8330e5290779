/* Retry-After and RateLimit t= parsing for the retry engine. */
#include "common/retry/retry.h"

#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/httpdate.h"

static const char *skip_ows(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* Seconds to ns, saturating at RETRY_WAIT_MAX_NS. */
static uint64_t secs_to_ns(uint64_t s)
{
	if (s > RETRY_WAIT_MAX_NS / NS_PER_SEC)
		return RETRY_WAIT_MAX_NS;
	return s * NS_PER_SEC;
}

/* An optionally negative run of digits at *p, saturating; false when none. */
static bool take_int(const char **p, bool *neg, uint64_t *v)
{
	const char *q = *p;
	uint64_t x = 0;

	*neg = *q == '-';
	if (*neg)
		q++;
	if (*q < '0' || *q > '9')
		return false;
	for (; *q >= '0' && *q <= '9'; q++)
		x = x > (UINT64_MAX - 9) / 10 ? UINT64_MAX : x * 10 + (uint64_t)(*q - '0');
	*p = q;
	*v = x;
	return true;
}

int retry_after_parse(const char *value, int64_t now_wall_s, uint64_t *wait_ns)
{
	const char *p;
	bool neg;
	uint64_t secs;
	time_t t;

	if (value == NULL)
		return -1;
	p = skip_ows(value);
	if ((*p >= '0' && *p <= '9') || *p == '-') {
		if (!take_int(&p, &neg, &secs) || *skip_ows(p) != '\0')
			return -1;
		*wait_ns = neg ? 0 : secs_to_ns(secs);
		return 0;
	}
	if (httpdate_parse(p, &t) != 0)
		return -1;
	*wait_ns = (int64_t)t <= now_wall_s ? 0 : secs_to_ns((uint64_t)((int64_t)t - now_wall_s));
	return 0;
}

/* One parameter of a structured-field item: ";key=value". */
struct rl_item {
	bool has_t, has_r;
	bool t_neg;
	uint64_t t, r;
};

/* Parse one list member up to ',' or the end; returns the rest, or NULL when malformed. */
static const char *rl_parse_item(const char *p, struct rl_item *it)
{
	bool in_str = false;

	memset(it, 0, sizeof(*it));
	for (; *p != '\0' && (in_str || *p != ','); p++) {
		if (*p == '"')
			in_str = !in_str;
		else if (in_str && *p == '\\' && p[1] != '\0')
			p++;
		else if (!in_str && *p == ';') {
			const char *k = skip_ows(p + 1);
			bool neg;
			uint64_t v;
			bool is_t = strncmp(k, "t=", 2) == 0, is_reset = strncmp(k, "reset=", 6) == 0;
			bool is_r = strncmp(k, "r=", 2) == 0;

			if (!is_t && !is_reset && !is_r)
				continue;
			k += is_reset ? 6 : 2;
			if (!take_int(&k, &neg, &v))
				return NULL;
			if (is_r) {
				it->has_r = true;
				it->r = neg ? 0 : v;
			} else {
				it->has_t = true;
				it->t_neg = neg;
				it->t = v;
			}
			p = k - 1;
		}
	}
	return in_str ? NULL : p;
}

/*
 * With several policies in one header, the wait is the longest t of those
 * exhausted (r=0); when none says r=0, the first t given.
 */
int ratelimit_parse_t(const char *value, uint64_t *wait_ns)
{
	struct rl_item it;
	bool have_first = false, have_exhausted = false;
	uint64_t first = 0, exhausted = 0;
	const char *p = value;

	if (value == NULL)
		return -1;
	while (*p != '\0') {
		p = rl_parse_item(p, &it);
		if (p == NULL)
			return -1;
		if (*p == ',')
			p++;
		if (!it.has_t)
			continue;
		uint64_t t = it.t_neg ? 0 : it.t;

		if (!have_first) {
			have_first = true;
			first = t;
		}
		if (it.has_r && it.r == 0 && (!have_exhausted || t > exhausted)) {
			have_exhausted = true;
			exhausted = t;
		}
	}
	if (!have_first)
		return -1;
	*wait_ns = secs_to_ns(have_exhausted ? exhausted : first);
	return 0;
}
