/* ratelab verify's flags: the table, --help, which flags go together, and the scenarios named. */
#include "lab/verify_args.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "common/cli.h"
#include "common/clock.h"
#include "common/parse.h"
#include "lab/verify_baseline.h"
#include "lab/verify_child.h"
#include "server/handlers/scenario.h"
#include "server/proxy/upstream.h"

#define VERIFY_DEFAULT_TIMEOUT_NS (60ULL * NS_PER_SEC)
#define VERIFY_DEFAULT_JOBS 6

static const struct cli_option VERIFY_OPTIONS[] = {
	{ "--scenario", CLI_LIST, CLI_FIELD(struct verify_opts, scenario_args), .max = VERIFY_MAX_ARGS,
	  CLI_COUNT(struct verify_opts, nscenario_args), .values = scenario_builtin_names, .section = CLI_SEC_RUN, .arg = "LIST",
	  .help = "built-ins (see --list) or JSON scripts such as "
	          "[{\"status\":429,\"retry_after\":\"2\"},{\"status\":200}], comma-separated, "
	          "repeatable; one scenario prints its arrivals, several print one table" },
	{ "--all", CLI_BOOL, CLI_FIELD(struct verify_opts, all), .section = CLI_SEC_RUN,
	  .help = "every built-in scenario with its own expectations: one table" },
	{ "--skip", CLI_LIST, CLI_FIELD(struct verify_opts, skip_args), .max = VERIFY_MAX_ARGS,
	  CLI_COUNT(struct verify_opts, nskip_args), .values = scenario_builtin_names, .section = CLI_SEC_RUN, .arg = "LIST",
	  .help = "with --all: leave out these built-ins (comma-separated, repeatable)" },
	{ "--list", CLI_BOOL, CLI_FIELD(struct verify_opts, list), .section = CLI_SEC_RUN,
	  .help = "the built-in scenarios: what each answers, what a correct client does" },
	{ "--listen", CLI_STRING, CLI_FIELD(struct verify_opts, listen), .section = CLI_SEC_RUN, .arg = "ADDR:PORT",
	  .help = "no COMMAND: serve each scenario (PORT 0: a free port each, else PORT, PORT+1, "
	          "...; one \"listening on URL\" line each on stderr) for an app started elsewhere, "
	          "then grade what arrived" },
	{ "--upstream", CLI_STRING, CLI_FIELD(struct verify_opts, upstream), .section = CLI_SEC_RUN, .arg = "URL",
	  .help = "with --listen: the scenario throttles the real service at URL (http:// or "
	          "https://): its 2xx steps pass the request there and relay the answer; its other "
	          "steps (429, 503, faults) answer from the script" },
	{ "--until-idle", CLI_DURATION, CLI_FIELD(struct verify_opts, idle_ns), .min = 1, .max = UINT64_MAX, .section = CLI_SEC_RUN, .arg = "DUR",
	  .help = "with --listen: end once no request came (and none was held) this long; else "
	          "SIGINT/SIGTERM or --timeout end it" },
	{ "--expect", CLI_STRING, CLI_FIELD(struct verify_opts, expect), .values = verify_grade_names, .section = CLI_SEC_DOES, .arg = "LIST",
	  .help = "comma-separated expectations (default: the scenario's own list)." },
	{ "--json", CLI_STRING, CLI_FIELD(struct verify_opts, json), .section = CLI_SEC_OUTPUT, .arg = "FILE|-",
	  .help = "verdicts, evidence and arrivals as JSON (with -, the verdicts go to stderr)" },
	{ "--junit", CLI_STRING, CLI_FIELD(struct verify_opts, junit), .section = CLI_SEC_OUTPUT, .arg = "FILE|-",
	  .help = "JUnit XML for CI: one testcase per expectation (with -, the verdicts go to stderr)" },
	{ "--baseline", CLI_STRING, CLI_FIELD(struct verify_opts, baseline), .section = CLI_SEC_OUTPUT, .arg = "FILE",
	  .help = "compare with the verdicts FILE accepts: exit 0 unless one got worse (pass > not "
	          "observed > fail); says what got better and worse" },
	{ "--write-baseline", CLI_BOOL, CLI_FIELD(struct verify_opts, write_baseline), .section = CLI_SEC_OUTPUT,
	  .help = "write today's verdicts to the --baseline FILE instead (exit 0)" },
	{ "--clients", CLI_U64, CLI_FIELD(struct verify_opts, clients), .min = 1, .max = VERIFY_CHILD_MAX, .section = CLI_SEC_DOES, .arg = "N",
	  .help = "run N copies at once, each its own client (URL .../client-K); 1..64" },
	{ "--timeout", CLI_DURATION, CLI_FIELD(struct verify_opts, timeout_ns), .min = 1, .max = UINT64_MAX, .section = CLI_SEC_DOES, .arg = "DUR",
	  .help = "kill COMMAND (or stop --listen) past this (default 60s)" },
	{ "--jobs", CLI_U64, CLI_FIELD(struct verify_opts, jobs), .min = 1, .max = VERIFY_MAX_JOBS, .section = CLI_SEC_ADVANCED, .arg = "N",
	  .help = "several scenarios: how many run at once (default 6; 1..32)" },
	{ "--strict", CLI_BOOL, CLI_FIELD(struct verify_opts, strict), .section = CLI_SEC_DOES,
	  .help = "an expectation not observed fails" },
	{ "--quiet", CLI_BOOL, CLI_FIELD(struct verify_opts, quiet), .section = CLI_SEC_OUTPUT,
	  .help = "no arrival list and no progress line (shown on a terminal while the command "
	          "runs), verdicts only" },
	{ "COMMAND", CLI_REST, CLI_FIELD(struct verify_opts, cmd) },
	{ NULL },
};

