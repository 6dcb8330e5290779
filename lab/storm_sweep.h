#ifndef RATELAB_STORM_SWEEP_H
#define RATELAB_STORM_SWEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * `ratelab storm --sim --sweep`: where a retry storm turns metastable.  One
 * grid per policy over offered load (a share of the backend's capacity) and
 * trigger length: whether goodput came back after the trigger (storm's
 * "recovered") and how long it took.  Written as text, CSV, JSON and an SVG
 * heat map.  The grid is filled by the caller (storm.c, one storm run per
 * cell); this module only holds and writes it.  Not thread-safe.
 */

#define SWEEP_MAX_AXIS 16
#define SWEEP_MAX_POLICIES 12

struct sweep_cell {
	bool recovered;
	uint64_t recovered_ns;     /* from the trigger's end */
	double after;              /* goodput per second after the trigger */
	double before;             /* and before it */
};

struct sweep_grid {
	double loads[SWEEP_MAX_AXIS];       /* shares of capacity, 0..1 */
	size_t nloads;
	uint64_t lens[SWEEP_MAX_AXIS];      /* trigger lengths */
	size_t nlens;
	char policies[SWEEP_MAX_POLICIES][32];
	size_t npolicies;
	uint64_t after_ns;                  /* how long each run goes on after its trigger */
	struct sweep_cell cells[SWEEP_MAX_POLICIES][SWEEP_MAX_AXIS][SWEEP_MAX_AXIS];  /* [policy][load][len] */
};

/*
 * Parse --sweep-loads "50,60,70,80,90,95" (percent of capacity, 1..200) or
 * --sweep-lengths "500ms,1s,2s" into the grid's axis.  0, or -1 with a
 * reason in why.  Pure.
 */
int sweep_parse_loads(const char *s, struct sweep_grid *g, char *why, size_t wl);
int sweep_parse_lengths(const char *s, struct sweep_grid *g, char *why, size_t wl);

/* Policy p's grid as text: rows are loads, columns trigger lengths; each cell the time to recover or "no". */
void sweep_print(FILE *f, const struct sweep_grid *g, size_t p);

/* DIR/sweep.csv, sweep.json and sweep.svg (a heat map per policy).  0, or -1 with a reason in err. */
int sweep_write(const char *dir, const struct sweep_grid *g, const char *title, char *err, size_t errlen);

#endif
