#ifndef RATELAB_SERVER_ARGS_H
#define RATELAB_SERVER_ARGS_H

#include <stdbool.h>
#include <stdio.h>

#include "common/cli.h"
#include "server/server.h"

/* `ratelab serve`'s command line: its flags into a struct server_config (server/server.h). */

/*
 * `ratelab serve`'s own flags as parsed: the config they fill, and what is
 * settled only once every flag is read (server_args_finish).
 */
struct server_args {
	struct server_config cfg;
	const char *config_path;  /* --config FILE, loaded by server_args_finish */
	bool limiter_set;         /* --limiter given: --layer alone implies layered */
};

/* The flag table over a struct server_args, for cli_parse (common/cli.h). */
extern const struct cli_option server_args_options[];

/* cfg from server_config_defaults, no flag given. */
void server_args_init(struct server_args *a);

/*
 * After cli_parse: settle the route "/" (--layer implies layered, the limiter
 * checks its parameters) and load --config.  Returns 0, or -1 with one line
 * "ratelab serve: ..." in err.
 */
int server_args_finish(struct server_args *a, char *err, size_t errlen);

/*
 * Parse `ratelab serve`'s own options (argv[0] is the command name) into *c,
 * which starts from server_config_defaults: cli_parse over
 * server_args_options, then server_args_finish.  Returns 0; 1 when --help
 * was asked (nothing printed); -1 on a bad flag or value with one line in err.
 */
int server_config_from_args(struct server_config *c, int argc, char **argv, char *err, size_t errlen);

#endif
