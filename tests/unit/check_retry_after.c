/* Retry-After, HTTP-date and RateLimit t= parsing. */
#include <check.h>
#include <string.h>

#include "common/clock.h"
#include "common/httpdate.h"
#include "common/retry/retry.h"

/* Sun, 06 Nov 1994 08:49:37 GMT */
#define T0 784111777

START_TEST(httpdate_three_forms)
{
	static const char *const FORMS[] = {
		"Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994",
		"  Sun, 06 Nov 1994 08:49:37 GMT \t",
	};
	time_t t;

	for (size_t i = 0; i < 4; i++) {
		t = 0;
		ck_assert_msg(httpdate_parse(FORMS[i], &t) == 0, "rejected '%s'", FORMS[i]);
		ck_assert_int_eq((long long)t, T0);
	}
	ck_assert_int_eq(httpdate_parse("Thu, 01 Jan 1970 00:00:00 GMT", &t), 0);
	ck_assert_int_eq((long long)t, 0);
	ck_assert_int_eq(httpdate_parse("Thu, 29 Feb 2024 23:59:59 GMT", &t), 0);
	ck_assert_int_eq((long long)t, 1709251199);
	ck_assert_int_eq(httpdate_parse("Wed, 15 Nov 2023 10:00:00 GMT", &t), 0);
	ck_assert_int_eq((long long)t, 1700042400);
	ck_assert_int_eq(httpdate_parse("Saturday, 01-Jan-00 00:00:00 GMT", &t), 0);  /* 2000 */
	ck_assert_int_eq((long long)t, 946684800);
	ck_assert_int_eq(httpdate_parse("Tue Nov 14 22:13:20 2023", &t), 0);
	ck_assert_int_eq((long long)t, 1700000000);
}
END_TEST

START_TEST(httpdate_round_trip)
{
	char buf[HTTPDATE_LEN];
	time_t t;

	for (time_t x = 0; x < (time_t)4102444800LL; x += 7777777) {
		httpdate_format(x, buf);
		ck_assert_msg(httpdate_parse(buf, &t) == 0, "rejected own '%s'", buf);
		ck_assert_int_eq((long long)t, (long long)x);
	}
}
END_TEST

START_TEST(httpdate_malformed)
{
	static const char *const BAD[] = {
		"", "   ", "Sun, 06 Nov 1994 08:49:37", "Sun, 06 Nov 1994 08:49:37 UTC",
		"Sux, 06 Nov 1994 08:49:37 GMT", "Mon, 06 Nov 1994 08:49:37 GMT" /* wrong weekday */,
		"sun, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nox 1994 08:49:37 GMT", "Sun, 6 Nov 1994 08:49:37 GMT",
		"Sun, 06 Nov 94 08:49:37 GMT", "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:60:00 GMT",
		"Sun, 06 Nov 1994 08:49:61 GMT", "Thu, 30 Feb 2023 00:00:00 GMT", "Tue, 29 Feb 2023 00:00:00 GMT",
		"Sun, 00 Nov 1994 08:49:37 GMT", "Sun, 31 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 GMTx",
		"Sun, 06 Nov 1994 08:49:37 GMT junk", "Sunday, 06-Nov-1994 08:49:37 GMT",
		"Sundae, 06-Nov-94 08:49:37 GMT", "Sun Nov 6 08:49:37 1994", "Sun Nov  6 08:49:37 94",
		"Sun Nov  6 08:49:37 1994 GMT", "1994-11-06T08:49:37Z", "Sun,06 Nov 1994 08:49:37 GMT",
	};
	time_t t;

	for (size_t i = 0; i < sizeof(BAD) / sizeof(BAD[0]); i++)
		ck_assert_msg(httpdate_parse(BAD[i], &t) == -1, "accepted '%s'", BAD[i]);
	ck_assert_int_eq(httpdate_parse(NULL, &t), -1);
}
END_TEST

START_TEST(retry_after_delta_seconds)
{
	uint64_t w = 1;

	ck_assert_int_eq(retry_after_parse("3", T0, &w), 0);
	ck_assert_uint_eq(w, 3 * NS_PER_SEC);
	ck_assert_int_eq(retry_after_parse(" 3 ", T0, &w), 0);   /* OWS around a field value */
	ck_assert_uint_eq(w, 3 * NS_PER_SEC);
	ck_assert_int_eq(retry_after_parse("0", T0, &w), 0);
	ck_assert_uint_eq(w, 0);
	w = 1;
	ck_assert_int_eq(retry_after_parse("-5", T0, &w), 0);    /* negative: 0 */
	ck_assert_uint_eq(w, 0);
	ck_assert_int_eq(retry_after_parse("3600", T0, &w), 0);
	ck_assert_uint_eq(w, 3600 * NS_PER_SEC);
	ck_assert_int_eq(retry_after_parse("9223372036", T0, &w), 0);   /* the last second that fits */
	ck_assert_uint_eq(w, 9223372036ULL * NS_PER_SEC);
	ck_assert_int_eq(retry_after_parse("9223372037", T0, &w), 0);
	ck_assert_uint_eq(w, RETRY_WAIT_MAX_NS);
	ck_assert_int_eq(retry_after_parse("99999999999999999999999999999999", T0, &w), 0);
	ck_assert_uint_eq(w, RETRY_WAIT_MAX_NS);
}
END_TEST

