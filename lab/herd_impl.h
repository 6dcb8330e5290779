#ifndef RATELAB_HERD_IMPL_H
#define RATELAB_HERD_IMPL_H

/*
 * Inside ratelab herd (herd.c: the run; herd_opts.c: the options and the
 * policies they name).  Not an interface: only those two files include it.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hammer/sim.h"
#include "lab/herd.h"
#include "server/handlers/occ.h"

#define HERD_MAX_POLICIES 16
#define HERD_MAX_CLIENTS 100000         /* real runs */
#define HERD_SIM_MAX_CLIENTS 1000000    /* --sim */

struct herd_opts {
	const char *url;
	const char *limiter;
	uint64_t limit;
	uint64_t burst;
	char policies[HERD_MAX_POLICIES][32];
	size_t npolicies;
	uint32_t clients;
	uint64_t seed;
	enum herd_workload workload;
	const char *report_dir;
	const char *path;
	struct herd_knobs knobs;
	bool base_set, cap_set, attempts_set, limiter_set;
	struct occ_delay delay;
	uint64_t max_ns;
	char server_policy[256];   /* --url: the RateLimit-Policy the server sent, or "" */
	const char *admin_token;   /* --admin-token: sent with POST /reset, or NULL */
	const char *join_url;     /* --join redis://HOST:PORT/RUNID, or NULL */
	uint32_t nodes;           /* --nodes */
	uint64_t join_timeout_ns; /* --join-timeout */
	bool sim;                 /* --sim: every policy in virtual time against a model of the server */
	struct sim_net net;       /* --sim-delay, --sim-loss, --sim-connect */
	bool compare;             /* --compare: each policy real and virtual, and the gap */
};

/*
 * Parse argv (argv[0] is "herd") into o, defaults first; usage errors are
 * reported on stderr and --help is printed.  Returns 0, 1 for --help
 * (done), or 2 on a usage error.
 */
int herd_opts_parse(struct herd_opts *o, int argc, char **argv);

#endif
