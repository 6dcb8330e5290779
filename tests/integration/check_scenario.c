/* Scripted scenarios: parsing, per-client steps, HTTP-date waits, the arrival log, serve --scenario. */
#include <check.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/httpdate.h"
#include "server/handlers/scenario.h"
#include "tests/harness/testutil.h"

/* 2023-11-14 22:13:20.250 UTC */
#define WALL0 (1700000000ULL * NS_PER_SEC + 250 * NS_PER_MS)

static const char IP1[] = { 'i', 127, 0, 0, 1 };
static const char IP2[] = { 'i', 10, 0, 0, 2 };

static void ask(struct scenario *sc, const char *key, size_t keylen, const char *method, const char *path,
                uint64_t now, struct scenario_answer *a)
{
	struct scenario_request r = { method, path, key, keylen, NULL, NULL, now, WALL0 + now, NULL };

	ck_assert_int_eq(scenario_answer(sc, &r, a), 0);
}

START_TEST(builtins_load_with_defaults)
{
	static const char *const NAMES[] = { "retry-after-seconds", "retry-after-date", "no-retry-after",
		                             "retry-after-too-long", "post-503", "post-429", "server-errors",
		                             "persistent-429", "layered", "maintenance-503", "bad-request-400",
		                             "unauthorized-401", "not-found-404", "not-implemented-501",
		                             "connection-reset", "close-mid-body", "malformed-answer", "slow-get",
		                             "slow-post", "ratelimit-only", "ratelimit-reset", "x-ratelimit-reset",
		                             "envoy-x-ratelimit", "github-reset", "retry-after-zero", "retry-after-fraction", "retry-after-past-date",
		                             "retry-after-garbage", "retry-after-twice", "payload-too-large" };
	char err[300];

	ck_assert_uint_eq(scenario_builtin_count(), sizeof(NAMES) / sizeof(NAMES[0]));
	ck_assert_ptr_null(scenario_builtin_name(scenario_builtin_count()));
	for (size_t i = 0; i < sizeof(NAMES) / sizeof(NAMES[0]); i++) {
		struct scenario *sc = scenario_new(NAMES[i], err, sizeof(err));

		ck_assert_msg(sc != NULL, "%s: %s", NAMES[i], err);
		ck_assert_str_eq(scenario_builtin_name(i), NAMES[i]);
		ck_assert_str_eq(scenario_name(sc), NAMES[i]);
		ck_assert_msg(strlen(scenario_default_expect(sc)) > 0, "%s has no defaults", NAMES[i]);
		ck_assert_ptr_nonnull(strstr(scenario_builtin_names(), NAMES[i]));
		scenario_free(sc);
	}
}
END_TEST

/* What each scenario is for: its method, whether a run may end once settled, its --list lines. */
START_TEST(builtins_say_what_a_correct_client_does)
{
	char err[300], *text = NULL;
	size_t len = 0;
	struct scenario *sc = scenario_new("post-429", err, sizeof(err));
	FILE *f = open_memstream(&text, &len);

	ck_assert_str_eq(scenario_method(sc), "POST");
	ck_assert(!scenario_stops_when_settled(sc));
	scenario_free(sc);
	sc = scenario_new("retry-after-too-long", err, sizeof(err));
	ck_assert_str_eq(scenario_method(sc), "GET");
	ck_assert(scenario_stops_when_settled(sc));
	ck_assert_str_eq(scenario_default_expect(sc), "gives-up-within=5s,max-attempts<=1");
	scenario_free(sc);
	sc = scenario_parse("[{\"status\":200}]", "mine", err, sizeof(err));
	ck_assert_str_eq(scenario_method(sc), "GET");
	scenario_free(sc);
	scenario_builtin_describe(5, f);
	fclose(f);
	ck_assert_str_eq(text, "post-429 (POST)\n"
	                       "  answers: 429 + Retry-After: 2, then 200, to a POST\n"
	                       "  correct: a 429 was not processed, so even a POST may be retried: waits 2 s and "
	                       "succeeds\n"
	                       "  expects: succeeds,honours-retry-after,max-attempts<=2\n"
	                       "  speaks:  retry-after-only\n");
	free(text);
}
END_TEST

START_TEST(retry_after_seconds_steps_then_stays)
{
	char err[300];
	struct scenario *sc = scenario_new("retry-after-seconds", err, sizeof(err));
	struct scenario_answer a;

	ck_assert_ptr_nonnull(sc);
	ck_assert_str_eq(scenario_default_expect(sc), "succeeds,honours-retry-after,max-attempts<=3");
	ask(sc, IP1, sizeof(IP1), "GET", "/", 0, &a);
	ck_assert_int_eq(a.status, 429);
	ck_assert_str_eq(a.headers, "Retry-After: 2\n");
	ck_assert(a.has_wait);
	ck_assert_uint_eq(a.wait_ns, 2 * NS_PER_SEC);
	ask(sc, IP1, sizeof(IP1), "GET", "/", NS_PER_SEC, &a);
	ck_assert_int_eq(a.status, 429);
	ask(sc, IP1, sizeof(IP1), "GET", "/", 2 * NS_PER_SEC, &a);
	ck_assert_int_eq(a.status, 200);
	ck_assert_str_eq(a.headers, "");
	ck_assert(!a.has_wait);
	ask(sc, IP1, sizeof(IP1), "GET", "/", 3 * NS_PER_SEC, &a);
	ck_assert_int_eq(a.status, 200);   /* the last step repeats */
	ck_assert_str_eq(a.body, "scenario retry-after-seconds step 3: 200\n");
	scenario_free(sc);
}
END_TEST

