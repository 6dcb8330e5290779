/* verify --baseline: which verdicts got better or worse than the accepted ones, in memory. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/verify_baseline.h"

/* A graded result of scenario name with expectations "succeeds" and "max-attempts<=3" at outcomes a, b. */
static void result(struct verify_result *r, const char *name, enum verify_outcome a, enum verify_outcome b)
{
	char err[200];

	memset(r, 0, sizeof(*r));
	snprintf(r->scenario, sizeof(r->scenario), "%s", name);
	r->state = VERIFY_GRADED;
	ck_assert_int_eq(verify_grade_parse("succeeds,max-attempts<=3", r->ex, VERIFY_GRADE_MAX_EXPECT, &r->nex, err,
	                                    sizeof(err)), 0);
	r->v[0].outcome = a;
	r->v[1].outcome = b;
}

static char *compare(const char *base_json, const struct verify_result *rs, size_t n, bool strict,
                     struct verify_baseline_diff *d)
{
	json_t *base = json_loads(base_json, 0, NULL);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	ck_assert_ptr_nonnull(base);
	ck_assert_ptr_nonnull(f);
	verify_baseline_compare(f, "b.json", base, rs, n, strict, d);
	fclose(f);
	json_decref(base);
	return text;
}

START_TEST(worse_better_and_new_verdicts)
{
	static const char BASE[] = "{\"ratelab_verify_baseline\":1,\"verdicts\":{"
	                           "\"a\":{\"succeeds\":\"fail\",\"max-attempts<=3\":\"pass\"}}}";
	struct verify_result rs[2];
	struct verify_baseline_diff d;
	char *text;

	result(&rs[0], "a", VERIFY_PASS, VERIFY_NOT_OBSERVED);
	result(&rs[1], "b", VERIFY_PASS, VERIFY_FAIL);
	text = compare(BASE, rs, 2, false, &d);
	ck_assert_str_eq(text, "better  a succeeds: fail -> pass\n"
	                       "WORSE   a max-attempts<=3: pass -> not observed\n"
	                       "WORSE   b max-attempts<=3: (not in the baseline) -> fail\n"
	                       "baseline b.json: 2 worse, 1 better, 1 the same\n");
	ck_assert_uint_eq(d.worse, 2);
	ck_assert_uint_eq(d.better, 1);
	ck_assert_uint_eq(d.same, 1);
	free(text);
}
END_TEST

/* With --strict, not observed ranks as fail; a run that never reached grading counts as fail. */
START_TEST(strict_and_unrun)
{
	static const char BASE[] = "{\"ratelab_verify_baseline\":1,\"verdicts\":{"
	                           "\"a\":{\"succeeds\":\"fail\",\"max-attempts<=3\":\"not observed\"}}}";
	struct verify_result rs[1];
	struct verify_baseline_diff d;
	char *text;

	result(&rs[0], "a", VERIFY_NOT_OBSERVED, VERIFY_FAIL);
	text = compare(BASE, rs, 1, true, &d);
	ck_assert_str_eq(text, "baseline b.json: 0 worse, 0 better, 2 the same\n");
	free(text);
	text = compare(BASE, rs, 1, false, &d);
	ck_assert_uint_eq(d.worse, 1);
	ck_assert_uint_eq(d.better, 1);
	free(text);
	result(&rs[0], "a", VERIFY_PASS, VERIFY_PASS);
	rs[0].state = VERIFY_CANNOT_RUN;
	text = compare(BASE, rs, 1, false, &d);
	ck_assert_str_eq(text, "WORSE   a max-attempts<=3: not observed -> fail\n"
	                       "baseline b.json: 1 worse, 0 better, 1 the same\n");
	free(text);
}
END_TEST

Suite *verify_baseline_suite(void)
{
	Suite *s = suite_create("verify_baseline");
	TCase *tc = tcase_create("compare");

	tcase_add_test(tc, worse_better_and_new_verdicts);
	tcase_add_test(tc, strict_and_unrun);
	suite_add_tcase(s, tc);
	return s;
}
