/* An open-loop rate that follows a schedule: parsing, the integral and its inverse. */
#include "common/rate_schedule.h"

#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "common/parse.h"

#define ITEM_MAX 64

/* RATE: "50", "2.5", "0", or COUNT/PERIOD ("100/s", "30/1m"), in [0, max]. */
static int parse_one_rate(const char *s, double max, double *out)
{
	uint64_t count, period;
	double r = -1;

	if (strchr(s, '/') != NULL) {
		if (parse_rate(s, &count, &period, NULL, 0) == 0)
			r = (double)count * 1e9 / (double)period;
	} else if (parse_double(s, 0, 1e300, &r, NULL, 0) != 0) {
		r = -1;
	}
	if (!(r >= 0 && r <= max))
		return -1;
	*out = r;
	return 0;
}

static int item_fail(char *err, size_t errlen, unsigned i, const char *item, const char *fmt, const char *what)
{
	char why[160];

	snprintf(why, sizeof(why), fmt, what);
	if (err && errlen)
		snprintf(err, errlen, "item %u '%s': %s", i + 1, item, why);
	return -1;
}

/* One item RATE[@START[+LEN]] into *seg; *has_start says whether START was given. */
static int parse_item(char *item, unsigned i, double max, struct rate_segment *seg, bool *has_start,
                      char *err, size_t errlen)
{
	char whole[ITEM_MAX], *at = strchr(item, '@'), *plus = NULL;
	uint64_t len;

	snprintf(whole, sizeof(whole), "%s", item);
	plus = strchr(at != NULL ? at : item, '+');
	if (plus != NULL)
		*plus++ = '\0';
	if (at != NULL)
		*at++ = '\0';
	if (parse_one_rate(item, max, &seg->rate) != 0)
		return item_fail(err, errlen, i, whole, "'%s' is not a rate such as 50, 2.5, 30/1m or 0", item);
	*has_start = at != NULL;
	seg->start_ns = 0;
	seg->end_ns = RATE_SCHEDULE_OPEN;
	if (at != NULL && parse_duration(at, &seg->start_ns, NULL, 0) != 0)
		return item_fail(err, errlen, i, whole, "'@%s' is not a start such as @10s", at);
	if (plus == NULL)
		return 0;
	if (parse_duration(plus, &len, NULL, 0) != 0 || len == 0)
		return item_fail(err, errlen, i, whole, "'+%s' is not a length above 0 such as +3s", plus);
	if (len > RATE_SCHEDULE_OPEN - 1 - seg->start_ns)
		return item_fail(err, errlen, i, whole, "'+%s' ends past what a run can last", plus);
	seg->end_ns = seg->start_ns + len;
	return 0;
}

/* Fit item i (start given or not) after the segments before it. */
static int place(struct rate_schedule *s, unsigned i, bool has_start, const char *item, char *err, size_t errlen)
{
	struct rate_segment *prev = i > 0 ? &s->seg[i - 1] : NULL, *seg = &s->seg[i];
	char at[32], end[32];

	if (prev == NULL)
		return 0;
	if (!has_start) {
		if (prev->end_ns == RATE_SCHEDULE_OPEN)
			return item_fail(err, errlen, i, item, "%s", "needs @START: the item before it has no +LEN");
		if (seg->end_ns != RATE_SCHEDULE_OPEN)
			seg->end_ns += prev->end_ns;
		seg->start_ns = prev->end_ns;
		return 0;
	}
	if (prev->end_ns == RATE_SCHEDULE_OPEN)
		prev->end_ns = seg->start_ns;
	if (seg->start_ns < prev->end_ns || prev->end_ns <= prev->start_ns) {
		parse_format_exact_duration(seg->start_ns, at, sizeof(at));
		parse_format_exact_duration(prev->end_ns > prev->start_ns ? prev->end_ns : prev->start_ns, end, sizeof(end));
		snprintf(err, errlen, "item %u '%s': starts at %s, before the item before it ends (%s)", i + 1, item,
		         at, end);
		return -1;
	}
	return 0;
}

