/* An open-loop rate schedule: the grammar, its errors, the count and its inverse. */
#include <check.h>
#include <string.h>

#include "common/clock.h"
#include "common/rate_schedule.h"

#define SEC(x) ((uint64_t)(x) * NS_PER_SEC)
#define MS(x) ((uint64_t)(x) * NS_PER_MS)
#define OPEN RATE_SCHEDULE_OPEN

static void parse_ok(const char *s, struct rate_schedule *rs)
{
	char err[200] = "";

	ck_assert_msg(rate_schedule_parse(s, 1e7, rs, err, sizeof(err)) == 0, "'%s': %s", s, err);
}

static void seg_is(const struct rate_schedule *rs, unsigned i, double rate, uint64_t start, uint64_t end)
{
	ck_assert_uint_lt(i, rs->n);
	ck_assert_msg(rs->seg[i].rate == rate, "seg %u rate %g, want %g", i, rs->seg[i].rate, rate);
	ck_assert_uint_eq(rs->seg[i].start_ns, start);
	ck_assert_uint_eq(rs->seg[i].end_ns, end);
}

/* The example: 100/s, then 300/s from 10 s for 3 s, then 100/s. */
START_TEST(spike_between_two_rates)
{
	struct rate_schedule rs;
	char d[128];

	parse_ok("100/s,300/s@10s+3s,100/s", &rs);
	ck_assert_uint_eq(rs.n, 3);
	seg_is(&rs, 0, 100, 0, SEC(10));
	seg_is(&rs, 1, 300, SEC(10), SEC(13));
	seg_is(&rs, 2, 100, SEC(13), OPEN);
	ck_assert(rate_schedule_rate(&rs, SEC(9)) == 100);
	ck_assert(rate_schedule_rate(&rs, SEC(10)) == 300);
	ck_assert(rate_schedule_rate(&rs, SEC(13) - 1) == 300);
	ck_assert(rate_schedule_rate(&rs, SEC(13)) == 100);
	ck_assert(rate_schedule_peak(&rs) == 300);
	ck_assert(!rate_schedule_is_constant(&rs));
	rate_schedule_describe(&rs, d, sizeof(d));
	ck_assert_str_eq(d, "100/s for 10s, 300/s from 10s for 3s, 100/s from 13s");
}
END_TEST

START_TEST(forms_of_items)
{
	struct rate_schedule rs;

	parse_ok("50", &rs);
	seg_is(&rs, 0, 50, 0, OPEN);
	ck_assert(rate_schedule_is_constant(&rs));
	parse_ok("30/1m", &rs);
	seg_is(&rs, 0, 0.5, 0, OPEN);
	parse_ok("200/s@5s", &rs);                       /* nothing before 5 s */
	seg_is(&rs, 0, 200, SEC(5), OPEN);
	ck_assert(rate_schedule_rate(&rs, SEC(4)) == 0);
	parse_ok("100+2s,0+1s,100", &rs);                /* +LEN alone follows on; 0 is a pause */
	seg_is(&rs, 0, 100, 0, SEC(2));
	seg_is(&rs, 1, 0, SEC(2), SEC(3));
	seg_is(&rs, 2, 100, SEC(3), OPEN);
	parse_ok("10@0+1s,20@5s+1s", &rs);               /* a gap from 1 s to 5 s */
	ck_assert(rate_schedule_rate(&rs, SEC(3)) == 0);
	seg_is(&rs, 1, 20, SEC(5), SEC(6));
	parse_ok("5/2s@250ms+750ms,2.5", &rs);
	seg_is(&rs, 0, 2.5, MS(250), SEC(1));
	seg_is(&rs, 1, 2.5, SEC(1), OPEN);
}
END_TEST