static const struct cli_option *const VERIFY_TABLES[] = { VERIFY_OPTIONS, NULL };

static const struct cli_help VERIFY_HELP = {
	.usage = "ratelab verify --scenario LIST [options] -- COMMAND [ARGS...]\n"
	         "ratelab verify --all [--skip LIST] [options] -- COMMAND [ARGS...]\n"
	         "ratelab verify --scenario LIST|--all --listen ADDR:PORT [options]\n"
	         "ratelab verify --list",
	.about = "Starts a scenario server on a free port of a loopback address of its own "
	         "(127.A.B.C, drawn per run), runs COMMAND with RATELAB_URL set to it "
	         "and RATELAB_METHOD to the method the scenario is for (a literal $RATELAB_URL or "
	         "$RATELAB_METHOD in ARGS is replaced too; proxy variables are unset and NO_PROXY "
	         "set), and grades what the server saw.  COMMAND's stdout goes to stderr, so stdout "
	         "holds only the verdicts (with several scenarios, COMMAND's output is dropped).  Each "
	         "expectation passes, fails, or is not observed (N/O: nothing in the run decides it).  "
	         "A run ends when COMMAND does, at --timeout, or (on scenarios that say so in --list) "
	         "once an expectation has failed for good.  Attempts are counted in full, past the "
	         "4096 arrivals logged.",
	.tables = VERIFY_TABLES,
	.notes = "With --baseline the exit is 0 when nothing got worse and 1 when something did\n"
	         "(4 and 130 as below).\n",
	.exits = "0\tevery expectation holds\n"
	         "1\tone fails (or, with --strict, is not observed)\n"
	         "2\ta bad flag or value\n"
	         "4\tCOMMAND could not run or never reached the server, or the scenario server could not start\n"
	         "5\tnone fails, but a scenario had no expectation observed at all\n"
	         CLI_EXIT_WRITE_LINE
	         "130\tinterrupted\n",
};

static const struct cli_command VERIFY_CLI = { "verify", NULL, &VERIFY_HELP };

/* What cli_parse cannot check: which flags go together. */
void verify_outputs(const struct verify_opts *o, struct cli_output out[VERIFY_OUTPUTS])
{
	out[0] = (struct cli_output){ "--json", o->json };
	out[1] = (struct cli_output){ "--junit", o->junit };
}

