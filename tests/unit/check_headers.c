/* Exact text of what a limited response says: Retry-After, RateLimit fields, problem body. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "server/http/headers.h"

static struct limiter_params single(uint64_t limit, uint64_t window_ns)
{
	struct limiter_params p;

	memset(&p, 0, sizeof(p));
	p.limit = limit;
	p.window_ns = window_ns;
	p.burst = limit;
	return p;
}

START_TEST(retry_after_rounds_up_never_zero)
{
	ck_assert_uint_eq(headers_retry_after_secs(0), 1);
	ck_assert_uint_eq(headers_retry_after_secs(1), 1);
	ck_assert_uint_eq(headers_retry_after_secs(187500000), 1);
	ck_assert_uint_eq(headers_retry_after_secs(NS_PER_SEC), 1);
	ck_assert_uint_eq(headers_retry_after_secs(NS_PER_SEC + 1), 2);
	ck_assert_uint_eq(headers_retry_after_secs(59 * NS_PER_SEC + 999999999), 60);
	ck_assert_uint_eq(headers_ceil_secs(0), 0);
	ck_assert_uint_eq(headers_ceil_secs(2 * NS_PER_SEC), 2);
}
END_TEST

START_TEST(policy_single_and_layered)
{
	struct limiter_params p = single(5, NS_PER_SEC);
	char buf[HEADERS_POLICY_LEN];

	ck_assert_int_eq(headers_policy(&p, false, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "\"default\";q=5;w=1");
	p = single(10, 250 * NS_PER_MS);
	ck_assert_int_eq(headers_policy(&p, false, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "\"default\";q=10;w=1");
	p.nlayers = 3;
	p.layers[0] = (struct limiter_layer){ 30, 60 * NS_PER_SEC };
	p.layers[1] = (struct limiter_layer){ 500, 3600 * NS_PER_SEC };
	p.layers[2] = (struct limiter_layer){ 2000, 86400 * NS_PER_SEC };
	ck_assert_int_eq(headers_policy(&p, true, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "\"l0\";q=30;w=60, \"l1\";q=500;w=3600, \"l2\";q=2000;w=86400");
	ck_assert_int_eq(headers_policy(&p, true, buf, 20), -1);
}
END_TEST

START_TEST(ratelimit_field)
{
	struct limiter_params p = single(5, NS_PER_SEC);
	struct limiter_decision rej = { false, 200 * NS_PER_MS, 0, 5, NS_PER_SEC, NS_PER_SEC, 0, 0 };
	struct limiter_decision adm = { true, 0, 3, 5, NS_PER_SEC, 600 * NS_PER_MS, 0, 400 * NS_PER_MS };
	struct limiter_decision full = { true, 0, 4, 5, NS_PER_SEC, 0, 0, 0 };
	struct limiter_decision lay = { false, 61 * NS_PER_SEC, 0, 500, 3600 * NS_PER_SEC, 3600 * NS_PER_SEC, 1, 0 };
	char buf[HEADERS_FIELD_LEN];

	ck_assert_int_eq(headers_ratelimit(&p, false, &rej, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "\"default\";r=0;t=1");
	ck_assert_int_eq(headers_ratelimit(&p, false, &adm, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "\"default\";r=3;t=1");
	ck_assert_int_eq(headers_ratelimit(&p, false, &full, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "\"default\";r=4;t=0");
	ck_assert_int_eq(headers_ratelimit(&p, true, &lay, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "\"l1\";r=0;t=61");
	ck_assert_uint_eq(headers_reset_secs(&lay), 61);
}
END_TEST

START_TEST(retry_after_forms)
{
	char buf[64];

	ck_assert(headers_retry_after(HEADERS_RA_SECONDS, 1500 * NS_PER_MS, 784111777, buf, sizeof(buf)));
	ck_assert_str_eq(buf, "2");
	ck_assert(headers_retry_after(HEADERS_RA_SECONDS, 1, 784111777, buf, sizeof(buf)));
	ck_assert_str_eq(buf, "1");
	ck_assert(headers_retry_after(HEADERS_RA_HTTPDATE, 1500 * NS_PER_MS, 784111777 * NS_PER_SEC, buf, sizeof(buf)));
	ck_assert_str_eq(buf, "Sun, 06 Nov 1994 08:49:39 GMT");
	ck_assert(!headers_retry_after(HEADERS_RA_NONE, NS_PER_SEC, 784111777 * NS_PER_SEC, buf, sizeof(buf)));
}
END_TEST

/*
 * The HTTP-date names the first whole second at or after the wait's end, so
 * a client that waits until it is never early: at .8 s past a second, a
 * 1.5 s wait ends at .3 s two seconds on, and the date is the second after
 * that (it named the earlier one, and such a client got another 429); the
 * date is always a later second than now.  GitHub's X-RateLimit-Reset alike.
 */
