/* Per-client figures under an injected clock: retries, early retries and by how much, verdicts, top N. */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "server/clients.h"
#include "server/http/client_key.h"

#define MS NS_PER_MS
#define T0 (500 * NS_PER_SEC)      /* the table's start: any monotonic time */
#define WAIT_1S NS_PER_SEC

static const struct siphash_key KEY = { 0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL };

struct who {
	char id[CLIENT_KEY_LEN];
	size_t len;
};

static struct who named(const char *name)
{
	struct who w;

	w.len = client_key_named(w.id, name, strlen(name));
	return w;
}

/* One decision for w at T0 + at_ns: a rejection announcing `announced` (0: none), or an admission. */
static void decide(struct clients *c, const struct who *w, bool admitted, uint64_t announced, uint64_t at_ns)
{
	struct clients_event e = { .id = w->id, .idlen = w->len, .admitted = admitted, .announced_ns = admitted ? 0 : announced,
	                          .remaining = admitted ? 4 : 0, .limit = 5 };

	clients_record(c, &e, T0 + at_ns);
}

/* The row named `name` in a fresh snapshot (copied), failing the test when absent. */
static struct clients_row row_of(struct clients *c, const char *name)
{
	struct clients_snapshot s;
	struct clients_row r;

	ck_assert_int_eq(clients_snapshot(c, CLIENTS_TOP_DEFAULT, &s), 0);
	for (size_t i = 0; i < s.n; i++)
		if (strcmp(s.rows[i].name, name) == 0) {
			r = s.rows[i];
			clients_snapshot_destroy(&s);
			return r;
		}
	clients_snapshot_destroy(&s);
	ck_abort_msg("no row named %s", name);
	return r;
}

/* Waits the announced second each time: retries, none early. */
START_TEST(honouring_client_is_polite)
{
	struct clients *c = clients_new(&KEY, T0);
	struct who w = named("polite");
	struct clients_row r;

	decide(c, &w, true, 0, 0);
	decide(c, &w, false, WAIT_1S, 10 * MS);
	decide(c, &w, false, WAIT_1S, 1010 * MS);
	decide(c, &w, true, 0, 2011 * MS);
	decide(c, &w, true, 0, 2012 * MS);
	r = row_of(c, "polite");
	ck_assert_uint_eq(r.requests, 5);
	ck_assert_uint_eq(r.admitted, 3);
	ck_assert_uint_eq(r.rejected, 2);
	ck_assert_uint_eq(r.retries, 2);     /* the requests at 1010 ms and 2011 ms; 2012 ms is a new request */
	ck_assert_uint_eq(r.early, 0);
	ck_assert_uint_eq(r.last_ns, T0 + 2012 * MS);
	ck_assert_int_eq(clients_verdict_of(&r), CLIENTS_POLITE);
	ck_assert_str_eq(clients_verdict_name(clients_verdict_of(&r)), "polite");
	clients_free(c);
}
END_TEST

/* Re-fires at once: every retry early, by the exact difference to the last announced instant. */
START_TEST(refiring_client_is_early_every_time)
{
	struct clients *c = clients_new(&KEY, T0);
	struct who w = named("rude");
	struct clients_row r;

	decide(c, &w, false, WAIT_1S, 0);
	decide(c, &w, false, WAIT_1S, 10 * MS);   /* due at 1000 ms: 990 ms early; due now 1010 ms */
	decide(c, &w, false, WAIT_1S, 20 * MS);   /* 990 ms early; due 1020 ms */
	decide(c, &w, true, 0, 50 * MS);          /* 970 ms early, admitted: the episode ends */
	r = row_of(c, "rude");
	ck_assert_uint_eq(r.retries, 3);
	ck_assert_uint_eq(r.early, 3);
	ck_assert_uint_eq(r.early_ns, (990 + 990 + 970) * MS);
	ck_assert_uint_eq(r.early_max_ns, 990 * MS);
	ck_assert_int_eq(clients_verdict_of(&r), CLIENTS_IGNORES_RETRY_AFTER);
	ck_assert_str_eq(clients_verdict_name(clients_verdict_of(&r)), "ignores Retry-After");
	clients_free(c);
}
END_TEST