int rate_schedule_parse(const char *s, double max_rate, struct rate_schedule *out, char *err, size_t errlen)
{
	char item[ITEM_MAX];
	const char *p = s;

	memset(out, 0, sizeof(*out));
	if (s == NULL || *s == '\0')
		return snprintf(err, errlen, "is empty"), -1;
	for (unsigned i = 0;; i++) {
		size_t n = strcspn(p, ",");
		bool has_start = false;

		if (i == RATE_SCHEDULE_MAX)
			return snprintf(err, errlen, "has more than %d items", RATE_SCHEDULE_MAX), -1;
		if (n == 0 || n >= sizeof(item))
			return snprintf(err, errlen, "item %u is %s", i + 1, n ? "too long" : "empty"), -1;
		memcpy(item, p, n);
		item[n] = '\0';
		if (parse_item(item, i, max_rate, &out->seg[i], &has_start, err, errlen) != 0)
			return -1;
		snprintf(item, sizeof(item), "%.*s", (int)n, p);
		if (place(out, i, has_start, item, err, errlen) != 0)
			return -1;
		out->n = i + 1;
		if (p[n] == '\0')
			break;
		p += n + 1;
	}
	if (!(rate_schedule_peak(out) > 0))
		return snprintf(err, errlen, "has no rate above 0"), -1;
	return 0;
}

void rate_schedule_constant(struct rate_schedule *out, double rate)
{
	memset(out, 0, sizeof(*out));
	out->seg[0].rate = rate;
	out->seg[0].end_ns = RATE_SCHEDULE_OPEN;
	out->n = 1;
}

bool rate_schedule_is_constant(const struct rate_schedule *s)
{
	return s->n == 1 && s->seg[0].start_ns == 0 && s->seg[0].end_ns == RATE_SCHEDULE_OPEN;
}

double rate_schedule_rate(const struct rate_schedule *s, uint64_t t_ns)
{
	for (unsigned i = 0; i < s->n; i++)
		if (t_ns >= s->seg[i].start_ns && t_ns < s->seg[i].end_ns)
			return s->seg[i].rate;
	return 0;
}

double rate_schedule_peak(const struct rate_schedule *s)
{
	double peak = 0;

	for (unsigned i = 0; i < s->n; i++)
		if (s->seg[i].rate > peak)
			peak = s->seg[i].rate;
	return peak;
}

double rate_schedule_count(const struct rate_schedule *s, uint64_t t_ns)
{
	double sum = 0;

	for (unsigned i = 0; i < s->n; i++) {
		const struct rate_segment *g = &s->seg[i];
		uint64_t end = g->end_ns < t_ns ? g->end_ns : t_ns;

		if (end > g->start_ns)
			sum += g->rate * (double)(end - g->start_ns) / 1e9;
	}
	return sum;
}

uint64_t rate_schedule_time(const struct rate_schedule *s, double count)
{
	double before = 0;

	for (unsigned i = 0; i < s->n; i++) {
		const struct rate_segment *g = &s->seg[i];
		double here, off;

		if (g->rate <= 0)
			continue;
		here = g->end_ns == RATE_SCHEDULE_OPEN ? 1e300 : g->rate * (double)(g->end_ns - g->start_ns) / 1e9;
		if (count < before + here) {
			off = (count - before) * 1e9 / g->rate;
			return off >= (double)(RATE_SCHEDULE_OPEN - g->start_ns) ? UINT64_MAX : g->start_ns + (uint64_t)off;
		}
		before += here;
	}
	return UINT64_MAX;
}

void rate_schedule_describe(const struct rate_schedule *s, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < s->n && used < len; i++) {
		const struct rate_segment *g = &s->seg[i];
		char from[32] = "", span[32] = "";
		int w;

		if (g->start_ns > 0)
			parse_format_exact_duration(g->start_ns, from, sizeof(from));
		if (g->end_ns != RATE_SCHEDULE_OPEN)
			parse_format_exact_duration(g->end_ns - g->start_ns, span, sizeof(span));
		w = snprintf(buf + used, len - used, "%s%g/s%s%s%s%s", i ? ", " : "", g->rate, *from ? " from " : "",
		             from, *span ? " for " : "", span);
		if (w < 0)
			break;
		used += (size_t)w;
	}
}
