#include "common/httpdate.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static const char WDAY[7][4] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" };
static const char MON[12][4] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
static const char *const WDAY_LONG[7] = { "Sunday", "Monday", "Tuesday", "Wednesday",
                                          "Thursday", "Friday", "Saturday" };

void httpdate_format(time_t t, char out[HTTPDATE_LEN])
{
	struct tm tm;
	char tmp[64];

	gmtime_r(&t, &tm);
	snprintf(tmp, sizeof(tmp), "%s, %02d %s %04d %02d:%02d:%02d GMT",
	         WDAY[tm.tm_wday], tm.tm_mday, MON[tm.tm_mon], tm.tm_year + 1900,
	         tm.tm_hour, tm.tm_min, tm.tm_sec);
	snprintf(out, HTTPDATE_LEN, "%.29s", tmp);
}

/* The broken-down fields every form fills in. */
struct hd_fields {
	int wday;   /* 0-6, from the name */
	int mday;
	int mon;    /* 0-11 */
	int year;
	int hour, min, sec;
};

/* Consume exactly n ASCII digits into *v. */
static bool take_digits(const char **p, int n, int *v)
{
	int x = 0;

	for (int i = 0; i < n; i++) {
		char c = (*p)[i];

		if (c < '0' || c > '9')
			return false;
		x = x * 10 + (c - '0');
	}
	*p += n;
	*v = x;
	return true;
}

/* Consume the literal lit (case-sensitive, as RFC 9110 requires). */
static bool take_lit(const char **p, const char *lit)
{
	size_t n = strlen(lit);

	if (strncmp(*p, lit, n) != 0)
		return false;
	*p += n;
	return true;
}

static bool take_month(const char **p, int *mon)
{
	for (int i = 0; i < 12; i++)
		if (take_lit(p, MON[i])) {
			*mon = i;
			return true;
		}
	return false;
}

static bool take_short_wday(const char **p, int *wday)
{
	for (int i = 0; i < 7; i++)
		if (take_lit(p, WDAY[i])) {
			*wday = i;
			return true;
		}
	return false;
}

/* "HH:MM:SS" */
static bool take_time(const char **p, struct hd_fields *f)
{
	return take_digits(p, 2, &f->hour) && take_lit(p, ":") &&
	       take_digits(p, 2, &f->min) && take_lit(p, ":") &&
	       take_digits(p, 2, &f->sec);
}

/* "Sun, 06 Nov 1994 08:49:37 GMT" */
static bool parse_imf(const char *p, struct hd_fields *f, const char **end)
{
	bool ok = take_short_wday(&p, &f->wday) && take_lit(&p, ", ") &&
	          take_digits(&p, 2, &f->mday) && take_lit(&p, " ") &&
	          take_month(&p, &f->mon) && take_lit(&p, " ") &&
	          take_digits(&p, 4, &f->year) && take_lit(&p, " ") &&
	          take_time(&p, f) && take_lit(&p, " GMT");

	*end = p;
	return ok;
}

/* "Sunday, 06-Nov-94 08:49:37 GMT"; two-digit years 70-99 are 19xx, 00-69 20xx (POSIX %y). */
static bool parse_rfc850(const char *p, struct hd_fields *f, const char **end)
{
	bool ok = false;
	int yy = 0;

	for (int i = 0; i < 7 && !ok; i++)
		if (take_lit(&p, WDAY_LONG[i])) {
			f->wday = i;
			ok = true;
		}
	ok = ok && take_lit(&p, ", ") && take_digits(&p, 2, &f->mday) && take_lit(&p, "-") &&
	     take_month(&p, &f->mon) && take_lit(&p, "-") && take_digits(&p, 2, &yy) &&
	     take_lit(&p, " ") && take_time(&p, f) && take_lit(&p, " GMT");
	f->year = yy < 70 ? 2000 + yy : 1900 + yy;
	*end = p;
	return ok;
}

/* "Sun Nov  6 08:49:37 1994" (day is space-padded or two digits) */
static bool parse_asctime(const char *p, struct hd_fields *f, const char **end)
{
	bool ok = take_short_wday(&p, &f->wday) && take_lit(&p, " ") &&
	          take_month(&p, &f->mon) && take_lit(&p, " ");

	if (ok && *p == ' ') {
		p++;
		ok = take_digits(&p, 1, &f->mday);
	} else if (ok) {
		ok = take_digits(&p, 2, &f->mday);
	}
	ok = ok && take_lit(&p, " ") && take_time(&p, f) && take_lit(&p, " ") &&
	     take_digits(&p, 4, &f->year);
	*end = p;
	return ok;
}

static bool is_leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;

	return era * 146097 + doe - 719468;
}

/* Range checks plus the weekday matching the date; fills *out. */
static bool fields_to_time(const struct hd_fields *f, time_t *out)
{
	static const int MDAYS[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int64_t days;
	int dim;

	if (f->mon < 0 || f->mon > 11 || f->hour > 23 || f->min > 59 || f->sec > 60)
		return false;
	dim = MDAYS[f->mon] + (f->mon == 1 && is_leap(f->year));
	if (f->mday < 1 || f->mday > dim)
		return false;
	days = days_from_civil(f->year, f->mon + 1, f->mday);
	/* 1970-01-01 was a Thursday (4). */
	if ((int)(((days % 7) + 7 + 4) % 7) != f->wday)
		return false;
	*out = (time_t)(days * 86400 + f->hour * 3600 + f->min * 60 + f->sec);
	return true;
}

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

int httpdate_parse(const char *s, time_t *out)
{
	struct hd_fields f = { 0 };
	const char *p, *end = NULL;
	bool ok;

	if (s == NULL)
		return -1;
	p = skip_ws(s);
	if (p[0] != '\0' && p[1] != '\0' && p[2] != '\0' && p[3] == ',')
		ok = parse_imf(p, &f, &end);
	else if (strchr(p, '-') != NULL)
		ok = parse_rfc850(p, &f, &end);
	else
		ok = parse_asctime(p, &f, &end);
	if (!ok || *skip_ws(end) != '\0')
		return -1;
	return fields_to_time(&f, out) ? 0 : -1;
}