/* One early retry of three: too early.  Two of three: ignores Retry-After. */
START_TEST(verdict_thresholds)
{
	struct clients *c = clients_new(&KEY, T0);
	struct who a = named("a"), b = named("b");
	struct clients_row r;

	decide(c, &a, false, WAIT_1S, 0);
	decide(c, &a, false, WAIT_1S, 900 * MS);     /* early */
	decide(c, &a, false, WAIT_1S, 1950 * MS);    /* due 1900 ms: on time */
	decide(c, &a, true, 0, 2950 * MS);           /* due 2950 ms: on time, to the millisecond */
	r = row_of(c, "a");
	ck_assert_uint_eq(r.retries, 3);
	ck_assert_uint_eq(r.early, 1);
	ck_assert_uint_eq(r.early_ns, 100 * MS);
	ck_assert_int_eq(clients_verdict_of(&r), CLIENTS_TOO_EARLY);
	ck_assert_str_eq(clients_verdict_name(CLIENTS_TOO_EARLY), "too early");
	decide(c, &b, false, WAIT_1S, 0);
	decide(c, &b, false, WAIT_1S, 500 * MS);
	decide(c, &b, false, WAIT_1S, 1000 * MS);
	decide(c, &b, true, 0, 3000 * MS);
	r = row_of(c, "b");
	ck_assert_uint_eq(r.retries, 3);
	ck_assert_uint_eq(r.early, 2);
	ck_assert_int_eq(clients_verdict_of(&r), CLIENTS_IGNORES_RETRY_AFTER);
	clients_free(c);
}
END_TEST

/* The instant is the millisecond below send time + wait: under a millisecond early is on time. */
START_TEST(instant_to_the_millisecond_below)
{
	struct clients *c = clients_new(&KEY, T0);
	struct who a = named("a"), b = named("b");
	struct clients_row r;

	decide(c, &a, false, WAIT_1S, 500 * NS_PER_US);               /* due 1000.5 ms, kept as 1000 ms */
	decide(c, &a, true, 0, 1000 * MS + 200 * NS_PER_US);
	r = row_of(c, "a");
	ck_assert_uint_eq(r.retries, 1);
	ck_assert_uint_eq(r.early, 0);
	decide(c, &b, false, WAIT_1S, 500 * NS_PER_US);
	decide(c, &b, true, 0, 999 * MS + 900 * NS_PER_US);
	r = row_of(c, "b");
	ck_assert_uint_eq(r.early, 1);
	ck_assert_uint_eq(r.early_ns, 100 * NS_PER_US);
	clients_free(c);
}
END_TEST

/* Without Retry-After nothing was announced: retries still count, none is early. */
START_TEST(no_retry_after_no_early)
{
	struct clients *c = clients_new(&KEY, T0);
	struct who w = named("w");
	struct clients_row r;

	decide(c, &w, false, 0, 0);
	decide(c, &w, false, 0, 1 * MS);
	decide(c, &w, true, 0, 2 * MS);
	r = row_of(c, "w");
	ck_assert_uint_eq(r.retries, 2);
	ck_assert_uint_eq(r.early, 0);
	ck_assert_int_eq(clients_verdict_of(&r), CLIENTS_POLITE);
	clients_free(c);
}
END_TEST

/* Each identity is judged by its own announcements; names come from the client key format. */
START_TEST(identities_apart)
{
	struct clients *c = clients_new(&KEY, T0);
	struct who a = named("alice"), h;
	struct sockaddr_in in4 = { .sin_family = AF_INET };
	struct clients_row r;

	h.len = client_key_header(h.id, "alice", 5);   /* the same word as a header key: another identity */
	decide(c, &a, false, WAIT_1S, 0);
	decide(c, &h, true, 0, 5 * MS);
	decide(c, &a, true, 0, 6 * MS);
	inet_pton(AF_INET, "10.1.2.3", &in4.sin_addr);
	h.len = client_key_address(h.id, (struct sockaddr *)&in4, 64);
	decide(c, &h, true, 0, 7 * MS);
	r = row_of(c, "10.1.2.3");
	ck_assert_uint_eq(r.requests, 1);
	ck_assert_uint_eq(r.retries, 0);
	{
		struct clients_snapshot s;

		ck_assert_int_eq(clients_snapshot(c, 10, &s), 0);
		ck_assert_uint_eq(s.n, 3);
		/* alice (2 requests) first, then the two with one each by name */
		ck_assert_str_eq(s.rows[0].name, "alice");
		ck_assert_uint_eq(s.rows[0].early, 1);
		ck_assert_str_eq(s.rows[1].name, "10.1.2.3");
		ck_assert_str_eq(s.rows[2].name, "alice");
		ck_assert_uint_eq(s.rows[2].retries, 0);
		ck_assert_uint_eq(s.rest.clients, 0);
		clients_snapshot_destroy(&s);
	}
	clients_free(c);
}
END_TEST

