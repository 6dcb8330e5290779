/* The capacity model behind a route: virtual workers, a bounded queue, triggers, wasted work. */
#include "server/capacity.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/parse.h"
#include "common/prng.h"
#include "common/series.h"

/* The series' columns: the queue is a level (its length at the row's last event, and its peak). */
enum {
	CS_QUEUE_END, CS_QUEUE_MAX, CS_ARRIVED, CS_SHED, CS_SERVED, CS_SERVED_GONE, CS_WORK, CS_WORK_GONE, CS_WIDTH
};

struct slot {
	void *job;
	uint64_t arrived_ns;
};

struct capacity {
	struct capacity_params p;
	struct prng rng;
	uint64_t epoch_ns;
	struct slot *q;               /* ring of queue_max slots: head is the oldest */
	uint32_t head, len;
	uint32_t busy;
	uint64_t debt_ns;             /* rejection work no worker has taken yet */
	bool closed;
	struct capacity_stats t;      /* counters (queue, busy, workers filled in on read) */
	struct series *rows;          /* 100 ms rows from the epoch */
};

/* ---- parsing ---- */

static int fail(char *err, size_t errlen, const char *fmt, const char *what)
{
	if (err && errlen)
		snprintf(err, errlen, fmt, what);
	return -1;
}

/* "10ms", "10ms±2ms" / "10ms+-2ms", "exp:10ms". */
static int parse_service(const char *v, struct capacity_params *p, char *err, size_t errlen)
{
	char mean[48];
	const char *sd = strstr(v, "\xc2\xb1");
	size_t n, skip = 2;
	uint64_t m;

	if (v[0] == '-')
		return fail(err, errlen, "service time '%s' is negative", v);
	if (sd == NULL && (sd = strstr(v, "+-")) != NULL)
		skip = 2;
	p->service = CAPACITY_SERVICE_FIXED;
	p->service_sd_ns = 0;
	if (strncmp(v, "exp:", 4) == 0) {
		p->service = CAPACITY_SERVICE_EXP;
		v += 4;
	}
	n = sd ? (size_t)(sd - v) : strlen(v);
	if (n >= sizeof(mean) || (sd && p->service == CAPACITY_SERVICE_EXP))
		return fail(err, errlen, "service time '%s' is not one such as 10ms, 10ms\xc2\xb1" "2ms or exp:10ms", v);
	memcpy(mean, v, n);
	mean[n] = '\0';
	if (parse_duration(mean, &m, NULL, 0) != 0 || m == 0)
		return fail(err, errlen, "service time '%s' is not a duration above 0 such as 10ms", mean);
	p->service_ns = m;
	if (sd == NULL)
		return 0;
	if (sd[skip] == '-')
		return fail(err, errlen, "service time spread '%s' is negative", sd + skip);
	if (parse_duration(sd + skip, &p->service_sd_ns, NULL, 0) != 0)
		return fail(err, errlen, "service time spread '%s' is not a duration such as 2ms", sd + skip);
	p->service = CAPACITY_SERVICE_NORMAL;
	return 0;
}

/* "fifo", "lifo", "fifo:N", "lifo:N". */
static int parse_queue(const char *v, struct capacity_params *p, char *err, size_t errlen)
{
	const char *colon = strchr(v, ':');
	size_t n = colon ? (size_t)(colon - v) : strlen(v);
	uint64_t max = p->queue_max;

	if (n == 4 && strncmp(v, "fifo", 4) == 0)
		p->queue = CAPACITY_FIFO;
	else if (n == 4 && strncmp(v, "lifo", 4) == 0)
		p->queue = CAPACITY_LIFO;
	else
		return fail(err, errlen, "queue '%s' is not fifo, lifo, fifo:N or lifo:N", v);
	if (colon && parse_u64(colon + 1, 0, CAPACITY_MAX_QUEUE, &max, NULL, 0) != 0)
		return fail(err, errlen, "queue bound '%s' is not a number from 0 to 1000000", colon + 1);
	p->queue_max = (uint32_t)max;
	return 0;
}

