/* The live figures as text under an injected clock: /stats' additions, /metrics' client lines, one event. */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "server/http/client_key.h"
#include "server/live.h"

#define MS NS_PER_MS
#define T0 (1000 * NS_PER_SEC)

static const struct siphash_key KEY = { 1, 2 };

struct fixture {
	struct stats *stats;
	struct clients *clients;
	struct stats_route_info routes[2];
	struct live_parts parts;
};

static void record(struct fixture *f, const char *name, int route, bool admitted, uint64_t at)
{
	char id[CLIENT_KEY_LEN];
	struct clients_event e = { .id = id, .idlen = client_key_named(id, name, strlen(name)), .route = route,
	                           .admitted = admitted, .announced_ns = admitted ? 0 : NS_PER_SEC,
	                           .remaining = admitted ? 7 : 0, .limit = 9 };

	stats_record(f->stats, route, admitted ? 200 : 429, admitted ? STATS_ADMITTED : STATS_REJECTED, at);
	clients_record(f->clients, &e, at);
}

/* Route 0 keyed per IP, route 1 global; "a\"b" makes 3 requests (one rejected), "z" one. */
static void setup(struct fixture *f)
{
	memset(f, 0, sizeof(*f));
	f->stats = stats_new(2, T0);
	f->clients = clients_new(&KEY, T0);
	f->routes[0] = (struct stats_route_info){ "/", "token-bucket", { 2, 0, 0, 0, 0 }, "\"default\";q=9;w=1", "ip",
	                                          false, { 0 } };
	f->routes[1] = (struct stats_route_info){ "/g", "gcra", { 1, 0, 0, 0, 0 }, "\"default\";q=9;w=1", "global",
	                                          false, { 0 } };
	f->parts = (struct live_parts){ f->stats, f->clients, 1, f->routes, 2, 429, 3, NULL };
	record(f, "a\"b", 0, true, T0 + 10 * MS);
	record(f, "a\"b", 0, false, T0 + 20 * MS);
	record(f, "a\"b", 0, true, T0 + 120 * MS);   /* a retry, 900 ms early */
	record(f, "z", 1, true, T0 + 150 * MS);
	stats_record_fault(f->stats);
}

static void teardown(struct fixture *f)
{
	stats_free(f->stats);
	clients_free(f->clients);
}

START_TEST(event_figures)
{
	struct fixture f;
	struct live_totals then = { T0, 0, 0, 0, 0, 0 }, now;
	char *text;
	json_t *ev, *series, *rows, *row, *quota;
	long long sum = 0;

	setup(&f);
	live_totals_at(&f.parts, T0 + 500 * MS, &now);
	ck_assert_uint_eq(now.requests, 4);
	ck_assert_uint_eq(now.ok, 3);
	ck_assert_uint_eq(now.admitted, 3);
	ck_assert_uint_eq(now.rejected, 1);
	ck_assert_uint_eq(now.faults, 1);
	text = live_event_json(&f.parts, &now, &then, 10);
	ck_assert_ptr_nonnull(text);
	ck_assert_ptr_null(strchr(text, '\n'));
	ev = json_loads(text, 0, NULL);
	ck_assert_ptr_nonnull(ev);
	ck_assert_str_eq(json_string_value(json_object_get(ev, "type")), "figures");
	ck_assert_int_eq(json_integer_value(json_object_get(ev, "live_keys")), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(ev, "subscribers")), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(ev, "totals"), "rejected")), 1);
	/* 4 requests in 0.5 s */
	ck_assert_double_eq_tol(json_real_value(json_object_get(json_object_get(ev, "rates"), "requests")), 8.0, 1e-9);
	series = json_object_get(ev, "series");
	ck_assert_int_eq(json_array_size(json_object_get(series, "admitted")), 10);
	/* the buckets end with the one T0 + 500 ms falls in */
	ck_assert_int_eq(json_integer_value(json_object_get(series, "first")), (T0 + 500 * MS) / (100 * MS) + 1 - 9);
	for (size_t i = 0; i < 10; i++)
		sum += json_integer_value(json_array_get(json_object_get(series, "admitted"), i)) +
		       json_integer_value(json_array_get(json_object_get(series, "rejected"), i));
	ck_assert_int_eq(sum, 4);
	rows = json_object_get(json_object_get(ev, "clients"), "rows");
	ck_assert_int_eq(json_array_size(rows), 1);
	row = json_array_get(rows, 0);
	ck_assert_str_eq(json_string_value(json_object_get(row, "name")), "a\"b");
	ck_assert_int_eq(json_integer_value(json_object_get(row, "early_retries")), 1);
	ck_assert_double_eq_tol(json_real_value(json_object_get(row, "early_avg_ms")), 900.0, 1e-6);
	ck_assert_str_eq(json_string_value(json_object_get(row, "verdict")), "ignores Retry-After");
	row = json_object_get(json_object_get(ev, "clients"), "rest");
	ck_assert_int_eq(json_integer_value(json_object_get(row, "clients")), 1);
	ck_assert_ptr_null(json_object_get(row, "verdict"));
	/* a quota for the global route only: its last decision */
	ck_assert(json_is_null(json_object_get(json_array_get(json_object_get(ev, "routes"), 0), "quota")));
	quota = json_object_get(json_array_get(json_object_get(ev, "routes"), 1), "quota");
	ck_assert_int_eq(json_integer_value(json_object_get(quota, "remaining")), 7);
	ck_assert_int_eq(json_integer_value(json_object_get(quota, "limit")), 9);
	json_decref(ev);
	free(text);
	teardown(&f);
}
END_TEST