/* The most active N are rows; the rest are summed in one row, exactly. */
START_TEST(top_n_and_the_rest)
{
	struct clients *c = clients_new(&KEY, T0);
	struct clients_snapshot s;
	char name[16];
	uint64_t sum = 0;

	for (int k = 1; k <= 60; k++) {
		struct who w;

		snprintf(name, sizeof(name), "c%02d", k);
		w = named(name);
		for (int i = 0; i < k; i++)
			decide(c, &w, i % 2 == 0, WAIT_1S, (uint64_t)(k * 100 + i) * MS);
	}
	ck_assert_int_eq(clients_snapshot(c, 50, &s), 0);
	ck_assert_uint_eq(s.n, 50);
	ck_assert_str_eq(s.rows[0].name, "c60");
	ck_assert_uint_eq(s.rows[0].requests, 60);
	ck_assert_str_eq(s.rows[49].name, "c11");
	ck_assert_str_eq(s.rest.name, "others");
	ck_assert_uint_eq(s.rest.clients, 10);
	ck_assert_uint_eq(s.rest.requests, 55);          /* 1 + 2 + ... + 10 */
	for (size_t i = 0; i < s.n; i++)
		sum += s.rows[i].requests;
	ck_assert_uint_eq(sum + s.rest.requests, 60 * 61 / 2);
	clients_snapshot_destroy(&s);
	clients_free(c);
}
END_TEST

/* Past a shard's room the least recently seen are evicted into the summed row: nothing is lost. */
START_TEST(eviction_keeps_the_totals)
{
	struct clients *c = clients_new(&KEY, T0);
	struct clients_snapshot s;
	char name[16];
	uint64_t sum = 0, rows = 0;

	for (int k = 0; k < 3000; k++) {
		struct who w;

		snprintf(name, sizeof(name), "n%d", k);
		w = named(name);
		decide(c, &w, false, WAIT_1S, (uint64_t)k * MS);
		decide(c, &w, true, 0, (uint64_t)k * MS + 1);
	}
	ck_assert_int_eq(clients_snapshot(c, 100000, &s), 0);
	ck_assert_uint_lt(s.n, 3000);
	ck_assert_uint_gt(s.rest.clients, 0);
	for (size_t i = 0; i < s.n; i++) {
		sum += s.rows[i].requests;
		rows += s.rows[i].clients;
		ck_assert_uint_eq(s.rows[i].early, 1);
	}
	ck_assert_uint_eq(sum + s.rest.requests, 6000);
	ck_assert_uint_eq(rows + s.rest.clients, 3000);
	ck_assert_uint_eq(s.rest.early, 3000 - s.n);
	clients_snapshot_destroy(&s);
	clients_free(c);
}
END_TEST

START_TEST(reset_forgets)
{
	struct clients *c = clients_new(&KEY, T0);
	struct who w = named("w");
	struct clients_snapshot s;

	decide(c, &w, false, WAIT_1S, 0);
	clients_reset(c);
	decide(c, &w, true, 0, 10 * MS);                 /* no episode survives the reset */
	ck_assert_int_eq(clients_snapshot(c, 10, &s), 0);
	ck_assert_uint_eq(s.n, 1);
	ck_assert_uint_eq(s.rows[0].requests, 1);
	ck_assert_uint_eq(s.rows[0].retries, 0);
	clients_snapshot_destroy(&s);
	clients_free(c);
}
END_TEST

