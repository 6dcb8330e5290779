/*
 * The live lab against a real server: per-client figures in /stats and
 * /metrics (early retries counted exactly), and /events (its rate under
 * load, the last minute for a late subscriber, and subscribers that never
 * read, which must cost a normal client nothing).
 */
#include <arpa/inet.h>
#include <check.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <curl/curl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/harness/testutil.h"

#define IDLE_SUBSCRIBERS 100

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
	st = testutil_stats(&s);
	ck_assert_ptr_nonnull(st);
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
	st = testutil_stats(&s);
	ck_assert_ptr_nonnull(st);
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

/* A client that names itself "others" gets a row of its own, never a second series of the aggregate's label. */
START_TEST(client_named_others)
{
	const char *args[] = { "--limit", "100", "--top-clients", "1", "--quiet", NULL };
	struct test_server s;
	struct test_reply rep;
	char url[128], *metrics = NULL;
	CURL *c = curl_easy_init();
	long code = 0;
	int series = 0;

	ck_assert_int_eq(testutil_server_start(&s, args, 5000), 0);
	snprintf(url, sizeof(url), "%s/", s.url);
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(testutil_fire(c, "GET", url, i < 3 ? "X-Client-Name: others" : "X-Client-Name: bob", &rep),
		                 CURLE_OK);
		ck_assert_int_eq(rep.status, 200);
	}
	curl_easy_cleanup(c);
	snprintf(url, sizeof(url), "%s/metrics", s.url);
	ck_assert_int_eq(testutil_http("GET", url, NULL, &code, NULL, &metrics), 0);
	for (const char *p = metrics; (p = strstr(p, "\nratelab_client_requests_total{client=\"others\"}")); p++)
		series++;
	ck_assert_msg(series == 1, "%d series of client=\"others\":\n%s", series, metrics);
	ck_assert_ptr_nonnull(strstr(metrics, "\nratelab_client_requests_total{client=\"others\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(metrics, "\nratelab_client_requests_total{client=\"others (a client)\"} 3\n"));
	free(metrics);
	ck_assert_int_eq(testutil_server_stop(&s, 10000), 0);
}
END_TEST

/* An attendee named in their own letters is shown so in /stats and /metrics (it was "Jos?? ???"). */
START_TEST(client_named_in_utf8)
{
	const char *args[] = { "--quiet", NULL };
	struct test_server s;
	struct test_reply rep;
	char url[128], *metrics = NULL;
	CURL *c = curl_easy_init();
	long code = 0;
	json_t *st, *row;

	ck_assert_int_eq(testutil_server_start(&s, args, 5000), 0);
	snprintf(url, sizeof(url), "%s/", s.url);
	ck_assert_int_eq(testutil_fire(c, "GET", url, "X-Client-Name: Jos\xc3\xa9 \xe6\x9d\x8e", &rep), CURLE_OK);
	ck_assert_int_eq(rep.status, 200);
	curl_easy_cleanup(c);
	st = testutil_stats(&s);
	row = json_array_get(json_object_get(json_object_get(st, "clients"), "rows"), 0);
	ck_assert_ptr_nonnull(row);
	ck_assert_str_eq(json_string_value(json_object_get(row, "name")), "Jos\xc3\xa9 \xe6\x9d\x8e");
	json_decref(st);
	snprintf(url, sizeof(url), "%s/metrics", s.url);
	ck_assert_int_eq(testutil_http("GET", url, NULL, &code, NULL, &metrics), 0);
	ck_assert_ptr_nonnull(strstr(metrics, "\nratelab_client_requests_total{client=\"Jos\xc3\xa9 \xe6\x9d\x8e\"} 1\n"));
	free(metrics);
	ck_assert_int_eq(testutil_server_stop(&s, 10000), 0);
}
END_TEST

/* An /events reader: everything the stream sent in timeout_ms (at most 4 MB kept). */
struct reader {
	char url[128];
	long timeout_ms;
	char *bytes;
	size_t len;
};

#define READER_MAX (4u << 20)

static size_t on_bytes(char *p, size_t sz, size_t nm, void *ud)
{
	struct reader *rd = ud;
	size_t n = sz * nm, k = n < READER_MAX - rd->len ? n : READER_MAX - rd->len;

	memcpy(rd->bytes + rd->len, p, k);
	rd->len += k;
	rd->bytes[rd->len] = '\0';
	return n;
}