/*
 * A request on a connection whose last answer has not been reported done
 * ends that answer at its own arrival: the client read it before it could
 * send again there.  A request on another connection ends nothing, and a
 * later report of the answer changes nothing.
 */
START_TEST(next_request_on_a_connection_ends_its_answer)
{
	char err[300];
	struct scenario *sc = scenario_new("retry-after-seconds", err, sizeof(err));
	struct scenario_arrival log[4];
	struct scenario_answer a, b, c;
	int conn1, conn2;
	struct scenario_request r = { "GET", "/", IP1, sizeof(IP1), NULL, NULL, 1000, WALL0 + 1000, &conn1 };

	ck_assert_ptr_nonnull(sc);
	ck_assert_int_eq(scenario_answer(sc, &r, &a), 0);
	r.now_ns = 2000, r.conn = &conn2;
	ck_assert_int_eq(scenario_answer(sc, &r, &b), 0);
	ck_assert_uint_eq(scenario_arrivals(sc, log, 4, NULL), 2);
	ck_assert_int_eq(log[0].end, SCENARIO_END_PENDING);  /* another connection: still pending */
	r.now_ns = 3000, r.conn = &conn1;
	ck_assert_int_eq(scenario_answer(sc, &r, &c), 0);
	ck_assert_uint_eq(scenario_arrivals(sc, log, 4, NULL), 3);
	ck_assert_int_eq(log[0].end, SCENARIO_END_SENT);
	ck_assert_uint_eq(log[0].end_ns, 3000);
	ck_assert_int_eq(log[1].end, SCENARIO_END_PENDING);
	scenario_done(sc, a.token, true, 9000);  /* the late report */
	ck_assert_uint_eq(scenario_arrivals(sc, log, 4, NULL), 3);
	ck_assert_uint_eq(log[0].end_ns, 3000);
	scenario_free(sc);
}
END_TEST

START_TEST(clients_walk_separately)
{
	char err[300];
	struct scenario *sc = scenario_new("server-errors", err, sizeof(err));
	struct scenario_answer a;

	ask(sc, IP1, sizeof(IP1), "GET", "/", 0, &a);
	ck_assert_int_eq(a.status, 503);
	ask(sc, IP1, sizeof(IP1), "GET", "/", 1, &a);
	ck_assert_int_eq(a.status, 502);
	ask(sc, IP2, sizeof(IP2), "GET", "/", 2, &a);
	ck_assert_int_eq(a.status, 503);   /* another address starts at step 1 */
	ask(sc, IP1, sizeof(IP1), "GET", "/client-2/", 3, &a);
	ck_assert_int_eq(a.status, 503);   /* verify's per-copy path prefix is another client */
	ask(sc, IP1, sizeof(IP1), "GET", "/x", 4, &a);
	ck_assert_int_eq(a.status, 504);
	ask(sc, IP1, sizeof(IP1), "GET", "/", 5, &a);
	ck_assert_int_eq(a.status, 200);
	scenario_reset(sc);
	ask(sc, IP1, sizeof(IP1), "GET", "/", 6, &a);
	ck_assert_int_eq(a.status, 503);
	scenario_free(sc);
}
END_TEST

START_TEST(date_asks_at_least_n_seconds)
{
	char err[300], want[HTTPDATE_LEN + 16];
	struct scenario *sc = scenario_new("retry-after-date", err, sizeof(err));
	struct scenario_answer a;

	ask(sc, IP1, sizeof(IP1), "GET", "/", 0, &a);
	ck_assert_int_eq(a.status, 429);
	/* wall 22:13:20.250 + 2 s, rounded up to whole seconds: 22:13:23 */
	snprintf(want, sizeof(want), "Retry-After: Tue, 14 Nov 2023 22:13:23 GMT\n");
	ck_assert_str_eq(a.headers, want);
	ck_assert(a.has_wait);
	ck_assert_uint_eq(a.wait_ns, 2750 * NS_PER_MS);
	scenario_free(sc);
}
END_TEST

/*
 * "date:N" counts from when the answer goes out: held 2 s, "date:3" is the
 * first whole second at or after arrival + 2 s + 3 s, and the wait asked is
 * counted from the answer's planned time.
 */
START_TEST(date_counts_from_the_answer)
{
	char err[300];
	struct scenario *sc = scenario_parse("[{\"status\":429,\"retry_after\":\"date:3\",\"delay\":\"2s\"},"
	                                     "{\"status\":429,\"retry_after\":\"date:-3600\"}]", "d", err, sizeof(err));
	struct scenario_answer a;

	ck_assert_msg(sc != NULL, "%s", err);
	ask(sc, IP1, sizeof(IP1), "GET", "/", 0, &a);
	ck_assert_str_eq(a.headers, "Retry-After: Tue, 14 Nov 2023 22:13:26 GMT\n");
	ck_assert(a.has_wait && a.wait_date);
	ck_assert_int_eq(a.wait_source, SCENARIO_WAIT_RETRY_AFTER);
	ck_assert_uint_eq(a.wait_ns, 3750 * NS_PER_MS);
	ask(sc, IP1, sizeof(IP1), "GET", "/", 0, &a);
	ck_assert_str_eq(a.headers, "Retry-After: Tue, 14 Nov 2023 21:13:21 GMT\n");
	ck_assert(a.has_wait);
	ck_assert_uint_eq(a.wait_ns, 0);   /* a date in the past asks for no wait */
	scenario_free(sc);
}
END_TEST

