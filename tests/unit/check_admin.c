/* The admin endpoints' rule over any client address: loopback or a token, never what a web page can send. */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <string.h>

#include "server/http/admin.h"

static struct sockaddr_storage addr(const char *text)
{
	struct sockaddr_storage ss;

	memset(&ss, 0, sizeof(ss));
	if (strchr(text, ':')) {
		ss.ss_family = AF_INET6;
		ck_assert_int_eq(inet_pton(AF_INET6, text, &((struct sockaddr_in6 *)&ss)->sin6_addr), 1);
	} else {
		ss.ss_family = AF_INET;
		ck_assert_int_eq(inet_pton(AF_INET, text, &((struct sockaddr_in *)&ss)->sin_addr), 1);
	}
	return ss;
}

START_TEST(loopback_addresses)
{
	static const char *const yes[] = { "127.0.0.1", "127.0.1.1", "127.255.255.254", "::1", "::ffff:127.0.0.1", NULL };
	static const char *const no[] = { "128.0.0.1", "192.0.2.2", "10.0.0.1", "::2", "::ffff:10.0.0.1", "fe80::1",
		                          "0.0.0.0", NULL };

	for (size_t i = 0; yes[i]; i++) {
		struct sockaddr_storage ss = addr(yes[i]);

		ck_assert_msg(admin_is_loopback((struct sockaddr *)&ss), "%s", yes[i]);
	}
	for (size_t i = 0; no[i]; i++) {
		struct sockaddr_storage ss = addr(no[i]);

		ck_assert_msg(!admin_is_loopback((struct sockaddr *)&ss), "%s", no[i]);
	}
	ck_assert(!admin_is_loopback(NULL));
}
END_TEST

/* A request from text, with headers auth, content type, origin and host; the refusal under token. */
static const char *judge(const char *text, const char *auth, const char *ct, const char *origin, const char *host,
                         const char *token)
{
	struct sockaddr_storage ss = addr(text);
	struct admin_request a = { (struct sockaddr *)&ss, auth, ct, origin, host };

	return admin_refusal(&a, token);
}

#define ALLOWED(...) ck_assert_ptr_null(judge(__VA_ARGS__))
#define REFUSED(why, ...) do { const char *w_ = judge(__VA_ARGS__); ck_assert_ptr_nonnull(w_); ck_assert_str_eq(w_, why); } while (0)

static const char FORM[] = "a form or text/plain body, which any web page can send";
static const char ORIGIN[] = "an Origin other than the server's own";
static const char NOT_LOOPBACK[] = "not from loopback (start the server with --admin-token to admit others)";
static const char NO_TOKEN[] = "not from loopback, and no Authorization: Bearer with the admin token";
static const char REBIND[] = "a browser's request to a host name (use http://127.0.0.1 or http://localhost)";

START_TEST(loopback_by_default)
{
	ALLOWED("127.0.0.1", NULL, NULL, NULL, "127.0.0.1:8080", NULL);
	ALLOWED("::1", NULL, "application/json", NULL, NULL, NULL);
	/* a script on this machine may name it as it likes: no Origin, no rebinding */
	ALLOWED("127.0.1.1", NULL, NULL, NULL, "myhost:8080", NULL);
	REFUSED(NOT_LOOPBACK, "192.0.2.7", NULL, NULL, NULL, "192.0.2.2:8080", NULL);
	REFUSED(NOT_LOOPBACK, "::ffff:10.1.2.3", NULL, NULL, NULL, NULL, NULL);
	/* a token configured but not sent, or wrong, or in another scheme */
	REFUSED(NO_TOKEN, "192.0.2.7", NULL, NULL, NULL, NULL, "s3cret");
	REFUSED(NO_TOKEN, "192.0.2.7", "Bearer s3cre", NULL, NULL, NULL, "s3cret");
	REFUSED(NO_TOKEN, "192.0.2.7", "Bearer s3cret2", NULL, NULL, NULL, "s3cret");
	REFUSED(NO_TOKEN, "192.0.2.7", "Basic s3cret", NULL, NULL, NULL, "s3cret");
	ALLOWED("192.0.2.7", "Bearer s3cret", NULL, NULL, NULL, "s3cret");
	ALLOWED("192.0.2.7", "bearer s3cret", NULL, NULL, NULL, "s3cret");
	/* the empty token admits nobody */
	REFUSED(NOT_LOOPBACK, "192.0.2.7", "Bearer ", NULL, NULL, NULL, "");
}
END_TEST

START_TEST(what_a_page_sends)
{
	static const char *const forms[] = { "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
		                             "text/plain", "TEXT/PLAIN;charset=UTF-8", " text/plain ", NULL };

	for (size_t i = 0; forms[i]; i++) {
		REFUSED(FORM, "127.0.0.1", NULL, forms[i], NULL, "127.0.0.1:8080", NULL);
		/* the token does not make a form safe */
		REFUSED(FORM, "192.0.2.7", "Bearer t", forms[i], NULL, NULL, "t");
	}
	ALLOWED("127.0.0.1", NULL, "application/json", NULL, NULL, NULL);
	ALLOWED("127.0.0.1", NULL, "text/plainish", NULL, NULL, NULL);
	REFUSED(ORIGIN, "127.0.0.1", NULL, NULL, "http://evil.example", "127.0.0.1:8080", NULL);
	REFUSED(ORIGIN, "127.0.0.1", NULL, NULL, "null", "127.0.0.1:8080", NULL);
	REFUSED(ORIGIN, "127.0.0.1", NULL, NULL, "https://127.0.0.1:8080", "127.0.0.1:8080", NULL);
	REFUSED(ORIGIN, "127.0.0.1", NULL, NULL, "http://127.0.0.1:8081", "127.0.0.1:8080", NULL);
	REFUSED(ORIGIN, "127.0.0.1", NULL, NULL, "http://127.0.0.1:8080", NULL, NULL);
	REFUSED(ORIGIN, "192.0.2.7", "Bearer t", NULL, "http://evil.example", "192.0.2.2:8080", "t");
	/* the server's own page */
	ALLOWED("127.0.0.1", NULL, NULL, "http://127.0.0.1:8080", "127.0.0.1:8080", NULL);
	ALLOWED("127.0.0.1", NULL, NULL, "HTTP://LOCALHOST:8080", "localhost:8080", NULL);
	ALLOWED("::1", NULL, NULL, "http://[::1]:8080", "[::1]:8080", NULL);
	ALLOWED("192.0.2.7", "Bearer t", NULL, "http://lab.example:8080", "lab.example:8080", "t");
	/* DNS rebinding: a page at a name it owns, the name pointed at 127.0.0.1 */
	REFUSED(REBIND, "127.0.0.1", NULL, NULL, "http://evil.example:8080", "evil.example:8080", NULL);
}
END_TEST

Suite *admin_suite(void)
{
	Suite *s = suite_create("admin");
	TCase *tc = tcase_create("admin");

	tcase_add_test(tc, loopback_addresses);
	tcase_add_test(tc, loopback_by_default);
	tcase_add_test(tc, what_a_page_sends);
	suite_add_tcase(s, tc);
	return s;
}
