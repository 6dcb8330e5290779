/*
 * The connection table: head deadlines under an injected clock, the drain's
 * answers to bodies in progress, and one per-address cap across listeners.
 * No sockets: the sweep's actions are recorded.
 */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <string.h>

#include "common/clock.h"
#include "server/http/conns.h"

struct record {
	int late[8], drained[8], body_late[8];
	int nlate, ndrained, nbody_late;
};

static void on_late(void *ctx, int fd)
{
	struct record *r = ctx;

	r->late[r->nlate++ % 8] = fd;
}

static void on_drained(void *ctx, int fd)
{
	struct record *r = ctx;

	r->drained[r->ndrained++ % 8] = fd;
}

static void on_body_late(void *ctx, int fd)
{
	struct record *r = ctx;

	r->body_late[r->nbody_late++ % 8] = fd;
}

static struct conns *table(struct record *r, uint64_t tmo_ns, unsigned per_ip)
{
	struct conns_config cfg = { .header_timeout_ns = tmo_ns, .per_ip = per_ip, .max_conns = 64,
		                    .key = { 1, 2 }, .ops = { .late = on_late, .drained = on_drained, .ctx = r } };
	struct conns *cs;

	memset(r, 0, sizeof(*r));
	cs = conns_new(&cfg);
	ck_assert_ptr_nonnull(cs);
	return cs;
}

static struct sockaddr_in addr4(const char *text)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(4000) };

	ck_assert_int_eq(inet_pton(AF_INET, text, &sa.sin_addr), 1);
	return sa;
}

#define S(x) ((x) * NS_PER_SEC)
#define SA(sa) ((struct sockaddr *)&(sa))

/* A head not in within 10 s of the open is closed, once, at the first sweep past its deadline. */
START_TEST(late_head_closed)
{
	struct record r;
	struct conns *cs = table(&r, S(10), 0);
	struct sockaddr_in a = addr4("127.0.0.1");
	struct conns_entry e1, e2;

	conns_open(cs, &e1, SA(a), 11, S(100));
	conns_open(cs, &e2, SA(a), 12, S(105));
	ck_assert_uint_eq(conns_sweep(cs, S(100) + S(10) - 1), 0);
	ck_assert_uint_eq(conns_sweep(cs, S(110)), 1);
	ck_assert_int_eq(r.nlate, 1);
	ck_assert_int_eq(r.late[0], 11);
	/* taken: the head that comes in later is not served, and the sweep does not close it twice */
	ck_assert(!conns_head_done(&e1, false, S(111)));
	ck_assert_uint_eq(conns_sweep(cs, S(114)), 0);
	ck_assert_uint_eq(conns_sweep(cs, S(115)), 1);
	ck_assert_int_eq(r.late[1], 12);
	ck_assert_uint_eq(conns_open_count(cs), 2);
	conns_close(cs, &e1);
	conns_close(cs, &e2);
	ck_assert_uint_eq(conns_open_count(cs), 0);
	conns_free(cs);
}
END_TEST

/* A head in time is served and never late; the next head's deadline starts at the answer. */
START_TEST(deadline_restarts_at_each_answer)
{
	struct record r;
	struct conns *cs = table(&r, S(10), 0);
	struct sockaddr_in a = addr4("127.0.0.1");
	struct conns_entry e;

	conns_open(cs, &e, SA(a), 7, S(0));
	ck_assert(conns_head_done(&e, false, S(1)));
	/* deciding and answering take as long as they take */
	ck_assert_uint_eq(conns_sweep(cs, S(60)), 0);
	conns_wait_head(&e, S(60));
	ck_assert_uint_eq(conns_sweep(cs, S(69)), 0);
	ck_assert_uint_eq(conns_sweep(cs, S(70)), 1);
	ck_assert_int_eq(r.late[0], 7);
	conns_close(cs, &e);
	conns_free(cs);
}
END_TEST

/* A deadline written after the sweep read its clock is not late (no unsigned wrap). */
START_TEST(since_after_now_not_late)
{
	struct record r;
	struct conns *cs = table(&r, S(1), 0);
	struct sockaddr_in a = addr4("127.0.0.1");
	struct conns_entry e;

	conns_open(cs, &e, SA(a), 3, S(50));
	ck_assert_uint_eq(conns_sweep(cs, S(49)), 0);
	ck_assert_int_eq(r.nlate, 0);
	conns_close(cs, &e);
	conns_free(cs);
}
END_TEST

/* The drain answers bodies still arriving, and only those; the server's own answer then loses. */
START_TEST(drain_answers_bodies)
{
	struct record r;
	struct conns *cs = table(&r, S(10), 0);
	struct sockaddr_in a = addr4("127.0.0.1");
	struct conns_entry head, body, serving;

	conns_open(cs, &head, SA(a), 21, S(0));
	conns_open(cs, &body, SA(a), 22, S(0));
	conns_open(cs, &serving, SA(a), 23, S(0));
	ck_assert(conns_head_done(&body, true, S(0)));
	ck_assert(conns_head_done(&serving, false, S(0)));
	ck_assert_uint_eq(conns_sweep(cs, S(1)), 0);
	conns_drain(cs, S(1));
	ck_assert_int_eq(r.ndrained, 1);
	ck_assert_int_eq(r.drained[0], 22);
	ck_assert_int_eq(r.nlate, 0);
	ck_assert(!conns_body_done(&body));
	ck_assert(conns_body_done(&serving));
	/* a body that finished first is the server's to answer */
	ck_assert_uint_eq(conns_sweep(cs, S(2)), 0);
	conns_close(cs, &head);
	conns_close(cs, &body);
	conns_close(cs, &serving);
	conns_free(cs);
}
END_TEST