/* Odd Retry-After values: two fields ask for the longer wait; values that are not delta-seconds ask for none. */
START_TEST(odd_retry_after_values)
{
	static const struct {
		const char *name, *headers;
		bool has_wait;
		uint64_t wait_ms;
	} CASES[] = {
		{ "retry-after-twice", "Retry-After: 1\nRetry-After: 3\n", true, 3000 },
		{ "retry-after-zero", "Retry-After: 0\n", true, 0 },
		{ "retry-after-fraction", "Retry-After: 1.5\n", false, 0 },
		{ "retry-after-garbage", "Retry-After: soon\n", false, 0 },
		{ "payload-too-large", "Retry-After: 2\n", true, 2000 },
	};
	char err[300];

	for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
		struct scenario *sc = scenario_new(CASES[i].name, err, sizeof(err));
		struct scenario_answer a;

		ask(sc, IP1, sizeof(IP1), "GET", "/", 0, &a);
		ck_assert_msg(strcmp(a.headers, CASES[i].headers) == 0, "%s: %s", CASES[i].name, a.headers);
		ck_assert_msg(a.has_wait == CASES[i].has_wait, "%s", CASES[i].name);
		ck_assert_uint_eq(a.wait_ns, CASES[i].wait_ms * NS_PER_MS);
		scenario_free(sc);
	}
}
END_TEST

/* A wait given only by RateLimit headers: RateLimit t=, RateLimit-Reset, X-RateLimit-Reset; Retry-After wins. */
START_TEST(ratelimit_header_waits)
{
	static const struct {
		const char *name;
		enum scenario_wait_source source;
	} CASES[] = {
		{ "ratelimit-only", SCENARIO_WAIT_RATELIMIT },
		{ "ratelimit-reset", SCENARIO_WAIT_RATELIMIT_RESET },
		{ "x-ratelimit-reset", SCENARIO_WAIT_X_RATELIMIT_RESET },
		{ "envoy-x-ratelimit", SCENARIO_WAIT_X_RATELIMIT_RESET },
		{ "layered", SCENARIO_WAIT_RETRY_AFTER },
	};
	char err[300];

	for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
		struct scenario *sc = scenario_new(CASES[i].name, err, sizeof(err));
		struct scenario_answer a;

		ask(sc, IP1, sizeof(IP1), "GET", "/", 0, &a);
		ck_assert_int_eq(a.status, 429);
		ck_assert_msg(a.has_wait && a.wait_source == CASES[i].source, "%s: source %d", CASES[i].name,
		              (int)a.wait_source);
		ck_assert_uint_eq(a.wait_ns, 2 * NS_PER_SEC);
		ck_assert(strstr(a.headers, "Retry-After") == NULL || CASES[i].source == SCENARIO_WAIT_RETRY_AFTER);
		scenario_free(sc);
	}
	ck_assert_str_eq(scenario_wait_source_name(SCENARIO_WAIT_X_RATELIMIT_RESET), "X-RateLimit-Reset");
}
END_TEST

/*
 * GitHub's reset: "epoch:2" goes out as the first whole second at or after
 * the answer's time + 2 s, and the wait runs to it (the answer leaves at
 * WALL0 + 1 s: 1700000001.25 s, so 1700000004, 2.75 s away).
 */
START_TEST(github_epoch_reset)
{
	char err[300];
	struct scenario *sc = scenario_new("github-reset", err, sizeof(err));
	struct scenario_answer a;

	ck_assert_ptr_nonnull(sc);
	ask(sc, IP1, sizeof(IP1), "GET", "/", NS_PER_SEC, &a);
	ck_assert_int_eq(a.status, 429);
	ck_assert_str_eq(a.headers, "X-RateLimit-Limit: 10\nX-RateLimit-Remaining: 0\nX-RateLimit-Used: 10\n"
	                            "X-RateLimit-Resource: core\nX-RateLimit-Reset: 1700000004\n");
	ck_assert(a.has_wait && a.wait_date);
	ck_assert_int_eq(a.wait_source, SCENARIO_WAIT_X_RATELIMIT_RESET);
	ck_assert_uint_eq(a.wait_ns, 2750 * NS_PER_MS);
	scenario_free(sc);
}
END_TEST

