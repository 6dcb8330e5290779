/* The SVG pieces: scales, the y of a value, stacked bars by share, escaped text, log ticks. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/svg.h"

static const struct svg_area AREA = { 100, 10, 800, 100 };

START_TEST(scales_top_out_on_round_values)
{
	struct svg_scale lin = svg_scale_linear(7), lg = svg_scale_log(1820);

	ck_assert(lin.kind == SVG_LINEAR);
	ck_assert_double_eq(lin.step, 2);
	ck_assert_double_eq(lin.top, 8);
	ck_assert(lg.kind == SVG_LOG);
	ck_assert_double_eq(lg.top, 2000);
	ck_assert_double_eq(svg_scale_log(3).top, 10);
	ck_assert_double_eq(svg_scale_log(100).top, 100);
	ck_assert_double_eq(svg_scale_log(101).top, 200);
}
END_TEST

/* Linear: half the top is half the height.  Log: 0 at the bottom, the top at the top, 9 (log10 10) a third of 999's. */
START_TEST(y_of_a_value)
{
	struct svg_scale lin = svg_scale_linear(8), lg = { SVG_LOG, 999, 10 };

	ck_assert_double_eq(svg_y(&AREA, &lin, 4), 60);
	ck_assert_double_eq(svg_y(&AREA, &lin, 80), 10);      /* over the top: at the top */
	ck_assert_double_eq(svg_y(&AREA, &lg, 0), 110);
	ck_assert_double_eq(svg_y(&AREA, &lg, 999), 10);
	ck_assert_double_eq_tol(svg_y(&AREA, &lg, 9), 110 - 100.0 / 3, 1e-9);
}
END_TEST

/* A bar of 20 admitted and 1800 rejected on a log scale: one bar the height of 1820, split 20:1800. */
START_TEST(stack_split_by_share)
{
	static const char *const FILLS[2] = { "blue", "orange" }, *const NAMES[2] = { "admitted", "rejected" };
	const uint64_t parts[2] = { 20, 1800 };
	struct svg_scale lg = svg_scale_log(1820);
	double ok_h, rej_h, total = 110 - svg_y(&AREA, &lg, 1820);
	char *buf = NULL, *p;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert(!svg_stack(f, &AREA, &lg, 100, 5, parts, FILLS, NAMES, 2));
	fclose(f);
	/* Parts are drawn bottom up, one <rect> a line: admitted, then rejected. */
	ck_assert_ptr_nonnull(strstr(buf, "fill=\"blue\" data-part=\"admitted\""));
	ck_assert_int_eq(sscanf(strstr(buf, "height=\"") + 8, "%lf", &ok_h), 1);
	p = strchr(buf, '\n');
	ck_assert_ptr_nonnull(strstr(p, "fill=\"orange\" data-part=\"rejected\""));
	ck_assert_int_eq(sscanf(strstr(p, "height=\"") + 8, "%lf", &rej_h), 1);
	ck_assert_double_eq_tol(ok_h + rej_h, total, 0.02);
	ck_assert_double_eq_tol(rej_h / (ok_h + rej_h), 1800.0 / 1820, 0.001);
	free(buf);
}
END_TEST

/* A linear bar over the top is cut and says so. */
START_TEST(stack_over_the_top_is_cut)
{
	static const char *const FILLS[1] = { "blue" }, *const NAMES[1] = { "ok" };
	const uint64_t parts[1] = { 12 };
	struct svg_scale lin = svg_scale_linear(8);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert(svg_stack(f, &AREA, &lin, 0, 5, parts, FILLS, NAMES, 1));
	fclose(f);
	ck_assert_ptr_nonnull(strstr(buf, "y=\"10.00\" width=\"5.00\" height=\"100.00\""));
	free(buf);
}
END_TEST

/* Log ticks: 1, 10, 100, 1000 labelled, 0 not (the base line only), and 2000 when it clears 1000. */
START_TEST(log_axis_ticks)
{
	struct svg_scale lg = svg_scale_log(1820);
	struct svg_area tall = { 100, 10, 800, 400 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	svg_axis_y(f, &tall, &lg, 13);
	svg_text(f, 0, 0, "", "a<b & c>");
	fclose(f);
	ck_assert_ptr_nonnull(strstr(buf, ">1</text>"));
	ck_assert_ptr_nonnull(strstr(buf, ">1000</text>"));
	ck_assert_ptr_nonnull(strstr(buf, ">2000</text>"));
	ck_assert_ptr_null(strstr(buf, ">0</text>"));
	ck_assert_ptr_nonnull(strstr(buf, ">a&lt;b &amp; c&gt;</text>"));
	free(buf);
}
END_TEST

Suite *svg_suite(void)
{
	Suite *s = suite_create("svg");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, scales_top_out_on_round_values);
	tcase_add_test(tc, y_of_a_value);
	tcase_add_test(tc, stack_split_by_share);
	tcase_add_test(tc, stack_over_the_top_is_cut);
	tcase_add_test(tc, log_axis_ticks);
	suite_add_tcase(s, tc);
	return s;
}