START_TEST(retry_after_date_is_never_early)
{
	static const uint64_t NOW = 784111777 * NS_PER_SEC;
	struct limiter_decision rej = { .admitted = false, .wait_ns = 2900 * NS_PER_MS };
	struct limiter_decision adm = { .admitted = true, .reset_ns = 2 * NS_PER_SEC };
	char buf[64];

	ck_assert_uint_eq(headers_retry_after_date(1500 * NS_PER_MS, NOW + 800 * NS_PER_MS), 784111780);
	ck_assert(headers_retry_after(HEADERS_RA_HTTPDATE, 1500 * NS_PER_MS, NOW + 800 * NS_PER_MS, buf, sizeof(buf)));
	ck_assert_str_eq(buf, "Sun, 06 Nov 1994 08:49:40 GMT");
	ck_assert_uint_eq(headers_retry_after_date(1500 * NS_PER_MS, NOW + 400 * NS_PER_MS), 784111779);
	ck_assert_uint_eq(headers_retry_after_date(1, NOW), 784111778);
	ck_assert_uint_eq(headers_retry_after_date(0, NOW + 999 * NS_PER_MS), 784111778);
	ck_assert_uint_eq(headers_github_reset(&rej, NOW + 330 * NS_PER_MS), 784111781);
	ck_assert_uint_eq(headers_github_reset(&adm, NOW + 330 * NS_PER_MS), 784111780);
	ck_assert_uint_eq(headers_github_reset(&adm, NOW), 784111779);
}
END_TEST

/* The wait_ms member of a rejection body's tail for wait_ns, as text, into buf. */
static void wait_ms_of(uint64_t wait_ns, char *buf, size_t len)
{
	struct limiter_decision d = { .wait_ns = wait_ns };
	char tail[HEADERS_BODY_LEN];
	const char *p;

	ck_assert_int_gt(headers_problem_tail(&d, tail, sizeof(tail)), 0);
	p = strstr(tail, "\"wait_ms\":");
	ck_assert_ptr_nonnull(p);
	p += 10;
	snprintf(buf, len, "%.*s", (int)strcspn(p, ","), p);
}

START_TEST(wait_ms_is_exact)
{
	char buf[32];

	wait_ms_of(187500000, buf, sizeof(buf));
	ck_assert_str_eq(buf, "187.5");
	wait_ms_of(NS_PER_SEC, buf, sizeof(buf));
	ck_assert_str_eq(buf, "1000");
	wait_ms_of(1, buf, sizeof(buf));
	ck_assert_str_eq(buf, "0.000001");
	wait_ms_of(123456789, buf, sizeof(buf));
	ck_assert_str_eq(buf, "123.456789");
	wait_ms_of(0, buf, sizeof(buf));
	ck_assert_str_eq(buf, "0");
}
END_TEST

START_TEST(problem_body_fields)
{
	struct limiter_params p = single(5, NS_PER_SEC);
	struct limiter_decision rej = { false, 187500000, 0, 5, NS_PER_SEC, NS_PER_SEC, 0, 0 };
	char buf[HEADERS_BODY_LEN];
	json_error_t je;
	json_t *j, *pol;
	int n = headers_problem_body(429, "token-bucket", &p, false, &rej, buf, sizeof(buf));

	ck_assert_int_gt(n, 0);
	ck_assert_uint_eq(strlen(buf), (size_t)n);
	j = json_loads(buf, 0, &je);
	ck_assert_msg(j != NULL, "not JSON: %s (%s)", buf, je.text);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "status")), 429);
	ck_assert_str_eq(json_string_value(json_object_get(j, "title")), "Too Many Requests");
	ck_assert_str_eq(json_string_value(json_object_get(j, "limiter")), "token-bucket");
	ck_assert_double_eq(json_number_value(json_object_get(j, "wait_ms")), 187.5);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "retry_after_s")), 1);
	pol = json_object_get(j, "policy");
	ck_assert_str_eq(json_string_value(json_object_get(pol, "name")), "default");
	ck_assert_int_eq(json_integer_value(json_object_get(pol, "quota")), 5);
	ck_assert_int_eq(json_integer_value(json_object_get(pol, "window_s")), 1);
	json_decref(j);
	ck_assert_int_eq(headers_problem_body(503, "gcra", &p, false, &rej, buf, 40), -1);
}
END_TEST