START_TEST(layered_sends_ratelimit_fields)
{
	char err[300];
	struct scenario *sc = scenario_new("layered", err, sizeof(err));
	struct scenario_answer a;

	ask(sc, IP1, sizeof(IP1), "GET", "/", 0, &a);
	ck_assert_int_eq(a.status, 429);
	ck_assert_str_eq(a.headers, "Retry-After: 2\n"
	                            "RateLimit-Policy: \"minute\";q=30;w=60, \"hour\";q=500;w=3600\n"
	                            "RateLimit: \"minute\";r=0;t=2\n");
	ask(sc, IP1, sizeof(IP1), "GET", "/", 1, &a);
	ck_assert_int_eq(a.status, 200);
	ck_assert_ptr_nonnull(strstr(a.headers, "RateLimit: \"minute\";r=29;t=60\n"));
	scenario_free(sc);
}
END_TEST

START_TEST(script_keys_and_values)
{
	char err[300];
	struct scenario *sc = scenario_parse("[{\"status\":503,\"retry_after\":7,\"delay\":\"250ms\","
	                                     "\"headers\":{\"X-A\":\"1\"}},{\"status\":201,\"delay\":20}]",
	                                     "mine", err, sizeof(err));
	struct scenario_arrival log[3];
	struct scenario_answer a;

	ck_assert_msg(sc != NULL, "%s", err);
	ck_assert_str_eq(scenario_default_expect(sc), "succeeds,honours-retry-after");
	ask(sc, NULL, 0, "GET", "/", 0, &a);
	ck_assert_int_eq(a.status, 503);
	ck_assert_str_eq(a.headers, "Retry-After: 7\nX-A: 1\n");
	ck_assert_uint_eq(a.delay_ns, 250 * NS_PER_MS);
	ask(sc, NULL, 0, "GET", "/", 1, &a);
	ck_assert_int_eq(a.status, 201);
	ck_assert_str_eq(a.headers, "");
	ck_assert_uint_eq(a.delay_ns, 20 * NS_PER_MS);
	/* Two steps: the third request gets the last one again. */
	ask(sc, NULL, 0, "GET", "/", 2, &a);
	ck_assert_int_eq(a.status, 201);
	ck_assert_uint_eq(scenario_arrivals(sc, log, 3, NULL), 3);
	ck_assert_uint_eq(log[0].step, 0);
	ck_assert_uint_eq(log[1].step, 1);
	ck_assert_uint_eq(log[2].step, 1);
	scenario_free(sc);
}
END_TEST

START_TEST(script_errors_name_the_step)
{
	static const char *const BAD[][2] = {
		{ "{}", "JSON array" },
		{ "[]", "JSON array" },
		{ "[{\"status\":200},{\"status\":99}]", "step 2: \"status\"" },
		{ "[{\"status\":429,\"retry_after\":true}]", "step 1: \"retry_after\"" },
		{ "[{\"status\":429,\"retry_after\":\"date:x\"}]", "date:N" },
		{ "[{\"status\":200,\"headers\":{\"Bad Name\":\"v\"}}]", "\"headers\"" },
		{ "[{\"status\":200,\"delay\":\"11s\"}]", "10s cap" },
		/* 18446744073710 ms is 2^64 ns and a bit: it wrapped to 0.45 ms */
		{ "[{\"status\":200},{\"status\":200,\"delay\":18446744073710}]", "step 2: \"delay\" is over the 10s cap" },
		{ "[{\"status\":200,\"delay\":10001}]", "step 1: \"delay\" is over the 10s cap" },
		{ "[{\"status\":100}]", "step 1: \"status\"" },
		{ "[{\"status\":200},{\"status\":101}]", "step 2: \"status\"" },
		{ "[{\"status\":200,\"colour\":1}]", "unknown key \"colour\"" },
		{ "[{\"status\":", "not JSON" },
		{ "[{\"fault\":\"explode\"}]", "step 1: \"fault\" is one of" },
		{ "[{\"fault\":\"close-mid-body\"}]", "step 1: \"status\"" },
		{ "[{\"status\":429,\"retry_after\":[\"1\",\"2\",\"3\"]}]", "one or two values" },
		{ "[{\"status\":429,\"retry_after\":\"date:99999999\"}]", "date:N" },
	};
	char err[300];

	for (size_t i = 0; i < sizeof(BAD) / sizeof(BAD[0]); i++) {
		err[0] = '\0';
		ck_assert_msg(scenario_parse(BAD[i][0], "t", err, sizeof(err)) == NULL, "accepted %s", BAD[i][0]);
		ck_assert_msg(strstr(err, BAD[i][1]) != NULL, "%s: '%s' lacks '%s'", BAD[i][0], err, BAD[i][1]);
	}
	ck_assert_ptr_null(scenario_new("/nonexistent/scenario.json", err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "neither a built-in"));
}
END_TEST

