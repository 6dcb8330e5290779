/* ratelab hammer's command line: its options, their defaults, and what several flags settle together. */
#ifndef RATELAB_HAMMER_ARGS_H
#define RATELAB_HAMMER_ARGS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cli.h"
#include "common/retry/retry.h"
#include "hammer/engine.h"
#include "hammer/expect.h"
#include "hammer/join.h"

#define MAX_HEADERS 64
#define MAX_KNOBS 32
#define ERRLEN 256

struct knob {
	const char *name;
	const char *value;
};

struct hammer_opts {
	struct hammer_config cfg;
	struct retry_policy policy;
	const char *policy_name;
	bool no_retry;
	bool verbose;
	bool quiet;
	bool requests_given;
	bool concurrency_given;
	bool seed_given;
	const char *json_path;
	const char *timeline_path;
	const char *plot_path;
	const char *expect_spec;
	struct expect *expect;
	const char *junit_path;
	const char *join_url;        /* --join redis://HOST:PORT/RUNID, or NULL */
	uint32_t nodes;              /* --nodes */
	uint64_t join_timeout_ns;    /* --join-timeout */
	struct join *join;
	bool join_failed;            /* the run did not start: the join's wait failed */
	const char *headers[MAX_HEADERS];
	const char *urls[HAMMER_MAX_URLS];
	struct knob knobs[MAX_KNOBS];
	unsigned nknobs;
	struct rate_schedule schedule;   /* --rate as a schedule (cfg.schedule points here) */
	bool sim;                    /* --sim: virtual time against a model of serve */
	const char *serve_flags;     /* --serve FLAGS: the model's serve flags, or NULL (serve's defaults) */
	struct sim_config simcfg;    /* --sim-delay, --sim-loss, --sim-connect; the model once built */
};

/*
 * Parse argv into *o (set to its defaults first) and settle what depends on
 * several flags; the run stops when *cancel is set.  0, or -1 (a usage error)
 * / 1 (--help) for hammer_args_exit, with err filled.  o->expect is the
 * caller's to free, also on an error.
 */
/* The result files o names (--json, --timeline, --plot, --junit), for cli_check_outputs. */
#define HAMMER_OUTPUTS 4
void hammer_outputs(const struct hammer_opts *o, struct cli_output out[HAMMER_OUTPUTS]);

int hammer_args_parse(struct hammer_opts *o, int argc, char **argv, atomic_int *cancel, char *err, size_t errlen);

/* The exit code and message of a parse that returned rc (cli_exit's wording): 2 for a usage error, 0 for --help. */
int hammer_args_exit(int rc, const char *err);

#endif
