#include "common/parse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"

static int fail(char *err, size_t errlen, const char *what, const char *s)
{
	if (err && errlen)
		snprintf(err, errlen, "%s '%s'", what, s ? s : "");
	return -1;
}

static bool unit_ns(const char *u, uint64_t *mult)
{
	static const struct { const char *name; uint64_t ns; } units[] = {
		{ "ns", 1 }, { "us", NS_PER_US }, { "ms", NS_PER_MS },
		{ "s", NS_PER_SEC }, { "m", 60 * NS_PER_SEC },
		{ "h", 3600 * NS_PER_SEC }, { "d", 86400 * NS_PER_SEC },
	};

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(u, units[i].name) == 0) {
			*mult = units[i].ns;
			return true;
		}
	}
	return false;
}

/* Digits with at most one '.', no sign, no exponent: what strtod accepts too loosely. */
static size_t number_prefix(const char *s)
{
	size_t i = 0, digits = 0;
	bool dot = false;

	for (; s[i]; i++) {
		if (s[i] >= '0' && s[i] <= '9')
			digits++;
		else if (s[i] == '.' && !dot)
			dot = true;
		else
			break;
	}
	return digits ? i : 0;
}

int parse_duration(const char *s, uint64_t *out_ns, char *err, size_t errlen)
{
	uint64_t mult;
	size_t n;
	double v;

	if (!s || !*s)
		return fail(err, errlen, "empty duration", s);
	n = number_prefix(s);
	if (n == 0 || n > 40)
		return fail(err, errlen, "bad duration (want e.g. 250ms, 2s, 1m)", s);
	if (s[n] == '\0') {
		if (strspn(s, "0.") != n)
			return fail(err, errlen, "duration needs a unit (ns, us, ms, s, m, h, d)", s);
		*out_ns = 0;
		return 0;
	}
	if (!unit_ns(s + n, &mult))
		return fail(err, errlen, "bad duration unit (want ns, us, ms, s, m, h, d)", s);
	v = strtod(s, NULL) * (double)mult;
	/* 9e18 ns is about 104,000 days: anything longer is a typo, and the
	 * bound keeps the rounding below inside int64 range. */
	if (!(v >= 0) || v >= 9e18)
		return fail(err, errlen, "duration out of range", s);
	*out_ns = (uint64_t)(v + 0.5);
	return 0;
}

int parse_rate(const char *s, uint64_t *count, uint64_t *period_ns, char *err, size_t errlen)
{
	const char *slash;
	char num[32];
	size_t n;
	uint64_t mult;

	if (!s || !(slash = strchr(s, '/')))
		return fail(err, errlen, "bad rate (want e.g. 5/s, 30/1m)", s);
	n = (size_t)(slash - s);
	if (n == 0 || n >= sizeof(num))
		return fail(err, errlen, "bad rate count", s);
	memcpy(num, s, n);
	num[n] = '\0';
	if (parse_u64(num, 1, UINT32_MAX, count, NULL, 0) < 0)
		return fail(err, errlen, "bad rate count (want 1 or more)", s);
	if (unit_ns(slash + 1, &mult)) {
		*period_ns = mult;
		return 0;
	}
	if (parse_duration(slash + 1, period_ns, NULL, 0) < 0 || *period_ns == 0)
		return fail(err, errlen, "bad rate period (want e.g. s, 1m, 250ms)", s);
	return 0;
}

int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out, char *err, size_t errlen)
{
	unsigned long long v;
	char *end;

	if (!s || !*s || strspn(s, "0123456789") != strlen(s))
		return fail(err, errlen, "not a whole number", s);
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || v < min || v > max) {
		if (err && errlen)
			snprintf(err, errlen, "'%s' out of range (%llu to %llu)", s,
			         (unsigned long long)min, (unsigned long long)max);
		return -1;
	}
	*out = v;
	return 0;
}

int parse_double(const char *s, double min, double max, double *out, char *err, size_t errlen)
{
	size_t n;
	double v;

	if (!s || !*s)
		return fail(err, errlen, "not a number", s);
	n = number_prefix(s);
	if (n == 0 || s[n] != '\0')
		return fail(err, errlen, "not a number", s);
	v = strtod(s, NULL);
	if (!(v >= min && v <= max)) {
		if (err && errlen)
			snprintf(err, errlen, "'%s' out of range (%g to %g)", s, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

size_t parse_format_u64(char *out, uint64_t v)
{
	char tmp[PARSE_U64_CHARS];
	size_t n = 0, len;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	for (len = n; n > 0; n--)
		*out++ = tmp[n - 1];
	*out = '\0';
	return len;
}

void parse_format_duration(uint64_t ns, char *buf, size_t len)
{
	if (ns < NS_PER_MS)
		snprintf(buf, len, "%.0fus", (double)ns / NS_PER_US);
	else if (ns < NS_PER_SEC)
		snprintf(buf, len, "%.0fms", (double)ns / NS_PER_MS);
	else if (ns < 60 * NS_PER_SEC)
		snprintf(buf, len, "%.2fs", (double)ns / NS_PER_SEC);
	else
		snprintf(buf, len, "%llum%02llus", (unsigned long long)(ns / (60 * NS_PER_SEC)),
		         (unsigned long long)(ns / NS_PER_SEC % 60));
}