/* One key=value of a --capacity spec. */
static int parse_key(const char *key, const char *v, struct capacity_params *p, char *err, size_t errlen)
{
	uint64_t n;

	if (strcmp(key, "workers") == 0) {
		if (parse_u64(v, 1, CAPACITY_MAX_WORKERS, &n, NULL, 0) != 0)
			return fail(err, errlen, "workers '%s' is not a number from 1 to 10000", v);
		p->workers = (unsigned)n;
		return 0;
	}
	if (strcmp(key, "service") == 0)
		return parse_service(v, p, err, errlen);
	if (strcmp(key, "queue") == 0)
		return parse_queue(v, p, err, errlen);
	if (strcmp(key, "queue-timeout") == 0) {
		if (parse_duration(v, &p->queue_timeout_ns, NULL, 0) != 0)
			return fail(err, errlen, "queue-timeout '%s' is not a duration such as 1s (0: none)", v);
		return 0;
	}
	if (strcmp(key, "reject-cost") == 0) {
		if (v[0] == '-' || parse_double(v, 0, 100, &p->reject_cost, NULL, 0) != 0)
			return fail(err, errlen, "reject-cost '%s' is not a fraction of a service time from 0 to 100", v);
		return 0;
	}
	return fail(err, errlen, "unknown key '%s' (workers, service, queue, queue-timeout, reject-cost)", key);
}

int capacity_parse(const char *spec, struct capacity_params *p, char *err, size_t errlen)
{
	char buf[256], *save = NULL;

	if (spec == NULL || spec[0] == '\0' || strlen(spec) >= sizeof(buf))
		return fail(err, errlen, "%s", spec && spec[0] ? "is too long" : "is empty");
	p->workers = 4;
	p->service = CAPACITY_SERVICE_FIXED;
	p->service_ns = 10 * NS_PER_MS;
	p->service_sd_ns = 0;
	p->queue = CAPACITY_FIFO;
	p->queue_max = 1000;
	p->queue_timeout_ns = 0;
	p->reject_cost = 0;
	strcpy(buf, spec);
	for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '=');

		if (eq == NULL)
			return fail(err, errlen, "'%s' is not key=value", item);
		*eq = '\0';
		if (parse_key(item, eq + 1, p, err, errlen) != 0)
			return -1;
	}
	return 0;
}

int capacity_trigger_parse(const char *spec, struct capacity_trigger *t, char *err, size_t errlen)
{
	char frac[32];
	const char *at = strchr(spec, '@'), *plus = at ? strchr(at, '+') : NULL;
	size_t n = at ? (size_t)(at - spec) : 0;
	bool pct = n > 0 && spec[n - 1] == '%';
	double f;

	if (at == NULL || plus == NULL || n == 0 || n >= sizeof(frac))
		return fail(err, errlen, "%s", "it has no F@START+LEN: the capacity left, when, how long");
	snprintf(frac, sizeof(frac), "%.*s", (int)(pct ? n - 1 : n), spec);
	if (frac[0] == '-' || parse_double(frac, 0, pct ? 100 : 1, &f, NULL, 0) != 0)
		return fail(err, errlen, "capacity '%s' is not a fraction from 0 to 1 or 0%% to 100%%", frac);
	t->fraction = pct ? f / 100 : f;
	snprintf(frac, sizeof(frac), "%.*s", (int)(plus - at - 1), at + 1);
	if (parse_duration(frac, &t->start_ns, NULL, 0) != 0)
		return fail(err, errlen, "start '%s' is not a duration such as 5s", frac);
	if (parse_duration(plus + 1, &t->len_ns, NULL, 0) != 0 || t->len_ns == 0)
		return fail(err, errlen, "length '%s' is not a duration above 0 such as 3s", plus + 1);
	return 0;
}

