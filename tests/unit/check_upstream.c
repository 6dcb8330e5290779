/* The proxy's pure parts: which upstream URLs it takes, which headers are hop-by-hop. */
#include <check.h>
#include <stdbool.h>

#include "server/proxy/upstream.h"

START_TEST(urls)
{
	static const struct {
		const char *url;
		bool ok;
	} cases[] = {
		{ "http://127.0.0.1:9000", true },   { "http://localhost:9000/api/", true },
		{ "https://127.0.0.1:8443", true },  { "ftp://127.0.0.1/", false },
		{ "127.0.0.1:9000", false },         { "http://", false },
		{ "http:///path", false },           { "http://h/a?b=1", false },
		{ "http://h/a#frag", false },        { "http://h/a b", false },
		{ "http://[::1]:8080/x", true },     { "http://:80", false },
		{ "http://127.0.0.1:99999", false }, { "http://127.0.0.1:abc", false },
		{ "http://[::1", false },            { "http://@", false },
		{ "http://127.0.0.1:0", false },     { "http://h:1:2/", false },
	};
	char why[128];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_msg(upstream_url_ok(cases[i].url, why, sizeof(why)) == cases[i].ok, "%s", cases[i].url);
	ck_assert(!upstream_url_ok("gopher://x", why, sizeof(why)));
	ck_assert_str_eq(why, "must start with http:// or https://");
	ck_assert(!upstream_url_ok("http://:80", why, sizeof(why)));
	ck_assert_str_eq(why, "has no host");
	ck_assert(!upstream_url_ok("http://127.0.0.1:99999", why, sizeof(why)));
	ck_assert_str_eq(why, "is not a URL: Port number was not a decimal number between 0 and 65535");
	ck_assert(!upstream_url_ok("http://127.0.0.1:0/", why, sizeof(why)));
	ck_assert_str_eq(why, "has port 0, which no server listens on");
}
END_TEST

START_TEST(hop_by_hop)
{
	ck_assert(upstream_hop_by_hop("Connection"));
	ck_assert(upstream_hop_by_hop("keep-alive"));
	ck_assert(upstream_hop_by_hop("TRANSFER-ENCODING"));
	ck_assert(upstream_hop_by_hop("Upgrade"));
	ck_assert(upstream_hop_by_hop("Proxy-Authorization"));
	ck_assert(!upstream_hop_by_hop("Authorization"));
	ck_assert(!upstream_hop_by_hop("Content-Type"));
	ck_assert(!upstream_hop_by_hop("TEX"));
}
END_TEST

START_TEST(connection_options)
{
	ck_assert(upstream_connection_lists("close, X-Secret", "x-secret"));
	ck_assert(upstream_connection_lists(" x-a ,\tX-B\t", "X-B"));
	ck_assert(upstream_connection_lists("X-A", "X-A"));
	ck_assert(!upstream_connection_lists("X-AB", "X-A"));
	ck_assert(!upstream_connection_lists("X-A, X-B", "X"));
	ck_assert(!upstream_connection_lists("", "X-A"));
	ck_assert(!upstream_connection_lists(NULL, "X-A"));
	ck_assert(!upstream_connection_lists("keep-alive,,", "X-A"));
}
END_TEST

Suite *upstream_suite(void)
{
	Suite *s = suite_create("upstream");
	TCase *tc = tcase_create("pure");

	tcase_add_test(tc, urls);
	tcase_add_test(tc, hop_by_hop);
	tcase_add_test(tc, connection_options);
	suite_add_tcase(s, tc);
	return s;
}
