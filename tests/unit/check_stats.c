/* Server statistics under an injected clock: counts, the timeline's buckets, reset, /stats and /metrics. */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "server/stats.h"

#define MS NS_PER_MS
#define T0 (1000 * NS_PER_SEC)   /* the stats' start: any monotonic time */

static const struct stats_route_info ROUTES[2] = {
	{ "/", "token-bucket", { 3, 1, 2, 0, 0 }, NULL, NULL, false, { 0 } },
	{ "/api", "token-bucket", { 4, 0, 0, 5, 0 }, NULL, NULL, false, { 0 } },
};

/* 3 admitted and 2 rejected on "/", 1 rejected on "/api", a 503 and a reset off the routes. */
static struct stats *sample(void)
{
	struct stats *s = stats_new(2, T0);

	ck_assert_ptr_nonnull(s);
	for (int i = 0; i < 3; i++)
		stats_record(s, 0, 200, STATS_ADMITTED, T0 + 50 * MS);
	stats_record(s, 0, 429, STATS_REJECTED, T0 + 150 * MS);
	stats_record(s, 0, 429, STATS_REJECTED, T0 + 199 * MS);
	stats_record(s, 1, 429, STATS_REJECTED, T0 + 150 * MS);
	stats_record(s, -1, 503, STATS_NONE, T0 + 150 * MS);
	stats_record(s, 0, STATS_STATUS_RESET, STATS_NONE, T0 + 150 * MS);
	return s;
}

START_TEST(counts_per_status_and_route)
{
	struct stats *s = sample();

	ck_assert_uint_eq(stats_status_count(s, 200), 3);
	ck_assert_uint_eq(stats_status_count(s, 429), 3);
	ck_assert_uint_eq(stats_status_count(s, 503), 1);
	ck_assert_uint_eq(stats_status_count(s, STATS_STATUS_RESET), 1);
	ck_assert_uint_eq(stats_status_count(s, 404), 0);
	ck_assert_uint_eq(stats_total(s), 8);
	ck_assert_uint_eq(stats_decisions(s, 0, STATS_ADMITTED), 3);
	ck_assert_uint_eq(stats_decisions(s, 0, STATS_REJECTED), 2);
	ck_assert_uint_eq(stats_decisions(s, 1, STATS_ADMITTED), 0);
	ck_assert_uint_eq(stats_decisions(s, 1, STATS_REJECTED), 1);
	ck_assert_uint_eq(stats_decisions(s, 2, STATS_REJECTED), 0);   /* no such route */
	ck_assert_uint_eq(stats_decisions(s, -1, STATS_REJECTED), 0);
	/* An out-of-range status is still counted, in the last slot. */
	stats_record(s, -1, 999, STATS_NONE, T0);
	ck_assert_uint_eq(stats_total(s), 9);
	ck_assert_uint_eq(stats_status_count(s, 999), 0);
	ck_assert_uint_eq(stats_status_count(s, 599), 1);
	stats_free(s);
	ck_assert_ptr_null(stats_new(STATS_MAX_ROUTES + 1, T0));
}
END_TEST

/* The timeline array named `which` of a /stats document. */
static json_t *timeline(json_t *root, const char *which)
{
	json_t *a = json_object_get(json_object_get(root, "timeline"), which);

	ck_assert_msg(json_is_array(a) && json_array_size(a) == STATS_BUCKETS, "timeline.%s", which);
	return a;
}

static json_t *stats_doc(struct stats *s, uint64_t now)
{
	char *text = stats_json(s, now, ROUTES, 2);
	json_error_t e;
	json_t *j;

	ck_assert_ptr_nonnull(text);
	j = json_loads(text, 0, &e);
	ck_assert_msg(j != NULL, "not JSON (%s): %s", e.text, text);
	free(text);
	return j;
}

static long long at(json_t *arr, size_t i)
{
	return (long long)json_integer_value(json_array_get(arr, i));
}

static long long sum(json_t *arr)
{
	long long n = 0;

	for (size_t i = 0; i < json_array_size(arr); i++)
		n += at(arr, i);
	return n;
}