void capacity_describe(const struct capacity_params *p, char *buf, size_t len)
{
	char svc[80], a[32], b[32], extra[128] = "";
	size_t used;

	parse_format_exact_duration(p->service_ns, a, sizeof(a));
	parse_format_exact_duration(p->service_sd_ns, b, sizeof(b));
	if (p->service == CAPACITY_SERVICE_NORMAL)
		snprintf(svc, sizeof(svc), "%s\xc2\xb1%s", a, b);
	else
		snprintf(svc, sizeof(svc), "%s%s", p->service == CAPACITY_SERVICE_EXP ? "exp:" : "", a);
	if (p->queue_timeout_ns) {
		parse_format_exact_duration(p->queue_timeout_ns, a, sizeof(a));
		snprintf(extra, sizeof(extra), ", queue timeout %s", a);
	}
	used = strlen(extra);
	if (p->reject_cost > 0)
		snprintf(extra + used, sizeof(extra) - used, ", a rejection costs %g service times", p->reject_cost);
	snprintf(buf, len, "%u worker%s, service %s, %s queue of %u%s", p->workers, p->workers == 1 ? "" : "s", svc,
	         p->queue == CAPACITY_LIFO ? "lifo" : "fifo", p->queue_max, extra);
}

void capacity_trigger_describe(const struct capacity_trigger *t, char *buf, size_t len)
{
	char s[32], l[32];

	parse_format_exact_duration(t->start_ns, s, sizeof(s));
	parse_format_exact_duration(t->len_ns, l, sizeof(l));
	snprintf(buf, len, "%g%% of the workers from %s for %s", t->fraction * 100, t->start_ns ? s : "0s", l);
}

unsigned capacity_workers_at(const struct capacity_params *p, uint64_t offset_ns)
{
	double f = 1;

	for (unsigned i = 0; i < p->ntriggers; i++) {
		const struct capacity_trigger *t = &p->triggers[i];

		if (offset_ns >= t->start_ns && offset_ns - t->start_ns < t->len_ns && t->fraction < f)
			f = t->fraction;
	}
	return (unsigned)floor(p->workers * f + 0.5);
}

const char *capacity_shed_name(enum capacity_shed_reason r)
{
	static const char *const N[CAPACITY_SHED_REASONS] = { "full", "evicted", "expired", "flushed" };

	return (unsigned)r < CAPACITY_SHED_REASONS ? N[r] : "?";
}

/* ---- the model ---- */

static void note_queue(struct capacity *c, uint64_t now);

struct capacity *capacity_new(const struct capacity_params *p, uint64_t now_ns, uint64_t seed)
{
	struct capacity *c;