/* The route's last decision is its live quota. */
START_TEST(quota_of_the_last_decision)
{
	struct clients *c = clients_new(&KEY, T0);
	struct who w = named("w");
	struct clients_event e = { .id = w.id, .idlen = w.len, .route = 1, .admitted = true, .remaining = 3, .limit = 5 };
	struct clients_snapshot s;

	clients_record(c, &e, T0 + 1 * MS);
	e.remaining = 2;
	clients_record(c, &e, T0 + 2 * MS);
	ck_assert_int_eq(clients_snapshot(c, 10, &s), 0);
	ck_assert(!s.quota[0].known);
	ck_assert(s.quota[1].known);
	ck_assert_uint_eq(s.quota[1].remaining, 2);
	ck_assert_uint_eq(s.quota[1].limit, 5);
	ck_assert_uint_eq(s.quota[1].at_ns, T0 + 2 * MS);
	clients_snapshot_destroy(&s);
	clients_free(c);
}
END_TEST

struct on_thread {
	struct clients *c;
	struct who w;
};

/* One decision of request `key` of w, attempt `retry` (0: its first; -1: no header), at T0 + at_ns. */
static void attempt(struct clients *c, const struct who *w, const char *key, int retry, bool admitted, uint64_t at_ns)
{
	struct clients_event e = { .id = w->id, .idlen = w->len, .admitted = admitted,
	                           .announced_ns = admitted ? 0 : WAIT_1S, .limit = 5, .request = key,
	                           .requestlen = key ? strlen(key) : 0 };

	e.said = retry < 0 ? CLIENTS_SAID_NOTHING : retry == 0 ? CLIENTS_SAID_FIRST : CLIENTS_SAID_RETRY;
	clients_record(c, &e, T0 + at_ns);
}

/*
 * Five requests of one client, rejected at 0, 300, 600, 900 and 910 ms, each
 * retried 1 s after its own rejection: every retry but the last comes
 * before the client's latest wait is over, yet after its own.  Paired by
 * key, none is early.  Of the first attempts sent during a wait, the one at
 * 910 ms came within CLIENTS_HEARD_NS (250 ms) of the rejection at 900 ms (it
 * may have left before that 429 arrived): three count as new while told to
 * wait, each 300 ms after the last rejection.
 */
START_TEST(concurrent_requests_judged_by_their_own_wait)
{
	static const uint64_t AT[] = { 0, 300, 600, 900, 910 };
	struct clients *c = clients_new(&KEY, T0);
	struct who w = named("four");
	const char *keys[] = { "r1", "r2", "r3", "r4", "r5" };
	struct clients_row r;
	char says[160];

	for (int i = 0; i < 5; i++)
		attempt(c, &w, keys[i], 0, false, AT[i] * MS);
	for (int i = 0; i < 5; i++)
		attempt(c, &w, keys[i], 1, true, (1000 + AT[i]) * MS);
	r = row_of(c, "four");
	ck_assert_uint_eq(r.requests, 10);
	ck_assert_uint_eq(r.retries, 5);
	ck_assert_uint_eq(r.paired, 5);
	ck_assert_uint_eq(r.early, 0);
	ck_assert_uint_eq(r.waiting_new, 3);
	ck_assert_int_eq(clients_verdict_of(&r), CLIENTS_POLITE);
	clients_explain(&r, says, sizeof(says));
	ck_assert_str_eq(says, "every retry waited its own Retry-After; 3 new requests went out while told to wait");
	clients_free(c);
}
END_TEST

/* The same arrivals with no headers: judged by the latest wait, three of four retries early. */
START_TEST(same_arrivals_unsaid_judged_as_one_client)
{
	struct clients *c = clients_new(&KEY, T0);
	struct who w = named("four");
	struct clients_row r;
	char says[160];

	for (int i = 0; i < 4; i++)
		attempt(c, &w, NULL, -1, false, (uint64_t)i * 10 * MS);
	for (int i = 0; i < 4; i++)
		attempt(c, &w, NULL, -1, false, 1000 * MS + (uint64_t)i * 10 * MS);
	r = row_of(c, "four");
	/* the latest wait moves on with each rejection: every later request is a retry */
	ck_assert_uint_eq(r.retries, 7);
	ck_assert_uint_eq(r.paired, 0);
	ck_assert_uint_eq(r.waiting_new, 0);
	ck_assert_uint_eq(r.early, 7);
	ck_assert_uint_eq(r.early_ns, (6 * 990 + 30) * MS);   /* the one at 1000 ms: 30 ms before the fourth's wait */
	ck_assert_int_eq(clients_verdict_of(&r), CLIENTS_IGNORES_RETRY_AFTER);
	clients_explain(&r, says, sizeof(says));
	ck_assert_str_eq(says, "7 of 7 retries came back before the wait was over, 0.9 s early on average");
	clients_free(c);
}
END_TEST

