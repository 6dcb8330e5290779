/*
 * When more quota comes back (limiter_decision.next_ns, the RateLimit field's t):
 * one table of arrivals per limiter under an injected clock, each row the exact
 * admission, remaining and next_ns, and the t the header says for it.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "server/http/headers.h"
#include "server/limit/limiter.h"

#define MS NS_PER_MS
#define SEC NS_PER_SEC

/* One arrival of cost 1 at `at` and what the limiter must answer. */
struct row {
	uint64_t at;
	bool admitted;
	uint64_t remaining;
	uint64_t next_ns;
	uint64_t t;          /* the RateLimit t= text of this decision */
};

struct table {
	const char *limiter;
	uint64_t limit, window_ns, burst;
	size_t nlayers;
	struct limiter_layer layers[2];
	const struct row *rows;
	size_t nrows;
};

static void run_table(const struct table *tb)
{
	const struct limiter_ops *ops = limiter_find(tb->limiter);
	struct limiter_params p = { .limit = tb->limit, .window_ns = tb->window_ns, .burst = tb->burst,
	                            .nlayers = tb->nlayers };
	char err[256], field[HEADERS_FIELD_LEN], want[HEADERS_FIELD_LEN];
	unsigned char *state;

	ck_assert_ptr_nonnull(ops);
	memcpy(p.layers, tb->layers, sizeof(tb->layers));
	ck_assert_msg(limiter_params_check(ops, &p, err, sizeof(err)) == 0, "%s", err);
	state = calloc(1, ops->state_size(&p) + 1);
	ck_assert_ptr_nonnull(state);
	ops->init(&p, state, 0);
	for (size_t i = 0; i < tb->nrows; i++) {
		const struct row *r = &tb->rows[i];
		struct limiter_decision d;

		memset(&d, 0xa5, sizeof(d));
		ops->decide(&p, state, r->at, 1, &d);
		ck_assert_msg(d.admitted == r->admitted && d.remaining == r->remaining && d.next_ns == r->next_ns,
		              "%s row %zu: admitted %d remaining %llu next_ns %llu, want %d %llu %llu", tb->limiter, i,
		              d.admitted, (unsigned long long)d.remaining, (unsigned long long)d.next_ns, r->admitted,
		              (unsigned long long)r->remaining, (unsigned long long)r->next_ns);
		ck_assert_int_eq(headers_ratelimit(&p, ops->layered, &d, field, sizeof(field)), 0);
		snprintf(want, sizeof(want), ";r=%llu;t=%llu", (unsigned long long)r->remaining,
		         (unsigned long long)r->t);
		ck_assert_msg(strstr(field, want) != NULL, "%s row %zu: RateLimit %s, want %s", tb->limiter, i, field,
		              want);
	}
	free(state);
}

#define TABLE(name, ...) .limiter = (name), __VA_ARGS__
#define ROWS(r) .rows = (r), .nrows = sizeof(r) / sizeof((r)[0])

/* 60 per minute: a token each second, so t is 1 after two requests (the time until the bucket is full is 2). */
START_TEST(token_bucket_next_token)
{
	static const struct row rows[] = {
		{ 0, true, 59, 1 * SEC, 1 },
		{ 0, true, 58, 1 * SEC, 1 },
		{ 250 * MS, true, 57, 750 * MS, 1 },
		{ 10 * SEC, true, 59, 1 * SEC, 1 },
	};
	static const struct row small[] = {
		{ 0, true, 1, 500 * MS, 1 },
		{ 0, true, 0, 500 * MS, 1 },
		{ 0, false, 0, 500 * MS, 1 },
		{ 200 * MS, false, 0, 300 * MS, 1 },
		{ 3 * SEC, true, 1, 500 * MS, 1 },
	};
	static const struct table a = { TABLE("token-bucket", .limit = 60, .window_ns = 60 * SEC), ROWS(rows) };
	static const struct table b = { TABLE("token-bucket", .limit = 2, .window_ns = SEC), ROWS(small) };

	run_table(&a);
	run_table(&b);
}
END_TEST

/* A fixed window gives quota back only when it ends. */
START_TEST(fixed_window_end_of_window)
{
	static const struct row rows[] = {
		{ 1 * SEC, true, 2, 9 * SEC, 9 },
		{ 4 * SEC, true, 1, 6 * SEC, 6 },
		{ 9500 * MS, true, 0, 500 * MS, 1 },
		{ 9900 * MS, false, 0, 100 * MS, 1 },
		{ 12 * SEC, true, 2, 8 * SEC, 8 },
	};
	static const struct table t = { TABLE("fixed-window", .limit = 3, .window_ns = 10 * SEC), ROWS(rows) };

	run_table(&t);
}
END_TEST

