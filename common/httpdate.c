#include "common/httpdate.h"

#include <stdio.h>

static const char WDAY[7][4] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" };
static const char MON[12][4] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };

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