START_TEST(log_records_arrivals_and_bounds)
{
	char err[300];
	struct scenario *sc = scenario_new("persistent-429", err, sizeof(err));
	struct scenario_request r = { "POST", "/client-3/pay", IP1, sizeof(IP1), "k-1", "00-abc-01", 5, WALL0, NULL };
	struct scenario_arrival *log = calloc(SCENARIO_LOG_MAX, sizeof(*log));
	struct scenario_answer a;
	uint64_t dropped = 0;
	char *json;

	scenario_answer(sc, &r, &a);
	ck_assert_uint_eq(scenario_arrivals(sc, log, 4, &dropped), 1);
	ck_assert_uint_eq(dropped, 0);
	ck_assert_uint_eq(log[0].t_ns, 5);
	ck_assert_str_eq(log[0].method, "POST");
	ck_assert_str_eq(log[0].path, "/client-3/pay");
	ck_assert_str_eq(log[0].client, "127.0.0.1/client-3");
	ck_assert_str_eq(log[0].idempotency_key, "k-1");
	ck_assert_str_eq(log[0].traceparent, "00-abc-01");
	ck_assert_int_eq(log[0].status, 429);
	ck_assert_uint_eq(log[0].wait_ns, NS_PER_SEC);
	json = scenario_arrivals_json(sc);
	ck_assert_ptr_nonnull(strstr(json, "\"idempotency_key\": \"k-1\""));
	ck_assert_ptr_nonnull(strstr(json, "\"wait_ms\": 1000"));
	free(json);
	for (size_t i = 0; i < SCENARIO_LOG_MAX + 10; i++)
		scenario_answer(sc, &r, &a);
	ck_assert_uint_eq(scenario_arrivals(sc, log, SCENARIO_LOG_MAX, &dropped), SCENARIO_LOG_MAX);
	ck_assert_uint_eq(dropped, 11);
	free(log);
	scenario_free(sc);
}
END_TEST

/*
 * What a client sends goes into the arrivals' JSON as text: a byte that is not
 * UTF-8 (in the path, the method, the keys or the name) shows as '?', whole
 * letters stay, and a long name is cut between letters.  One such request lost
 * the whole log: jansson refuses a string that is not UTF-8.
 */
START_TEST(arrivals_keep_what_clients_send_as_text)
{
	static const char NAME[] = "nJos\xc3\xa9 Jos\xc3\xa9 Jos\xc3\xa9 Jos\xc3\xa9 Jos\xc3\xa9 Jos\xc3\xa9 Jos\xc3\xa9";
	char err[300];
	struct scenario *sc = scenario_new("persistent-429", err, sizeof(err));
	struct scenario_request bad = { "G\x80T", "/caf\xe9", IP1, sizeof(IP1), "k-\xff", "00-\xfe-01", 5, WALL0, NULL };
	struct scenario_request good = { "GET", "/caf\xc3\xa9", IP2, sizeof(IP2), NULL, NULL, 6, WALL0, NULL };
	struct scenario_request named = { "GET", "/client-7", NAME, sizeof(NAME) - 1, NULL, NULL, 7, WALL0, NULL };
	struct scenario_answer a;
	json_error_t je;
	json_t *log;
	char *json;

	ck_assert_ptr_nonnull(sc);
	ck_assert_int_eq(scenario_answer(sc, &bad, &a), 0);
	ck_assert_int_eq(scenario_answer(sc, &good, &a), 0);
	ck_assert_int_eq(scenario_answer(sc, &named, &a), 0);
	json = scenario_arrivals_json(sc);
	ck_assert_ptr_nonnull(json);
	log = json_loads(json, 0, &je);
	ck_assert_msg(log != NULL, "%s: %s", je.text, json);
	ck_assert_uint_eq(json_array_size(log), 3);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(log, 0), "method")), "G?T");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(log, 0), "path")), "/caf?");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(log, 0), "idempotency_key")), "k-?");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(log, 0), "traceparent")), "00-?-01");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(log, 1), "path")), "/caf\xc3\xa9");
	/* 40 bytes of the name end inside the seventh é: cut before it. */
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(log, 2), "client")),
	                 "Jos\xc3\xa9 Jos\xc3\xa9 Jos\xc3\xa9 Jos\xc3\xa9 Jos\xc3\xa9 Jos\xc3\xa9 Jos/client-7");
	json_decref(log);
	free(json);
	scenario_free(sc);
}
END_TEST

START_TEST(client_names)
{
	static const char V6[] = { 'i', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 };
	char buf[SCENARIO_CLIENT_LEN];

	scenario_client_name(IP2, sizeof(IP2), "/", buf, sizeof(buf));
	ck_assert_str_eq(buf, "10.0.0.2");
	scenario_client_name(V6, sizeof(V6), "/client-12", buf, sizeof(buf));
	ck_assert_str_eq(buf, "::1/client-12");
	scenario_client_name("hteam\x01", 6, "/client-x", buf, sizeof(buf));
	ck_assert_str_eq(buf, "team?");
	scenario_client_name("*", 1, "/", buf, sizeof(buf));
	ck_assert_str_eq(buf, "*");
}
END_TEST

/* The real server: `ratelab serve --scenario` answers limited paths from the script and logs them. */
START_TEST(serve_answers_from_the_script)
{
	static const char *const ARGS[] = { "--scenario", "post-503", "--quiet", NULL };
	struct test_server s;
	char url[128], ra[64], *hdr = NULL, *body = NULL;
	long status = 0;

	ck_assert_msg(testutil_server_start(&s, ARGS, 5000) == 0, "serve --scenario did not start");
	snprintf(url, sizeof(url), "%s/orders", s.url);
	ck_assert_int_eq(testutil_http("POST", url, "{}", &status, &hdr, NULL), 0);
	ck_assert_int_eq(status, 503);
	ck_assert(!testutil_header(hdr, "Retry-After", ra, sizeof(ra)));
	free(hdr);
	ck_assert_int_eq(testutil_http("POST", url, "{}", &status, NULL, NULL), 0);
	ck_assert_int_eq(status, 200);
	snprintf(url, sizeof(url), "%s/scenario", s.url);
	ck_assert_int_eq(testutil_http("GET", url, NULL, &status, NULL, &body), 0);
	ck_assert_int_eq(status, 200);
	ck_assert_ptr_nonnull(strstr(body, "\"status\": 503"));
	ck_assert_ptr_nonnull(strstr(body, "\"path\": \"/orders\""));
	ck_assert_ptr_nonnull(strstr(body, "\"method\": \"POST\""));
	free(body);
	ck_assert_int_eq(testutil_server_stop(&s, 3000), 0);
}
END_TEST

