/* `ratelab serve` options parsed into a config: the messages a bad value gets. */
#include <check.h>
#include <string.h>

#include "server/server.h"

/* A --burst or --limit the limiters cannot take: the message names the flag and its value. */
START_TEST(bad_burst_names_value)
{
	char *too_big[] = { "serve", "--limit", "5", "--window", "1h", "--burst", "4000000000", NULL };
	char *zero[] = { "serve", "--burst", "0", NULL };
	struct server_config cfg;
	char err[512] = "";

	ck_assert_int_eq(server_config_from_args(&cfg, 7, too_big, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "--burst '4000000000'") != NULL, "%s", err);
	ck_assert_ptr_null(strchr(err, '\n'));
	ck_assert_int_eq(server_config_from_args(&cfg, 3, zero, err, sizeof(err)), -1);
	/* the value once: parse_u64's message quotes it, the flag is named before it */
	ck_assert_str_eq(err, "ratelab serve: --burst: '0' out of range (1 to 4294967295)");
}
END_TEST

Suite *serve_args_suite(void)
{
	Suite *s = suite_create("serve_args");
	TCase *tc = tcase_create("serve_args");

	tcase_add_test(tc, bad_burst_names_value);
	suite_add_tcase(s, tc);
	return s;
}