/* The events in rd: lines that start with "data: ". */
static int reader_events(const struct reader *rd)
{
	int n = strncmp(rd->bytes, "data: ", 6) == 0;

	for (const char *p = rd->bytes; (p = strstr(p, "\ndata: ")) != NULL; p++)
		n++;
	return n;
}

/* The first event's JSON, parsed (the caller decrefs), or NULL. */
static json_t *reader_first(const struct reader *rd)
{
	const char *p = strstr(rd->bytes, "data: "), *eol;
	char *line;
	json_t *j;

	if (!p || !(eol = strchr(p, '\n')))
		return NULL;
	line = strndup(p + 6, (size_t)(eol - p - 6));
	j = json_loads(line, 0, NULL);
	free(line);
	return j;
}

static struct reader *reader_new(const struct test_server *s, long timeout_ms)
{
	struct reader *rd = calloc(1, sizeof(*rd));

	ck_assert_ptr_nonnull(rd);
	rd->bytes = malloc(READER_MAX + 1);
	ck_assert_ptr_nonnull(rd->bytes);
	rd->bytes[0] = '\0';
	snprintf(rd->url, sizeof(rd->url), "%s/events", s->url);
	rd->timeout_ms = timeout_ms;
	return rd;
}

static void reader_free(struct reader *rd)
{
	free(rd->bytes);
	free(rd);
}

static void *read_events(void *arg)
{
	struct reader *rd = arg;
	CURL *c = curl_easy_init();

	curl_easy_setopt(c, CURLOPT_URL, rd->url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, rd->timeout_ms);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_bytes);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, rd);
	curl_easy_perform(c);
	curl_easy_cleanup(c);
	return NULL;
}

/* A reader fed for 3 s while a hammer loads the server gets at least 4 events a second. */
START_TEST(events_four_a_second_under_load)
{
	const char *args[] = { "--limit", "200", "--quiet", NULL };
	const char *load[] = { "--duration", "2500ms", "--concurrency", "8", NULL };
	struct test_server s;
	struct reader *rd;
	pthread_t tid;
	json_t *h;

	ck_assert_int_eq(testutil_server_start(&s, args, 5000), 0);
	rd = reader_new(&s, 3000);
	ck_assert_int_eq(pthread_create(&tid, NULL, read_events, rd), 0);
	h = hammer(&s, "load", load);
	pthread_join(tid, NULL);
	ck_assert_int_gt(testutil_jint(h, "calls", NULL), 1000);
	ck_assert_msg(reader_events(rd) >= 12, "%d events in 3 s", reader_events(rd));
	json_decref(h);
	reader_free(rd);
	ck_assert_int_eq(testutil_server_stop(&s, 10000), 0);
}
END_TEST

/*
 * A subscriber outlives --header-timeout: the deadline is for a request's
 * head, and an /events stream is an answer under way.  With a 1 s deadline a
 * 2.5 s reader still gets events after it (more than the 1 s could bring).
 */
START_TEST(events_outlive_the_header_deadline)
{
	const char *args[] = { "--header-timeout", "1s", "--quiet", NULL };
	struct test_server s;
	struct reader *rd;

	ck_assert_int_eq(testutil_server_start(&s, args, 5000), 0);
	rd = reader_new(&s, 2500);
	read_events(rd);
	ck_assert_msg(reader_events(rd) >= 8, "%d events in 2.5 s", reader_events(rd));
	reader_free(rd);
	ck_assert_int_eq(testutil_server_stop(&s, 10000), 0);
}
END_TEST

/*
 * A quiet stream (/events?only=announcements) carries no figures: only the
 * announcements, such as the room herd armed while it is open ("event:
 * herd", with the herd's id, instant and policy).  Another `only` is a 400.
 */