/* The real server: a path that is not UTF-8 is logged as text, and GET /scenario still answers with every arrival. */
START_TEST(serve_logs_a_path_that_is_not_text)
{
	static const char *const ARGS[] = { "--scenario", "retry-after-seconds", "--quiet", NULL };
	static const char REQ[] = "GET /caf\xe9 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	struct test_server s;
	char url[128], reply[4096], *body = NULL;
	long status = 0;
	json_t *log;
	int fd;

	ck_assert_msg(testutil_server_start(&s, ARGS, 5000) == 0, "serve --scenario did not start");
	snprintf(url, sizeof(url), "%s/first", s.url);
	ck_assert_int_eq(testutil_http("GET", url, NULL, &status, NULL, NULL), 0);
	ck_assert_int_eq(status, 429);
	fd = testutil_raw_connect(s.port, 1);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, REQ, sizeof(REQ) - 1), (ssize_t)(sizeof(REQ) - 1));
	testutil_raw_read(fd, reply, sizeof(reply), 5000);
	close(fd);
	ck_assert_msg(strncmp(reply, "HTTP/1.1 429", 12) == 0, "%s", reply);
	snprintf(url, sizeof(url), "%s/scenario", s.url);
	ck_assert_int_eq(testutil_http("GET", url, NULL, &status, NULL, &body), 0);
	ck_assert_int_eq(status, 200);
	log = json_loads(body, 0, NULL);
	ck_assert_msg(log != NULL, "%s", body);
	ck_assert_uint_eq(json_array_size(log), 2);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(log, 1), "path")), "/caf?");
	json_decref(log);
	free(body);
	ck_assert_int_eq(testutil_server_stop(&s, 3000), 0);
}
END_TEST

/* Occurrences of needle in s. */
static int count_of(const char *s, const char *needle)
{
	int n = 0;

	for (const char *p = s; (p = strstr(p, needle)) != NULL; p++)
		n++;
	return n;
}

/*
 * s's arrival log (GET /scenario, for the caller to free) once it holds `sent`
 * answers whose last byte left and none still pending: an answer's end (sent,
 * or failed for a scripted reset or cut) is logged when the server hears it
 * left, which may come after the client already has it (read for at most 5 s).
 */
static char *sent_log(const struct test_server *s, int sent)
{
	char url[128], *body = NULL;
	long status = 0;

	snprintf(url, sizeof(url), "%s/scenario", s->url);
	for (int i = 0; i < 100; i++) {
		free(body);
		body = NULL;
		ck_assert_int_eq(testutil_http("GET", url, NULL, &status, NULL, &body), 0);
		if (count_of(body, "\"end\": \"sent\"") == sent && count_of(body, "\"end\": \"pending\"") == 0)
			break;
		testutil_sleep_ms(50);
	}
	return body;
}

/*
 * POST /reset starts every client at the first step again: on retry-after-seconds
 * one client gets 429 429, and after the reset 429 429 once more (then 200).
 */
START_TEST(serve_reset_restarts_the_script)
{
	static const char *const ARGS[] = { "--scenario", "retry-after-seconds", "--quiet", NULL };
	static const long WANT[] = { 429, 429, -1, 429, 429, 200 };
	struct test_server s;
	char url[128], reset[128], *body = NULL;
	long status = 0;

	ck_assert_msg(testutil_server_start(&s, ARGS, 5000) == 0, "serve --scenario did not start");
	snprintf(url, sizeof(url), "%s/", s.url);
	snprintf(reset, sizeof(reset), "%s/reset", s.url);
	for (size_t i = 0; i < sizeof(WANT) / sizeof(WANT[0]); i++) {
		if (WANT[i] < 0) {
			ck_assert_int_eq(testutil_http("POST", reset, NULL, &status, NULL, NULL), 0);
			ck_assert_int_eq(status, 200);
			continue;
		}
		ck_assert_int_eq(testutil_http("GET", url, NULL, &status, NULL, NULL), 0);
		ck_assert_msg(status == WANT[i], "request %zu: %ld, want %ld", i + 1, status, WANT[i]);
	}
	/* The log was emptied too: it holds the three requests since the reset. */
	snprintf(url, sizeof(url), "%s/scenario", s.url);
	ck_assert_int_eq(testutil_http("GET", url, NULL, &status, NULL, &body), 0);
	ck_assert_int_eq(status, 200);
	ck_assert_int_eq(count_of(body, "\"status\": "), 3);
	ck_assert_int_eq(count_of(body, "\"step\": 1"), 1);
	ck_assert_int_eq(count_of(body, "\"step\": 3"), 1);
	free(body);
	ck_assert_int_eq(testutil_server_stop(&s, 3000), 0);
}
END_TEST

