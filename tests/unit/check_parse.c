#include <check.h>
#include <string.h>

#include "common/clock.h"
#include "common/parse.h"
#include "common/prng.h"

START_TEST(durations)
{
	uint64_t ns;
	char err[128];

	ck_assert_int_eq(parse_duration("250ms", &ns, err, sizeof(err)), 0);
	ck_assert_uint_eq(ns, 250 * NS_PER_MS);
	ck_assert_int_eq(parse_duration("2s", &ns, err, sizeof(err)), 0);
	ck_assert_uint_eq(ns, 2 * NS_PER_SEC);
	ck_assert_int_eq(parse_duration("1.5s", &ns, err, sizeof(err)), 0);
	ck_assert_uint_eq(ns, 1500 * NS_PER_MS);
	ck_assert_int_eq(parse_duration("1m", &ns, err, sizeof(err)), 0);
	ck_assert_uint_eq(ns, 60 * NS_PER_SEC);
	ck_assert_int_eq(parse_duration("1h", &ns, err, sizeof(err)), 0);
	ck_assert_uint_eq(ns, 3600 * NS_PER_SEC);
	ck_assert_int_eq(parse_duration("1d", &ns, err, sizeof(err)), 0);
	ck_assert_uint_eq(ns, 86400 * NS_PER_SEC);
	ck_assert_int_eq(parse_duration("100000d", &ns, err, sizeof(err)), 0);
	ck_assert_uint_eq(ns, 100000ULL * 86400 * NS_PER_SEC);
	ck_assert_int_eq(parse_duration("0", &ns, err, sizeof(err)), 0);
	ck_assert_uint_eq(ns, 0);
}
END_TEST

START_TEST(bad_durations)
{
	static const char *bad[] = { "", "5", "-1s", "1x", "s", "1.2.3s", "1e3s", "99999999999d", "106752d", "199099d", " 1s", "1s " };
	uint64_t ns;
	char err[128];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		ck_assert_msg(parse_duration(bad[i], &ns, err, sizeof(err)) == -1, "accepted '%s'", bad[i]);
		ck_assert_msg(strstr(err, bad[i]) != NULL, "error '%s' does not name '%s'", err, bad[i]);
	}
}
END_TEST

START_TEST(rates)
{
	uint64_t n, per;

	ck_assert_int_eq(parse_rate("5/s", &n, &per, NULL, 0), 0);
	ck_assert_uint_eq(n, 5);
	ck_assert_uint_eq(per, NS_PER_SEC);
	ck_assert_int_eq(parse_rate("30/1m", &n, &per, NULL, 0), 0);
	ck_assert_uint_eq(n, 30);
	ck_assert_uint_eq(per, 60 * NS_PER_SEC);
	ck_assert_int_eq(parse_rate("2000/d", &n, &per, NULL, 0), 0);
	ck_assert_uint_eq(per, 86400 * NS_PER_SEC);
	ck_assert_int_eq(parse_rate("10/250ms", &n, &per, NULL, 0), 0);
	ck_assert_uint_eq(per, 250 * NS_PER_MS);
	ck_assert_int_eq(parse_rate("0/s", &n, &per, NULL, 0), -1);
	ck_assert_int_eq(parse_rate("5", &n, &per, NULL, 0), -1);
	ck_assert_int_eq(parse_rate("5/0s", &n, &per, NULL, 0), -1);
	ck_assert_int_eq(parse_rate("/s", &n, &per, NULL, 0), -1);
	ck_assert_int_eq(parse_rate("x/s", &n, &per, NULL, 0), -1);
}
END_TEST

START_TEST(integers)
{
	uint64_t v;
	double d;

	ck_assert_int_eq(parse_u64("40", 1, 100, &v, NULL, 0), 0);
	ck_assert_uint_eq(v, 40);
	ck_assert_int_eq(parse_u64("0", 1, 100, &v, NULL, 0), -1);
	ck_assert_int_eq(parse_u64("-3", 0, 100, &v, NULL, 0), -1);
	ck_assert_int_eq(parse_u64("99999999999999999999999", 0, UINT64_MAX, &v, NULL, 0), -1);
	ck_assert_int_eq(parse_double("0.2", 0, 1, &d, NULL, 0), 0);
	ck_assert_double_eq(d, 0.2);
	ck_assert_int_eq(parse_double("2", 0, 1, &d, NULL, 0), -1);
}
END_TEST

