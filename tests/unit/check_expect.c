#include <check.h>
#include <string.h>

#include "common/clock.h"
#include "hammer/expect.h"

static uint64_t status[600];

static struct expect_facts facts(void)
{
	struct expect_facts f = { status, 600, 37, 3, 40, 52, 12, 0, 7590 * NS_PER_MS };

	memset(status, 0, sizeof(status));
	status[200] = 37;
	status[429] = 3;
	return f;
}

START_TEST(all_hold)
{
	char err[256], why[256];
	struct expect *e = expect_parse("ok>=30,429<=5,wall<=10s,calls<=200", err, sizeof(err));
	struct expect_facts f = facts();

	ck_assert_ptr_nonnull(e);
	ck_assert(expect_check(e, &f, why, sizeof(why)));
	ck_assert_str_eq(why, "");
	expect_free(e);
}
END_TEST

START_TEST(failures_named)
{
	char err[256], why[256];
	struct expect *e = expect_parse("ok>=38,429=3,wall<7s,retries!=12,failed>0", err, sizeof(err));
	struct expect_facts f = facts();

	ck_assert_ptr_nonnull(e);
	ck_assert(!expect_check(e, &f, why, sizeof(why)));
	ck_assert_str_eq(why, "ok>=38 (got 37), wall<7s (got 7.59s), retries!=12 (got 12)");
	expect_free(e);
}
END_TEST

START_TEST(operators)
{
	static const struct { const char *spec; bool ok; } cases[] = {
		{ "ok==37", true }, { "ok>36", true }, { "ok<37", false }, { "ok<=37", true },
		{ "503=0", true }, { "503>=1", false }, { "requests=40", true }, { "errors=0", true },
		{ "calls>52", false }, { "wall>=7590ms", true }, { "wall>7590ms", false },
	};
	char err[256], why[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct expect *e = expect_parse(cases[i].spec, err, sizeof(err));
		struct expect_facts f = facts();

		ck_assert_msg(e != NULL, "%s: %s", cases[i].spec, err);
		ck_assert_msg(expect_check(e, &f, why, sizeof(why)) == cases[i].ok, "%s", cases[i].spec);
		expect_free(e);
	}
}
END_TEST

START_TEST(malformed)
{
	static const char *bad[] = { "", "ok", "ok>=", "ok>=x", "foo>=1", "99>=1", "600<=1", "wall<=10",
	                             "ok=>3", ",", "4290<=1", "ok>=1;calls<=3" };
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct expect *e;

		err[0] = '\0';
		e = expect_parse(bad[i], err, sizeof(err));
		ck_assert_msg(e == NULL, "accepted '%s'", bad[i]);
		ck_assert_msg(strncmp(err, "--expect", 8) == 0, "error '%s'", err);
	}
}
END_TEST

Suite *expect_suite(void)
{
	Suite *s = suite_create("expect");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, all_hold);
	tcase_add_test(tc, failures_named);
	tcase_add_test(tc, operators);
	tcase_add_test(tc, malformed);
	suite_add_tcase(s, tc);
	return s;
}
