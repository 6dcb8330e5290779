#ifndef RATELAB_VERIFY_ARGS_H
#define RATELAB_VERIFY_ARGS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cli.h"

/* ratelab verify's flags: what a run is asked to do, parsed, checked and resolved. */

#define VERIFY_MAX_JOBS 32         /* --jobs at most */
#define VERIFY_MAX_ARGS 32         /* --scenario and --skip given at most this often */
#define VERIFY_MAX_SCENARIOS 64    /* scenarios in one run */

struct verify_opts {
	const char *scenario_args[VERIFY_MAX_ARGS];  /* each a NAME|FILE or a comma list */
	unsigned nscenario_args;
	const char *skip_args[VERIFY_MAX_ARGS];
	unsigned nskip_args;
	const char *expect;        /* NULL: the scenario's defaults */
	const char *json;
	const char *junit;
	const char *baseline;
	const char *listen;        /* ADDR:PORT */
	const char *upstream;      /* --upstream URL, or NULL */
	uint64_t clients;
	uint64_t timeout_ns;
	uint64_t idle_ns;
	uint64_t jobs;
	bool all, list, strict, quiet, write_baseline;
	char **cmd;                /* NULL-terminated, from after "--" */
	/* resolved after parsing */
	const char *names[VERIFY_MAX_SCENARIOS];
	size_t nnames;
	char names_buf[4096];
	char bind[64];
	unsigned port;
	json_t *base;              /* the --baseline read before the run */
};

/*
 * Parse argv (argv[0] is "verify") into o: the flags, which go together,
 * --listen's address, the scenario names (--scenario, or --all without
 * --skip's), and the --baseline file read (o->base, the caller's to
 * json_decref).  Returns 0 to run (also for --list), or -1 with the exit
 * code in *exit_code: 0 after --help (usage on stdout), 2 after a one-line
 * message on stderr.
 */
/* The result files o names (--json, --junit), for cli_check_outputs. */
#define VERIFY_OUTPUTS 2
void verify_outputs(const struct verify_opts *o, struct cli_output out[VERIFY_OUTPUTS]);

int verify_args_parse(struct verify_opts *o, int argc, char **argv, int *exit_code);

#endif
