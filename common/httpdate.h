#ifndef RATELAB_HTTPDATE_H
#define RATELAB_HTTPDATE_H

#include <stddef.h>
#include <time.h>

/* "Sun, 06 Nov 1994 08:49:37 GMT" plus the terminating NUL. */
#define HTTPDATE_LEN 30

/* Format t (seconds since the epoch, UTC) as an IMF-fixdate.  Thread-safe. */
void httpdate_format(time_t t, char out[HTTPDATE_LEN]);

/*
 * Parse an HTTP-date in any of the three forms of RFC 9110 5.6.7:
 * IMF-fixdate, obsolete RFC 850 ("Sunday, 06-Nov-94 08:49:37 GMT") and
 * asctime ("Sun Nov  6 08:49:37 1994").  Leading and trailing whitespace is
 * allowed.  Returns 0 and sets *out, or -1 on anything malformed (bad day or
 * month name, field out of range, trailing junk).  Thread-safe, no locale.
 */
int httpdate_parse(const char *s, time_t *out);

#endif