/* The exact body text, and head + tail: a new wait rewrites only the tail, to the same text a full render gives. */
START_TEST(problem_body_text_and_tail)
{
	struct limiter_params p = single(5, NS_PER_SEC);
	struct limiter_decision rej = { false, 24735597, 0, 5, NS_PER_SEC, NS_PER_SEC, 0, 0 };
	char full[HEADERS_BODY_LEN], split[HEADERS_BODY_LEN];
	int head, tail, n;

	n = headers_problem_body(429, "token-bucket", &p, false, &rej, full, sizeof(full));
	ck_assert_str_eq(full, "{\"type\":\"https://iana.org/assignments/http-problem-types#quota-exceeded\","
	                       "\"title\":\"Too Many Requests\",\"status\":429,\"violated-policies\":[\"default\"],"
	                       "\"limiter\":\"token-bucket\",\"policy\":{\"name\":\"default\",\"quota\":5,"
	                       "\"window_s\":1},\"remaining\":0,\"layer\":0,\"retry_after_s\":1,"
	                       "\"wait_ms\":24.735597,\"detail\":\"rate limit exceeded: retry in 24.735597 ms "
	                       "(Retry-After rounds up to 1 s)\"}\n");
	ck_assert_uint_eq(strlen(full), (size_t)n);
	head = headers_problem_head(429, "token-bucket", &p, false, &rej, split, sizeof(split));
	ck_assert_int_gt(head, 0);
	ck_assert_int_eq(memcmp(full, split, (size_t)head), 0);
	rej.wait_ns = 2 * NS_PER_SEC + 1;
	tail = headers_problem_tail(&rej, split + head, sizeof(split) - (size_t)head);
	n = headers_problem_body(429, "token-bucket", &p, false, &rej, full, sizeof(full));
	ck_assert_int_eq(head + tail, n);
	ck_assert_str_eq(split, full);
	ck_assert_ptr_nonnull(strstr(full, "\"retry_after_s\":3,\"wait_ms\":2000.000001,"));
	ck_assert_int_eq(headers_problem_tail(&rej, split, 20), -1);
}
END_TEST

/* 429 spent quota, 503 reduced capacity; violated-policies names the binding layer. */
START_TEST(problem_types_and_violated_policy)
{
	struct limiter_params p = single(5, NS_PER_SEC);
	struct limiter_decision lay = { false, 61 * NS_PER_SEC, 0, 500, 3600 * NS_PER_SEC, 3600 * NS_PER_SEC, 1, 0 };
	char buf[HEADERS_BODY_LEN];
	json_t *j;

	p.nlayers = 2;
	p.layers[0] = (struct limiter_layer){ 30, 60 * NS_PER_SEC };
	p.layers[1] = (struct limiter_layer){ 500, 3600 * NS_PER_SEC };
	ck_assert_int_gt(headers_problem_body(429, "layered", &p, true, &lay, buf, sizeof(buf)), 0);
	j = json_loads(buf, 0, NULL);
	ck_assert_ptr_nonnull(j);
	ck_assert_str_eq(json_string_value(json_object_get(j, "type")),
	                 "https://iana.org/assignments/http-problem-types#quota-exceeded");
	ck_assert_uint_eq(json_array_size(json_object_get(j, "violated-policies")), 1);
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(j, "violated-policies"), 0)), "l1");
	json_decref(j);
	ck_assert_int_gt(headers_problem_body(503, "layered", &p, true, &lay, buf, sizeof(buf)), 0);
	j = json_loads(buf, 0, NULL);
	ck_assert_ptr_nonnull(j);
	ck_assert_str_eq(json_string_value(json_object_get(j, "type")),
	                 "https://iana.org/assignments/http-problem-types#temporary-reduced-capacity");
	json_decref(j);
}
END_TEST