START_TEST(quiet_stream_gets_the_herd)
{
	const char *args[] = { "--quiet", NULL };
	struct test_server s;
	struct reader *rd;
	pthread_t tid;
	json_t *st, *ev;
	long status = 0;
	long long left;
	char *body = NULL, url[160];
	const char *p;
	double t0, waited;
	int n = 0;

	ck_assert_int_eq(testutil_server_start(&s, args, 5000), 0);
	rd = reader_new(&s, 2000);
	snprintf(rd->url, sizeof(rd->url), "%s/events?only=announcements", s.url);
	ck_assert_int_eq(pthread_create(&tid, NULL, read_events, rd), 0);
	/* armed once the stream counts as a subscriber: the announcement must find it */
	for (long subs = 0; subs != 1 && n < 100; n++) {
		st = testutil_stats(&s);
		subs = testutil_jint(st, "subscribers", NULL);
		json_decref(st);
		if (subs != 1)
			usleep(20 * 1000);
	}
	ck_assert_int_lt(n, 100);
	snprintf(url, sizeof(url), "%s/room?in=3000&policy=at-once", s.url);
	t0 = testutil_mono_ms();
	ck_assert_int_eq(testutil_http("POST", url, "", &status, NULL, &body), 0);
	ck_assert_int_eq(status, 200);
	free(body);
	pthread_join(tid, NULL);
	waited = testutil_mono_ms() - t0;
	ck_assert_msg(reader_events(rd) == 1, "%d events: %.300s", reader_events(rd), rd->bytes);
	p = strstr(rd->bytes, "event: herd\ndata: ");
	ck_assert_msg(p != NULL, "no herd event: %.300s", rd->bytes);
	ev = json_loads(p + strlen("event: herd\ndata: "), JSON_DISABLE_EOF_CHECK, NULL);
	ck_assert_ptr_nonnull(ev);
	ck_assert_int_eq(testutil_jint(json_object_get(ev, "herd"), "id", NULL), 1);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(ev, "herd"), "policy")), "at-once");
	/*
	 * now_ms is the server's clock as it sends the announcement, so the lead
	 * is the 3000 ms armed less what passed between arming and sending: at
	 * most the time from this POST to the stream's end (ASan: 2999 once).
	 */
	left = testutil_jint(json_object_get(ev, "herd"), "start_ms", NULL) - testutil_jint(ev, "now_ms", NULL);
	ck_assert_msg(left <= 3000 && left >= 3000 - (long long)waited - 1, "lead %lld ms, %.1f ms after arming", left,
	              waited);
	json_decref(ev);
	reader_free(rd);
	snprintf(url, sizeof(url), "%s/events?only=figures", s.url);
	ck_assert_int_eq(testutil_http("GET", url, NULL, &status, NULL, &body), 0);
	ck_assert_int_eq(status, 400);
	ck_assert_str_eq(body, "GET /events, or /events?only=announcements\n");
	free(body);
	ck_assert_int_eq(testutil_server_stop(&s, 10000), 0);
}
END_TEST

static size_t collect(char *p, size_t size, size_t n, void *ud)
{
	char *buf = ud;
	size_t have = strlen(buf), k = size * n < 255 - have ? size * n : 255 - have;

	memcpy(buf + have, p, k);
	buf[have + k] = '\0';
	return size * n;
}

/* POST path?query to s with body and, unless NULL, X-Client-Name: name; the status, the answer's body in out[256]. */
static long room_post(const struct test_server *s, const char *path, const char *name, const char *body, char *out)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	char url[512], hdr[96];
	long status = 0;

	ck_assert_ptr_nonnull(c);
	out[0] = '\0';
	snprintf(url, sizeof(url), "%s%s", s->url, path);
	if (name) {
		snprintf(hdr, sizeof(hdr), "X-Client-Name: %s", name);
		h = curl_slist_append(h, hdr);
	}
	h = curl_slist_append(h, "Content-Type: application/octet-stream");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
	ck_assert_int_eq(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return status;
}

/*
 * A room's figures can be trusted as far as the server can see: a page's
 * report counts once per herd (by its X-Client-Name, else its address), a
 * report whose figures do not add up (calls = ok + failed + retries, one
 * attempt a call, digits only) is a 400, and a start counts once per page.
 */