/* Buckets of 100 ms by the injected time; the last element is the bucket of `now`. */
START_TEST(timeline_buckets_by_injected_now)
{
	struct stats *s = sample();
	json_t *j = stats_doc(s, T0 + 250 * MS), *adm, *rej;

	adm = timeline(j, "admitted");
	rej = timeline(j, "rejected");
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "timeline"), "bucket_ms")), 100);
	ck_assert_int_eq(at(adm, STATS_BUCKETS - 1), 0);   /* 200..300 ms: nothing yet */
	ck_assert_int_eq(at(rej, STATS_BUCKETS - 2), 3);   /* 100..200 ms: 150, 199, 150 */
	ck_assert_int_eq(at(adm, STATS_BUCKETS - 3), 3);   /* 0..100 ms */
	ck_assert_int_eq(sum(adm), 3);
	ck_assert_int_eq(sum(rej), 3);
	json_decref(j);
	/* 60 s later the window has moved past them. */
	j = stats_doc(s, T0 + 60250 * MS);
	ck_assert_int_eq(sum(timeline(j, "admitted")) + sum(timeline(j, "rejected")), 0);
	json_decref(j);
	/* A bucket is reused 60 s on: its first writer clears what it held. */
	stats_record(s, 0, 200, STATS_ADMITTED, T0 + 60050 * MS);
	j = stats_doc(s, T0 + 60050 * MS);
	adm = timeline(j, "admitted");
	ck_assert_int_eq(at(adm, STATS_BUCKETS - 1), 1);
	ck_assert_int_eq(sum(adm), 1);
	json_decref(j);
	stats_free(s);
}
END_TEST

/* The last n buckets up to now's, oldest first, numbered; faults and status ranges counted and reset. */
START_TEST(buckets_faults_and_ranges)
{
	struct stats *s = sample();
	uint64_t adm[3], rej[3], first;

	stats_buckets(s, T0 + 250 * MS, 3, adm, rej, &first);
	ck_assert_uint_eq(first, (T0 + 250 * MS) / (100 * MS) + 1 - 2);
	ck_assert_uint_eq(adm[0], 3);                 /* T0 + 50 ms */
	ck_assert_uint_eq(rej[1], 3);                 /* T0 + 150 and 199 ms */
	ck_assert_uint_eq(adm[2] + rej[2], 0);        /* T0 + 200 ms on: still filling, empty */
	ck_assert_uint_eq(stats_status_range(s, 200, 299), 3);
	ck_assert_uint_eq(stats_status_range(s, 400, 599), 4);
	ck_assert_uint_eq(stats_uptime_ns(s, T0 + 7 * MS), 7 * MS);
	stats_record_fault(s);
	stats_record_fault(s);
	ck_assert_uint_eq(stats_faults(s), 2);
	stats_reset(s, T0 + 300 * MS);
	ck_assert_uint_eq(stats_faults(s), 0);
	stats_free(s);
}
END_TEST

START_TEST(json_fields)
{
	struct stats *s = sample();
	json_t *j = stats_doc(s, T0 + 2500 * MS), *st, *r0, *dec;

	ck_assert_double_eq_tol(json_real_value(json_object_get(j, "uptime_s")), 2.5, 1e-9);
	ck_assert_double_eq_tol(json_real_value(json_object_get(j, "since_reset_s")), 2.5, 1e-9);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "requests")), 8);
	st = json_object_get(j, "status");
	ck_assert_int_eq(json_object_size(st), 4);
	ck_assert_int_eq(json_integer_value(json_object_get(st, "200")), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(st, "429")), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(st, "503")), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(st, "reset")), 1);
	ck_assert_int_eq(json_array_size(json_object_get(j, "routes")), 2);
	r0 = json_array_get(json_object_get(j, "routes"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(r0, "prefix")), "/");
	ck_assert_str_eq(json_string_value(json_object_get(r0, "limiter")), "token-bucket");
	ck_assert_int_eq(json_integer_value(json_object_get(r0, "admitted")), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(r0, "rejected")), 2);
	ck_assert_int_eq(json_integer_value(json_object_get(r0, "live_keys")), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(r0, "evictions")), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(r0, "expirations")), 2);
	/* Decisions are summed per limiter over its routes; keys over all routes. */
	dec = json_object_get(json_object_get(j, "decisions"), "token-bucket");
	ck_assert_int_eq(json_integer_value(json_object_get(dec, "admitted")), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(dec, "rejected")), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "live_keys")), 7);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "evictions")), 1);
	json_decref(j);
	stats_free(s);
}
END_TEST