/* One delayed request fired from its own thread. */
struct slow_call {
	char url[128];
	long status;
	int rc;
	uint64_t took_ns;
	atomic_bool done;
};

static void *slow_call_run(void *arg)
{
	struct slow_call *sc = arg;
	uint64_t t0 = clock_monotonic_ns();

	sc->rc = testutil_http("GET", sc->url, NULL, &sc->status, NULL, NULL);
	sc->took_ns = clock_monotonic_ns() - t0;
	atomic_store(&sc->done, true);
	return NULL;
}

/* True once GET /scenario lists an arrival; *took_ns is how long that GET took. */
static bool arrival_logged(const char *base, uint64_t *took_ns)
{
	char url[128], *body = NULL;
	long status = 0;
	uint64_t t0 = clock_monotonic_ns();
	bool seen;

	snprintf(url, sizeof(url), "%s/scenario", base);
	seen = testutil_http("GET", url, NULL, &status, NULL, &body) == 0 && status == 200 && body &&
	       strstr(body, "\"path\": \"/slow\"") != NULL;
	*took_ns = clock_monotonic_ns() - t0;
	free(body);
	return seen;
}

/*
 * A scripted 1 s delay holds only its own answer: with one server thread,
 * /scenario and /healthz answer at once while the delayed request waits, and
 * the delayed one still takes its full second.
 */
START_TEST(serve_delay_does_not_block_the_thread)
{
	static const char SCRIPT[] = "[{\"status\":503,\"delay\":\"1s\"},{\"status\":200}]";
	char path[] = "/tmp/ratelab-delay-XXXXXX";
	int fd = mkstemp(path);
	const char *const args[] = { "--scenario", path, "--threads", "1", "--quiet", NULL };
	struct test_server s;
	struct slow_call sc = { .status = 0 };
	pthread_t t;
	char url[128];
	long status = 0;
	uint64_t took = 0, t0;
	bool seen = false;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, SCRIPT, sizeof(SCRIPT) - 1), (ssize_t)(sizeof(SCRIPT) - 1));
	close(fd);
	ck_assert_msg(testutil_server_start(&s, args, 5000) == 0, "serve --scenario FILE did not start");
	unlink(path);  /* read at start */
	snprintf(sc.url, sizeof(sc.url), "%s/slow", s.url);
	ck_assert_int_eq(pthread_create(&t, NULL, slow_call_run, &sc), 0);
	/* Bounded: at most 200 polls of /scenario (about 2 s when each is fast). */
	for (int i = 0; i < 200 && !seen && !atomic_load(&sc.done); i++) {
		seen = arrival_logged(s.url, &took);
		if (!seen)
			usleep(10000);
	}
	ck_assert_msg(seen, "the delayed request never showed in /scenario while it was pending");
	ck_assert_msg(took < 200 * NS_PER_MS, "GET /scenario took %.0f ms", (double)took / 1e6);
	snprintf(url, sizeof(url), "%s/healthz", s.url);
	t0 = clock_monotonic_ns();
	ck_assert_int_eq(testutil_http("GET", url, NULL, &status, NULL, NULL), 0);
	took = clock_monotonic_ns() - t0;
	ck_assert_int_eq(status, 200);
	ck_assert_msg(took < 200 * NS_PER_MS, "GET /healthz took %.0f ms behind a delayed answer",
	              (double)took / 1e6);
	ck_assert_msg(!atomic_load(&sc.done), "the delayed answer came back before /healthz");
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(sc.rc, 0);
	ck_assert_int_eq(sc.status, 503);
	ck_assert_msg(sc.took_ns >= 1000 * NS_PER_MS && sc.took_ns < 3000 * NS_PER_MS,
	              "the delayed answer took %.0f ms, want 1 s", (double)sc.took_ns / 1e6);
	ck_assert_int_eq(testutil_server_stop(&s, 3000), 0);
}
END_TEST

/* A scenario file in /tmp for `serve --scenario FILE`; the path goes into path (unlinked by the caller). */
static void write_script(char *path, const char *script)
{
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, script, strlen(script)), (ssize_t)strlen(script));
	close(fd);
}

/* The number after `key` in the n-th (0-based) occurrence of key in s; -1 when absent. */
static double json_number_after(const char *s, const char *key, int n)
{
	const char *p = s;

	for (int i = 0; p && i <= n; i++)
		if ((p = strstr(p, key)) && i < n)
			p += strlen(key);
	return p ? strtod(p + strlen(key), NULL) : -1;
}

/*
 * Scripted transport failures reach a real client as failures: a reset before
 * any byte, a body cut halfway, bytes that are not HTTP; the log says which,
 * and that none was delivered.
 */
