/* 1-2-5 axis steps: never uneven, never a repeated label. */
#include <check.h>
#include <string.h>

#include "common/ticks.h"

START_TEST(steps_are_1_2_5)
{
	ck_assert_double_eq(ticks_step(9.3, 4), 5);      /* 0, 5, 10: not 0, 2.3, 4.6, 7, 9.3 */
	ck_assert_double_eq(ticks_step(4, 4), 1);
	ck_assert_double_eq(ticks_step(4.1, 4), 2);
	ck_assert_double_eq(ticks_step(0.7, 5), 0.2);
	ck_assert_double_eq(ticks_step(250, 5), 50);
	ck_assert_double_eq(ticks_step(1, 10), 0.1);
	ck_assert_double_eq(ticks_step(0.3, 6), 0.05);
	ck_assert_double_eq(ticks_step(7000, 4), 2000);
	ck_assert_double_eq(ticks_step(0, 4), 1);
	ck_assert_double_eq(ticks_step_at_least(3, 6, 1), 1);     /* a count axis: no 0.5 steps */
	ck_assert_double_eq(ticks_step_at_least(30, 6, 1), 5);
}
END_TEST

/* On a 0.7 s run every tick label differs: 0.0s 0.2s 0.4s 0.6s, not 0s 0s 0s 1s. */
START_TEST(labels_never_repeat)
{
	char a[32], b[32];
	double step = ticks_step(0.7, 5);
	int d = ticks_decimals(step);

	ck_assert_int_eq(d, 1);
	ck_assert_str_eq(ticks_label(0.4, d, "s", a, sizeof(a)), "0.4s");
	for (double v = 0; v + step <= 0.7; v += step)
		ck_assert_str_ne(ticks_label(v, d, "s", a, sizeof(a)), ticks_label(v + step, d, "s", b, sizeof(b)));
	ck_assert_int_eq(ticks_decimals(1), 0);
	ck_assert_int_eq(ticks_decimals(5), 0);
	ck_assert_int_eq(ticks_decimals(0.5), 1);
	ck_assert_int_eq(ticks_decimals(0.05), 2);
	ck_assert_str_eq(ticks_label(20, 0, NULL, a, sizeof(a)), "20");
	ck_assert_str_eq(ticks_label(-0.0, 1, "s", a, sizeof(a)), "0.0s");
}
END_TEST

Suite *ticks_suite(void)
{
	Suite *s = suite_create("ticks");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, steps_are_1_2_5);
	tcase_add_test(tc, labels_never_repeat);
	suite_add_tcase(s, tc);
	return s;
}
