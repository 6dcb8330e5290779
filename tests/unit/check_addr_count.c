/* Connections per client address: counts, both spellings of an IPv4 address, removal without tombstones. */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <string.h>

#include "common/prng.h"
#include "server/http/addr_count.h"

static const struct siphash_key KEY = { 0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL };

static void key4(const char *text, unsigned char key[ADDR_COUNT_KEY_LEN])
{
	struct sockaddr_in sa = { .sin_family = AF_INET };

	ck_assert_int_eq(inet_pton(AF_INET, text, &sa.sin_addr), 1);
	ck_assert(addr_count_key((struct sockaddr *)&sa, 128, key));
}

static void key6(const char *text, unsigned char key[ADDR_COUNT_KEY_LEN])
{
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6 };

	ck_assert_int_eq(inet_pton(AF_INET6, text, &sa.sin6_addr), 1);
	ck_assert(addr_count_key((struct sockaddr *)&sa, 128, key));
}

START_TEST(counts_per_address)
{
	struct addr_count *t = addr_count_new(4, KEY);
	unsigned char a[16], b[16], mapped[16], v6[16];

	ck_assert_ptr_nonnull(t);
	key4("127.0.0.1", a);
	key4("127.0.0.2", b);
	key6("::ffff:127.0.0.1", mapped);
	key6("::1", v6);
	/* one address in two spellings is one key */
	ck_assert_mem_eq(a, mapped, 16);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(addr_count_add(t, a), 0);
	ck_assert_int_eq(addr_count_add(t, b), 0);
	ck_assert_uint_eq(addr_count_get(t, mapped), 3);
	ck_assert_uint_eq(addr_count_get(t, b), 1);
	ck_assert_uint_eq(addr_count_get(t, v6), 0);
	ck_assert_uint_eq(addr_count_addrs(t), 2);
	addr_count_sub(t, b);
	ck_assert_uint_eq(addr_count_get(t, b), 0);
	ck_assert_uint_eq(addr_count_addrs(t), 1);
	/* an absent address is left alone */
	addr_count_sub(t, b);
	addr_count_sub(t, v6);
	ck_assert_uint_eq(addr_count_addrs(t), 1);
	ck_assert_uint_eq(addr_count_get(t, a), 3);
	addr_count_free(t);
}
END_TEST

START_TEST(other_families_have_no_key)
{
	struct sockaddr sa = { .sa_family = AF_UNIX };
	unsigned char k[16];

	ck_assert(!addr_count_key(&sa, 64, k));
	ck_assert(!addr_count_key(NULL, 64, k));
}
END_TEST

/* The table holds at most max_addrs addresses; more counts for one held address are fine. */
START_TEST(full_table_refuses_new_addresses)
{
	struct addr_count *t = addr_count_new(3, KEY);
	unsigned char k[4][16];

	key4("10.0.0.1", k[0]);
	key4("10.0.0.2", k[1]);
	key4("10.0.0.3", k[2]);
	key4("10.0.0.4", k[3]);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(addr_count_add(t, k[i]), 0);
	ck_assert_int_eq(addr_count_add(t, k[3]), -1);
	ck_assert_int_eq(addr_count_add(t, k[0]), 0);
	ck_assert_uint_eq(addr_count_get(t, k[0]), 2);
	addr_count_sub(t, k[1]);
	ck_assert_int_eq(addr_count_add(t, k[3]), 0);
	ck_assert_uint_eq(addr_count_addrs(t), 3);
	addr_count_free(t);
}
END_TEST

/*
 * 20,000 random adds and removals over 3,000 addresses in a table of 4,096
 * slots (so chains are long and wrap), checked against a plain array after
 * every step: a removal that broke a probe chain would lose a later key.
 */
START_TEST(matches_a_model)
{
	enum { ADDRS = 3000, STEPS = 20000 };
	static unsigned model[ADDRS];
	static unsigned char keys[ADDRS][16];
	struct addr_count *t = addr_count_new(2048, KEY);
	struct prng rng;
	size_t held = 0;

	prng_seed(&rng, 15);
	memset(model, 0, sizeof(model));
	for (int i = 0; i < ADDRS; i++) {
		memset(keys[i], 0, 16);
		memcpy(keys[i], &i, sizeof(i));
	}
	for (int s = 0; s < STEPS; s++) {
		int i = (int)prng_below(&rng, ADDRS);

		if (prng_below(&rng, 2) == 0 && (model[i] > 0 || held < 2048)) {
			ck_assert_int_eq(addr_count_add(t, keys[i]), 0);
			held += model[i]++ == 0;
		} else {
			addr_count_sub(t, keys[i]);
			if (model[i] > 0)
				held -= --model[i] == 0;
		}
		ck_assert_uint_eq(addr_count_get(t, keys[i]), model[i]);
		ck_assert_uint_eq(addr_count_addrs(t), held);
	}
	for (int i = 0; i < ADDRS; i++)
		ck_assert_uint_eq(addr_count_get(t, keys[i]), model[i]);
	addr_count_free(t);
}
END_TEST

Suite *addr_count_suite(void)
{
	Suite *s = suite_create("addr_count");
	TCase *tc = tcase_create("addr_count");

	tcase_add_test(tc, counts_per_address);
	tcase_add_test(tc, other_families_have_no_key);
	tcase_add_test(tc, full_table_refuses_new_addresses);
	tcase_add_test(tc, matches_a_model);
	suite_add_tcase(s, tc);
	return s;
}
