#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "hammer/plot.h"
#include "hammer/report.h"

static char *text_of(const struct hammer_result *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	report_text(f, r);
	fclose(f);
	return buf;
}

/* The lab guide's run: 37 OK, 3 still rejected after 5 attempts. */
static void lab_result(struct hammer_result *r)
{
	ck_assert_int_eq(hammer_result_init(r, 100 * NS_PER_MS), 0);
	r->status[200] = 37;
	r->status[429] = 3;
	r->requests = 40;
	r->ok = 37;
	r->failed = 3;
	r->calls = 52;
	r->retries = 12;
	r->answered = 52;
	r->gave_up[RETRY_REASON_ATTEMPTS] = 3;
	r->wall_ns = 7590 * NS_PER_MS;
	for (int i = 0; i < 14; i++)
		timeline_sent(r->timeline, 0);
	timeline_sent(r->timeline, 150 * NS_PER_MS);
	histogram_record(r->latency, 120 * NS_PER_MS);
	histogram_record(r->latency, 3 * NS_PER_SEC);
}

START_TEST(text_starts_like_the_lab_guide)
{
	static const char head[] = "200  x37\n429  x3\n40 requests in 7.59s\n52 calls, 12 retries, 6.9 calls/s\n";
	struct hammer_result r;
	char *t;

	lab_result(&r);
	t = text_of(&r);
	ck_assert_msg(strncmp(t, head, strlen(head)) == 0, "%s", t);
	ck_assert_ptr_nonnull(strstr(t, "\ngave up: attempts x3\n"));
	ck_assert_ptr_nonnull(strstr(t, "\nlatency p50 120ms  p90 3.00s  p99 3.00s  max 3.00s\n"));
	ck_assert_ptr_nonnull(strstr(t, "\npeak 14 attempts per 100ms\n"));
	ck_assert_ptr_null(strstr(t, "transport errors"));
	free(t);
	hammer_result_destroy(&r);
}
END_TEST

START_TEST(text_errors_and_interrupt)
{
	static const char head[] = "error:refused x3\n3 requests in 0.50s\n";
	struct hammer_result r;
	char *t;

	ck_assert_int_eq(hammer_result_init(&r, 100 * NS_PER_MS), 0);
	r.final_errors[RETRY_ERR_REFUSED] = 3;
	r.attempt_errors[RETRY_ERR_REFUSED] = 5;
	r.attempt_errors[RETRY_ERR_TIMEOUT] = 1;
	r.requests = 3;
	r.unfinished = 2;
	r.interrupted = true;
	r.wall_ns = 500 * NS_PER_MS;
	t = text_of(&r);
	ck_assert_msg(strncmp(t, head, strlen(head)) == 0, "%s", t);
	ck_assert_ptr_nonnull(strstr(t, "\ntransport errors: refused x5, timeout x1\n"));
	ck_assert_ptr_nonnull(strstr(t, "\ninterrupted: 2 requests unfinished\n"));
	free(t);
	hammer_result_destroy(&r);
}
END_TEST

START_TEST(json_fields)
{
	struct hammer_result r;
	struct report_info info = { "http://x/", "GET", "lab", 4, 2, 7, 0, false, NULL, NULL };
	json_t *j;

	lab_result(&r);
	j = report_json(&r, &info);
	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "requests")), 40);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "statuses"), "429")), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "gave_up"), "attempts")), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "gave_up"), "budget")), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "peak_attempts")), 14);
	ck_assert(json_is_object(json_object_get(j, "timer_lateness_ms")));
	ck_assert(json_real_value(json_object_get(j, "wall_s")) == 7.59);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "config"), "policy")), "lab");
	json_decref(j);
	hammer_result_destroy(&r);
}
END_TEST

START_TEST(merge_adds_results)
{
	struct hammer_result a, b;

	lab_result(&a);
	lab_result(&b);
	b.wall_ns = 8 * NS_PER_SEC;
	ck_assert_int_eq(hammer_result_merge(&a, &b), 0);
	ck_assert_uint_eq(a.status[200], 74);
	ck_assert_uint_eq(a.calls, 104);
	ck_assert_uint_eq(a.wall_ns, 8 * NS_PER_SEC);
	ck_assert_uint_eq(histogram_count(a.latency), 4);
	ck_assert_uint_eq(timeline_peak_attempts(a.timeline), 28);
	hammer_result_destroy(&a);
	hammer_result_destroy(&b);
}
END_TEST