START_TEST(room_counts_each_page_once)
{
	const char *args[] = { "--quiet", NULL };
	static const char *const q = "/room/report?id=1&ok=2&failed=0&calls=3&retries=1&done_ms=900";
	struct test_server s;
	char out[256], path[160], *body = NULL;
	long status = 0;
	json_t *room;

	ck_assert_int_eq(testutil_server_start(&s, args, 5000), 0);
	ck_assert_int_eq(room_post(&s, "/room?in=0&policy=at-once", NULL, "", out), 200);
	ck_assert_int_eq(room_post(&s, q, "ada", "0,120,700", out), 200);
	ck_assert_str_eq(out, "{\"counted\":true}\n");
	ck_assert_int_eq(room_post(&s, q, "ada", "0,120,700", out), 200);
	ck_assert_str_eq(out, "{\"counted\":false}\n");
	ck_assert_int_eq(room_post(&s, q, "bob", "0,120,700", out), 200);
	ck_assert_str_eq(out, "{\"counted\":true}\n");
	/* no name: the address is the page, once */
	ck_assert_int_eq(room_post(&s, q, NULL, "0,120,700", out), 200);
	ck_assert_str_eq(out, "{\"counted\":true}\n");
	ck_assert_int_eq(room_post(&s, q, NULL, "0,120,700", out), 200);
	ck_assert_str_eq(out, "{\"counted\":false}\n");
	/* figures that do not add up, and attempts that are not plain digits */
	ck_assert_int_eq(room_post(&s, "/room/report?id=1&ok=2&failed=0&calls=1&retries=0&done_ms=9", "cy", "0", out), 400);
	ck_assert_int_eq(room_post(&s, q, "cy", "0,120", out), 400);
	ck_assert_int_eq(room_post(&s, q, "cy", "0,-1,+4", out), 400);
	ck_assert_int_eq(room_post(&s, q, "cy", "0, 120,700", out), 400);
	snprintf(path, sizeof(path), "%s/room", s.url);
	ck_assert_int_eq(testutil_http("GET", path, NULL, &status, NULL, &body), 0);
	ck_assert_int_eq(status, 200);
	room = json_loads(body, 0, NULL);
	free(body);
	ck_assert_ptr_nonnull(room);
	ck_assert_int_eq(testutil_jint(json_array_get(json_object_get(room, "runs"), 0), "pages", NULL), 3);
	ck_assert_int_eq(testutil_jint(json_array_get(json_object_get(room, "runs"), 0), "calls", NULL), 9);
	json_decref(room);
	/* another method: 405 with what the path takes */
	{
		static const char *const M[][3] = { { "GET", "/room/report", "POST" }, { "GET", "/room/start?id=1", "POST" },
			                             { "PUT", "/room", "GET, HEAD, POST" } };
		CURL *c = curl_easy_init();
		struct test_reply rep;
		char allow[64];

		for (size_t i = 0; i < 3; i++) {
			snprintf(path, sizeof(path), "%s%s", s.url, M[i][1]);
			ck_assert_int_eq(testutil_fire(c, M[i][0], path, NULL, &rep), CURLE_OK);
			ck_assert_int_eq(rep.status, 405);
			ck_assert_msg(testutil_header(rep.headers, "Allow", allow, sizeof(allow)), "%s %s: no Allow", M[i][0],
			              M[i][1]);
			ck_assert_str_eq(allow, M[i][2]);
		}
		curl_easy_cleanup(c);
	}
	ck_assert_int_eq(testutil_server_stop(&s, 10000), 0);
}
END_TEST

static long long sum_array(json_t *a)
{
	long long sum = 0;
	size_t i;
	json_t *v;

	json_array_foreach(a, i, v)
		sum += json_integer_value(v);
	return sum;
}

/* A subscriber that comes after the run gets the last 60 s first: every decision of the run is in it. */
START_TEST(late_subscriber_gets_the_last_minute)
{
	const char *args[] = { "--limit", "5", "--quiet", NULL };
	const char *load[] = { "--requests", "30", "--concurrency", "2", NULL };
	struct test_server s;
	struct reader *rd;
	json_t *h, *ev, *series, *st;

	ck_assert_int_eq(testutil_server_start(&s, args, 5000), 0);
	h = hammer(&s, "early-bird", load);
	rd = reader_new(&s, 500);
	read_events(rd);
	ev = reader_first(rd);
	ck_assert_msg(ev != NULL, "first event is not JSON: %.200s", rd->bytes);
	series = json_object_get(ev, "series");
	ck_assert_int_eq(json_array_size(json_object_get(series, "admitted")), 600);
	ck_assert_int_eq(testutil_jint(series, "bucket_ms", NULL), 100);
	st = testutil_stats(&s);
	ck_assert_ptr_nonnull(st);
	ck_assert_int_eq(sum_array(json_object_get(series, "admitted")), testutil_jint(st, "admitted", NULL));
	ck_assert_int_eq(sum_array(json_object_get(series, "rejected")), testutil_jint(st, "rejected", NULL));
	ck_assert_int_eq(testutil_jint(st, "admitted", NULL) + testutil_jint(st, "rejected", NULL), 30);
	ck_assert_int_eq(testutil_jint(json_object_get(ev, "totals"), "rejected", NULL), testutil_jint(st, "rejected", NULL));
	ck_assert_ptr_nonnull(client_row(st, "early-bird"));
	json_decref(st);
	json_decref(ev);
	json_decref(h);
	reader_free(rd);
	ck_assert_int_eq(testutil_server_stop(&s, 10000), 0);
}
END_TEST