START_TEST(sizes)
{
	char err[128], buf[32];
	uint64_t v;

	ck_assert_int_eq(parse_bytes("65536", 1, UINT64_MAX, &v, NULL, 0), 0);
	ck_assert_uint_eq(v, 65536);
	ck_assert_int_eq(parse_bytes("64M", 1, UINT64_MAX, &v, NULL, 0), 0);
	ck_assert_uint_eq(v, 64ULL << 20);
	ck_assert_int_eq(parse_bytes("64MiB", 1, UINT64_MAX, &v, NULL, 0), 0);
	ck_assert_uint_eq(v, 64ULL << 20);
	ck_assert_int_eq(parse_bytes("2g", 1, UINT64_MAX, &v, NULL, 0), 0);
	ck_assert_uint_eq(v, 2ULL << 30);
	ck_assert_int_eq(parse_bytes("3KB", 1, UINT64_MAX, &v, NULL, 0), 0);
	ck_assert_uint_eq(v, 3072);
	ck_assert_int_eq(parse_bytes("1T", 1, UINT64_MAX, &v, NULL, 0), 0);
	ck_assert_uint_eq(v, 1ULL << 40);
	ck_assert_int_eq(parse_bytes("1.5G", 1, UINT64_MAX, &v, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "bad size (want bytes, or e.g. 64M, 1G) '1.5G'");
	ck_assert_int_eq(parse_bytes("64X", 1, UINT64_MAX, &v, NULL, 0), -1);
	ck_assert_int_eq(parse_bytes("M", 1, UINT64_MAX, &v, NULL, 0), -1);
	ck_assert_int_eq(parse_bytes("-1", 0, UINT64_MAX, &v, NULL, 0), -1);
	ck_assert_int_eq(parse_bytes("", 0, UINT64_MAX, &v, NULL, 0), -1);
	ck_assert_int_eq(parse_bytes("16777216T", 1, UINT64_MAX, &v, NULL, 0), -1);  /* 2^64 */
	ck_assert_int_eq(parse_bytes("100K", 1 << 20, 1ULL << 40, &v, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "'100K' out of range (1 MiB to 1 TiB)");
	parse_format_bytes(512, buf, sizeof(buf));
	ck_assert_str_eq(buf, "512 B");
	parse_format_bytes(64ULL << 20, buf, sizeof(buf));
	ck_assert_str_eq(buf, "64 MiB");
	parse_format_bytes(8072ULL * 100000, buf, sizeof(buf));
	ck_assert_str_eq(buf, "769.8 MiB");
	parse_format_bytes(3ULL << 29, buf, sizeof(buf));
	ck_assert_str_eq(buf, "1.5 GiB");
}
END_TEST

START_TEST(prng_reproducible)
{
	struct prng a, b;

	prng_seed(&a, 42);
	prng_seed(&b, 42);
	for (int i = 0; i < 1000; i++) {
		double x = prng_double(&a);

		ck_assert(x >= 0.0 && x < 1.0);
		ck_assert(x == prng_double(&b));
	}
	prng_seed(&b, 43);
	ck_assert(prng_next(&a) != prng_next(&b));
	for (int i = 0; i < 1000; i++)
		ck_assert_uint_lt(prng_below(&a, 7), 7);
}
END_TEST

START_TEST(real_clocks)
{
	uint64_t a = clock_monotonic_ns(), b = clock_monotonic_ns();

	ck_assert_uint_gt(a, 0);
	ck_assert_uint_ge(b, a);
	ck_assert_uint_gt(clock_wall_ns(), 1577836800ULL * NS_PER_SEC);  /* after 2020-01-01 */
}
END_TEST

START_TEST(format_u64)
{
	char buf[PARSE_U64_CHARS];

	ck_assert_uint_eq(parse_format_u64(buf, 0), 1);
	ck_assert_str_eq(buf, "0");
	ck_assert_uint_eq(parse_format_u64(buf, 1000), 4);
	ck_assert_str_eq(buf, "1000");
	ck_assert_uint_eq(parse_format_u64(buf, UINT64_MAX), 20);
	ck_assert_str_eq(buf, "18446744073709551615");
}
END_TEST

Suite *parse_suite(void)
{
	Suite *s = suite_create("parse");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, durations);
	tcase_add_test(tc, bad_durations);
	tcase_add_test(tc, rates);
	tcase_add_test(tc, integers);
	tcase_add_test(tc, sizes);
	tcase_add_test(tc, format_u64);
	tcase_add_test(tc, prng_reproducible);
	tcase_add_test(tc, real_clocks);
	suite_add_tcase(s, tc);
	return s;
}
