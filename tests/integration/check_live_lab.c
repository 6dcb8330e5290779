/* The live lab against a real server: per-client figures in /stats and /metrics (early retries counted exactly). */
#include <check.h>
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/harness/testutil.h"

static json_t *get_json(const struct test_server *s, const char *path)
{
	char url[128], *body = NULL;
	long st = 0;
	json_t *j;

	snprintf(url, sizeof(url), "%s%s", s->url, path);
	ck_assert_int_eq(testutil_http("GET", url, NULL, &st, NULL, &body), 0);
	ck_assert_int_eq(st, 200);
	j = json_loads(body, 0, NULL);
	ck_assert_msg(j != NULL, "%s is not JSON: %.200s", path, body);
	free(body);
	return j;
}

/* The clients row of /stats named `name`, or NULL. */
static json_t *client_row(json_t *stats, const char *name)
{
	json_t *rows = json_object_get(json_object_get(stats, "clients"), "rows"), *r;
	size_t i;

	json_array_foreach(rows, i, r)
		if (strcmp(testutil_jstr(r, "name", NULL), name) == 0)
			return r;
	return NULL;
}

/* Run the hammer against s named `name` with args; returns its --json figures. */
static json_t *hammer(const struct test_server *s, const char *name, const char *const *extra)
{
	const char *args[32];
	char url[128], header[96];
	struct test_run r;
	size_t n = 0;
	json_t *j;

	snprintf(url, sizeof(url), "%s/", s->url);
	snprintf(header, sizeof(header), "X-Client-Name: %s", name);
	args[n++] = "hammer";
	args[n++] = url;
	args[n++] = "--header";
	args[n++] = header;
	for (size_t i = 0; extra[i] && n < 28; i++)
		args[n++] = extra[i];
	args[n++] = "--json";
	args[n++] = "-";
	args[n] = NULL;
	j = testutil_run_json(&r, args, NULL, 60000);
	ck_assert_msg(j && r.status == 0, "hammer exit %d: %.300s", r.status, r.err);
	testutil_run_free(&r);
	return j;
}

/*
 * One bucket per client (--key header:X-Client-Name), 1 a second.  The lab
 * preset waits the Retry-After it is given; naive re-fires at once.  Each
 * makes one rejected request's retries, and the server counts exactly the
 * hammer's retries as retries: none early for the first, all for the second.
 */
START_TEST(early_retries_exact)
{
	const char *args[] = { "--limit", "1", "--burst", "1", "--key", "header:X-Client-Name", "--quiet", NULL };
	const char *polite[] = { "--requests", "3", "--concurrency", "1", "--policy", "lab", NULL };
	const char *rude[] = { "--requests", "2", "--concurrency", "1", "--policy", "naive", NULL };
	struct test_server s;
	json_t *hp, *hr, *st, *row;

	ck_assert_int_eq(testutil_server_start(&s, args, 5000), 0);
	hp = hammer(&s, "polite", polite);
	hr = hammer(&s, "rude", rude);
	ck_assert_int_eq(testutil_jint(hp, "retries", NULL), 2);
	ck_assert_int_eq(testutil_jint(hr, "retries", NULL), 4);
	st = get_json(&s, "/stats");
	row = client_row(st, "polite");
	ck_assert_ptr_nonnull(row);
	ck_assert_int_eq(testutil_jint(row, "requests", NULL), testutil_jint(hp, "calls", NULL));
	ck_assert_int_eq(testutil_jint(row, "retries", NULL), 2);
	ck_assert_int_eq(testutil_jint(row, "early_retries", NULL), 0);
	ck_assert_str_eq(testutil_jstr(row, "verdict", NULL), "polite");
	row = client_row(st, "rude");
	ck_assert_ptr_nonnull(row);
	ck_assert_int_eq(testutil_jint(row, "requests", NULL), 6);
	ck_assert_int_eq(testutil_jint(row, "rejected", NULL), 5);
	ck_assert_int_eq(testutil_jint(row, "retries", NULL), 4);
	ck_assert_int_eq(testutil_jint(row, "early_retries", NULL), 4);
	ck_assert_str_eq(testutil_jstr(row, "verdict", NULL), "ignores Retry-After");
	ck_assert_int_eq(testutil_jint(st, "rejected", NULL), 7);
	json_decref(st);
	json_decref(hp);
	json_decref(hr);
	ck_assert_int_eq(testutil_server_stop(&s, 10000), 0);
}
END_TEST

/* --top-clients 2: two rows by name, the third client summed in "others"; /metrics says the same. */
START_TEST(top_clients_in_stats_and_metrics)
{
	const char *args[] = { "--limit", "100", "--top-clients", "2", "--quiet", NULL };
	const char *names[] = { "ann", "bob", "cy" };
	struct test_server s;
	struct test_reply rep;
	char url[128], header[64], *metrics = NULL;
	CURL *c = curl_easy_init();
	json_t *st, *rest;
	long code = 0;

	ck_assert_int_eq(testutil_server_start(&s, args, 5000), 0);
	snprintf(url, sizeof(url), "%s/", s.url);
	for (int k = 0; k < 3; k++)
		for (int i = 0; i < 3 - k; i++) {
			snprintf(header, sizeof(header), "X-Client-Name: %s", names[k]);
			ck_assert_int_eq(testutil_fire(c, "GET", url, header, &rep), CURLE_OK);
			ck_assert_int_eq(rep.status, 200);
		}
	curl_easy_cleanup(c);
	st = get_json(&s, "/stats");
	ck_assert_int_eq(testutil_jint(json_object_get(st, "clients"), "shown", NULL), 2);
	ck_assert_int_eq(testutil_jint(client_row(st, "ann"), "requests", NULL), 3);
	ck_assert_int_eq(testutil_jint(client_row(st, "bob"), "requests", NULL), 2);
	ck_assert_ptr_null(client_row(st, "cy"));
	rest = json_object_get(json_object_get(st, "clients"), "rest");
	ck_assert_int_eq(testutil_jint(rest, "clients", NULL), 1);
	ck_assert_int_eq(testutil_jint(rest, "requests", NULL), 1);
	json_decref(st);
	snprintf(url, sizeof(url), "%s/metrics", s.url);
	ck_assert_int_eq(testutil_http("GET", url, NULL, &code, NULL, &metrics), 0);
	ck_assert_ptr_nonnull(strstr(metrics, "\nratelab_client_requests_total{client=\"ann\"} 3\n"));
	ck_assert_ptr_nonnull(strstr(metrics, "\nratelab_client_requests_total{client=\"others\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(metrics, "\nratelab_client_early_retries_total{client=\"bob\"} 0\n"));
	free(metrics);
	ck_assert_int_eq(testutil_server_stop(&s, 10000), 0);
}
END_TEST

Suite *live_lab_suite(void)
{
	Suite *s = suite_create("live_lab");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, early_retries_exact);
	tcase_add_test(tc, top_clients_in_stats_and_metrics);
	suite_add_tcase(s, tc);
	return s;
}