static int check_combination(const struct verify_opts *o, char *err, size_t errlen)
{
	struct cli_output outs[VERIFY_OUTPUTS];

	if (o->list)
		return 0;
	if (!o->nscenario_args && !o->all)
		return cli_fail(err, errlen, "verify", "--scenario or --all is required");
	if (o->nscenario_args && o->all)
		return cli_fail(err, errlen, "verify", "--scenario and --all do not go together");
	if (o->all && o->expect)
		return cli_fail(err, errlen, "verify", "--expect does not go with --all (each scenario has its own)");
	if (o->nskip_args && !o->all)
		return cli_fail(err, errlen, "verify", "--skip goes with --all");
	if (o->write_baseline && !o->baseline)
		return cli_fail(err, errlen, "verify", "--write-baseline needs --baseline FILE");
	if (o->idle_ns && !o->listen)
		return cli_fail(err, errlen, "verify", "--until-idle goes with --listen");
	if (o->upstream && !o->listen)
		return cli_fail(err, errlen, "verify", "--upstream goes with --listen");
	if (o->listen && o->cmd && o->cmd[0])
		return cli_fail(err, errlen, "verify", "--listen takes no COMMAND (the app runs elsewhere)");
	if (o->listen && o->clients != 1)
		return cli_fail(err, errlen, "verify", "--clients does not go with --listen");
	if (!o->listen && (!o->cmd || !o->cmd[0]))
		return cli_fail(err, errlen, "verify", "missing COMMAND after --");
	if (o->write_baseline && cli_check_output(err, errlen, "verify", "--baseline", o->baseline) < 0)
		return -1;
	verify_outputs(o, outs);
	return cli_check_outputs(err, errlen, "verify", outs, VERIFY_OUTPUTS);
}

/* --listen ADDR:PORT into o->bind, o->port ("[::1]:0" for IPv6). */
static int parse_listen(struct verify_opts *o, char *err, size_t errlen)
{
	const char *colon = strrchr(o->listen, ':');
	const char *host = o->listen;
	size_t hl = colon ? (size_t)(colon - host) : 0;
	struct in6_addr a;
	char why[120];
	uint64_t port;

	if (hl > 1 && host[0] == '[' && host[hl - 1] == ']') {
		host++;
		hl -= 2;
	}
	if (!colon || hl == 0 || hl >= sizeof(o->bind) ||
	    parse_u64(colon + 1, 0, 65535, &port, why, sizeof(why)) < 0)
		return cli_bad_value(err, errlen, "verify", "--listen", o->listen, "is not ADDR:PORT (e.g. 127.0.0.1:0)");
	snprintf(o->bind, sizeof(o->bind), "%.*s", (int)hl, host);
	if (inet_pton(AF_INET, o->bind, &a) != 1 && inet_pton(AF_INET6, o->bind, &a) != 1)
		return cli_bad_value(err, errlen, "verify", "--listen", o->listen, "is not an IPv4 or IPv6 address and port");
	o->port = (unsigned)port;
	return 0;
}

/*
 * The next item of a comma list at *p, cut in place (its comma becomes a
 * NUL); NULL at the end.  A comma inside [...], {...} or a JSON string does
 * not cut: an inline script such as [{"status":429},{"status":200}] is one
 * item.  Empty items are skipped.
 */
static char *next_item(char **p)
{
	char *s = *p, *q;
	int depth = 0;
	bool in_str = false;

	while (*s == ',')
		s++;
	if (*s == '\0')
		return NULL;
	for (q = s; *q && (in_str || depth > 0 || *q != ','); q++) {
		if (in_str && *q == '\\' && q[1])
			q++;
		else if (*q == '"')
			in_str = !in_str;
		else if (!in_str && (*q == '[' || *q == '{'))
			depth++;
		else if (!in_str && (*q == ']' || *q == '}') && depth > 0)
			depth--;
	}
	*p = *q ? q + 1 : q;
	*q = '\0';
	return s;
}

