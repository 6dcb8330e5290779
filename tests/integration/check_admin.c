/*
 * The admin endpoint POST /reset of the real `ratelab serve`: loopback
 * clients only by default, a token for others, and nothing a web page could
 * make a browser send.  127.0.0.1, except the token test, which needs a
 * client on a non-loopback address: it binds the server to one of this
 * machine's own (no packet leaves the machine) and is skipped, saying so,
 * where there is none.  Every wait is bounded.
 */
#include <arpa/inet.h>
#include <check.h>
#include <curl/curl.h>
#include <stdbool.h>
#include <ifaddrs.h>
#include <jansson.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/harness/testutil.h"

struct body {
	char p[2048];
	size_t n;
};

static size_t take(char *p, size_t sz, size_t n, void *ud)
{
	struct body *b = ud;
	size_t k = sz * n < sizeof(b->p) - 1 - b->n ? sz * n : sizeof(b->p) - 1 - b->n;

	memcpy(b->p + b->n, p, k);
	b->n += k;
	b->p[b->n] = '\0';
	return sz * n;
}

/* POST /reset (no body, no Content-Type unless hdrs gives one) with extra header lines; the status, body in *body. */
static long post_reset(const struct test_server *s, const char *const *hdrs, char **body)
{
	char url[128];
	struct curl_slist *h = NULL;
	bool typed = false;
	struct body b = { "", 0 };
	long st = 0;
	CURL *c = curl_easy_init();

	for (size_t i = 0; hdrs && hdrs[i]; i++) {
		h = curl_slist_append(h, hdrs[i]);
		typed |= strncmp(hdrs[i], "Content-Type:", 13) == 0;
	}
	if (!typed)
		h = curl_slist_append(h, "Content-Type:");
	snprintf(url, sizeof(url), "%s/reset", s->url);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, take);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	ck_assert_int_eq(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
	if (body)
		*body = strdup(b.p);
	curl_easy_cleanup(c);
	curl_slist_free_all(h);
	return st;
}

/* A refusal: 403 with a problem body whose detail says why. */
static void assert_refused(const struct test_server *s, const char *const *hdrs, const char *why)
{
	char *body = NULL, detail[256];
	json_t *j;

	ck_assert_int_eq(post_reset(s, hdrs, &body), 403);
	j = json_loads(body, 0, NULL);
	ck_assert_msg(j != NULL, "403 body is not JSON: %s", body);
	ck_assert_int_eq(testutil_jint(j, "status", NULL), 403);
	ck_assert_str_eq(testutil_jstr(j, "title", NULL), "Forbidden");
	snprintf(detail, sizeof(detail), "admin endpoint refused: %s", why);
	ck_assert_str_eq(testutil_jstr(j, "detail", NULL), detail);
	json_decref(j);
	free(body);
}

/*
 * From loopback: a plain POST resets; each form type and a foreign or "null"
 * Origin gets 403, counted; the server's own Origin passes; a page at a
 * name rebound to 127.0.0.1 does not.
 */
START_TEST(loopback_and_pages)
{
	static const char *const args[] = { "--limit", "2", "--window", "1h", NULL };
	static const char FORM[] = "a form or text/plain body, which any web page can send";
	static const char ORIGIN[] = "an Origin other than the server's own";
	const char *const forms[][2] = { { "Content-Type: application/x-www-form-urlencoded", NULL },
		                         { "Content-Type: multipart/form-data; boundary=x", NULL },
		                         { "Content-Type: text/plain;charset=UTF-8", NULL } };
	const char *const evil[] = { "Origin: http://evil.example", NULL };
	const char *const null[] = { "Origin: null", NULL };
	const char *const rebound[] = { "Origin: http://evil.example:8080", "Host: evil.example:8080", NULL };
	char own[96], *own_h[] = { own, NULL };
	struct test_server s;
	json_t *j;

	ck_assert_int_eq(testutil_server_start(&s, args, 10000), 0);
	snprintf(own, sizeof(own), "Origin: %s", s.url);
	ck_assert_int_eq(post_reset(&s, NULL, NULL), 200);
	ck_assert_int_eq(post_reset(&s, (const char *const *)own_h, NULL), 200);
	for (size_t i = 0; i < 3; i++)
		assert_refused(&s, forms[i], FORM);
	assert_refused(&s, evil, ORIGIN);
	assert_refused(&s, null, ORIGIN);
	assert_refused(&s, rebound, "a browser's request to a host name (use http://127.0.0.1 or http://localhost)");
	j = testutil_stats(&s);
	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq(testutil_jint(j, "refused", "admin"), 6);
	ck_assert_int_eq(testutil_jint(j, "status", "403"), 6);
	/* the second reset cleared what came before it, and its own 200 counts after */
	ck_assert_int_eq(testutil_jint(j, "status", "200"), 1);
	ck_assert_int_eq(testutil_jint(j, "requests", NULL), 7);
	json_decref(j);
	ck_assert_int_eq(testutil_server_stop(&s, 5000), 0);
}
END_TEST

