/*
 * serve --headers, one case per dialect: the exact rate-limit fields (and
 * Retry-After) of an admission and of a rejection, from the real server on
 * port 0 over libcurl.  A token bucket of 2 per hour: after two requests the
 * next token comes in 1800 s and the bucket is full in 3600 s, so the IETF
 * t (more quota) and the older -Reset fields (quota whole again) differ.
 */
#include <check.h>
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "tests/harness/testutil.h"

#define FIELDS_LEN 1024
#define BODY_LEN sizeof(((struct test_reply *)0)->body)

/* The Retry-After and rate-limit lines of a raw header block, "Name: value\n" each, in order. */
static void limit_lines(const char *headers, char *out, size_t len)
{
	static const char *const prefixes[] = { "retry-after:", "ratelimit", "x-ratelimit" };
	size_t used = 0;

	out[0] = '\0';
	for (const char *l = headers; *l; ) {
		size_t n = strcspn(l, "\r\n");

		for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
			if (n >= strlen(prefixes[i]) && strncasecmp(l, prefixes[i], strlen(prefixes[i])) == 0 &&
			    used + n + 2 < len) {
				memcpy(out + used, l, n);
				used += n;
				out[used++] = '\n';
				out[used] = '\0';
				break;
			}
		l += n;
		l += strspn(l, "\r\n");
	}
}

/* Serve with `--headers dialect`, GET / three times; the fields of answers 2 (200) and 3 (429). */
static void two_answers(const char *dialect, char *adm, char *rej, size_t len, char *body, size_t blen)
{
	const char *const args[] = { "--limiter", "token-bucket", "--limit", "2", "--window", "1h",
	                             "--headers", dialect, NULL };
	struct test_server s;
	struct test_reply r;
	CURL *c = curl_easy_init();
	char url[128];

	ck_assert_msg(testutil_server_start(&s, args, 5000) == 0, "server did not start (bin %s)", testutil_bin());
	snprintf(url, sizeof(url), "%s/", s.url);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(testutil_fire(c, "GET", url, NULL, &r), CURLE_OK);
		ck_assert_int_eq(r.status, i < 2 ? 200 : 429);
		if (i == 1)
			limit_lines(r.headers, adm, len);
	}
	limit_lines(r.headers, rej, len);
	ck_assert_uint_eq(blen, sizeof(r.body));
	memcpy(body, r.body, sizeof(r.body));
	curl_easy_cleanup(c);
	ck_assert_int_eq(testutil_server_stop(&s, 5000), 0);
}

START_TEST(ietf)
{
	char adm[FIELDS_LEN], rej[FIELDS_LEN], body[BODY_LEN];
	json_t *j;

	two_answers("ietf", adm, rej, sizeof(adm), body, sizeof(body));
	ck_assert_str_eq(adm, "RateLimit-Policy: \"default\";q=2;w=3600\n"
	                      "RateLimit: \"default\";r=0;t=1800\n");
	ck_assert_str_eq(rej, "Retry-After: 1800\n"
	                      "RateLimit-Policy: \"default\";q=2;w=3600\n"
	                      "RateLimit: \"default\";r=0;t=1800\n");
	j = json_loads(body, 0, NULL);
	ck_assert_msg(j != NULL, "not JSON: %s", body);
	ck_assert_str_eq(json_string_value(json_object_get(j, "type")),
	                 "https://iana.org/assignments/http-problem-types#quota-exceeded");
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(j, "violated-policies"), 0)), "default");
	json_decref(j);
}
END_TEST

/*
 * The dialects whose fields are fixed text: the exact fields of the admission
 * (answer 2) and of the rejection (answer 3); body_has, when set, is in the
 * rejection's body.  legacy is today's X-RateLimit-* trio in title case, delta
 * seconds (x-ratelimit's values).
 */
static const struct dialect_case {
	const char *dialect, *admitted, *rejected, *body_has;
} DIALECTS[] = {
	{ "draft-03", "RateLimit-Limit: 2\nRateLimit-Remaining: 0\nRateLimit-Reset: 3600\n",
	  "Retry-After: 1800\nRateLimit-Limit: 2\nRateLimit-Remaining: 0\nRateLimit-Reset: 1800\n", NULL },
	{ "x-ratelimit", "x-ratelimit-limit: 2\nx-ratelimit-remaining: 0\nx-ratelimit-reset: 3600\n",
	  "Retry-After: 1800\n"
	  "x-ratelimit-limit: 2\nx-ratelimit-remaining: 0\nx-ratelimit-reset: 1800\n", NULL },
	{ "legacy", "X-RateLimit-Limit: 2\nX-RateLimit-Remaining: 0\nX-RateLimit-Reset: 3600\n",
	  "Retry-After: 1800\nX-RateLimit-Limit: 2\nX-RateLimit-Remaining: 0\nX-RateLimit-Reset: 1800\n", NULL },
	{ "retry-after-only", "", "Retry-After: 1800\n", NULL },
	{ "none", "", "", "\"retry_after_s\":1800" },
	{ "ietf,draft-03",
	  "RateLimit-Policy: \"default\";q=2;w=3600\n"
	  "RateLimit: \"default\";r=0;t=1800\n"
	  "RateLimit-Limit: 2\nRateLimit-Remaining: 0\nRateLimit-Reset: 3600\n",
	  "Retry-After: 1800\n"
	  "RateLimit-Policy: \"default\";q=2;w=3600\n"
	  "RateLimit: \"default\";r=0;t=1800\n"
	  "RateLimit-Limit: 2\nRateLimit-Remaining: 0\nRateLimit-Reset: 1800\n", NULL },
};