START_TEST(serve_scripts_transport_failures)
{
	static const char SCRIPT[] = "[{\"fault\":\"reset\"},{\"status\":200,\"fault\":\"close-mid-body\"},"
	                             "{\"fault\":\"malformed\"},{\"status\":200}]";
	char path[] = "/tmp/ratelab-faults-XXXXXX";
	const char *const args[] = { "--scenario", path, "--quiet", NULL };
	struct test_server s;
	char url[128], *body = NULL;
	long status = 0;

	write_script(path, SCRIPT);
	ck_assert_msg(testutil_server_start(&s, args, 5000) == 0, "serve --scenario FILE did not start");
	unlink(path);
	snprintf(url, sizeof(url), "%s/", s.url);
	for (int i = 0; i < 3; i++)
		ck_assert_msg(testutil_http("GET", url, NULL, &status, NULL, NULL) == -1, "step %d was not a failure", i + 1);
	ck_assert_int_eq(testutil_http("GET", url, NULL, &status, NULL, NULL), 0);
	ck_assert_int_eq(status, 200);
	body = sent_log(&s, 1);
	ck_assert_ptr_nonnull(strstr(body, "\"fault\": \"reset\""));
	ck_assert_ptr_nonnull(strstr(body, "\"fault\": \"close-mid-body\""));
	ck_assert_ptr_nonnull(strstr(body, "\"fault\": \"malformed\""));
	ck_assert_int_eq(count_of(body, "\"end\": \"failed\""), 3);
	ck_assert_int_eq(count_of(body, "\"end\": \"sent\""), 1);
	free(body);
	ck_assert_int_eq(testutil_server_stop(&s, 3000), 0);
}
END_TEST

/* The log records when each answer's last byte left: a held answer leaves after its delay. */
START_TEST(serve_records_when_answers_left)
{
	static const char SCRIPT[] = "[{\"status\":503,\"delay\":\"300ms\"},{\"status\":200}]";
	char path[] = "/tmp/ratelab-sent-XXXXXX";
	const char *const args[] = { "--scenario", path, "--quiet", NULL };
	struct test_server s;
	char url[128], *body = NULL;
	long status = 0;
	double t, end;

	write_script(path, SCRIPT);
	ck_assert_msg(testutil_server_start(&s, args, 5000) == 0, "serve --scenario FILE did not start");
	unlink(path);
	snprintf(url, sizeof(url), "%s/", s.url);
	ck_assert_int_eq(testutil_http("GET", url, NULL, &status, NULL, NULL), 0);
	ck_assert_int_eq(status, 503);
	ck_assert_int_eq(testutil_http("GET", url, NULL, &status, NULL, NULL), 0);
	body = sent_log(&s, 2);
	ck_assert_int_eq(count_of(body, "\"end\": \"sent\""), 2);
	end = json_number_after(body, "\"end_ms\": ", 0);
	ck_assert_msg(end >= 300 && end < 1500, "the held answer left at %.1f ms, want after its 300 ms", end);
	t = json_number_after(body, "\"t_ms\": ", 1);
	end = json_number_after(body, "\"end_ms\": ", 1);
	ck_assert_msg(end >= t && end < t + 500, "the second answer left at %.1f ms, arrived at %.1f ms", end, t);
	free(body);
	ck_assert_int_eq(testutil_server_stop(&s, 3000), 0);
}
END_TEST

START_TEST(serve_rejects_a_bad_scenario)
{
	static const char *const ARGS[] = { "serve", "--scenario", "no-such-thing", NULL };
	struct test_run r;

	ck_assert_int_eq(testutil_run(&r, ARGS, NULL, 5000), 0);
	ck_assert_int_eq(r.status, 2);
	ck_assert_str_eq(r.err, "ratelab serve: --scenario: 'no-such-thing' is neither a built-in scenario "
	                        "(ratelab verify --list names them) nor a readable file\n");
	testutil_run_free(&r);
}
END_TEST

Suite *scenario_suite(void)
{
	Suite *s = suite_create("scenario");
	TCase *tc = tcase_create("unit");
	TCase *live = tcase_create("serve");

	tcase_add_test(tc, builtins_load_with_defaults);
	tcase_add_test(tc, next_request_on_a_connection_ends_its_answer);
	tcase_add_test(tc, builtins_say_what_a_correct_client_does);
	tcase_add_test(tc, date_counts_from_the_answer);
	tcase_add_test(tc, odd_retry_after_values);
	tcase_add_test(tc, ratelimit_header_waits);
	tcase_add_test(tc, github_epoch_reset);
	tcase_add_test(tc, retry_after_seconds_steps_then_stays);
	tcase_add_test(tc, clients_walk_separately);
	tcase_add_test(tc, date_asks_at_least_n_seconds);
	tcase_add_test(tc, layered_sends_ratelimit_fields);
	tcase_add_test(tc, script_keys_and_values);
	tcase_add_test(tc, script_errors_name_the_step);
	tcase_add_test(tc, log_records_arrivals_and_bounds);
	tcase_add_test(tc, client_names);
	tcase_add_test(tc, arrivals_keep_what_clients_send_as_text);
	suite_add_tcase(s, tc);
	tcase_add_test(live, serve_answers_from_the_script);
	tcase_add_test(live, serve_logs_a_path_that_is_not_text);
	tcase_add_test(live, serve_reset_restarts_the_script);
	tcase_add_test(live, serve_rejects_a_bad_scenario);
	tcase_add_test(live, serve_delay_does_not_block_the_thread);
	tcase_add_test(live, serve_scripts_transport_failures);
	tcase_add_test(live, serve_records_when_answers_left);
	tcase_set_timeout(live, 20);
	suite_add_tcase(s, live);
	return s;
}
