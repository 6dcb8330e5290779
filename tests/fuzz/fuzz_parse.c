/*
 * libFuzzer target: durations, rates and numbers as users type them
 * (common/parse.h).  Besides "no crash, no UB", it checks what a caller
 * relies on: a success never leaves an out-of-range value, a duration is the
 * number times its unit (within rounding), and a rate's count is >= 1.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"

#define FUZZ_MAX 256

static double unit_of(const char *s)
{
	static const struct { const char *name; double ns; } units[] = {
		{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 },
		{ "m", 60e9 }, { "h", 3600e9 }, { "d", 86400e9 },
	};
	size_t n = strspn(s, "0123456789.");

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strcmp(s + n, units[i].name) == 0)
			return units[i].ns;
	return 0;
}

static void check_duration(const char *s)
{
	char err[128], fmt[64];
	uint64_t ns = 0;
	double want, unit;

	if (parse_duration(s, &ns, err, sizeof(err)) != 0) {
		/* an error is one non-empty line (it quotes the input, so a
		 * newline typed by the user is the user's own) */
		if (err[0] == '\0' || (!strchr(s, '\n') && strchr(err, '\n')))
			abort();
		return;
	}
	parse_format_duration(ns, fmt, sizeof(fmt));
	unit = unit_of(s);
	if (unit == 0)
		return; /* the bare "0" form */
	want = strtod(s, NULL) * unit;
	/* the nanoseconds must be the number times the unit, not a wrapped value */
	if (fabs((double)ns - want) > 1.0 + want * 1e-12)
		abort();
}

static void check_rate(const char *s)
{
	uint64_t count = 0, period = 0;

	if (parse_rate(s, &count, &period, NULL, 0) == 0 && (count < 1 || period == 0))
		abort();
}

static void check_numbers(const char *s)
{
	uint64_t u = 0;
	double d = 0;

	if (parse_u64(s, 3, 1000, &u, NULL, 0) == 0 && (u < 3 || u > 1000))
		abort();
	if (parse_double(s, -1.5, 2.5, &d, NULL, 0) == 0 && !(d >= -1.5 && d <= 2.5))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char s[FUZZ_MAX + 1];

	if (size > FUZZ_MAX)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	check_duration(s);
	check_rate(s);
	check_numbers(s);
	return 0;
}
