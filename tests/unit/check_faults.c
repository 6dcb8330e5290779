/* --faults parsing and the rates of the draws. */
#include <check.h>
#include <string.h>

#include "common/clock.h"
#include "server/faults.h"

START_TEST(parse_full_spec)
{
	struct faults f = { 0 };
	char err[160];

	ck_assert_int_eq(faults_parse("503:5,502:2,504:1,reset:1,no-retry-after:10,delay=50ms:20", &f, err, sizeof(err)), 0);
	ck_assert_uint_eq(f.n, 6);
	ck_assert_int_eq(f.e[0].kind, FAULT_STATUS);
	ck_assert_int_eq(f.e[0].status, 503);
	ck_assert_double_eq(f.e[0].percent, 5.0);
	ck_assert_int_eq(f.e[3].kind, FAULT_RESET);
	ck_assert_int_eq(f.e[4].kind, FAULT_NO_RETRY_AFTER);
	ck_assert_double_eq(f.e[4].percent, 10.0);
	ck_assert_int_eq(f.e[5].kind, FAULT_DELAY);
	ck_assert_uint_eq(f.e[5].delay_ns, 50 * NS_PER_MS);
	ck_assert_double_eq(f.e[5].percent, 20.0);
}
END_TEST

START_TEST(parse_errors_name_the_entry)
{
	static const char *bad[][2] = {
		{ "teapot:5", "teapot" }, { "503:101", "101" }, { "503:abc", "abc" }, { "delay=xx:5", "xx" },
		{ "99:5", "99" }, { "503:60,502:50", "more than 100" }, { "", "empty" }, { "150", "200..599" },
		{ "100:5", "100" }, { "600", "600" },
	};
	char err[160];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct faults f = { 0 };

		err[0] = '\0';
		ck_assert_msg(faults_parse(bad[i][0], &f, err, sizeof(err)) == -1, "accepted '%s'", bad[i][0]);
		ck_assert_msg(strstr(err, bad[i][1]) != NULL, "'%s': error '%s' lacks '%s'", bad[i][0], err, bad[i][1]);
	}
}
END_TEST

START_TEST(query_lists)
{
	struct faults f = { 0 };
	char err[160];

	ck_assert_int_eq(faults_parse_query("503", "50ms", &f, err, sizeof(err)), 0);
	ck_assert_uint_eq(f.n, 2);
	ck_assert_int_eq(f.e[0].status, 503);
	ck_assert_double_eq(f.e[0].percent, 100.0);
	ck_assert_uint_eq(f.e[1].delay_ns, 50 * NS_PER_MS);
	memset(&f, 0, sizeof(f));
	ck_assert_int_eq(faults_parse_query("503:50,429:10", NULL, &f, err, sizeof(err)), 0);
	ck_assert_uint_eq(f.n, 2);
	ck_assert_int_eq(f.e[1].status, 429);
	ck_assert_double_eq(f.e[1].percent, 10.0);
	ck_assert_int_eq(faults_parse_query("nope", NULL, &f, err, sizeof(err)), -1);
}
END_TEST

START_TEST(pick_rates_and_replay)
{
	struct faults f = { 0 };
	struct prng a, b;
	struct fault_pick p, q;
	unsigned n503 = 0, n502 = 0, nreset = 0, ndelay = 0, nnra = 0, total = 100000;
	char err[160];

	ck_assert_int_eq(faults_parse("503:5,502:2,reset:1,no-retry-after:10,delay=50ms:20", &f, err, sizeof(err)), 0);
	prng_seed(&a, 42);
	prng_seed(&b, 42);
	for (unsigned i = 0; i < total; i++) {
		faults_pick(&f, &a, &p);
		faults_pick(&f, &b, &q);
		/* Asserted only on failure: a passing ck_assert costs a write, 200,000 of them here. */
		if (memcmp(&p, &q, sizeof(p)) != 0)
			ck_abort_msg("pick %u differs between two PRNGs of seed 42", i);
		if (p.reset && p.status)
			ck_abort_msg("pick %u is both a reset and status %d", i, p.status);
		n503 += p.status == 503;
		n502 += p.status == 502;
		nreset += p.reset;
		ndelay += p.delay_ns == 50 * NS_PER_MS;
		nnra += p.no_retry_after;
	}
	/* Expected +- 5 standard deviations. */
	ck_assert_msg(n503 > 4655 && n503 < 5345, "503: %u", n503);
	ck_assert_msg(n502 > 1779 && n502 < 2221, "502: %u", n502);
	ck_assert_msg(nreset > 843 && nreset < 1157, "reset: %u", nreset);
	ck_assert_msg(ndelay > 19367 && ndelay < 20633, "delay: %u", ndelay);
	ck_assert_msg(nnra > 9525 && nnra < 10475, "no-retry-after: %u", nnra);
}
END_TEST

START_TEST(hundred_percent_always)
{
	struct faults f = { 0 };
	struct prng r;
	struct fault_pick p;
	char err[160];

	ck_assert_int_eq(faults_parse("502", &f, err, sizeof(err)), 0);
	prng_seed(&r, 7);
	for (int i = 0; i < 1000; i++) {
		faults_pick(&f, &r, &p);
		ck_assert_int_eq(p.status, 502);
		ck_assert_uint_eq(p.delay_ns, 0);
	}
	ck_assert(!faults_empty(&f));
}
END_TEST

Suite *faults_suite(void)
{
	Suite *s = suite_create("faults");
	TCase *tc = tcase_create("faults");

	tcase_add_test(tc, parse_full_spec);
	tcase_add_test(tc, parse_errors_name_the_entry);
	tcase_add_test(tc, query_lists);
	tcase_add_test(tc, pick_rates_and_replay);
	tcase_add_test(tc, hundred_percent_always);
	suite_add_tcase(s, tc);
	return s;
}