/* Append the comma list `arg` to names (copied into buf at *used); -1 naming flag when it is malformed or full. */
static int add_names(struct verify_opts *o, const char *flag, const char *arg, const char **names, size_t *n,
                     size_t *used, char *err, size_t errlen)
{
	char *rest = o->names_buf + *used;
	size_t len = strlen(arg) + 1;

	if (*used + len > sizeof(o->names_buf))
		return cli_bad_value(err, errlen, "verify", flag, arg, "makes the list too long");
	memcpy(rest, arg, len);
	*used += len;
	for (char *it = next_item(&rest); it; it = next_item(&rest)) {
		for (size_t i = 0; i < *n; i++)
			if (strcmp(names[i], it) == 0)
				return cli_bad_value(err, errlen, "verify", flag, it, "is named twice");
		if (*n == VERIFY_MAX_SCENARIOS)
			return cli_bad_value(err, errlen, "verify", flag, it, "is one too many (at most %d)",
			                     VERIFY_MAX_SCENARIOS);
		names[(*n)++] = it;
	}
	if (*n == 0)
		return cli_bad_value(err, errlen, "verify", flag, arg, "names no scenario");
	return 0;
}

/* The built-ins --all runs: every one not in skip[0..nskip), each skipped name a built-in. */
static int all_but(struct verify_opts *o, const char **skip, size_t nskip, char *err, size_t errlen)
{
	for (size_t k = 0; k < nskip; k++) {
		size_t i = 0;

		while (scenario_builtin_name(i) && strcmp(scenario_builtin_name(i), skip[k]) != 0)
			i++;
		if (!scenario_builtin_name(i))
			return cli_bad_value(err, errlen, "verify", "--skip", skip[k], "is not a built-in scenario (%s)",
			                     scenario_builtin_names());
	}
	for (size_t i = 0; scenario_builtin_name(i) && o->nnames < VERIFY_MAX_SCENARIOS; i++) {
		bool skipped = false;

		for (size_t k = 0; k < nskip; k++)
			skipped |= strcmp(scenario_builtin_name(i), skip[k]) == 0;
		if (!skipped)
			o->names[o->nnames++] = scenario_builtin_name(i);
	}
	return o->nnames ? 0 : cli_fail(err, errlen, "verify", "--skip leaves no scenario to run");
}

/* The scenarios to run, from --scenario or --all and --skip. */
static int resolve_names(struct verify_opts *o, char *err, size_t errlen)
{
	const char *skip[VERIFY_MAX_SCENARIOS];
	size_t nskip = 0, used = 0;

	if (o->all) {
		for (unsigned i = 0; i < o->nskip_args; i++)
			if (add_names(o, "--skip", o->skip_args[i], skip, &nskip, &used, err, errlen) < 0)
				return -1;
		return all_but(o, skip, nskip, err, errlen);
	}
	for (unsigned i = 0; i < o->nscenario_args; i++)
		if (add_names(o, "--scenario", o->scenario_args[i], o->names, &o->nnames, &used, err, errlen) < 0)
			return -1;
	return 0;
}

/* Returns 0 to run, or -1 / 1 for cli_exit (err filled on -1). */
static int parse_args(struct verify_opts *o, int argc, char **argv, char *err, size_t errlen)
{
	struct cli_group g = { VERIFY_OPTIONS, o };
	char why[300];
	int rc;

	memset(o, 0, sizeof(*o));
	o->clients = 1;
	o->timeout_ns = VERIFY_DEFAULT_TIMEOUT_NS;
	o->jobs = VERIFY_DEFAULT_JOBS;
	rc = cli_parse(&VERIFY_CLI, &g, 1, argc, argv, err, errlen);
	if (rc != 0 || (rc = check_combination(o, err, errlen)) != 0 || o->list)
		return rc;
	if (o->listen && parse_listen(o, err, errlen) < 0)
		return -1;
	if (o->upstream && !upstream_url_ok(o->upstream, why, sizeof(why)))
		return cli_bad_value(err, errlen, "verify", "--upstream", o->upstream, "%s", why);
	if (resolve_names(o, err, errlen) < 0)
		return -1;
	if (o->baseline && !o->write_baseline && !(o->base = verify_baseline_load(o->baseline, why, sizeof(why))))
		return cli_bad_value(err, errlen, "verify", "--baseline", o->baseline, "%s", why);
	return 0;
}

int verify_args_parse(struct verify_opts *o, int argc, char **argv, int *exit_code)
{
	char err[600];
	int rc = parse_args(o, argc, argv, err, sizeof(err));

	if (rc == 0)
		return 0;
	*exit_code = cli_exit(&VERIFY_CLI, rc, err);
	return -1;
}
