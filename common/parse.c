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

/* The multiplier of a size unit ("", "K", "KB", "KiB", ... in either case); 0 when not one. */
static uint64_t unit_bytes(const char *u)
{
	static const char letters[] = "KMGT";
	const char *l = *u ? strchr(letters, u[0] & ~0x20) : NULL;
	uint64_t mult = 1;

	if (*u == '\0')
		return 1;
	if (l == NULL || *l == '\0')
		return 0;
	for (const char *p = letters; p <= l; p++)
		mult <<= 10;
	u++;
	if (*u == '\0' || strcmp(u, "B") == 0 || strcmp(u, "b") == 0 || strcmp(u, "iB") == 0 || strcmp(u, "ib") == 0)
		return mult;
	return 0;
}

int parse_bytes(const char *s, uint64_t min, uint64_t max, uint64_t *out, char *err, size_t errlen)
{
	size_t n = s ? strspn(s, "0123456789") : 0;
	uint64_t mult = n ? unit_bytes(s + n) : 0;
	unsigned long long v;

	if (n == 0 || n > 20 || mult == 0)
		return fail(err, errlen, "bad size (want bytes, or e.g. 64M, 1G)", s);
	errno = 0;
	v = strtoull(s, NULL, 10);
	if (errno || v > UINT64_MAX / mult || v * mult < min || v * mult > max) {
		char lo[32], hi[32];

		parse_format_bytes(min, lo, sizeof(lo));
		parse_format_bytes(max, hi, sizeof(hi));
		if (err && errlen)
			snprintf(err, errlen, "'%s' out of range (%s to %s)", s, lo, hi);
		return -1;
	}
	*out = v * mult;
	return 0;
}

void parse_format_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)bytes;
	size_t u = 0;

	if (bytes < 1024) {
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
		return;
	}
	for (v /= 1024; v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0]); u++)
		v /= 1024;
	/* Whole values print without a decimal: "64 MiB", not "64.0 MiB". */
	if (v == (double)(uint64_t)v)
		snprintf(buf, len, "%.0f %s", v, units[u]);
	else
		snprintf(buf, len, "%.1f %s", v, units[u]);
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

void parse_format_exact_duration(uint64_t ns, char *out, size_t len)
{
	static const struct { const char *unit; uint64_t ns; } U[] = {
		{ "d", 86400 * NS_PER_SEC }, { "h", 3600 * NS_PER_SEC }, { "m", 60 * NS_PER_SEC },
		{ "s", NS_PER_SEC }, { "ms", NS_PER_MS }, { "us", NS_PER_US },
	};

	for (size_t i = 0; i < sizeof(U) / sizeof(U[0]); i++)
		if (ns != 0 && ns % U[i].ns == 0) {
			snprintf(out, len, "%llu%s", (unsigned long long)(ns / U[i].ns), U[i].unit);
			return;
		}
	snprintf(out, len, "%lluns", (unsigned long long)ns);
}