START_TEST(retry_after_dates)
{
	uint64_t w = 1;

	ck_assert_int_eq(retry_after_parse("Sun, 06 Nov 1994 08:49:42 GMT", T0, &w), 0);
	ck_assert_uint_eq(w, 5 * NS_PER_SEC);
	ck_assert_int_eq(retry_after_parse("Sunday, 06-Nov-94 08:50:37 GMT", T0, &w), 0);
	ck_assert_uint_eq(w, 60 * NS_PER_SEC);
	ck_assert_int_eq(retry_after_parse("Sun Nov  6 09:49:37 1994", T0, &w), 0);
	ck_assert_uint_eq(w, 3600 * NS_PER_SEC);
	ck_assert_int_eq(retry_after_parse("Sun, 06 Nov 1994 08:49:37 GMT", T0, &w), 0);  /* now: 0 */
	ck_assert_uint_eq(w, 0);
	w = 1;
	ck_assert_int_eq(retry_after_parse("Thu, 01 Jan 1970 00:00:00 GMT", T0, &w), 0);  /* past: 0 */
	ck_assert_uint_eq(w, 0);
}
END_TEST

START_TEST(retry_after_malformed)
{
	static const char *const BAD[] = {
		"", " ", "1.5", "abc", "3s", "+3", "- 5", "-", "0x10", "3 4", "1e3",
		"Sux, 06 Nov 1994 08:49:42 GMT", "Mon, 30 Feb 2026 00:00:00 GMT", "Sun, 06 Nov 1994",
	};
	uint64_t w = 77;

	for (size_t i = 0; i < sizeof(BAD) / sizeof(BAD[0]); i++)
		ck_assert_msg(retry_after_parse(BAD[i], T0, &w) == -1, "accepted '%s'", BAD[i]);
	ck_assert_uint_eq(w, 77);  /* untouched on error */
	ck_assert_int_eq(retry_after_parse(NULL, T0, &w), -1);
}
END_TEST

START_TEST(ratelimit_t)
{
	uint64_t w = 0;

	ck_assert_int_eq(ratelimit_parse_t("\"default\";r=0;t=3", &w), 0);
	ck_assert_uint_eq(w, 3 * NS_PER_SEC);
	ck_assert_int_eq(ratelimit_parse_t("default;r=4;t=60", &w), 0);
	ck_assert_uint_eq(w, 60 * NS_PER_SEC);
	/* Several policies: the longest of the exhausted ones. */
	ck_assert_int_eq(ratelimit_parse_t("\"hour\";r=40;t=3000, \"min\";r=0;t=7, \"burst\";r=0;t=2", &w), 0);
	ck_assert_uint_eq(w, 7 * NS_PER_SEC);
	ck_assert_int_eq(ratelimit_parse_t("limit=5, remaining=0, reset=9", &w), -1);  /* no ';' params */
	ck_assert_int_eq(ratelimit_parse_t("\"x\";reset=9", &w), 0);                  /* legacy reset= */
	ck_assert_uint_eq(w, 9 * NS_PER_SEC);
	ck_assert_int_eq(ratelimit_parse_t("\"a;t=5\";r=0", &w), -1);  /* inside a string: not a param */
	ck_assert_int_eq(ratelimit_parse_t("\"default\";r=0", &w), -1);
	ck_assert_int_eq(ratelimit_parse_t("\"default\";t=abc", &w), -1);
	ck_assert_int_eq(ratelimit_parse_t("\"default;t=3", &w), -1);  /* unterminated string */
	ck_assert_int_eq(ratelimit_parse_t("", &w), -1);
	ck_assert_int_eq(ratelimit_parse_t(NULL, &w), -1);
	ck_assert_int_eq(ratelimit_parse_t("\"d\";t=99999999999999999999999", &w), 0);
	ck_assert_uint_eq(w, RETRY_WAIT_MAX_NS);
}
END_TEST

Suite *retry_after_suite(void)
{
	Suite *s = suite_create("retry_after");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, httpdate_three_forms);
	tcase_add_test(tc, httpdate_round_trip);
	tcase_add_test(tc, httpdate_malformed);
	tcase_add_test(tc, retry_after_delta_seconds);
	tcase_add_test(tc, retry_after_dates);
	tcase_add_test(tc, retry_after_malformed);
	tcase_add_test(tc, ratelimit_t);
	suite_add_tcase(s, tc);
	return s;
}