	if (p->workers == 0 || (c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	c->p = *p;
	c->epoch_ns = now_ns;
	prng_seed(&c->rng, seed);
	c->q = calloc(p->queue_max ? p->queue_max : 1, sizeof(*c->q));
	c->rows = series_new(&(struct series_params){ .shape = SERIES_FROM_START, .interval_ns = CAPACITY_BUCKET_NS,
	                                              .origin_ns = now_ns, .max_rows = CAPACITY_BUCKETS,
	                                              .reserve = CAPACITY_BUCKETS, .width = CS_WIDTH,
	                                              .levels = 1u << CS_QUEUE_END });
	if (c->q == NULL || c->rows == NULL) {
		capacity_free(c);
		return NULL;
	}
	note_queue(c, now_ns);
	return c;
}

void capacity_free(struct capacity *c)
{
	if (c == NULL)
		return;
	free(c->q);
	series_free(c->rows);
	free(c);
}

static uint64_t since_epoch(const struct capacity *c, uint64_t now)
{
	return now > c->epoch_ns ? now - c->epoch_ns : 0;
}

/* Count n in column col of now's row (the series holds its rows from the start: it never fails). */
static void count(struct capacity *c, uint64_t now, unsigned col, uint64_t n)
{
	series_add(c->rows, series_row_of(c->rows, now), col, n);
}

static void note_queue(struct capacity *c, uint64_t now)
{
	series_level(c->rows, series_row_of(c->rows, now), CS_QUEUE_END, c->len);
	if (c->len > c->t.queue_peak)
		c->t.queue_peak = c->len;
}

static uint64_t draw_service(struct capacity *c)
{
	double mean = (double)c->p.service_ns, sd = (double)c->p.service_sd_ns, x;

	switch (c->p.service) {
	case CAPACITY_SERVICE_NORMAL:
		x = mean + sd * sqrt(-2.0 * log(1.0 - prng_double(&c->rng))) * cos(2 * M_PI * prng_double(&c->rng));
		if (x > mean + 4 * sd)
			x = mean + 4 * sd;
		return x > 0 ? (uint64_t)x : 0;
	case CAPACITY_SERVICE_EXP:
		x = -log(1.0 - prng_double(&c->rng)) * mean;
		return x < 50 * mean ? (uint64_t)x : (uint64_t)(50 * mean);
	default:
		return c->p.service_ns;
	}
}

static void shed(struct capacity *c, uint64_t now, void *job, enum capacity_shed_reason why, struct capacity_event *e)
{
	e->kind = CAPACITY_SHED;
	e->job = job;
	e->done_ns = e->service_ns = 0;
	e->why = why;
	c->t.shed[why]++;
	count(c, now, CS_SHED, 1);
	if (why != CAPACITY_SHED_FLUSHED)
		c->debt_ns += (uint64_t)(c->p.reject_cost * (double)c->p.service_ns);
}

static struct slot take(struct capacity *c, bool newest)
{
	struct slot s;

	if (newest) {
		s = c->q[(c->head + c->len - 1) % c->p.queue_max];
	} else {
		s = c->q[c->head];
		c->head = (c->head + 1) % c->p.queue_max;
	}
	c->len--;
	return s;
}

/* A free worker takes the rejection work, else the next request; false when there is nothing to take. */
static bool start_one(struct capacity *c, uint64_t now, struct capacity_event *e)
{
	if (c->debt_ns > 0) {
		/* at most one service time at a time, so the debt spreads over the workers */
		e->kind = CAPACITY_DEBT;
		e->job = NULL;
		e->service_ns = c->debt_ns < c->p.service_ns ? c->debt_ns : c->p.service_ns;
		c->debt_ns -= e->service_ns;
		c->t.debt_work_ns += e->service_ns;
	} else if (c->len > 0) {
		e->kind = CAPACITY_START;
		e->job = take(c, c->p.queue == CAPACITY_LIFO).job;
		e->service_ns = draw_service(c);
		c->t.started++;
	} else {
		return false;
	}
	e->done_ns = now + e->service_ns;
	c->busy++;
	return true;
}

/* Drop what expired (the oldest first), then fill free workers; at most max events. */
static size_t fill(struct capacity *c, uint64_t now, struct capacity_event *ev, size_t max)
{
	size_t n = 0;

	while (n < max && !c->closed) {
		uint64_t arrived = c->len > 0 ? c->q[c->head].arrived_ns : now;

		if (c->p.queue_timeout_ns && now > arrived && now - arrived > c->p.queue_timeout_ns) {
			shed(c, now, take(c, false).job, CAPACITY_SHED_EXPIRED, &ev[n++]);
			continue;
		}
		if (c->busy >= capacity_workers_at(&c->p, since_epoch(c, now)) || !start_one(c, now, &ev[n]))
			break;
		n++;
	}
	note_queue(c, now);
	return n;
}

/* Queue job, or shed it (or, LIFO, the oldest for it): at most one event, in *e. */
static size_t place(struct capacity *c, uint64_t now, void *job, struct capacity_event *e)
{
	size_t n = 0;

	if (c->closed || c->p.queue_max == 0 ||
	    (c->len == c->p.queue_max && c->p.queue == CAPACITY_FIFO)) {
		if (!c->closed && c->p.queue_max == 0 && c->busy < capacity_workers_at(&c->p, since_epoch(c, now))) {
			e->kind = CAPACITY_START;
			e->job = job;
			e->service_ns = draw_service(c);
			e->done_ns = now + e->service_ns;
			c->busy++;
			c->t.started++;
			return 1;
		}
		shed(c, now, job, c->closed ? CAPACITY_SHED_FLUSHED : CAPACITY_SHED_FULL, e);
		return 1;
	}
	if (c->len == c->p.queue_max) {
		shed(c, now, take(c, false).job, CAPACITY_SHED_EVICTED, e);
		n = 1;
	}
	c->q[(c->head + c->len) % c->p.queue_max] = (struct slot){ job, now };
	c->len++;
	return n;
}

size_t capacity_arrive(struct capacity *c, uint64_t now, void *job, struct capacity_event *ev, size_t max)
{
	size_t n;

	if (max == 0)
		return 0;
	c->t.arrived++;
	count(c, now, CS_ARRIVED, 1);
	n = fill(c, now, ev, max - 1);
	n += place(c, now, job, &ev[n]);
	return n + fill(c, now, ev + n, max - n);
}

size_t capacity_done(struct capacity *c, uint64_t now, uint64_t service_ns, enum capacity_client client,
                     struct capacity_event *ev, size_t max)
{
	if (c->busy > 0)
		c->busy--;
	if (client != CAPACITY_NOBODY) {
		c->t.served++;
		c->t.work_ns += service_ns;
		count(c, now, CS_SERVED, 1);
		count(c, now, CS_WORK, service_ns);
		if (client == CAPACITY_GONE) {
			c->t.served_gone++;
			c->t.work_gone_ns += service_ns;
			count(c, now, CS_SERVED_GONE, 1);
			count(c, now, CS_WORK_GONE, service_ns);
		}
	}
	return fill(c, now, ev, max);
}

size_t capacity_poll(struct capacity *c, uint64_t now, struct capacity_event *ev, size_t max)
{
	return fill(c, now, ev, max);
}

uint64_t capacity_next_change(const struct capacity *c, uint64_t now)
{
	uint64_t at = since_epoch(c, now), best = UINT64_MAX;

	for (unsigned i = 0; i < c->p.ntriggers; i++) {
		const struct capacity_trigger *t = &c->p.triggers[i];
		uint64_t edge = t->start_ns > at ? t->start_ns : t->start_ns + t->len_ns;

		if (edge > at && edge < best)
			best = edge;
	}
	return best == UINT64_MAX ? UINT64_MAX : c->epoch_ns + best;
}

size_t capacity_flush(struct capacity *c, uint64_t now, struct capacity_event *ev, size_t max)
{
	size_t n = 0;

	c->closed = true;
	while (n < max && c->len > 0)
		shed(c, now, take(c, false).job, CAPACITY_SHED_FLUSHED, &ev[n++]);
	note_queue(c, now);
	return n;
}

void capacity_reset(struct capacity *c, uint64_t now)
{
	memset(&c->t, 0, sizeof(c->t));
	series_clear(c->rows, now);
	c->epoch_ns = now;
	c->debt_ns = 0;
	note_queue(c, now);
}

void capacity_stats(const struct capacity *c, uint64_t now, struct capacity_stats *out)
{
	uint64_t i = series_row_of(c->rows, now), from = i >= 9 ? i - 9 : 0;

	*out = c->t;
	out->queue = c->len;
	out->busy = c->busy;
	out->workers = capacity_workers_at(&c->p, since_epoch(c, now));
	out->served_1s = (uint32_t)series_sum(c->rows, from, i, CS_SERVED);
	out->served_gone_1s = (uint32_t)series_sum(c->rows, from, i, CS_SERVED_GONE);
}

size_t capacity_series(const struct capacity *c, struct capacity_bucket *out, size_t max)
{
	size_t n = (size_t)series_rows(c->rows);

	if (n > max)
		n = max;
	for (size_t i = 0; i < n; i++) {
		const struct series *r = c->rows;

		out[i] = (struct capacity_bucket){
			.queue_max = (uint32_t)series_get(r, i, CS_QUEUE_MAX),
			.queue_end = (uint32_t)series_get(r, i, CS_QUEUE_END),
			.workers = capacity_workers_at(&c->p, (uint64_t)i * CAPACITY_BUCKET_NS),
			.arrived = (uint32_t)series_get(r, i, CS_ARRIVED),
			.shed = (uint32_t)series_get(r, i, CS_SHED),
			.served = (uint32_t)series_get(r, i, CS_SERVED),
			.served_gone = (uint32_t)series_get(r, i, CS_SERVED_GONE),
			.work_ns = series_get(r, i, CS_WORK),
			.work_gone_ns = series_get(r, i, CS_WORK_GONE),
		};
	}
	return n;
}
