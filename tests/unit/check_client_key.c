/* The client key's bytes as the limiters see them, and their printable names. */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/un.h>

#include "server/http/client_key.h"

static void name_of(const char *key, size_t len, char *buf, size_t buflen)
{
	client_key_name(key, len, buf, buflen);
}

START_TEST(global_and_header_keys)
{
	char key[CLIENT_KEY_LEN], name[64];
	size_t n = client_key_global(key);

	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(key[0], '*');
	name_of(key, n, name, sizeof(name));
	ck_assert_str_eq(name, "*");
	n = client_key_header(key, "team-a", 6);
	ck_assert_uint_eq(n, 7);
	ck_assert_int_eq(memcmp(key, "hteam-a", 7), 0);
	name_of(key, n, name, sizeof(name));
	ck_assert_str_eq(name, "team-a");
	n = client_key_header(key, "t\x01\xff", 3);
	name_of(key, n, name, sizeof(name));
	ck_assert_str_eq(name, "t??");
	name_of(NULL, 0, name, sizeof(name));
	ck_assert_str_eq(name, "-");
}
END_TEST

/*
 * An attendee's name in their own letters: whole UTF-8 characters show as
 * they are; a stray, cut or overlong byte, a surrogate or a C1 control is
 * '?' a byte; a character that does not fit the buffer whole is left out.
 */
START_TEST(names_keep_their_letters)
{
	static const struct { const char *in, *want; } C[] = {
		{ "Jos\xc3\xa9", "Jos\xc3\xa9" },                 /* José */
		{ "\xe6\x9d\x8e", "\xe6\x9d\x8e" },                 /* 李 */
		{ "\xf0\x9f\x90\xa2 go", "\xf0\x9f\x90\xa2 go" },     /* a four-byte one */
		{ "Jos\xc3", "Jos?" },                           /* cut at the end */
		{ "a\xc2\x80" "b", "a??b" },                        /* C1 control U+0080 */
		{ "\xc0\xaf", "??" },                            /* overlong '/' */
		{ "\xed\xa0\x80", "???" },                       /* a surrogate */
		{ "\xf4\x90\x80\x80", "????" },                  /* past U+10FFFF */
		{ "\xe9t\xe9", "?t?" },                          /* Latin-1, not UTF-8 */
	};
	char key[CLIENT_KEY_LEN], name[64], tiny[5];
	size_t n;

	for (size_t i = 0; i < sizeof(C) / sizeof(C[0]); i++) {
		n = client_key_header(key, C[i].in, strlen(C[i].in));
		name_of(key, n, name, sizeof(name));
		ck_assert_msg(strcmp(name, C[i].want) == 0, "case %zu: '%s'", i, name);
	}
	n = client_key_header(key, "ab\xe6\x9d\x8e", 5);
	name_of(key, n, tiny, sizeof(tiny));
	ck_assert_str_eq(tiny, "ab");
}
END_TEST

/* A value over 127 bytes keeps its head and ends in 16 hex digits of the whole value's hash. */
START_TEST(long_header_values_end_in_a_hash)
{
	char a[300], b[300], ka[CLIENT_KEY_LEN], kb[CLIENT_KEY_LEN];
	size_t na, nb;

	memset(a, 'x', sizeof(a));
	memcpy(b, a, sizeof(b));
	b[299] = 'y';
	na = client_key_header(ka, a, sizeof(a));
	nb = client_key_header(kb, b, sizeof(b));
	ck_assert_uint_eq(na, CLIENT_KEY_LEN);
	ck_assert_uint_eq(nb, CLIENT_KEY_LEN);
	ck_assert_int_eq(ka[0], 'h');
	ck_assert_int_eq(memcmp(ka + 1, a, CLIENT_KEY_LEN - 17), 0);
	for (size_t i = CLIENT_KEY_LEN - 16; i < CLIENT_KEY_LEN; i++)
		ck_assert_msg(ka[i] && strchr("0123456789abcdef", ka[i]), "byte %zu is %d", i, ka[i]);
	ck_assert_int_ne(memcmp(ka, kb, CLIENT_KEY_LEN), 0);
	ck_assert_uint_eq(client_key_header(kb, a, sizeof(a)), CLIENT_KEY_LEN);
	ck_assert_int_eq(memcmp(ka, kb, CLIENT_KEY_LEN), 0);
	/* 127 bytes still fit whole. */
	ck_assert_uint_eq(client_key_header(ka, a, 127), 128);
	ck_assert_int_eq(memcmp(ka + 1, a, 127), 0);
}
END_TEST

