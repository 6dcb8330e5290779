#ifndef RATELAB_STORM_ARGS_H
#define RATELAB_STORM_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/rate_schedule.h"
#include "hammer/sim.h"
#include "lab/storm.h"
#include "lab/storm_report.h"
#include "lab/storm_sweep.h"
#include "server/capacity.h"

/* ratelab storm's flags: what a run is asked to do, parsed and checked. */

#define STORM_MAX_POLICIES 12

struct storm_opts {
	char policies[STORM_MAX_POLICIES][32];
	size_t npolicies;
	bool control;
	struct rate_schedule schedule;
	uint64_t duration_ns;
	uint64_t timeout_ns;
	struct capacity_params capacity;
	const char *capacity_spec;
	struct capacity_trigger trigger;
	const char *trigger_spec;
	bool no_trigger;
	struct storm_knobs knobs;
	uint32_t clients;
	uint64_t seed;
	const char *report_dir;
	struct storm_window window;    /* settled after parsing */
	char window_what[160];
	bool sim;                      /* --sim: virtual time against a model of the server */
	struct sim_net net;            /* --sim-delay, --sim-loss, --sim-connect */
	bool compare;                  /* --compare: each run real, then in virtual time, and the gap */
	bool sweep;                    /* --sweep: a grid of runs per policy instead of one run */
	struct sweep_grid *grid;       /* its axes (--sweep-loads, --sweep-lengths) and cells */
};

/*
 * Parse argv (argv[0] is "storm") into o, from the defaults; grid (caller's)
 * holds --sweep's axes and becomes o->grid.  Settles the trigger's window and
 * makes --report's directory when it is missing.  Returns 0 to run, or -1
 * with the exit code in *exit_code: 0 after --help (usage on stdout), 2
 * after a one-line message on stderr.  Not thread-safe (builds the policy
 * word list once).
 */
int storm_args_parse(struct storm_opts *o, struct sweep_grid *grid, int argc, char **argv, int *exit_code);

#endif