/* One row of DIALECTS (Check's loop index _i): its own server, its exact fields. */
START_TEST(fixed_fields)
{
	const struct dialect_case *d = &DIALECTS[_i];
	char adm[FIELDS_LEN], rej[FIELDS_LEN], body[BODY_LEN];

	two_answers(d->dialect, adm, rej, sizeof(adm), body, sizeof(body));
	ck_assert_msg(strcmp(adm, d->admitted) == 0, "%s admitted:\n%s", d->dialect, adm);
	ck_assert_msg(strcmp(rej, d->rejected) == 0, "%s rejected:\n%s", d->dialect, rej);
	if (d->body_has != NULL)
		ck_assert_msg(strstr(body, d->body_has) != NULL, "%s body: %s", d->dialect, body);
}
END_TEST

/*
 * GitHub's Reset is an instant: the first epoch second at or after the
 * 1800 s wait's end (so a client that waits until it is never early), which
 * is 1800 or 1801 s after the second the answer was made; the admitted
 * answer's, 3600 or 3601.
 */
START_TEST(github)
{
	char adm[FIELDS_LEN], rej[FIELDS_LEN], body[BODY_LEN], want[FIELDS_LEN];
	time_t before = time(NULL), after;
	const char *reset;
	long long epoch;

	two_answers("github", adm, rej, sizeof(adm), body, sizeof(body));
	after = time(NULL);
	reset = strstr(rej, "X-RateLimit-Reset: ");
	ck_assert_ptr_nonnull(reset);
	epoch = atoll(reset + strlen("X-RateLimit-Reset: "));
	ck_assert_msg(epoch >= before + 1800 && epoch <= after + 1801, "reset %lld, now %lld", epoch,
	              (long long)after);
	snprintf(want, sizeof(want), "Retry-After: 1800\nX-RateLimit-Limit: 2\nX-RateLimit-Remaining: 0\n"
	         "X-RateLimit-Used: 2\nX-RateLimit-Reset: %lld\nX-RateLimit-Resource: default\n", epoch);
	ck_assert_str_eq(rej, want);
	reset = strstr(adm, "X-RateLimit-Reset: ");
	ck_assert_ptr_nonnull(reset);
	epoch = atoll(reset + strlen("X-RateLimit-Reset: "));
	ck_assert_msg(epoch >= before + 3600 && epoch <= after + 3601, "reset %lld", epoch);
	snprintf(want, sizeof(want), "X-RateLimit-Limit: 2\nX-RateLimit-Remaining: 0\nX-RateLimit-Used: 2\n"
	         "X-RateLimit-Reset: %lld\nX-RateLimit-Resource: default\n", epoch);
	ck_assert_str_eq(adm, want);
}
END_TEST





/*
 * --limiter none has no quota to tell: no rate-limit fields in any dialect.
 * It sent q=10 (the default --limit) with r=0 and t=0, or RateLimit-Remaining:
 * 0, on every answer, and a client that reads them holds off from a server
 * with no limit.
 */
START_TEST(none_tells_no_quota)
{
	const char *const args[] = { "--limiter", "none", "--headers", "ietf,draft-03,github", NULL };
	struct test_server s;
	struct test_reply r;
	CURL *c = curl_easy_init();
	char url[128], lines[FIELDS_LEN];

	ck_assert_msg(testutil_server_start(&s, args, 5000) == 0, "server did not start (bin %s)", testutil_bin());
	snprintf(url, sizeof(url), "%s/", s.url);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(testutil_fire(c, "GET", url, NULL, &r), CURLE_OK);
		ck_assert_int_eq(r.status, 200);
		limit_lines(r.headers, lines, sizeof(lines));
		ck_assert_msg(lines[0] == '\0', "answer %d: %s", i, lines);
	}
	curl_easy_cleanup(c);
	ck_assert_int_eq(testutil_server_stop(&s, 5000), 0);
}
END_TEST

Suite *dialects_suite(void)
{
	Suite *s = suite_create("dialects");
	TCase *tc = tcase_create("serve");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, ietf);
	tcase_add_test(tc, none_tells_no_quota);
	tcase_add_loop_test(tc, fixed_fields, 0, (int)(sizeof(DIALECTS) / sizeof(DIALECTS[0])));
	tcase_add_test(tc, github);
	suite_add_tcase(s, tc);
	return s;
}