START_TEST(plot_lane_draws_legend_and_axes)
{
	struct timeline *t = timeline_new(100 * NS_PER_MS);
	struct plot_box box = { 0, 100, 800, 300, 50, 0 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	timeline_outcome(t, 0, 429);
	timeline_outcome(t, 0, 200);
	timeline_outcome(t, 200 * NS_PER_MS, 0);
	ck_assert_uint_eq(plot_peak(t), 2);
	plot_lane(f, t, &box, "lab <retry>", NULL);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(buf, ">lab &lt;retry&gt;</text>"));
	ck_assert_ptr_nonnull(strstr(buf, ">200</text>"));
	ck_assert_ptr_nonnull(strstr(buf, ">429</text>"));
	ck_assert_ptr_nonnull(strstr(buf, ">transport error</text>"));
	ck_assert_ptr_nonnull(strstr(buf, ">50</text>"));       /* the shared y_max tops the axis */
	ck_assert_ptr_nonnull(strstr(buf, "fill=\"#f57c00\""));  /* 429 orange */
	free(buf);
	timeline_free(t);
}
END_TEST

static int count_of(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
		n++;
	return n;
}

/*
 * A 0.7 s run of 200s: 1-2-5 ticks (0 2 4 6 8 over a peak of 7; 0.0s to 0.7s,
 * no label twice), a viewBox instead of a fixed size, the subtitle, and no
 * legend entry for transport errors that never happened.
 */
START_TEST(plot_svg_ticks_and_legend)
{
	struct timeline *t = timeline_new(100 * NS_PER_MS);
	char path[] = "/tmp/ratelab-plot-XXXXXX", err[128], buf[32768];
	int fd = mkstemp(path);
	size_t n;
	FILE *f;

	ck_assert_int_ge(fd, 0);
	close(fd);
	for (int row = 0; row < 7; row++)
		for (int k = 0; k <= row; k++)
			timeline_outcome(t, (uint64_t)row * 100 * NS_PER_MS, 200);
	ck_assert_int_eq(plot_write_svg(path, t, "GET /, 1 clients", "policy lab: backoff full", err, sizeof(err)), 0);
	f = fopen(path, "r");
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	remove(path);
	ck_assert_ptr_nonnull(strstr(buf, "viewBox=\"0 0 900 380\""));
	ck_assert_ptr_null(strstr(buf, "height=\"380\""));
	ck_assert_ptr_nonnull(strstr(buf, ">policy lab: backoff full</text>"));
	for (int v = 0; v <= 8; v += 2) {
		char want[32];

		snprintf(want, sizeof(want), ">%d</text>", v);
		ck_assert_msg(count_of(buf, want) == 1, "y tick %d", v);
	}
	ck_assert_ptr_null(strstr(buf, ">7</text>"));
	ck_assert_int_eq(count_of(buf, ">0.0s</text>"), 1);
	ck_assert_int_eq(count_of(buf, ">0.4s</text>"), 1);
	ck_assert_int_eq(count_of(buf, ">0.7s</text>"), 1);
	ck_assert_ptr_null(strstr(buf, ">0s</text>"));
	ck_assert_ptr_nonnull(strstr(buf, ">200</text>"));
	ck_assert_ptr_null(strstr(buf, "transport error"));
	timeline_free(t);
}
END_TEST

Suite *report_suite(void)
{
	Suite *s = suite_create("report");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, text_starts_like_the_lab_guide);
	tcase_add_test(tc, text_errors_and_interrupt);
	tcase_add_test(tc, json_fields);
	tcase_add_test(tc, merge_adds_results);
	tcase_add_test(tc, plot_lane_draws_legend_and_axes);
	tcase_add_test(tc, plot_svg_ticks_and_legend);
	suite_add_tcase(s, tc);
	return s;
}
