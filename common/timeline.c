#include "common/timeline.h"

#include <stdlib.h>
#include <string.h>

struct timeline_row {
	uint64_t attempts;
	uint64_t retries;
	uint64_t errors;
	uint64_t other;
	uint64_t by_code[TIMELINE_MAX_CODES];
};

struct timeline {
	uint64_t interval_ns;
	struct timeline_row *rows;
	uint32_t nrows;     /* rows in use */
	uint32_t cap;
	unsigned ncodes;
	int codes[TIMELINE_MAX_CODES];
};

struct timeline *timeline_new(uint64_t interval_ns)
{
	struct timeline *t;

	if (interval_ns == 0)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (t != NULL)
		t->interval_ns = interval_ns;
	return t;
}

void timeline_free(struct timeline *t)
{
	if (t == NULL)
		return;
	free(t->rows);
	free(t);
}

/* Room for ncap rows (more than t->cap), the new ones zero; -1 when out of memory. */
static int grow(struct timeline *t, uint32_t ncap)
{
	struct timeline_row *nr = realloc(t->rows, sizeof(*nr) * ncap);

	if (nr == NULL)
		return -1;
	memset(nr + t->cap, 0, sizeof(*nr) * (ncap - t->cap));
	t->rows = nr;
	t->cap = ncap;
	return 0;
}

int timeline_reserve(struct timeline *t, uint32_t rows)
{
	if (rows > TIMELINE_MAX_ROWS)
		rows = TIMELINE_MAX_ROWS;
	return rows > t->cap ? grow(t, rows) : 0;
}

/* The row for offset_ns, grown into; NULL only when out of memory. */
static struct timeline_row *row_at(struct timeline *t, uint64_t offset_ns)
{
	uint64_t r = offset_ns / t->interval_ns;

	if (r >= TIMELINE_MAX_ROWS)
		r = TIMELINE_MAX_ROWS - 1;
	if (r >= t->cap) {
		uint32_t ncap = t->cap ? t->cap : 64;

		while (ncap <= r)
			ncap *= 2;
		if (grow(t, ncap) != 0)
			return NULL;
	}
	if (r >= t->nrows)
		t->nrows = (uint32_t)r + 1;
	return &t->rows[r];
}

/* Column of code, added when new; -1 when the columns are full. */
static int column_of(struct timeline *t, int code)
{
	for (unsigned i = 0; i < t->ncodes; i++)
		if (t->codes[i] == code)
			return (int)i;
	if (t->ncodes == TIMELINE_MAX_CODES)
		return -1;
	t->codes[t->ncodes] = code;
	return (int)t->ncodes++;
}

void timeline_sent(struct timeline *t, uint64_t offset_ns)
{
	struct timeline_row *row = row_at(t, offset_ns);

	if (row != NULL)
		row->attempts++;
}

void timeline_retry(struct timeline *t, uint64_t offset_ns)
{
	struct timeline_row *row = row_at(t, offset_ns);

	if (row != NULL)
		row->retries++;
}

static void add_outcome(struct timeline *t, struct timeline_row *row, int status, uint64_t n)
{
	int col;

	if (status <= 0) {
		row->errors += n;
		return;
	}
	col = column_of(t, status);
	if (col < 0)
		row->other += n;
	else
		row->by_code[col] += n;
}

void timeline_outcome(struct timeline *t, uint64_t offset_ns, int status)
{
	struct timeline_row *row = row_at(t, offset_ns);

	if (row != NULL)
		add_outcome(t, row, status, 1);
}

int timeline_merge_shifted(struct timeline *dst, const struct timeline *src, uint32_t shift)
{
	if (dst->interval_ns != src->interval_ns)
		return -1;
	/* dst grows once, to what it needs, rather than by doubling */
	if (src->nrows > 0 && timeline_reserve(dst, (uint32_t)((uint64_t)src->nrows + shift < TIMELINE_MAX_ROWS
	                                                       ? src->nrows + shift : TIMELINE_MAX_ROWS)) != 0)
		return -1;
	for (uint32_t r = 0; r < src->nrows; r++) {
		const struct timeline_row *s = &src->rows[r];
		struct timeline_row *d = row_at(dst, ((uint64_t)r + shift) * dst->interval_ns);

		if (d == NULL)
			return -1;
		d->attempts += s->attempts;
		d->retries += s->retries;
		d->errors += s->errors;
		d->other += s->other;
		for (unsigned c = 0; c < src->ncodes; c++)
			if (s->by_code[c] != 0)
				add_outcome(dst, d, src->codes[c], s->by_code[c]);
	}
	return 0;
}