/* A socket from 127.0.0.<src> that asks for /events and never reads: a receive buffer as small as the kernel allows. */
static int subscriber_with(int port, int src, const char *origin)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct sockaddr_in from = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM, 0), small = 1024;
	char a[32], req[160];

	snprintf(req, sizeof(req), "GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n%s%s%s\r\n", origin ? "Origin: " : "",
	         origin ? origin : "", origin ? "\r\n" : "");

	ck_assert_int_ge(fd, 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	snprintf(a, sizeof(a), "127.0.0.%d", src);
	inet_pton(AF_INET, a, &from.sin_addr);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&from, sizeof(from)), 0);
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
	return fd;
}

static int idle_subscriber(int port, int src)
{
	return subscriber_with(port, src, NULL);
}

/* Poll /stats (at most 5 s) until it shows `subs` subscribers and `refused` 503s. */
static void wait_subscribers(const struct test_server *s, long long subs, long long refused)
{
	long long got_subs = -1, got_refused = -1;

	for (int i = 0; i < 500; i++) {
		json_t *st = testutil_stats(s);

		ck_assert_ptr_nonnull(st);
		got_subs = testutil_jint(st, "subscribers", NULL);
		got_refused = testutil_jint(st, "status", "503");
		json_decref(st);
		if (got_subs == subs && got_refused == refused)
			return;
		poll(NULL, 0, 10);
	}
	ck_abort_msg("subscribers %lld (want %lld), 503s %lld (want %lld)", got_subs, subs, got_refused, refused);
}

/*
 * The answer on fd (stream `what`, for the message) has the status line
 * `want`: waited for at most 20 s, and a failure says whether the server
 * closed first or said nothing in time, and after how long.
 */
static void expect_status(int fd, const char *want, const char *what, int i)
{
	char line[256];
	double t0 = testutil_mono_ms();
	size_t n = testutil_raw_read_until(fd, line, sizeof(line), "\r\n", 20000);
	char *eol = strstr(line, "\r\n");
	double took = testutil_mono_ms() - t0;

	line[n] = '\0';
	if (eol)
		*eol = '\0';
	ck_assert_msg(strcmp(line, want) == 0, "%s %d: '%s' (want '%s') after %.0f ms%s", what, i, line, want, took,
	              n ? "" : took >= 20000 ? ": no answer in time" : ": closed with no answer");
}

/*
 * One address gets at most its fair share of the /events slots (a quarter,
 * so 2 of 8): its third and later streams get 503 while the hub has room, so
 * a second address still gets a stream; and when the first address's
 * streams close (a connect-read-close loop), the slots come back.
 */
START_TEST(events_fair_share_per_address)
{
	const char *args[] = { "--max-subscribers", "8", "--quiet", NULL };
	struct test_server s;
	int fds[6], other[2];
	char what[32];

	ck_assert_int_eq(testutil_server_start(&s, args, 5000), 0);
	for (int i = 0; i < 6; i++) {
		fds[i] = idle_subscriber(s.port, 2);
		expect_status(fds[i], i < 2 ? "HTTP/1.1 200 OK" : "HTTP/1.1 503 Service Unavailable", "first stream", i);
	}
	wait_subscribers(&s, 2, 4);
	for (int i = 0; i < 2; i++) {
		other[i] = idle_subscriber(s.port, 3);
		expect_status(other[i], "HTTP/1.1 200 OK", "the other address's stream", i);
	}
	wait_subscribers(&s, 4, 4);
	/* A loop of connect, read the head, close, from the first address: never more than its share. */
	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < 2; i++)
			close(fds[i]);
		wait_subscribers(&s, 2, 4 + 4 * (long long)round);
		for (int i = 0; i < 6; i++) {
			if (i >= 2)
				close(fds[i]);
			fds[i] = idle_subscriber(s.port, 2);
			snprintf(what, sizeof(what), "round %d, stream", round);
			expect_status(fds[i], i < 2 ? "HTTP/1.1 200 OK" : "HTTP/1.1 503 Service Unavailable", what, i);
		}
		wait_subscribers(&s, 4, 8 + 4 * (long long)round);
	}
	for (int i = 0; i < 6; i++)
		close(fds[i]);
	for (int i = 0; i < 2; i++)
		close(other[i]);
	ck_assert_int_eq(testutil_server_stop(&s, 10000), 0);
}
END_TEST

