#include <check.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "hammer/report.h"
#include "hammer/result_codec.h"
#include "hammer/result_text.h"

/* A result with every kind of figure: statuses, errors, give-ups, both histograms, both timelines, two servers. */
static void busy_result(struct hammer_result *r)
{
	ck_assert_int_eq(hammer_result_init(r, 100 * NS_PER_MS), 0);
	ck_assert_ptr_nonnull(r->by_start = timeline_new(10 * NS_PER_MS));
	r->status[200] = 70;
	r->status[429] = 5;
	r->final_errors[RETRY_ERR_TIMEOUT] = 2;
	r->attempt_status[200] = 70;
	r->attempt_status[429] = 30;
	r->attempt_errors[RETRY_ERR_REFUSED] = 4;
	r->attempt_errors[RETRY_ERR_TIMEOUT] = 2;
	r->gave_up[RETRY_REASON_ATTEMPTS] = 5;
	r->gave_up[RETRY_REASON_DEADLINE] = 2;
	r->requests = 77;
	r->ok = 70;
	r->failed = 7;
	r->calls = 106;
	r->retries = 29;
	r->answered = 100;
	r->unfinished = 3;
	r->dropped = 1;
	r->budget_refused = 2;
	r->throttled = 6;
	r->unsent = 4;
	r->wall_ns = 4321 * NS_PER_MS;
	r->last_ok_ns = 4000 * NS_PER_MS;
	r->start_wall_ns = 1750000000123456789ULL;
	r->start_late_ns = 270000;
	r->transport = "wire";
	r->nservers = 2;
	r->servers[0] = (struct hammer_server){ .url = "http://a/", .requests = 40, .ok = 38, .failed = 2, .calls = 50 };
	r->servers[0].status[200] = 38;
	r->servers[1] = (struct hammer_server){ .url = "http://b/", .requests = 37, .errors = 2, .calls = 56, .retries = 29 };
	for (uint64_t i = 0; i < 500; i++) {
		histogram_record(r->latency, i * i * 9973 + 17);
		histogram_record(r->lateness, i * 1013);
		timeline_sent(r->timeline, i * 7 * NS_PER_MS);
		timeline_outcome(r->timeline, i * 7 * NS_PER_MS + 3, i % 5 == 0 ? 429 : i % 17 == 0 ? 0 : 200);
		timeline_sent(r->by_start, i * NS_PER_MS);
		timeline_retry(r->by_start, i % 3 == 0 ? i * NS_PER_MS : 0);
	}
}

/* json text -> json -> a result added into out; *kept holds the parsed text, which out's URLs point into. */
static int read_back(const json_t *raw, struct hammer_result *out, uint32_t shift, json_t **kept)
{
	char *text = json_dumps(raw, JSON_COMPACT), err[256] = "";
	json_t *back = json_loads(text, 0, NULL);
	int rc;

	ck_assert_ptr_nonnull(back);
	rc = result_codec_add(out, back, shift, err, sizeof(err));
	ck_assert_msg(rc == 0, "%s", err);
	*kept = back;
	free(text);
	return rc;
}

/* Written and read back, a result is the same result: its raw JSON and its summary are equal. */
START_TEST(round_trip_is_exact)
{
	struct hammer_result r, back;
	json_t *raw, *again, *kept;

	busy_result(&r);
	ck_assert_int_eq(hammer_result_init(&back, 100 * NS_PER_MS), 0);
	raw = result_codec_json(&r);
	ck_assert_ptr_nonnull(raw);
	ck_assert_int_eq(read_back(raw, &back, 0, &kept), 0);
	ck_assert_str_eq(back.servers[1].url, "http://b/");
	ck_assert_uint_eq(back.start_wall_ns, 1750000000123456789ULL);
	ck_assert_uint_eq(back.start_late_ns, 270000);
	ck_assert_str_eq(back.transport, "wire");
	ck_assert_uint_eq(back.throttled, 6);
	ck_assert_uint_eq(back.unsent, 4);
	ck_assert_ptr_nonnull(back.by_start);
	again = result_codec_json(&back);
	ck_assert(json_equal(raw, again));
	ck_assert_uint_eq(histogram_percentile(back.latency, 99), histogram_percentile(r.latency, 99));
	ck_assert_uint_eq(histogram_max(back.lateness), histogram_max(r.lateness));
	ck_assert_uint_eq(timeline_rows(back.timeline), timeline_rows(r.timeline));
	json_decref(raw);
	json_decref(again);
	json_decref(kept);
	hammer_result_destroy(&r);
	hammer_result_destroy(&back);
}
END_TEST

