/* ratelab: a rate-limit lab.  main only dispatches to a subcommand. */
#include <curl/curl.h>
#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <string.h>

#include "common/cli.h"

#include "common/suggest.h"
#include "common/version.h"

#include "lab/cases.h"
#include "hammer/hammer.h"
#include "hammer/merge.h"
#include "lab/herd.h"
#include "lab/simserver.h"
#include "lab/storm.h"
#include "lab/verify.h"
#include "server/serve.h"

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

static const struct command COMMANDS[] = {
	{ "serve", serve_main, "run the rate-limited lab server" },
	{ "hammer", simserver_hammer_main, "fire concurrent requests, with or without retry" },
	{ "herd", herd_main, "run the thundering-herd comparison of backoff policies" },
	{ "storm", storm_main, "run the metastable retry storm: overload, a trigger, and who recovers" },
	{ "cases", cases_main, "replay a retry-cases table through the policy engine" },
	{ "verify", verify_main, "grade any HTTP client's retry behaviour against a scenario" },
	{ "merge", merge_main, "merge the results of a joined run (Redis) or of --json files" },
};

#define NCOMMANDS (sizeof(COMMANDS) / sizeof(COMMANDS[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: ratelab COMMAND [options]\n\ncommands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-8s %s\n", COMMANDS[i].name, COMMANDS[i].summary);
	fprintf(f, "\n'ratelab COMMAND --help' describes each one, 'man ratelab-COMMAND' too;\n"
	           "'ratelab --version' prints the versions of ratelab, libmicrohttpd and libcurl.\n"
	           "\nexit status:\n"
	           "  0     --help or --version\n"
	           "  2     no command, or an unknown one\n"
	           "  else  the command's own (see its --help)\n");
}

/* `ratelab --version`: what a workshop checks on every attendee's build. */
static int version(void)
{
	const curl_version_info_data *curl = curl_version_info(CURLVERSION_NOW);

	printf("ratelab %s\nlibmicrohttpd %s\nlibcurl %s\n", RATELAB_VERSION, MHD_get_version(),
	       curl != NULL && curl->version != NULL ? curl->version : "unknown");
	return 0;
}

/*
 * After a command: a summary that could not be written (a full disk, a closed
 * pipe) is a failure, said in one line: CLI_EXIT_WRITE for a command that
 * had succeeded, its own code otherwise.
 */
static int stdout_checked(const char *cmd, int rc)
{
	int failed = fflush(stdout) != 0, e = errno;

	/* CLI_EXIT_WRITE: the command has said so already */
	if ((!failed && !ferror(stdout)) || rc == CLI_EXIT_WRITE)
		return rc;
	if (failed)
		fprintf(stderr, "ratelab %s: cannot write standard output: %s\n", cmd, strerror(e));
	else
		fprintf(stderr, "ratelab %s: cannot write standard output\n", cmd);
	return rc == 0 ? CLI_EXIT_WRITE : rc;
}

/* One line, exit 2: the nearest command when one is close. */
static int unknown_command(const char *typed)
{
	char names[256] = "", near[32];
	size_t n = 0;

	for (size_t i = 0; i < NCOMMANDS && n < sizeof(names); i++)
		n += (size_t)snprintf(names + n, sizeof(names) - n, "%s ", COMMANDS[i].name);
	if (typed[0] != '-' && suggest_closest(typed, names, near, sizeof(near)))
		fprintf(stderr, "ratelab: unknown command '%.64s' (did you mean %s?)\n", typed, near);
	else if (typed[0] == '-')
		fprintf(stderr, "ratelab: unknown option '%.64s' (try 'ratelab --help')\n", typed);
	else
		fprintf(stderr, "ratelab: unknown command '%.64s' (try 'ratelab --help')\n", typed);
	return 2;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return stdout_checked("--help", 0);
	}
	if (strcmp(argv[1], "--version") == 0)
		return stdout_checked("--version", version());
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strcmp(argv[1], COMMANDS[i].name) == 0)
			return stdout_checked(COMMANDS[i].name, COMMANDS[i].run(argc - 1, argv + 1));
	return unknown_command(argv[1]);
}