/* A route with a modelled backend (--capacity) carries its figures in each event, the others none. */
START_TEST(event_backend)
{
	struct fixture f;
	struct live_totals now;
	char *text;
	json_t *ev, *b;

	setup(&f);
	f.routes[1].has_backend = true;
	f.routes[1].backend = (struct capacity_stats){ .arrived = 9, .started = 7, .served = 6, .served_gone = 4,
	                                               .work_ns = 60 * MS, .work_gone_ns = 40 * MS, .queue = 2,
	                                               .busy = 1, .workers = 1, .queue_peak = 3, .served_1s = 5,
	                                               .served_gone_1s = 4 };
	f.routes[1].backend.shed[CAPACITY_SHED_FULL] = 1;
	live_totals_at(&f.parts, T0 + 500 * MS, &now);
	text = live_event_json(&f.parts, &now, &now, 1);
	ev = json_loads(text, 0, NULL);
	ck_assert_ptr_nonnull(ev);
	ck_assert_ptr_null(json_object_get(json_array_get(json_object_get(ev, "routes"), 0), "backend"));
	b = json_object_get(json_array_get(json_object_get(ev, "routes"), 1), "backend");
	ck_assert_int_eq(json_integer_value(json_object_get(b, "queue")), 2);
	ck_assert_int_eq(json_integer_value(json_object_get(b, "queue_peak")), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(b, "workers")), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(b, "served_gone")), 4);
	ck_assert_int_eq(json_integer_value(json_object_get(b, "goodput_per_s")), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(b, "wasted_per_s")), 4);
	ck_assert_double_eq_tol(json_real_value(json_object_get(b, "work_gone_s")), 0.04, 1e-12);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(b, "shed"), "full")), 1);
	json_decref(ev);
	free(text);
	teardown(&f);
}
END_TEST

START_TEST(stats_json_additions)
{
	struct fixture f;
	char *text;
	json_t *st, *r1;

	setup(&f);
	text = live_stats_json(&f.parts, T0 + 500 * MS);
	st = json_loads(text, 0, NULL);
	ck_assert_ptr_nonnull(st);
	ck_assert_int_eq(json_integer_value(json_object_get(st, "admitted")), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(st, "rejected")), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(st, "faults")), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(st, "subscribers")), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(st, "clients"), "shown")), 1);
	r1 = json_array_get(json_object_get(st, "routes"), 1);
	ck_assert_str_eq(json_string_value(json_object_get(r1, "key")), "global");
	ck_assert_str_eq(json_string_value(json_object_get(r1, "policy")), "\"default\";q=9;w=1");
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(r1, "quota"), "remaining")), 7);
	json_decref(st);
	free(text);
	teardown(&f);
}
END_TEST

START_TEST(metrics_client_lines)
{
	struct fixture f;
	char *text;

	setup(&f);
	text = live_metrics(&f.parts, T0 + 500 * MS);
	ck_assert_ptr_nonnull(text);
	ck_assert_ptr_nonnull(strstr(text, "\nratelab_uptime_seconds "));
	ck_assert_ptr_nonnull(strstr(text, "\n# TYPE ratelab_client_requests_total counter\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nratelab_client_requests_total{client=\"a\\\"b\"} 3\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nratelab_client_requests_total{client=\"others\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nratelab_client_retries_total{client=\"a\\\"b\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nratelab_client_early_seconds_total{client=\"a\\\"b\"} 0.900000\n"));
	free(text);
	teardown(&f);
}
END_TEST

Suite *live_suite(void)
{
	Suite *s = suite_create("live");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, event_figures);
	tcase_add_test(tc, event_backend);
	tcase_add_test(tc, stats_json_additions);
	tcase_add_test(tc, metrics_client_lines);
	suite_add_tcase(s, tc);
	return s;
}