/* Two results read into one add up; the second's rows land `shift` intervals later. */
START_TEST(add_merges_and_shifts)
{
	struct hammer_result r, sum;
	json_t *raw, *k1, *k2;

	busy_result(&r);
	ck_assert_int_eq(hammer_result_init(&sum, 100 * NS_PER_MS), 0);
	raw = result_codec_json(&r);
	ck_assert_int_eq(read_back(raw, &sum, 0, &k1), 0);
	ck_assert_int_eq(read_back(raw, &sum, 3, &k2), 0);
	ck_assert_uint_eq(sum.status[429], 10);
	ck_assert_uint_eq(sum.final_errors[RETRY_ERR_TIMEOUT], 4);
	ck_assert_uint_eq(sum.gave_up[RETRY_REASON_DEADLINE], 4);
	ck_assert_uint_eq(sum.calls, 212);
	ck_assert_uint_eq(sum.throttled, 12);
	ck_assert_uint_eq(sum.unsent, 8);
	ck_assert_uint_eq(sum.servers[1].retries, 58);
	ck_assert_uint_eq(histogram_count(sum.latency), 1000);
	ck_assert_uint_eq(timeline_rows(sum.timeline), timeline_rows(r.timeline) + 3);
	ck_assert_uint_eq(timeline_attempts(sum.timeline, 0), timeline_attempts(r.timeline, 0));
	ck_assert_uint_eq(timeline_attempts(sum.timeline, 3), timeline_attempts(r.timeline, 3) + timeline_attempts(r.timeline, 0));
	ck_assert_uint_eq(timeline_retries(sum.by_start, 3), timeline_retries(r.by_start, 3) + timeline_retries(r.by_start, 0));
	json_decref(raw);
	json_decref(k1);
	json_decref(k2);
	hammer_result_destroy(&r);
	hammer_result_destroy(&sum);
}
END_TEST

/* What is not a raw result is refused with a line naming what is wrong. */
START_TEST(bad_raw_is_refused)
{
	static const struct { const char *path, *value, *says; } CASES[] = {
		{ "version", "7", "version 1" },
		{ "calls", "-1", "calls" },
		{ "statuses", "{\"700\":1}", "statuses" },
		{ "gave_up", "{\"bored\":1}", "gave_up" },
		{ "latency", "{\"count\":1,\"min\":1,\"max\":1,\"sum\":1.0,\"buckets\":[[99999,1]]}", "latency" },
		{ "lateness", "{\"count\":2,\"min\":1,\"max\":1,\"sum\":1.0,\"buckets\":[[1,1]]}", "lateness" },
		{ "timeline", "{\"interval_ns\":100000000,\"codes\":[200],\"rows\":[[1,0,0,0]]}", "timeline row" },
		{ "timeline", "{\"interval_ns\":5000000,\"codes\":[],\"rows\":[]}", "interval (5 ms)" },
		/* under the 1 ms of --interval (a 1 ns interval made a merge's shift 10^8 rows) */
		{ "timeline", "{\"interval_ns\":999999,\"codes\":[],\"rows\":[]}", "timeline" },
		{ "by_start", "{\"interval_ns\":1,\"codes\":[],\"rows\":[]}", "timeline" },
		/* a bad row after good ones: nothing of it is added */
		{ "timeline", "{\"interval_ns\":100000000,\"codes\":[],\"rows\":[[1,0,0,0],[2,0,0,0],[3]]}", "timeline row" },
		/* counts past what a run makes, and buckets whose sum wraps to the stated count */
		{ "requests", "4611686018427387903", "requests" },
		{ "statuses", "{\"200\":1000000000001}", "statuses" },
		{ "wall_ns", "9223372036854775807", "wall_ns" },
		{ "latency", "{\"count\":0,\"min\":1,\"max\":2,\"sum\":0.0,\"buckets\":[[1,9223372036854775807],"
		  "[2,9223372036854775807],[3,2]]}", "latency" },
		{ "latency", "{\"count\":1,\"min\":5,\"max\":1,\"sum\":1.0,\"buckets\":[[1,1]]}", "latency" },
	};
	struct hammer_result r;

	busy_result(&r);
	for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
		struct hammer_result out;
		json_t *raw = result_codec_json(&r);
		char err[256] = "";

		json_object_set_new(raw, CASES[i].path, json_loads(CASES[i].value, JSON_DECODE_ANY, NULL));
		ck_assert_int_eq(hammer_result_init(&out, 100 * NS_PER_MS), 0);
		ck_assert_int_eq(result_codec_add(&out, raw, 0, err, sizeof(err)), -1);
		ck_assert_msg(strstr(err, CASES[i].says) != NULL, "case %zu: %s", i, err);
		/* refused whole: out is as it was */
		ck_assert_uint_eq(out.requests, 0);
		ck_assert_uint_eq(timeline_rows(out.timeline), 0);
		ck_assert_ptr_null(out.by_start);
		hammer_result_destroy(&out);
		json_decref(raw);
	}
	hammer_result_destroy(&r);
}
END_TEST