/*
 * A room cannot take the projector's stream: with --max-subscribers 8, one
 * slot is kept for admin clients (loopback, or the token).  Pages that are
 * not admin (here a foreign Origin makes loopback one of them) get 7 of the
 * 8, two an address; the instructor's dashboard gets the 8th, and then the
 * hub is full for everyone.
 */
START_TEST(events_keep_a_stream_for_the_projector)
{
	const char *args[] = { "--max-subscribers", "8", "--quiet", NULL };
	struct test_server s;
	int page[8], admin[2];

	ck_assert_int_eq(testutil_server_start(&s, args, 5000), 0);
	for (int i = 0; i < 8; i++) {
		page[i] = subscriber_with(s.port, 2 + i / 2, "http://attendee.example");
		expect_status(page[i], i < 7 ? "HTTP/1.1 200 OK" : "HTTP/1.1 503 Service Unavailable", "page", i);
	}
	wait_subscribers(&s, 7, 1);
	for (int i = 0; i < 2; i++) {
		admin[i] = subscriber_with(s.port, 6 + i, NULL);
		expect_status(admin[i], i == 0 ? "HTTP/1.1 200 OK" : "HTTP/1.1 503 Service Unavailable", "admin stream", i);
	}
	wait_subscribers(&s, 8, 2);
	for (int i = 0; i < 8; i++)
		close(page[i]);
	for (int i = 0; i < 2; i++)
		close(admin[i]);
	ck_assert_int_eq(testutil_server_stop(&s, 10000), 0);
}
END_TEST

/*
 * 100 subscribers that never read, from eight addresses: 32 are fed (the
 * default cap), 68 get 503.  A normal client is answered (and, the latency goal
 * `make bench` checks, its p99 stays under 5 ms) while they sit there, and the
 * server's memory grows by no more than their bounded buffers.
 */
START_TEST(idle_subscribers_cost_nothing)
{
	const char *args[] = { "--limit", "1000000", "--quiet", NULL };
	const char *load[] = { "--requests", "4000", "--concurrency", "2", NULL };
	struct test_server s;
	int fds[IDLE_SUBSCRIBERS];
	long before, after;
	json_t *h, *lat;

	ck_assert_int_eq(testutil_server_start(&s, args, 5000), 0);
	before = testutil_proc_kb(s.pid, "VmRSS");
	for (int i = 0; i < IDLE_SUBSCRIBERS; i++)
		fds[i] = idle_subscriber(s.port, 2 + i % 8);
	wait_subscribers(&s, 32, IDLE_SUBSCRIBERS - 32);
	h = hammer(&s, "normal", load);
	lat = json_object_get(h, "latency_ms");
	fprintf(stderr, "idle_subscribers: normal client p99 %.3f ms (goal, in make bench: under 5 ms)\n",
	        json_real_value(json_object_get(lat, "p99")));
	if (testutil_latency_goals())
		ck_assert_msg(json_real_value(json_object_get(lat, "p99")) < 5.0, "p99 %.3f ms",
		              json_real_value(json_object_get(lat, "p99")));
	ck_assert_int_eq(testutil_jint(h, "ok", NULL), 4000);
	after = testutil_proc_kb(s.pid, "VmRSS");
	ck_assert_msg(after - before < 32 * 1024, "RSS %ld kB -> %ld kB", before, after);
	json_decref(h);
	for (int i = 0; i < IDLE_SUBSCRIBERS; i++)
		close(fds[i]);
	ck_assert_int_eq(testutil_server_stop(&s, 10000), 0);
}
END_TEST