/* An IPv4 address of this machine that is not loopback (an interface that is up), or false. */
static bool own_address(char *buf, size_t len)
{
	struct ifaddrs *ifs, *i;
	bool found = false;

	if (getifaddrs(&ifs) != 0)
		return false;
	for (i = ifs; i && !found; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && (i->ifa_flags & IFF_UP) &&
		    !(i->ifa_flags & IFF_LOOPBACK))
			found = inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, buf, (socklen_t)len);
	freeifaddrs(ifs);
	return found;
}

/*
 * A client on a non-loopback address: refused without the token, with a
 * wrong one, and with the right one in a form; admitted with Bearer TOKEN.
 */
START_TEST(token_admits_others)
{
	static const char NO_TOKEN[] = "not from loopback, and no Authorization: Bearer with the admin token";
	const char *const none[] = { NULL };
	const char *const wrong[] = { "Authorization: Bearer s3cret-", NULL };
	const char *const form[] = { "Authorization: Bearer s3cret", "Content-Type: text/plain", NULL };
	const char *const right[] = { "Authorization: Bearer s3cret", NULL };
	char ip[64];
	struct test_server s;

	if (!own_address(ip, sizeof(ip))) {
		fprintf(stderr, "admin: no non-loopback address on this machine: token test skipped\n");
		return;
	}
	const char *const args[] = { "--bind", ip, "--admin-token", "s3cret", NULL };
	ck_assert_int_eq(testutil_server_start(&s, args, 10000), 0);
	assert_refused(&s, none, NO_TOKEN);
	assert_refused(&s, wrong, NO_TOKEN);
	assert_refused(&s, form, "a form or text/plain body, which any web page can send");
	ck_assert_int_eq(post_reset(&s, right, NULL), 200);
	ck_assert_int_eq(testutil_server_stop(&s, 5000), 0);
	fprintf(stderr, "admin: token test from %s\n", ip);
}
END_TEST

/* Without a token, a non-loopback client is refused whatever it sends. */
START_TEST(others_refused_by_default)
{
	const char *const right[] = { "Authorization: Bearer anything", NULL };
	char ip[64];
	struct test_server s;

	if (!own_address(ip, sizeof(ip))) {
		fprintf(stderr, "admin: no non-loopback address on this machine: test skipped\n");
		return;
	}
	const char *const args[] = { "--bind", ip, NULL };
	ck_assert_int_eq(testutil_server_start(&s, args, 10000), 0);
	assert_refused(&s, right, "not from loopback (start the server with --admin-token to admit others)");
	ck_assert_int_eq(testutil_server_stop(&s, 5000), 0);
}
END_TEST

/*
 * `ratelab herd --url` posts /reset before each policy: from a non-loopback
 * address it fails, saying what to do, without --admin-token and runs with it.
 */
START_TEST(herd_sends_the_token)
{
	char ip[64], url[96];
	struct test_server s;
	struct test_run r;

	if (!own_address(ip, sizeof(ip))) {
		fprintf(stderr, "admin: no non-loopback address on this machine: herd token test skipped\n");
		return;
	}
	const char *const args[] = { "--bind", ip, "--admin-token", "s3cret", NULL };
	ck_assert_int_eq(testutil_server_start(&s, args, 10000), 0);
	snprintf(url, sizeof(url), "http://%s:%d", ip, s.port);
	const char *const bare[] = { "herd", "--url", url, "--clients", "5", "--policies", "none", NULL };
	const char *const with[] = { "herd", "--url", url, "--clients", "5", "--policies", "none",
	                             "--admin-token", "s3cret", NULL };
	ck_assert_int_eq(testutil_run(&r, bare, NULL, 20000), 0);
	ck_assert_int_eq(r.status, 1);
	ck_assert_msg(strstr(r.err, "status 403): off the server's machine, give herd the server's --admin-token\n"),
	              "herd stderr: %s", r.err);
	testutil_run_free(&r);
	ck_assert_int_eq(testutil_run(&r, with, NULL, 20000), 0);
	ck_assert_msg(r.status == 0, "herd exit %d: %s", r.status, r.err);
	ck_assert_msg(strstr(r.out, "\nnone                 5       0       5 "), "herd stdout: %s", r.out);
	testutil_run_free(&r);
	ck_assert_int_eq(testutil_server_stop(&s, 5000), 0);
}
END_TEST

Suite *admin_suite(void)
{
	const struct testutil_case tests[] = {
		{ "loopback_and_pages", loopback_and_pages }, { "token_admits_others", token_admits_others },
		{ "others_refused_by_default", others_refused_by_default },
		{ "herd_sends_the_token", herd_sends_the_token },
	};

	return testutil_suite_per_test("admin", tests, sizeof(tests) / sizeof(tests[0]), 30);
}