/* A sliding log gives one back when its oldest entry leaves, long before the newest does. */
START_TEST(sliding_log_oldest_entry)
{
	static const struct row rows[] = {
		{ 1 * SEC, true, 2, 10 * SEC, 10 },
		{ 4 * SEC, true, 1, 7 * SEC, 7 },
		{ 6 * SEC, true, 0, 5 * SEC, 5 },
		{ 9 * SEC, false, 0, 2 * SEC, 2 },
		{ 11500 * MS, true, 0, 2500 * MS, 3 },
	};
	static const struct table t = { TABLE("sliding-log", .limit = 3, .window_ns = 10 * SEC), ROWS(rows) };

	run_table(&t);
}
END_TEST

/* The counter approximation: the previous window's weight shrinks, then the current one's after the roll. */
START_TEST(sliding_window_weights)
{
	static const struct row rows[] = {
		{ 1 * SEC, true, 3, 19 * SEC, 19 },   /* one request counts until 20 s */
		{ 2 * SEC, true, 2, 13 * SEC, 13 },   /* two: 2 * (w - e) <= w from 15 s */
		{ 12 * SEC, true, 1, 3 * SEC, 3 },    /* prev 2 weighs 16, cur 1 weighs 10: 20 at 15 s */
	};
	static const struct table t = { TABLE("sliding-window", .limit = 4, .window_ns = 10 * SEC), ROWS(rows) };

	run_table(&t);
}
END_TEST

/* GCRA: one emission interval (100 ms at 10/s) per request, less what has drained. */
START_TEST(gcra_emission_interval)
{
	static const struct row rows[] = {
		{ 0, true, 9, 100 * MS, 1 },
		{ 0, true, 8, 100 * MS, 1 },
		{ 50 * MS, true, 7, 50 * MS, 1 },
		{ 5 * SEC, true, 9, 100 * MS, 1 },
	};
	static const struct table t = { TABLE("gcra", .limit = 10, .window_ns = SEC, .burst = 10), ROWS(rows) };

	run_table(&t);
}
END_TEST

/* A leaky bucket of 2/s holding three: remaining grows when the level drains to the next whole unit. */
START_TEST(leaky_bucket_drain)
{
	static const struct row rows[] = {
		{ 0, true, 2, 500 * MS, 1 },
		{ 0, true, 1, 500 * MS, 1 },
		{ 250 * MS, true, 0, 250 * MS, 1 },
	};
	static const struct table t = { TABLE("leaky-bucket", .limit = 2, .window_ns = SEC, .burst = 2), ROWS(rows) };

	run_table(&t);
}
END_TEST

/* Concurrency: a slot frees when a request ends, which the limiter cannot know: the 1 s retry hint. */
START_TEST(concurrency_hint)
{
	static const struct row rows[] = {
		{ 0, true, 1, 1 * SEC, 1 },
		{ 0, true, 0, 1 * SEC, 1 },
		{ 0, false, 0, 1 * SEC, 1 },
	};
	static const struct table t = { TABLE("concurrency", .limit = 2, .window_ns = SEC), ROWS(rows) };

	run_table(&t);
}
END_TEST

/* Layered: the layer with the least left decides; when two tie, both must roll. */
START_TEST(layered_least_remaining)
{
	static const struct row rows[] = {
		{ 1 * SEC, true, 1, 9 * SEC, 9 },
		{ 2 * SEC, true, 0, 8 * SEC, 8 },
		{ 3 * SEC, false, 0, 7 * SEC, 7 },
		{ 11 * SEC, true, 1, 9 * SEC, 9 },
	};
	static const struct row tie[] = {
		{ 1 * SEC, true, 1, 59 * SEC, 59 },
	};
	static const struct table a = { TABLE("layered", .nlayers = 2,
	                                      .layers = { { 2, 10 * SEC }, { 5, 60 * SEC } }), ROWS(rows) };
	static const struct table b = { TABLE("layered", .nlayers = 2,
	                                      .layers = { { 2, 10 * SEC }, { 2, 60 * SEC } }), ROWS(tie) };

	run_table(&a);
	run_table(&b);
}
END_TEST

START_TEST(none_never_runs_out)
{
	struct limiter_params p = { .limit = 1, .window_ns = SEC };
	struct limiter_decision d;

	limiter_find("none")->decide(&p, NULL, 5 * SEC, 1, &d);
	ck_assert(d.admitted);
	ck_assert_uint_eq(d.next_ns, 0);
}
END_TEST

Suite *limiter_next_suite(void)
{
	Suite *s = suite_create("limiter_next");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, token_bucket_next_token);
	tcase_add_test(tc, fixed_window_end_of_window);
	tcase_add_test(tc, sliding_log_oldest_entry);
	tcase_add_test(tc, sliding_window_weights);
	tcase_add_test(tc, gcra_emission_interval);
	tcase_add_test(tc, leaky_bucket_drain);
	tcase_add_test(tc, concurrency_hint);
	tcase_add_test(tc, layered_least_remaining);
	tcase_add_test(tc, none_never_runs_out);
	suite_add_tcase(s, tc);
	return s;
}
