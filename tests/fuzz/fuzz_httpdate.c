/*
 * libFuzzer target: HTTP-dates (common/httpdate.h) and Retry-After values
 * (retry_after_parse in common/retry.h), the two things a hostile or broken
 * server sends the hammer.  Checks: a parsed IMF-fixdate date round-trips
 * through httpdate_format, and a Retry-After wait never exceeds the
 * saturation value, whatever the digits or the date.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/httpdate.h"
#include "common/retry/retry.h"

#define FUZZ_MAX 256
/* 9999-12-31T23:59:59Z: the last date an IMF-fixdate can carry. */
#define LAST_FIXDATE 253402300799LL

static void check_httpdate(const char *s)
{
	char buf[HTTPDATE_LEN];
	time_t t = 0, back = 0;

	if (httpdate_parse(s, &t) != 0)
		return;
	if (t < 0 || (long long)t > LAST_FIXDATE)
		return;
	httpdate_format(t, buf);
	if (httpdate_parse(buf, &back) != 0 || back != t)
		abort();
}

static void check_retry_after(const char *s)
{
	static const int64_t nows[] = { 0, 784111777, 1800000000, INT64_MAX / 2 };
	uint64_t wait = 0;

	for (size_t i = 0; i < sizeof(nows) / sizeof(nows[0]); i++) {
		if (retry_after_parse(s, nows[i], &wait) == 0 && wait > RETRY_WAIT_MAX_NS)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char s[FUZZ_MAX + 1];

	if (size > FUZZ_MAX)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	check_httpdate(s);
	check_retry_after(s);
	return 0;
}