START_TEST(reset_zeroes_all_but_uptime)
{
	struct stats *s = sample();
	json_t *j;

	stats_reset(s, T0 + 2 * NS_PER_SEC);
	ck_assert_uint_eq(stats_total(s), 0);
	ck_assert_uint_eq(stats_status_count(s, 200), 0);
	ck_assert_uint_eq(stats_decisions(s, 0, STATS_ADMITTED), 0);
	ck_assert_uint_eq(stats_decisions(s, 1, STATS_REJECTED), 0);
	j = stats_doc(s, T0 + 2500 * MS);
	ck_assert_double_eq_tol(json_real_value(json_object_get(j, "uptime_s")), 2.5, 1e-9);
	ck_assert_double_eq_tol(json_real_value(json_object_get(j, "since_reset_s")), 0.5, 1e-9);
	ck_assert_int_eq(json_object_size(json_object_get(j, "status")), 0);
	ck_assert_int_eq(sum(timeline(j, "admitted")) + sum(timeline(j, "rejected")), 0);
	json_decref(j);
	stats_record(s, 0, 200, STATS_ADMITTED, T0 + 2600 * MS);
	ck_assert_uint_eq(stats_total(s), 1);
	stats_free(s);
}
END_TEST

START_TEST(metrics_lines)
{
	struct stats *s = sample();
	char *m = stats_metrics(s, T0 + 2500 * MS, ROUTES, 2);

	ck_assert_ptr_nonnull(m);
	ck_assert_ptr_nonnull(strstr(m, "\nratelab_uptime_seconds 2.500\n"));
	ck_assert_ptr_nonnull(strstr(m, "\nratelab_requests_total{status=\"200\"} 3\n"));
	ck_assert_ptr_nonnull(strstr(m, "\nratelab_requests_total{status=\"reset\"} 1\n"));
	ck_assert_ptr_nonnull(
		strstr(m, "\nratelab_decisions_total{route=\"/\",limiter=\"token-bucket\",decision=\"rejected\"} 2\n"));
	ck_assert_ptr_nonnull(
		strstr(m, "\nratelab_decisions_total{route=\"/api\",limiter=\"token-bucket\",decision=\"admitted\"} 0\n"));
	ck_assert_ptr_nonnull(strstr(m, "\nratelab_live_keys{route=\"/api\"} 4\n"));
	ck_assert_ptr_nonnull(strstr(m, "\nratelab_store_errors_total{route=\"/api\"} 5\n"));
	ck_assert_ptr_null(strstr(m, "status=\"404\""));
	ck_assert_int_eq(m[strlen(m) - 1], '\n');
	free(m);
	stats_free(s);
}
END_TEST

/* A route prefix is a label value like any: a '"', '\\' or newline in it is escaped (it was printed raw). */
START_TEST(metrics_escape_route_prefixes)
{
	static const struct stats_route_info ODD[2] = {
		{ "/q\"x", "token-bucket", { 1, 0, 0, 0, 0 }, NULL, NULL, false, { 0 } },
		{ "/b\\s\n", "gcra", { 2, 0, 0, 0, 0 }, NULL, NULL, false, { 0 } },
	};
	struct stats *s = sample();
	char *m = stats_metrics(s, T0 + 2500 * MS, ODD, 2);

	ck_assert_ptr_nonnull(m);
	ck_assert_msg(strstr(m, "\nratelab_live_keys{route=\"/q\\\"x\"} 1\n") != NULL, "%s", m);
	ck_assert_msg(strstr(m, "\nratelab_live_keys{route=\"/b\\\\s\\n\"} 2\n") != NULL, "%s", m);
	ck_assert_ptr_nonnull(
		strstr(m, "\nratelab_decisions_total{route=\"/q\\\"x\",limiter=\"token-bucket\",decision=\"rejected\"} 2\n"));
	free(m);
	stats_free(s);
}
END_TEST

Suite *stats_suite(void)
{
	Suite *s = suite_create("stats");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, counts_per_status_and_route);
	tcase_add_test(tc, metrics_escape_route_prefixes);
	tcase_add_test(tc, timeline_buckets_by_injected_now);
	tcase_add_test(tc, buckets_faults_and_ranges);
	tcase_add_test(tc, json_fields);
	tcase_add_test(tc, reset_zeroes_all_but_uptime);
	tcase_add_test(tc, metrics_lines);
	suite_add_tcase(s, tc);
	return s;
}