START_TEST(dialect_lists)
{
	enum headers_mode m;
	char why[256];

	ck_assert_int_eq(headers_parse_dialects("ietf", &m, why, sizeof(why)), 0);
	ck_assert_int_eq(m, HEADERS_IETF);
	ck_assert_int_eq(headers_parse_dialects("legacy", &m, why, sizeof(why)), 0);
	ck_assert_int_eq(m, HEADERS_LEGACY);
	ck_assert_int_eq(headers_parse_dialects("both", &m, why, sizeof(why)), 0);
	ck_assert_int_eq(m, HEADERS_IETF | HEADERS_LEGACY);
	ck_assert_int_eq(headers_parse_dialects("ietf,draft-03,github", &m, why, sizeof(why)), 0);
	ck_assert_int_eq(m, HEADERS_IETF | HEADERS_DRAFT03 | HEADERS_GITHUB);
	ck_assert_int_eq(headers_parse_dialects("retry-after-only", &m, why, sizeof(why)), 0);
	ck_assert_int_eq(m, HEADERS_NONE);
	ck_assert_int_eq(headers_parse_dialects("none", &m, why, sizeof(why)), 0);
	ck_assert_int_eq(m, HEADERS_SILENT);
	ck_assert_int_eq(headers_parse_dialects("x-ratelimit,github", &m, why, sizeof(why)), -1);
	ck_assert_str_eq(why, "sends X-RateLimit-Limit twice (legacy, x-ratelimit and github each send it: pick one)");
	ck_assert_int_eq(headers_parse_dialects("none,ietf", &m, why, sizeof(why)), -1);
	ck_assert_int_eq(headers_parse_dialects("ietf,", &m, why, sizeof(why)), -1);
	ck_assert_str_eq(why, "has '', not one of ietf, draft-03, x-ratelimit, github, legacy, both, retry-after-only, none");
}
END_TEST

/* Each dialect's exact fields for one admission: 60/min, 2 used, full again in 2 s, a token in 1 s. */
START_TEST(dialect_fields)
{
	struct limiter_params p = single(60, 60 * NS_PER_SEC);
	struct limiter_decision d = { true, 0, 58, 60, 60 * NS_PER_SEC, 2 * NS_PER_SEC, 0, 1 * NS_PER_SEC };
	struct headers_field f[HEADERS_MAX_FIELDS];
	char all[1024];
	size_t n;

	n = headers_fields(HEADERS_IETF | HEADERS_DRAFT03 | HEADERS_GITHUB, &p, false, "\"default\";q=60;w=60", &d,
	                   1700000000 * NS_PER_SEC, f);
	all[0] = '\0';
	for (size_t i = 0; i < n; i++)
		snprintf(all + strlen(all), sizeof(all) - strlen(all), "%s: %s\n", f[i].name, f[i].value);
	ck_assert_str_eq(all, "RateLimit-Policy: \"default\";q=60;w=60\n"
	                      "RateLimit: \"default\";r=58;t=1\n"
	                      "RateLimit-Limit: 60\nRateLimit-Remaining: 58\nRateLimit-Reset: 2\n"
	                      "X-RateLimit-Limit: 60\nX-RateLimit-Remaining: 58\nX-RateLimit-Used: 2\n"
	                      "X-RateLimit-Reset: 1700000002\nX-RateLimit-Resource: default\n");
	n = headers_fields(HEADERS_XRATELIMIT, &p, false, "", &d, 0, f);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(f[0].name, "x-ratelimit-limit");
	ck_assert_str_eq(f[2].name, "x-ratelimit-reset");
	ck_assert_str_eq(f[2].value, "2");
	ck_assert_uint_eq(headers_fields(HEADERS_NONE, &p, false, "", &d, 0, f), 0);
	ck_assert_uint_eq(headers_fields(HEADERS_SILENT, &p, false, "", &d, 0, f), 0);
}
END_TEST

Suite *headers_suite(void)
{
	Suite *s = suite_create("headers");
	TCase *tc = tcase_create("text");

	tcase_add_test(tc, retry_after_rounds_up_never_zero);
	tcase_add_test(tc, policy_single_and_layered);
	tcase_add_test(tc, ratelimit_field);
	tcase_add_test(tc, retry_after_forms);
	tcase_add_test(tc, retry_after_date_is_never_early);
	tcase_add_test(tc, problem_body_text_and_tail);
	tcase_add_test(tc, wait_ms_is_exact);
	tcase_add_test(tc, problem_body_fields);
	tcase_add_test(tc, problem_types_and_violated_policy);
	tcase_add_test(tc, dialect_lists);
	tcase_add_test(tc, dialect_fields);
	suite_add_tcase(s, tc);
	return s;
}