/* A paired retry that comes back 200 ms before its own wait is early by exactly that. */
START_TEST(paired_retry_early_by_its_own_wait)
{
	struct clients *c = clients_new(&KEY, T0);
	struct who w = named("hasty");
	struct clients_row r;

	attempt(c, &w, "k", 0, false, 0);
	attempt(c, &w, "k", 1, true, 800 * MS);
	attempt(c, &w, "k2", 0, true, 900 * MS);   /* the admission ended the episode, not the 1 s wait */
	attempt(c, &w, "k3", 0, true, 1000 * MS);  /* the wait is over */
	r = row_of(c, "hasty");
	ck_assert_uint_eq(r.retries, 1);
	ck_assert_uint_eq(r.paired, 1);
	ck_assert_uint_eq(r.early, 1);
	ck_assert_uint_eq(r.early_ns, 200 * MS);
	ck_assert_uint_eq(r.waiting_new, 1);
	ck_assert_int_eq(clients_verdict_of(&r), CLIENTS_IGNORES_RETRY_AFTER);
	clients_free(c);
}
END_TEST

/* Two clients using the same key are two requests: a's wait does not judge b's retry. */
START_TEST(keys_apart_per_client)
{
	struct clients *c = clients_new(&KEY, T0);
	struct who a = named("a"), b = named("b");

	attempt(c, &a, "same", 0, false, 0);
	attempt(c, &b, "same", 1, true, 10 * MS);
	ck_assert_uint_eq(row_of(c, "b").paired, 0);
	ck_assert_uint_eq(row_of(c, "b").early, 0);
	ck_assert_uint_eq(row_of(c, "b").retries, 1);
	clients_free(c);
}
END_TEST

static void *reject_on_thread(void *arg)
{
	struct on_thread *t = arg;

	decide(t->c, &t->w, false, WAIT_1S, 0);
	return NULL;
}

/*
 * Rejected on one thread, back early on another: still early, and one row
 * for the client, which is one client (it read 2 with two server threads,
 * and the dashboard's "others (6)" counted 3 clients twice).
 */
START_TEST(episode_seen_across_threads)
{
	struct on_thread t = { clients_new(&KEY, T0), named("w") };
	struct clients_row r;
	pthread_t tid;

	ck_assert_int_eq(pthread_create(&tid, NULL, reject_on_thread, &t), 0);
	pthread_join(tid, NULL);
	decide(t.c, &t.w, true, 0, 100 * MS);
	r = row_of(t.c, "w");
	ck_assert_uint_eq(r.requests, 2);
	ck_assert_uint_eq(r.rejected, 1);
	ck_assert_uint_eq(r.early, 1);
	ck_assert_uint_eq(r.early_ns, 900 * MS);
	ck_assert_uint_eq(r.clients, 1);
	clients_free(t.c);
}
END_TEST

Suite *clients_suite(void)
{
	Suite *s = suite_create("clients");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, honouring_client_is_polite);
	tcase_add_test(tc, refiring_client_is_early_every_time);
	tcase_add_test(tc, verdict_thresholds);
	tcase_add_test(tc, instant_to_the_millisecond_below);
	tcase_add_test(tc, no_retry_after_no_early);
	tcase_add_test(tc, identities_apart);
	tcase_add_test(tc, top_n_and_the_rest);
	tcase_add_test(tc, eviction_keeps_the_totals);
	tcase_add_test(tc, reset_forgets);
	tcase_add_test(tc, quota_of_the_last_decision);
	tcase_add_test(tc, episode_seen_across_threads);
	tcase_add_test(tc, concurrent_requests_judged_by_their_own_wait);
	tcase_add_test(tc, same_arrivals_unsaid_judged_as_one_client);
	tcase_add_test(tc, paired_retry_early_by_its_own_wait);
	tcase_add_test(tc, keys_apart_per_client);
	suite_add_tcase(s, tc);
	return s;
}
