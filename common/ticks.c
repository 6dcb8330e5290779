/* 1-2-5 axis steps and their labels. */
#include "common/ticks.h"

#include <math.h>
#include <stdio.h>

double ticks_step(double span, unsigned most)
{
	double raw = span / (most ? most : 1), p, m;

	if (!(raw > 0))
		return 1;
	p = pow(10, floor(log10(raw)));
	m = raw / p;
	/* A hair of slack: 4 / 4 steps is a step of 1, not of 2 because of rounding. */
	if (m <= 1.000001)
		return p;
	if (m <= 2.000001)
		return 2 * p;
	if (m <= 5.000001)
		return 5 * p;
	return 10 * p;
}

double ticks_step_at_least(double span, unsigned most, double min_step)
{
	double s = ticks_step(span, most);

	return s < min_step ? min_step : s;
}

int ticks_decimals(double step)
{
	int d = 0;

	/* A 1-2-5 step below 1 has one significant digit: as many decimals as it has leading places. */
	while (d < 9 && step < 0.999999) {
		step *= 10;
		d++;
	}
	return d;
}

char *ticks_label(double v, int decimals, const char *unit, char *buf, size_t len)
{
	/* -0.0 reads as 0 */
	snprintf(buf, len, "%.*f%s", decimals, v == 0 ? 0.0 : v, unit ? unit : "");
	return buf;
}