START_TEST(address_keys)
{
	struct sockaddr_in in4 = { .sin_family = AF_INET };
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6 };
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	char key[CLIENT_KEY_LEN], name[64];
	size_t n;

	inet_pton(AF_INET, "10.0.0.2", &in4.sin_addr);
	n = client_key_address(key, (struct sockaddr *)&in4, 64);
	ck_assert_uint_eq(n, 5);
	ck_assert_int_eq(memcmp(key, "i\x0a\x00\x00\x02", 5), 0);
	name_of(key, n, name, sizeof(name));
	ck_assert_str_eq(name, "10.0.0.2");
	inet_pton(AF_INET6, "2001:db8::7", &in6.sin6_addr);
	n = client_key_address(key, (struct sockaddr *)&in6, 128);
	ck_assert_uint_eq(n, 17);
	name_of(key, n, name, sizeof(name));
	ck_assert_str_eq(name, "2001:db8::7");
	n = client_key_address(key, (struct sockaddr *)&un, 64);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(memcmp(key, "i?", 2), 0);
	name_of(key, n, name, sizeof(name));
	ck_assert_str_eq(name, "?");
	ck_assert_uint_eq(client_key_address(key, NULL, 64), 2);
	/* A buffer too small for the address: "?" rather than garbage. */
	n = client_key_address(key, (struct sockaddr *)&in6, 128);
	name_of(key, n, name, 4);
	ck_assert_str_eq(name, "?");
}
END_TEST

/* IPv6 by prefix: one host's /64 is one key, named as the prefix; an IPv4-mapped address stays whole. */
START_TEST(ipv6_prefix_keys)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6 }, b = a;
	char ka[CLIENT_KEY_LEN], kb[CLIENT_KEY_LEN], name[64];
	size_t na, nb;

	inet_pton(AF_INET6, "2001:db8:1:2:aaaa::7", &a.sin6_addr);
	inet_pton(AF_INET6, "2001:db8:1:2:bbbb::9", &b.sin6_addr);
	na = client_key_address(ka, (struct sockaddr *)&a, 64);
	nb = client_key_address(kb, (struct sockaddr *)&b, 64);
	ck_assert_uint_eq(na, 18);
	ck_assert(na == nb && memcmp(ka, kb, na) == 0);
	name_of(ka, na, name, sizeof(name));
	ck_assert_str_eq(name, "2001:db8:1:2::/64");
	na = client_key_address(ka, (struct sockaddr *)&a, 56);
	name_of(ka, na, name, sizeof(name));
	ck_assert_str_eq(name, "2001:db8:1::/56");
	na = client_key_address(ka, (struct sockaddr *)&a, 68);
	nb = client_key_address(kb, (struct sockaddr *)&b, 68);
	ck_assert(memcmp(ka, kb, na) != 0);   /* aaaa and bbbb first differ in bit 67 */
	na = client_key_address(ka, (struct sockaddr *)&a, 128);
	ck_assert_uint_eq(na, 17);
	inet_pton(AF_INET6, "::ffff:10.0.0.2", &a.sin6_addr);
	na = client_key_address(ka, (struct sockaddr *)&a, 64);
	ck_assert_uint_eq(na, 17);
	name_of(ka, na, name, sizeof(name));
	ck_assert_str_eq(name, "::ffff:10.0.0.2");
}
END_TEST

Suite *client_key_suite(void)
{
	Suite *s = suite_create("client_key");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, global_and_header_keys);
	tcase_add_test(tc, ipv6_prefix_keys);
	tcase_add_test(tc, long_header_values_end_in_a_hash);
	tcase_add_test(tc, address_keys);
	tcase_add_test(tc, names_keep_their_letters);
	suite_add_tcase(s, tc);
	return s;
}