int timeline_merge(struct timeline *dst, const struct timeline *src)
{
	return timeline_merge_shifted(dst, src, 0);
}

int timeline_add_row(struct timeline *t, uint32_t row, uint64_t attempts, uint64_t retries,
                     uint64_t errors, uint64_t other)
{
	struct timeline_row *d = row_at(t, (uint64_t)row * t->interval_ns);

	if (d == NULL)
		return -1;
	d->attempts += attempts;
	d->retries += retries;
	d->errors += errors;
	d->other += other;
	return 0;
}

int timeline_add_code(struct timeline *t, uint32_t row, int code, uint64_t n)
{
	struct timeline_row *d = row_at(t, (uint64_t)row * t->interval_ns);

	if (d == NULL)
		return -1;
	if (n != 0)
		add_outcome(t, d, code > 0 ? code : 0, n);
	return 0;
}

uint64_t timeline_interval_ns(const struct timeline *t) { return t->interval_ns; }
uint32_t timeline_rows(const struct timeline *t) { return t->nrows; }
unsigned timeline_ncodes(const struct timeline *t) { return t->ncodes; }
int timeline_code(const struct timeline *t, unsigned i) { return i < t->ncodes ? t->codes[i] : 0; }

uint64_t timeline_attempts(const struct timeline *t, uint32_t row)
{
	return row < t->nrows ? t->rows[row].attempts : 0;
}

uint64_t timeline_retries(const struct timeline *t, uint32_t row)
{
	return row < t->nrows ? t->rows[row].retries : 0;
}

uint64_t timeline_errors(const struct timeline *t, uint32_t row)
{
	return row < t->nrows ? t->rows[row].errors : 0;
}

uint64_t timeline_other(const struct timeline *t, uint32_t row)
{
	return row < t->nrows ? t->rows[row].other : 0;
}

uint64_t timeline_count(const struct timeline *t, uint32_t row, unsigned col)
{
	return row < t->nrows && col < t->ncodes ? t->rows[row].by_code[col] : 0;
}

uint64_t timeline_class(const struct timeline *t, uint32_t row, int c)
{
	uint64_t n = 0;

	if (row >= t->nrows)
		return 0;
	for (unsigned i = 0; i < t->ncodes; i++)
		if (t->codes[i] / 100 == c)
			n += t->rows[row].by_code[i];
	return n;
}

uint64_t timeline_peak_attempts(const struct timeline *t)
{
	uint64_t peak = 0;

	for (uint32_t r = 0; r < t->nrows; r++)
		if (t->rows[r].attempts > peak)
			peak = t->rows[r].attempts;
	return peak;
}

int timeline_write_csv(const struct timeline *t, FILE *f)
{
	fprintf(f, "t_s,attempts,2xx,3xx,4xx,5xx,errors");
	for (unsigned i = 0; i < t->ncodes; i++)
		fprintf(f, ",%d", t->codes[i]);
	fprintf(f, ",other\n");
	for (uint32_t r = 0; r < t->nrows; r++) {
		const struct timeline_row *row = &t->rows[r];

		fprintf(f, "%.3f,%llu", (double)r * (double)t->interval_ns / 1e9,
		        (unsigned long long)row->attempts);
		for (int c = 2; c <= 5; c++)
			fprintf(f, ",%llu", (unsigned long long)timeline_class(t, r, c));
		fprintf(f, ",%llu", (unsigned long long)row->errors);
		for (unsigned i = 0; i < t->ncodes; i++)
			fprintf(f, ",%llu", (unsigned long long)row->by_code[i]);
		fprintf(f, ",%llu\n", (unsigned long long)row->other);
	}
	return ferror(f) ? -1 : 0;
}
