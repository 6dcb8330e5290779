#include <check.h>
#include <string.h>

#include "hammer/join.h"

/* redis://HOST[:PORT]/RUNID: what --join takes apart, and what it refuses with a reason. */
START_TEST(parses_and_refuses)
{
	static const struct { const char *url, *host, *run; int port; const char *why; } CASES[] = {
		{ "redis://10.0.0.5:6390/room1", "10.0.0.5", "room1", 6390, NULL },
		{ "redis://instructor/run.2_b-c", "instructor", "run.2_b-c", 6379, NULL },
		{ "http://h:1/x", NULL, NULL, 0, "is not redis://HOST[:PORT]/RUNID" },
		{ "redis://h:6379", NULL, NULL, 0, "RUNID" },
		{ "redis://h:6379/", NULL, NULL, 0, "RUNID" },
		{ "redis://h/a:b", NULL, NULL, 0, "RUNID" },
		{ "redis://h/a b", NULL, NULL, 0, "RUNID" },
		{ "redis://:6379/r", NULL, NULL, 0, "no host" },
		{ "redis://h:0/r", NULL, NULL, 0, "port" },
		{ "redis://h:65536/r", NULL, NULL, 0, "port" },
		{ "redis://h:12x/r", NULL, NULL, 0, "port" },
		{ "redis://h/0123456789012345678901234567890123456789012345678901234567890123", NULL, NULL, 0, "RUNID" },
	};

	for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
		char host[256] = "", run[JOIN_RUN_MAX] = "", why[256] = "";
		int port = 0, rc = join_parse_url(CASES[i].url, host, sizeof(host), &port, run, sizeof(run), why, sizeof(why));

		if (CASES[i].why == NULL) {
			ck_assert_msg(rc == 0, "%s: %s", CASES[i].url, why);
			ck_assert_str_eq(host, CASES[i].host);
			ck_assert_str_eq(run, CASES[i].run);
			ck_assert_int_eq(port, CASES[i].port);
		} else {
			ck_assert_msg(rc == -1 && strstr(why, CASES[i].why) != NULL, "%s: rc %d, %s", CASES[i].url, rc, why);
		}
	}
}
END_TEST

Suite *join_url_suite(void)
{
	Suite *s = suite_create("join_url");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, parses_and_refuses);
	suite_add_tcase(s, tc);
	return s;
}