/* {"a":[ITEM,ITEM,...]} with n items, in a malloc'd buffer; its length in *len. */
static char *array_of(const char *item, size_t n, size_t *len)
{
	size_t il = strlen(item), cap = 8 + n * (il + 1);
	char *text = malloc(cap), *p = text;

	ck_assert_ptr_nonnull(text);
	p += sprintf(p, "{\"a\":[");
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "%s%s", i ? "," : "", item);
	p += sprintf(p, "]}");
	*len = (size_t)(p - text);
	return text;
}

/* Parsed (and freed) or refused; err then. */
static bool parses(const char *text, size_t len, char *err, size_t errlen)
{
	json_t *o = result_text_parse(text, len, err, errlen);

	json_decref(o);
	return o != NULL;
}

/*
 * Text is bounded before it is parsed: its size, its values (an object
 * weighing 3), its string bytes and its longest token; each exactly at its
 * bound reads, one past it does not.
 */
START_TEST(parse_is_bounded)
{
	size_t big = RESULT_TEXT_MAX_BYTES + 1, len;
	char *text = malloc(big), err[200] = "";

	ck_assert_ptr_nonnull(text);
	memset(text, ' ', big);
	text[0] = '{';
	text[big - 1] = '}';
	ck_assert(parses(text, big - 1, err, sizeof(err)) == false && strstr(err, "not JSON"));
	text[big - 2] = '}';
	ck_assert_msg(parses(text, big - 1, err, sizeof(err)), "%s", err);
	ck_assert(!parses(text, big, err, sizeof(err)));
	ck_assert_str_eq(err, "larger than 8 MiB");
	free(text);
	/* {"a":[0,...]}: 1 + 3 (the object) + 1 (the array) + n - 1 (commas) = n + 4 values */
	text = array_of("0", RESULT_TEXT_MAX_VALUES - 4, &len);
	ck_assert_msg(parses(text, len, err, sizeof(err)), "%s", err);
	free(text);
	text = array_of("0", RESULT_TEXT_MAX_VALUES - 3, &len);
	ck_assert(!parses(text, len, err, sizeof(err)));
	ck_assert_str_eq(err, "more than 150000 JSON values (a shorter run, or a longer --interval)");
	free(text);
	/* n objects: 4n + 4 */
	text = array_of("{}", (RESULT_TEXT_MAX_VALUES - 4) / 4, &len);
	ck_assert_msg(parses(text, len, err, sizeof(err)), "%s", err);
	free(text);
	text = array_of("{}", (RESULT_TEXT_MAX_VALUES - 4) / 4 + 1, &len);
	ck_assert(!parses(text, len, err, sizeof(err)) && strstr(err, "more than 150000 JSON values"));
	free(text);
	/* {"a":"\"xx...x"}: the key's 1 byte and 262,143 in the string (an escape counted as written), then one more */
	len = 7 + RESULT_TEXT_MAX_STRINGS;
	text = malloc(len + 1);
	ck_assert_ptr_nonnull(text);
	memcpy(text, "{\"a\":\"\\\"", 8);
	memset(text + 8, 'x', len - 8);
	memcpy(text + len - 2, "\"}", 2);
	ck_assert_msg(parses(text, len, err, sizeof(err)), "%s", err);
	memmove(text + len - 1, "\"}", 2);
	text[len - 2] = 'x';
	ck_assert(!parses(text, len + 1, err, sizeof(err)));
	ck_assert_str_eq(err, "more than 256 KiB in strings");
	free(text);
	/* a number of 32 characters, then 33 */
	ck_assert_msg(parses("{\"a\":1.000000000000000000000000000000}", 38, err, sizeof(err)), "%s", err);
	ck_assert(!parses("{\"a\":1.0000000000000000000000000000000}", 39, err, sizeof(err)));
	ck_assert_str_eq(err, "a number longer than 32 characters");
	/* commas inside strings are not values */
	ck_assert(parses("{\"a\":\",,,\\\",,\"}", 15, err, sizeof(err)));
	ck_assert(!parses("[1]", 3, err, sizeof(err)));
	ck_assert_str_eq(err, "not a JSON object");
	ck_assert(!parses("{\"a\":1,\"a\":2}", 13, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "duplicate"));
}
END_TEST

