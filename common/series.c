/* A time series of rows of counters and levels: from a start, or a ring of the latest rows. */
#include "common/series.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct series {
	struct series_params p;
	_Atomic uint64_t *cells;  /* cap rows x width */
	_Atomic uint64_t *tags;   /* RING: row + 1 held by each slot; 0: none */
	uint64_t cap;             /* rows allocated */
	uint64_t nrows;           /* FROM_START: one past the last row written */
};

static bool params_ok(const struct series_params *p)
{
	if (p->interval_ns == 0 || p->max_rows == 0 || p->width == 0 || p->width > SERIES_MAX_WIDTH)
		return false;
	if (p->shape == SERIES_RING)
		return p->levels == 0;
	/* A level takes two columns, both inside the row. */
	return p->reserve <= p->max_rows && (p->levels >> (p->width - 1)) == 0;
}

struct series *series_new(const struct series_params *p)
{
	struct series *s;

	if (!params_ok(p) || (s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	s->p = *p;
	s->cap = p->shape == SERIES_RING ? p->max_rows : p->reserve;
	if (s->cap > 0 && (s->cells = calloc(s->cap * p->width, sizeof(*s->cells))) == NULL)
		goto free_s;
	if (p->shape == SERIES_RING && (s->tags = calloc(s->cap, sizeof(*s->tags))) == NULL)
		goto free_cells;
	return s;
free_cells:
	free(s->cells);
free_s:
	free(s);
	return NULL;
}

void series_free(struct series *s)
{
	if (s == NULL)
		return;
	free(s->cells);
	free(s->tags);
	free(s);
}

uint64_t series_row_of(const struct series *s, uint64_t now_ns)
{
	return now_ns > s->p.origin_ns ? (now_ns - s->p.origin_ns) / s->p.interval_ns : 0;
}

static uint64_t load(const _Atomic uint64_t *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

static void store(_Atomic uint64_t *c, uint64_t v)
{
	atomic_store_explicit(c, v, memory_order_relaxed);
}

/* Room for rows [0, need); 0, or -1 when out of memory. */
static int grow_to(struct series *s, uint64_t ncap)
{
	_Atomic uint64_t *cells;

	if (ncap > s->p.max_rows)
		ncap = s->p.max_rows;
	if (ncap <= s->cap)
		return 0;
	cells = realloc(s->cells, sizeof(*cells) * ncap * s->p.width);
	if (cells == NULL)
		return -1;
	memset(cells + s->cap * s->p.width, 0, sizeof(*cells) * (ncap - s->cap) * s->p.width);
	s->cells = cells;
	s->cap = ncap;
	return 0;
}

/* Room for row need - 1: the capacity doubles (from 64) until it fits, at most max_rows. */
static int grow(struct series *s, uint64_t need)
{
	uint64_t ncap = s->cap ? s->cap : 64;

	while (ncap < need)
		ncap *= 2;
	return grow_to(s, ncap);
}

int series_reserve(struct series *s, uint64_t rows)
{
	if (s->p.shape != SERIES_FROM_START)
		return 0;
	return grow_to(s, rows);
}

/* Rows nrows .. row start with the levels of row nrows - 1. */
static void open_rows(struct series *s, uint64_t row)
{
	const _Atomic uint64_t *prev = s->nrows ? s->cells + (s->nrows - 1) * s->p.width : NULL;

	for (uint64_t r = s->nrows; prev && s->p.levels && r <= row; r++)
		for (unsigned c = 0; c < s->p.width; c++)
			if (s->p.levels >> c & 1) {
				store(&s->cells[r * s->p.width + c], load(&prev[c]));
				store(&s->cells[r * s->p.width + c + 1], load(&prev[c]));
			}
	s->nrows = row + 1;
}

/* The cells of row for writing (a FROM_START row opened, a RING slot claimed), or NULL. */
static _Atomic uint64_t *row_for_write(struct series *s, uint64_t row)
{
	if (s->p.shape == SERIES_RING) {
		uint64_t slot = row % s->cap, seen = load(&s->tags[slot]);

		if (row == UINT64_MAX)
			return NULL;    /* its tag would read as "none" */
		/* The first writer of a recycled slot clears it. */
		if (seen != row + 1 && atomic_compare_exchange_strong(&s->tags[slot], &seen, row + 1))
			for (unsigned c = 0; c < s->p.width; c++)
				store(&s->cells[slot * s->p.width + c], 0);
		return s->cells + slot * s->p.width;
	}
	if (row >= s->p.max_rows)
		row = s->p.max_rows - 1;
	if (row >= s->cap && grow(s, row + 1) < 0)
		return NULL;
	if (row >= s->nrows)
		open_rows(s, row);
	return s->cells + row * s->p.width;
}

int series_add(struct series *s, uint64_t row, unsigned col, uint64_t n)
{
	_Atomic uint64_t *cells = col < s->p.width ? row_for_write(s, row) : NULL;

	if (cells == NULL)
		return -1;
	if (s->p.shared)
		atomic_fetch_add_explicit(&cells[col], n, memory_order_relaxed);
	else
		store(&cells[col], load(&cells[col]) + n);
	return 0;
}

int series_level(struct series *s, uint64_t row, unsigned col, uint64_t v)
{
	_Atomic uint64_t *cells = col < s->p.width && (s->p.levels >> col & 1) ? row_for_write(s, row) : NULL;

	if (cells == NULL)
		return -1;
	store(&cells[col], v);
	if (v > load(&cells[col + 1]))
		store(&cells[col + 1], v);
	return 0;
}

uint64_t series_get(const struct series *s, uint64_t row, unsigned col)
{
	if (col >= s->p.width)
		return 0;
	if (s->p.shape == SERIES_RING) {
		uint64_t slot = row % s->cap;

		return row != UINT64_MAX && load(&s->tags[slot]) == row + 1 ? load(&s->cells[slot * s->p.width + col]) : 0;
	}
	return row < s->nrows ? load(&s->cells[row * s->p.width + col]) : 0;
}

uint64_t series_rows(const struct series *s)
{
	return s->p.shape == SERIES_RING ? 0 : s->nrows;
}

uint64_t series_sum(const struct series *s, uint64_t from, uint64_t to, unsigned col)
{
	uint64_t sum = 0;

	if (s->p.shape == SERIES_FROM_START) {
		if (s->nrows == 0)
			return 0;
		if (to >= s->nrows)
			to = s->nrows - 1;
	} else if (to >= from && to - from >= s->p.max_rows) {
		/* A ring's older rows read as zeros anyway. */
		from = to - s->p.max_rows + 1;
	}
	for (uint64_t r = from; r <= to; r++)
		sum += series_get(s, r, col);
	return sum;
}

uint64_t series_interval_ns(const struct series *s)
{
	return s->p.interval_ns;
}

void series_clear(struct series *s, uint64_t origin_ns)
{
	/* Written only when it moves: a shared ring's writers read it meanwhile. */
	if (s->p.origin_ns != origin_ns)
		s->p.origin_ns = origin_ns;
	if (s->p.shape == SERIES_RING) {
		for (uint64_t i = 0; i < s->cap; i++)
			store(&s->tags[i], 0);
		return;
	}
	for (uint64_t i = 0; i < s->nrows * s->p.width; i++)
		store(&s->cells[i], 0);
	s->nrows = 0;
}