/* The next line of the server's stdout (at most 5 s) into buf; false at the end. */
static bool next_line(const struct test_server *s, char *buf, size_t len)
{
	size_t n = 0;

	while (n + 1 < len) {
		struct pollfd p = { s->stdout_fd, POLLIN, 0 };

		if (poll(&p, 1, 5000) <= 0 || read(s->stdout_fd, buf + n, 1) != 1)
			return false;
		if (buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = '\0';
	return true;
}

/* This machine's up, non-loopback IPv4 addresses, as text, one after another in list (count returned). */
static int lan_ipv4(char list[][INET_ADDRSTRLEN], int max)
{
	struct ifaddrs *ifs, *a;
	int n = 0;

	ck_assert_int_eq(getifaddrs(&ifs), 0);
	for (a = ifs; a && n < max; a = a->ifa_next)
		if (a->ifa_addr && a->ifa_addr->sa_family == AF_INET && (a->ifa_flags & IFF_UP) &&
		    !(a->ifa_flags & IFF_LOOPBACK))
			inet_ntop(AF_INET, &((struct sockaddr_in *)(void *)a->ifa_addr)->sin_addr, list[n++], INET_ADDRSTRLEN);
	freeifaddrs(ifs);
	return n;
}

/*
 * --bind 0.0.0.0: the first line as ever (testutil reads it), then one URL
 * per LAN address, each of which answers, then the dashboard's URL, on
 * loopback: a browser there can arm the room herd (POST /room, admin), where
 * one at a LAN address of the same machine connects from it and gets 403.
 */
START_TEST(workshop_banner)
{
	const char *args[] = { "--bind", "0.0.0.0", NULL };
	char lan[8][INET_ADDRSTRLEN], line[256], want[256], url[200], *body = NULL;
	struct test_server s;
	int n = lan_ipv4(lan, 8);
	long code = 0;

	ck_assert_int_eq(testutil_server_start(&s, args, 5000), 0);
	for (int i = 0; i < n; i++) {
		ck_assert(next_line(&s, line, sizeof(line)));
		snprintf(want, sizeof(want), "attendees:   http://%s:%d/play", lan[i], s.port);
		ck_assert_str_eq(line, want);
		snprintf(url, sizeof(url), "http://%s:%d/healthz", lan[i], s.port);
		ck_assert_int_eq(testutil_http("GET", url, NULL, &code, NULL, NULL), 0);
		ck_assert_int_eq(code, 200);
	}
	ck_assert(next_line(&s, line, sizeof(line)));
	snprintf(want, sizeof(want), "dashboard:   http://127.0.0.1:%d/dashboard", s.port);
	ck_assert_str_eq(line, want);
	ck_assert_int_eq(testutil_http("GET", want + 13, NULL, &code, NULL, &body), 0);
	ck_assert_int_eq(code, 200);
	ck_assert_ptr_nonnull(strstr(body, "data-metric=\"rejected_total\""));
	free(body);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/room?in=0&policy=at-once", s.port);
	ck_assert_int_eq(testutil_http("POST", url, "", &code, NULL, NULL), 0);
	ck_assert_int_eq(code, 200);
	if (n > 0) {
		snprintf(url, sizeof(url), "http://%s:%d/room?in=0&policy=at-once", lan[0], s.port);
		ck_assert_int_eq(testutil_http("POST", url, "", &code, NULL, NULL), 0);
		ck_assert_int_eq(code, 403);
	}
	ck_assert_int_eq(testutil_server_stop(&s, 10000), 0);
}
END_TEST

Suite *live_lab_suite(void)
{
	Suite *s = suite_create("live_lab");
	TCase *tc = tcase_create("core");
	TCase *idle = tcase_create("idle_subscribers");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, early_retries_exact);
	tcase_add_test(tc, top_clients_in_stats_and_metrics);
	tcase_add_test(tc, client_named_others);
	tcase_add_test(tc, client_named_in_utf8);
	tcase_add_test(tc, events_fair_share_per_address);
	tcase_add_test(tc, events_keep_a_stream_for_the_projector);
	tcase_add_test(tc, events_four_a_second_under_load);
	tcase_add_test(tc, events_outlive_the_header_deadline);
	tcase_add_test(tc, late_subscriber_gets_the_last_minute);
	tcase_add_test(tc, quiet_stream_gets_the_herd);
	tcase_add_test(tc, room_counts_each_page_once);
	tcase_add_test(tc, workshop_banner);
	suite_add_tcase(s, tc);
	/* Its own case, so `make bench` can run it alone with its latency goal (bench/run section 10). */
	tcase_set_timeout(idle, 60);
	tcase_add_test(idle, idle_subscribers_cost_nothing);
	suite_add_tcase(s, idle);
	return s;
}