/* Text read in pieces keeps one space for a run of whitespace outside strings, and strings whole, however it is cut. */
START_TEST(text_is_squeezed)
{
	static const char in[] = "{ \n\t\"a  b\\\"  c\" :\r\n [ 1 ,\n\n 2 ]   }";
	static const char want[] = "{ \"a  b\\\"  c\" : [ 1 , 2 ] }";
	char buf[sizeof(in)];

	for (size_t cut = 0; cut <= strlen(in); cut++) {
		struct result_text t = { buf, 0, false, false, false };

		result_text_add(&t, in, cut);
		result_text_add(&t, in + cut, strlen(in) - cut);
		ck_assert_uint_eq(t.len, strlen(want));
		ck_assert_msg(memcmp(buf, want, t.len) == 0, "cut at %zu: %.*s", cut, (int)t.len, buf);
	}
}
END_TEST

/*
 * Runs against other servers, merged, keep each server's own figures: the
 * second run's servers pair with the first's by URL, not by place (merge
 * credited b's requests to a); past HAMMER_MAX_URLS in all, merging refuses.
 */
START_TEST(add_pairs_servers_by_url)
{
	static const char *const NEW_URLS[14] = { "http://n0/", "http://n1/", "http://n2/",  "http://n3/",  "http://n4/",
		                                  "http://n5/", "http://n6/", "http://n7/",  "http://n8/",  "http://n9/",
		                                  "http://nA/", "http://nB/", "http://nC/", "http://nD/" };
	struct hammer_result r1, r2, sum;
	json_t *raw1, *raw2, *k1, *k2, *k3, *kept;
	char err[256] = "", *text;

	busy_result(&r1); /* a: 40 requests, b: 37 */
	busy_result(&r2);
	r2.servers[0].url = "http://c/";
	r2.servers[1].url = "http://a/";
	ck_assert_int_eq(hammer_result_init(&sum, 100 * NS_PER_MS), 0);
	raw1 = result_codec_json(&r1);
	raw2 = result_codec_json(&r2);
	ck_assert_int_eq(read_back(raw1, &sum, 0, &k1), 0);
	ck_assert_int_eq(read_back(raw2, &sum, 0, &k2), 0);
	ck_assert_uint_eq(sum.nservers, 3);
	ck_assert_str_eq(sum.servers[0].url, "http://a/");
	ck_assert_uint_eq(sum.servers[0].requests, 40 + 37);
	ck_assert_uint_eq(sum.servers[0].calls, 50 + 56);
	ck_assert_str_eq(sum.servers[1].url, "http://b/");
	ck_assert_uint_eq(sum.servers[1].requests, 37);
	ck_assert_str_eq(sum.servers[2].url, "http://c/");
	ck_assert_uint_eq(sum.servers[2].requests, 40);
	ck_assert_uint_eq(sum.servers[2].status[200], 38);
	/* c's URL is taken from the second result, and kept with it */
	kept = result_codec_kept(k2, &sum);
	ck_assert_int_eq(json_array_size(kept), 1);
	ck_assert_ptr_eq(json_string_value(json_array_get(kept, 0)), sum.servers[2].url);
	json_decref(kept);
	/* 3 + 14 new servers are 17: refused, and nothing is added */
	r2.nservers = 14;
	for (uint32_t i = 0; i < 14; i++)
		r2.servers[i] = (struct hammer_server){ .url = NEW_URLS[i], .requests = 1 };
	json_decref(raw2);
	raw2 = result_codec_json(&r2);
	text = json_dumps(raw2, JSON_COMPACT);
	k3 = json_loads(text, 0, NULL);
	free(text);
	ck_assert_int_eq(result_codec_add(&sum, k3, 0, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "the results name more than 16 servers in all");
	ck_assert_uint_eq(sum.nservers, 3);
	ck_assert_uint_eq(sum.servers[0].requests, 77);
	json_decref(k1);
	json_decref(k2);
	json_decref(k3);
	json_decref(raw1);
	json_decref(raw2);
	hammer_result_destroy(&r1);
	hammer_result_destroy(&r2);
	hammer_result_destroy(&sum);
}
END_TEST

/* What a merged result points into is kept: the URLs it took from the first raw, none from the second. */
START_TEST(kept_is_what_dst_uses)
{
	struct hammer_result r, out;
	json_t *raw, *a, *b, *kept;

	busy_result(&r);
	raw = result_codec_json(&r);
	ck_assert_int_eq(hammer_result_init(&out, 100 * NS_PER_MS), 0);
	read_back(raw, &out, 0, &a);
	read_back(raw, &out, 0, &b);
	kept = result_codec_kept(a, &out);
	ck_assert_int_eq(json_array_size(kept), 2);
	ck_assert_str_eq(json_string_value(json_array_get(kept, 0)), "http://a/");
	ck_assert_str_eq(json_string_value(json_array_get(kept, 1)), "http://b/");
	json_decref(a);
	/* a's URLs live on in kept */
	ck_assert_str_eq(out.servers[1].url, "http://b/");
	ck_assert_ptr_eq(out.servers[1].url, json_string_value(json_array_get(kept, 1)));
	json_decref(kept);
	kept = result_codec_kept(b, &out);
	ck_assert_int_eq(json_array_size(kept), 0);
	json_decref(kept);
	json_decref(b);
	json_decref(raw);
	hammer_result_destroy(&out);
	hammer_result_destroy(&r);
}
END_TEST

/* --json carries the raw result, and its start instant and interval can be read from it. */
START_TEST(report_json_carries_raw)
{
	struct hammer_result r;
	struct report_info info = { "http://a/", "GET", "none", 4, 2, 7, 0, true, NULL, NULL };
	json_t *j, *raw;

	busy_result(&r);
	j = report_json(&r, &info);
	raw = json_object_get(j, "raw");
	ck_assert(json_is_object(raw));
	ck_assert_uint_eq(result_codec_start_ns(raw), 1750000000123456789ULL);
	ck_assert_uint_eq(result_codec_interval_ns(raw), 100 * NS_PER_MS);
	ck_assert_ptr_null(json_object_get(j, "join"));
	json_decref(j);
	hammer_result_destroy(&r);
}
END_TEST

Suite *result_codec_suite(void)
{
	Suite *s = suite_create("result_codec");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, round_trip_is_exact);
	tcase_add_test(tc, add_merges_and_shifts);
	tcase_add_test(tc, add_pairs_servers_by_url);
	tcase_add_test(tc, bad_raw_is_refused);
	tcase_add_test(tc, parse_is_bounded);
	tcase_add_test(tc, kept_is_what_dst_uses);
	tcase_add_test(tc, text_is_squeezed);
	tcase_add_test(tc, report_json_carries_raw);
	suite_add_tcase(s, tc);
	return s;
}