/*
 * A body not in within 30 s of its head is answered (408), once, at the first
 * sweep past its deadline; the server's own answer then loses.  A body in
 * time is the server's, and the next head's deadline is the head timeout's.
 */
START_TEST(late_body_answered)
{
	struct record r;
	struct conns_config cfg = { .header_timeout_ns = S(10), .body_timeout_ns = S(30), .max_conns = 8,
		                    .key = { 1, 2 },
		                    .ops = { .late = on_late, .drained = on_drained, .body_late = on_body_late, .ctx = &r } };
	struct conns *cs;
	struct sockaddr_in a = addr4("127.0.0.1");
	struct conns_entry slow, quick;

	memset(&r, 0, sizeof(r));
	cs = conns_new(&cfg);
	ck_assert_ptr_nonnull(cs);
	conns_open(cs, &slow, SA(a), 31, S(0));
	conns_open(cs, &quick, SA(a), 32, S(0));
	/* heads in at 5 s and 6 s: past the head timeout of their opening, a body is not a head */
	ck_assert(conns_head_done(&slow, true, S(5)));
	ck_assert(conns_head_done(&quick, true, S(6)));
	ck_assert_uint_eq(conns_sweep(cs, S(34)), 0);
	ck_assert(conns_body_done(&quick));
	ck_assert_uint_eq(conns_sweep(cs, S(35)), 1);
	ck_assert_int_eq(r.nbody_late, 1);
	ck_assert_int_eq(r.body_late[0], 31);
	ck_assert_int_eq(r.nlate + r.ndrained, 0);
	ck_assert(!conns_body_done(&slow));
	ck_assert_uint_eq(conns_sweep(cs, S(100)), 0);
	conns_wait_head(&quick, S(100));
	ck_assert_uint_eq(conns_sweep(cs, S(109)), 0);
	ck_assert_uint_eq(conns_sweep(cs, S(110)), 1);
	ck_assert_int_eq(r.nlate, 1);
	ck_assert_int_eq(r.late[0], 32);
	conns_close(cs, &slow);
	conns_close(cs, &quick);
	conns_free(cs);
}
END_TEST

/* Without a deadline nothing is ever late. */
START_TEST(no_deadline)
{
	struct record r;
	struct conns *cs = table(&r, 0, 0);
	struct sockaddr_in a = addr4("127.0.0.1");
	struct conns_entry e;

	conns_open(cs, &e, SA(a), 5, S(0));
	ck_assert_uint_eq(conns_sweep(cs, S(100000)), 0);
	conns_close(cs, &e);
	conns_free(cs);
}
END_TEST

/* One cap per address over every connection, whichever listener took it; IPv4 in either spelling. */
START_TEST(per_address_cap)
{
	struct record r;
	struct conns *cs = table(&r, S(10), 2);
	struct sockaddr_in a = addr4("192.0.2.7"), b = addr4("192.0.2.8");
	struct sockaddr_in6 mapped = { .sin6_family = AF_INET6 };
	struct conns_entry e1, e2;

	ck_assert_int_eq(inet_pton(AF_INET6, "::ffff:192.0.2.7", &mapped.sin6_addr), 1);
	ck_assert_int_eq(conns_admit(cs, SA(a)), CONNS_ADMIT);
	conns_open(cs, &e1, SA(a), 1, S(0));
	ck_assert_int_eq(conns_admit(cs, SA(mapped)), CONNS_ADMIT);
	conns_open(cs, &e2, SA(mapped), 2, S(0));
	ck_assert_int_eq(conns_admit(cs, SA(a)), CONNS_ADDRESS_FULL);
	ck_assert_int_eq(conns_admit(cs, SA(mapped)), CONNS_ADDRESS_FULL);
	ck_assert_int_eq(conns_admit(cs, SA(b)), CONNS_ADMIT);
	conns_close(cs, &e1);
	ck_assert_int_eq(conns_admit(cs, SA(a)), CONNS_ADMIT);
	conns_close(cs, &e2);
	conns_free(cs);
}
END_TEST

/* One limit on the connections open over every listener, whatever their addresses. */
START_TEST(total_cap)
{
	struct record r;
	struct conns_config cfg = { .header_timeout_ns = S(10), .per_ip = 0, .max_conns = 2, .key = { 3, 4 },
		                    .ops = { .late = on_late, .drained = on_drained, .ctx = &r } };
	struct conns *cs = conns_new(&cfg);
	struct sockaddr_in a = addr4("192.0.2.7"), b = addr4("192.0.2.8");
	struct conns_entry e1, e2;

	ck_assert_ptr_nonnull(cs);
	conns_open(cs, &e1, SA(a), 1, S(0));
	ck_assert_int_eq(conns_admit(cs, SA(b)), CONNS_ADMIT);
	conns_open(cs, &e2, SA(b), 2, S(0));
	ck_assert_int_eq(conns_admit(cs, SA(a)), CONNS_FULL);
	ck_assert_int_eq(conns_admit(cs, SA(b)), CONNS_FULL);
	conns_close(cs, &e1);
	ck_assert_int_eq(conns_admit(cs, SA(a)), CONNS_ADMIT);
	conns_close(cs, &e2);
	conns_free(cs);
}
END_TEST

Suite *conns_suite(void)
{
	Suite *s = suite_create("conns");
	TCase *tc = tcase_create("conns");

	tcase_add_test(tc, late_head_closed);
	tcase_add_test(tc, deadline_restarts_at_each_answer);
	tcase_add_test(tc, since_after_now_not_late);
	tcase_add_test(tc, late_body_answered);
	tcase_add_test(tc, drain_answers_bodies);
	tcase_add_test(tc, no_deadline);
	tcase_add_test(tc, per_address_cap);
	tcase_add_test(tc, total_cap);
	suite_add_tcase(s, tc);
	return s;
}
