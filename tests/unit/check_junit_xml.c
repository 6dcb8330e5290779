/* common/junit: the XML a CI system reads, exactly, escaping included. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/junit.h"

/* The report written to a temporary file and read back (malloc'd). */
static char *written(const struct junit *j)
{
	char path[] = "/tmp/ratelab-junit-unit-XXXXXX";
	int fd = mkstemp(path);
	char *text = calloc(1, 8192);
	FILE *f;

	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(junit_write(j, path), 0);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_lt(fread(text, 1, 8191, f), 8191);
	fclose(f);
	unlink(path);
	return text;
}

START_TEST(suites_cases_and_counts)
{
	struct junit *j = junit_new("ratelab verify");
	char *xml;

	ck_assert_int_eq(junit_suite(j, "verify post-503", 1.25), 0);
	ck_assert_int_eq(junit_case(j, "ratelab.verify.post-503", "no-retry-non-idempotent", 1.25, JUNIT_FAILURE,
	                            "POST sent again", "POST sent again 1.000s after 503"), 0);
	ck_assert_int_eq(junit_suite(j, "verify post-429", 2), 0);
	ck_assert_int_eq(junit_case(j, "c", "succeeds", 2, JUNIT_PASS, NULL, NULL), 0);
	ck_assert_int_eq(junit_case(j, "c", "honours-retry-after", 2, JUNIT_SKIPPED, "not observed", NULL), 0);
	ck_assert_int_eq(junit_case(j, "c", "max-attempts<=2", 2, JUNIT_ERROR, "never reached", "never reached"), 0);
	xml = written(j);
	ck_assert_str_eq(xml,
	                 "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	                 "<testsuites name=\"ratelab verify\" tests=\"4\" failures=\"1\" skipped=\"1\" errors=\"1\">\n"
	                 "  <testsuite name=\"verify post-503\" tests=\"1\" failures=\"1\" skipped=\"0\" errors=\"0\" "
	                 "time=\"1.250\">\n"
	                 "    <testcase classname=\"ratelab.verify.post-503\" name=\"no-retry-non-idempotent\" "
	                 "time=\"1.250\">\n"
	                 "      <failure message=\"POST sent again\">POST sent again 1.000s after 503</failure>\n"
	                 "    </testcase>\n"
	                 "  </testsuite>\n"
	                 "  <testsuite name=\"verify post-429\" tests=\"3\" failures=\"0\" skipped=\"1\" errors=\"1\" "
	                 "time=\"2.000\">\n"
	                 "    <testcase classname=\"c\" name=\"succeeds\" time=\"2.000\"/>\n"
	                 "    <testcase classname=\"c\" name=\"honours-retry-after\" time=\"2.000\">\n"
	                 "      <skipped message=\"not observed\"></skipped>\n"
	                 "    </testcase>\n"
	                 "    <testcase classname=\"c\" name=\"max-attempts&lt;=2\" time=\"2.000\">\n"
	                 "      <error message=\"never reached\">never reached</error>\n"
	                 "    </testcase>\n"
	                 "  </testsuite>\n"
	                 "</testsuites>\n");
	free(xml);
	junit_free(j);
}
END_TEST

/* Markup and control bytes in names and evidence cannot break the document. */
START_TEST(text_is_escaped)
{
	struct junit *j = junit_new("a&b");
	char *xml;

	ck_assert_int_eq(junit_case(j, "c", "n", 0, JUNIT_PASS, NULL, NULL), -1);  /* no suite yet: refused */
	ck_assert_int_eq(junit_suite(j, "s<1>", 0), 0);
	ck_assert_int_eq(junit_case(j, "c\"q'", "n", 0, JUNIT_FAILURE, "a<b>&\"c\"", "x\x01y\tz\nw"), 0);
	xml = written(j);
	ck_assert_ptr_nonnull(strstr(xml, "<testsuites name=\"a&amp;b\""));
	ck_assert_ptr_nonnull(strstr(xml, "<testsuite name=\"s&lt;1&gt;\""));
	ck_assert_ptr_nonnull(strstr(xml, "classname=\"c&quot;q&apos;\""));
	ck_assert_ptr_nonnull(strstr(xml, "<failure message=\"a&lt;b&gt;&amp;&quot;c&quot;\">xy\tz\nw</failure>"));
	free(xml);
	ck_assert_int_eq(junit_write(j, "/nonexistent-dir/x.xml"), -1);
	junit_free(j);
	junit_free(NULL);
}
END_TEST

Suite *junit_xml_suite(void)
{
	Suite *s = suite_create("junit");
	TCase *tc = tcase_create("xml");

	tcase_add_test(tc, suites_cases_and_counts);
	tcase_add_test(tc, text_is_escaped);
	suite_add_tcase(s, tc);
	return s;
}
