#include "common/timeline.h"

#include <stdlib.h>

#include "common/series.h"

/* A row's columns: the counts, then one per status code in order of first sight. */
enum { COL_ATTEMPTS, COL_RETRIES, COL_ERRORS, COL_OTHER, COL_CODES };

struct timeline {
	struct series *rows;
	uint32_t max_rows;               /* TIMELINE_MAX_ROWS but in tests */
	bool clipped;                    /* an event past the last row was counted in it */
	unsigned ncodes;
	int codes[TIMELINE_MAX_CODES];
};

struct timeline *timeline_new(uint64_t interval_ns)
{
	return timeline_new_rows(interval_ns, TIMELINE_MAX_ROWS);
}

struct timeline *timeline_new_rows(uint64_t interval_ns, uint32_t max_rows)
{
	struct series_params p = { .shape = SERIES_FROM_START, .interval_ns = interval_ns,
	                           .max_rows = max_rows, .width = COL_CODES + TIMELINE_MAX_CODES };
	struct timeline *t;

	if (interval_ns == 0 || max_rows == 0 || max_rows > TIMELINE_MAX_ROWS || (t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	t->max_rows = max_rows;
	if ((t->rows = series_new(&p)) == NULL) {
		free(t);
		return NULL;
	}
	return t;
}

void timeline_free(struct timeline *t)
{
	if (t == NULL)
		return;
	series_free(t->rows);
	free(t);
}

int timeline_reserve(struct timeline *t, uint32_t rows)
{
	return series_reserve(t->rows, rows);
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

static uint64_t row_of(struct timeline *t, uint64_t offset_ns)
{
	uint64_t row = series_row_of(t->rows, offset_ns);

	t->clipped = t->clipped || row >= t->max_rows;
	return row;
}

void timeline_sent(struct timeline *t, uint64_t offset_ns)
{
	series_add(t->rows, row_of(t, offset_ns), COL_ATTEMPTS, 1);
}

void timeline_retry(struct timeline *t, uint64_t offset_ns)
{
	series_add(t->rows, row_of(t, offset_ns), COL_RETRIES, 1);
}

/* Count n answers with status (0: transport errors) in row.  Returns 0, or -1 when out of memory. */
static int add_outcome(struct timeline *t, uint64_t row, int status, uint64_t n)
{
	int col;

	if (status <= 0)
		return series_add(t->rows, row, COL_ERRORS, n);
	col = column_of(t, status);
	return series_add(t->rows, row, col < 0 ? COL_OTHER : COL_CODES + (unsigned)col, n);
}

void timeline_outcome(struct timeline *t, uint64_t offset_ns, int status)
{
	add_outcome(t, row_of(t, offset_ns), status, 1);
}

int timeline_merge_shifted(struct timeline *dst, const struct timeline *src, uint32_t shift)
{
	if (timeline_interval_ns(dst) != timeline_interval_ns(src))
		return -1;
	/* dst grows once, to what it needs, rather than by doubling */
	if (timeline_rows(src) > 0 &&
	    timeline_reserve(dst, (uint32_t)((uint64_t)timeline_rows(src) + shift < dst->max_rows
	                                     ? timeline_rows(src) + shift : dst->max_rows)) != 0)
		return -1;
	dst->clipped = dst->clipped || src->clipped;
	for (uint32_t r = 0; r < timeline_rows(src); r++) {
		uint64_t d = (uint64_t)r + shift;

		dst->clipped = dst->clipped || d >= dst->max_rows;
		if (timeline_add_row(dst, (uint32_t)(d < dst->max_rows ? d : dst->max_rows - 1),
		                     timeline_attempts(src, r), timeline_retries(src, r), timeline_errors(src, r),
		                     timeline_other(src, r)) < 0)
			return -1;
		for (unsigned c = 0; c < src->ncodes; c++) {
			uint64_t n = timeline_count(src, r, c);

			if (n != 0 && add_outcome(dst, d, src->codes[c], n) < 0)
				return -1;
		}
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
	if (series_add(t->rows, row, COL_ATTEMPTS, attempts) < 0)
		return -1;
	series_add(t->rows, row, COL_RETRIES, retries);
	series_add(t->rows, row, COL_ERRORS, errors);
	series_add(t->rows, row, COL_OTHER, other);
	return 0;
}

int timeline_add_code(struct timeline *t, uint32_t row, int code, uint64_t n)
{
	/* The row exists afterwards even when n is 0, as with timeline_add_row. */
	if (series_add(t->rows, row, COL_ATTEMPTS, 0) < 0)
		return -1;
	return n != 0 ? add_outcome(t, row, code > 0 ? code : 0, n) : 0;
}

uint64_t timeline_interval_ns(const struct timeline *t) { return series_interval_ns(t->rows); }
uint32_t timeline_rows(const struct timeline *t) { return (uint32_t)series_rows(t->rows); }
unsigned timeline_ncodes(const struct timeline *t) { return t->ncodes; }
int timeline_code(const struct timeline *t, unsigned i) { return i < t->ncodes ? t->codes[i] : 0; }

uint64_t timeline_attempts(const struct timeline *t, uint32_t row)
{
	return series_get(t->rows, row, COL_ATTEMPTS);
}

uint64_t timeline_retries(const struct timeline *t, uint32_t row)
{
	return series_get(t->rows, row, COL_RETRIES);
}

uint64_t timeline_errors(const struct timeline *t, uint32_t row)
{
	return series_get(t->rows, row, COL_ERRORS);
}

uint64_t timeline_other(const struct timeline *t, uint32_t row)
{
	return series_get(t->rows, row, COL_OTHER);
}

uint64_t timeline_count(const struct timeline *t, uint32_t row, unsigned col)
{
	return col < t->ncodes ? series_get(t->rows, row, COL_CODES + col) : 0;
}

uint64_t timeline_class(const struct timeline *t, uint32_t row, int c)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < t->ncodes; i++)
		if (t->codes[i] / 100 == c)
			n += timeline_count(t, row, i);
	return n;
}

bool timeline_clipped(const struct timeline *t)
{
	return t->clipped;
}

uint64_t timeline_peak_attempts(const struct timeline *t)
{
	uint64_t peak = 0;
	uint32_t rows = timeline_rows(t) - (t->clipped && timeline_rows(t) > 0 ? 1 : 0);

	for (uint32_t r = 0; r < rows; r++)
		if (timeline_attempts(t, r) > peak)
			peak = timeline_attempts(t, r);
	return peak;
}

int timeline_write_csv(const struct timeline *t, FILE *f)
{
	fprintf(f, "t_s,attempts,2xx,3xx,4xx,5xx,errors");
	for (unsigned i = 0; i < t->ncodes; i++)
		fprintf(f, ",%d", t->codes[i]);
	fprintf(f, ",other\n");
	for (uint32_t r = 0; r < timeline_rows(t); r++) {
		fprintf(f, "%.3f,%llu", (double)r * (double)timeline_interval_ns(t) / 1e9,
		        (unsigned long long)timeline_attempts(t, r));
		for (int c = 2; c <= 5; c++)
			fprintf(f, ",%llu", (unsigned long long)timeline_class(t, r, c));
		fprintf(f, ",%llu", (unsigned long long)timeline_errors(t, r));
		for (unsigned i = 0; i < t->ncodes; i++)
			fprintf(f, ",%llu", (unsigned long long)timeline_count(t, r, i));
		fprintf(f, ",%llu\n", (unsigned long long)timeline_other(t, r));
	}
	return ferror(f) ? -1 : 0;
}