START_TEST(bad_schedules)
{
	static const struct {
		const char *in, *why;
	} BAD[] = {
		{ "", "is empty" },
		{ "100/s,", "item 2 is empty" },
		{ "x", "item 1 'x': 'x' is not a rate such as 50, 2.5, 30/1m or 0" },
		{ "100/s,-5/s@1s", "item 2 '-5/s@1s': '-5/s' is not a rate such as 50, 2.5, 30/1m or 0" },
		{ "100/s,300/s@x+3s", "item 2 '300/s@x+3s': '@x' is not a start such as @10s" },
		{ "100/s,300/s@10s+0s", "item 2 '300/s@10s+0s': '+0s' is not a length above 0 such as +3s" },
		{ "100/s,200/s", "item 2 '200/s': needs @START: the item before it has no +LEN" },
		{ "100/s@0+10s,300/s@5s", "item 2 '300/s@5s': starts at 5s, before the item before it ends (10s)" },
		{ "100/s@5s,300/s@5s", "item 2 '300/s@5s': starts at 5s, before the item before it ends (5s)" },
		{ "0,0@1s", "has no rate above 0" },
		{ "2e7", "item 1 '2e7': '2e7' is not a rate such as 50, 2.5, 30/1m or 0" },
		{ "1,1@1s+1s,1@2s+1s,1@3s+1s,1@4s+1s,1@5s+1s,1@6s+1s,1@7s+1s,1@8s+1s,1@9s+1s,1@10s+1s,"
		  "1@11s+1s,1@12s+1s,1@13s+1s,1@14s+1s,1@15s+1s,1@16s+1s", "has more than 16 items" },
	};
	struct rate_schedule rs;
	char err[200];

	for (size_t i = 0; i < sizeof(BAD) / sizeof(BAD[0]); i++) {
		err[0] = '\0';
		ck_assert_msg(rate_schedule_parse(BAD[i].in, 1e7, &rs, err, sizeof(err)) == -1, "'%s' parsed",
		              BAD[i].in);
		ck_assert_str_eq(err, BAD[i].why);
	}
}
END_TEST

/* The count is the rate's integral; time is its inverse, arrival j at time(j). */
START_TEST(count_and_time)
{
	struct rate_schedule rs;

	parse_ok("100/s,300/s@10s+3s,100/s", &rs);
	ck_assert(rate_schedule_count(&rs, 0) == 0);
	ck_assert(rate_schedule_count(&rs, SEC(10)) == 1000);
	ck_assert(rate_schedule_count(&rs, SEC(13)) == 1900);
	ck_assert(rate_schedule_count(&rs, SEC(20)) == 2600);
	ck_assert_uint_eq(rate_schedule_time(&rs, 0), 0);
	ck_assert_uint_eq(rate_schedule_time(&rs, 1), MS(10));
	ck_assert_uint_eq(rate_schedule_time(&rs, 999), MS(9990));
	ck_assert_uint_eq(rate_schedule_time(&rs, 1000), SEC(10));   /* the spike's first arrival */
	ck_assert_uint_eq(rate_schedule_time(&rs, 1003), SEC(10) + MS(10));
	ck_assert_uint_eq(rate_schedule_time(&rs, 1900), SEC(13));
	ck_assert_uint_eq(rate_schedule_time(&rs, 1901), SEC(13) + MS(10));
	/* a gap is skipped; a schedule that ends makes no more */
	parse_ok("10@0+1s,20@5s+1s", &rs);
	ck_assert_uint_eq(rate_schedule_time(&rs, 9), MS(900));
	ck_assert_uint_eq(rate_schedule_time(&rs, 10), SEC(5));
	ck_assert_uint_eq(rate_schedule_time(&rs, 29), SEC(5) + MS(950));
	ck_assert_uint_eq(rate_schedule_time(&rs, 30), UINT64_MAX);
	ck_assert(rate_schedule_count(&rs, SEC(100)) == 30);
}
END_TEST

/* Arrivals per second of a spiked schedule, counted from time(j): exactly the rates. */
START_TEST(arrivals_follow_the_rates)
{
	struct rate_schedule rs;
	unsigned per_s[8] = { 0 };

	parse_ok("20,60@3s+2s,20", &rs);
	for (unsigned j = 0;; j++) {
		uint64_t t = rate_schedule_time(&rs, j);

		if (t >= SEC(8))
			break;
		per_s[t / NS_PER_SEC]++;
	}
	for (int s = 0; s < 8; s++)
		ck_assert_uint_eq(per_s[s], s == 3 || s == 4 ? 60 : 20);
}
END_TEST

Suite *rate_schedule_suite(void)
{
	Suite *s = suite_create("rate_schedule");
	TCase *tc = tcase_create("schedule");

	tcase_add_test(tc, spike_between_two_rates);
	tcase_add_test(tc, forms_of_items);
	tcase_add_test(tc, bad_schedules);
	tcase_add_test(tc, count_and_time);
	tcase_add_test(tc, arrivals_follow_the_rates);
	suite_add_tcase(s, tc);
	return s;
}
