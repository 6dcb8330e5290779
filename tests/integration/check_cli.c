/* Every subcommand's command line, through the real binary: each mistake's exact line and exit 2. */
#include <check.h>
#include <curl/curl.h>
#include <microhttpd.h>
#include <stdio.h>
#include <string.h>

#include "common/version.h"
#include "tests/harness/testutil.h"

#define RUN_MS 10000

START_TEST(version_names_the_libraries)
{
	const char *args[] = { "--version", NULL };
	char want[256];
	struct test_run r;

	snprintf(want, sizeof(want), "ratelab %s\nlibmicrohttpd %s\nlibcurl %s\n", RATELAB_VERSION, MHD_get_version(),
	         curl_version_info(CURLVERSION_NOW)->version);
	ck_assert_int_eq(testutil_run(&r, args, NULL, RUN_MS), 0);
	ck_assert_int_eq(r.status, 0);
	ck_assert_str_eq(r.out, want);
	ck_assert_str_eq(r.err, "");
	testutil_run_free(&r);
}
END_TEST

Suite *cli_suite(void)
{
	Suite *s = suite_create("cli");
	TCase *tc = tcase_create("cli");

	tcase_add_test(tc, version_names_the_libraries);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
