/* `ratelab verify`: run any client against a scenario server and grade what it did. */
#include "lab/verify.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cli.h"
#include "common/clock.h"
#include "common/progress.h"
#include "lab/verify_grade.h"
#include "server/handlers/scenario.h"
#include "server/server.h"

#define VERIFY_MAX_CLIENTS 64
#define VERIFY_DEFAULT_TIMEOUT_NS (60ULL * NS_PER_SEC)
#define VERIFY_SHOW_ARRIVALS 24

extern char **environ;

struct verify_opts {
	const char *scenario;
	const char *expect;        /* NULL: the scenario's defaults */
	const char *json;
	uint64_t clients;
	uint64_t timeout_ns;
	bool quiet;
	char **cmd;                /* NULL-terminated, from after "--" */
};

struct verify_child {
	pid_t pid;
	int status;                /* exit code or 128+signal, once reaped */
	bool done;
	char url[96];
};

static volatile sig_atomic_t verify_interrupted;

static void on_signal(int sig)
{
	verify_interrupted = sig;
}

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: ratelab verify --scenario NAME|FILE [options] -- COMMAND [ARGS...]\n"
	        "\n"
	        "Starts a scenario server on a free port, runs COMMAND with RATELAB_URL set to it\n"
	        "(a literal $RATELAB_URL in ARGS is replaced too), and grades what the server saw.\n"
	        "COMMAND's stdout is sent to stderr, so stdout holds only the verdicts.\n"
	        "\n"
	        "  --scenario NAME|FILE  built-in: %s;\n"
	        "                        or a JSON script: [{\"status\":429,\"retry_after\":\"2\"},{\"status\":200}]\n"
	        "  --expect LIST         comma-separated: %s\n"
	        "                        (default: the scenario's own list)\n"
	        "  --clients N           run N copies at once, each its own client (URL .../client-K); 1..64\n"
	        "  --timeout DUR         kill COMMAND past this (default 60s)\n"
	        "  --json FILE|-         verdicts, evidence and arrivals as JSON\n"
	        "  --quiet               no arrival list, verdicts only\n"
	        "\n"
	        "exit: 0 every expectation holds, 1 one fails, 2 usage error\n",
	        scenario_builtin_names(), verify_grade_names());
}

static const struct cli_option VERIFY_OPTIONS[] = {
	{ "--scenario", CLI_STRING, CLI_FIELD(struct verify_opts, scenario), .required = true },
	{ "--expect", CLI_STRING, CLI_FIELD(struct verify_opts, expect) },
	{ "--json", CLI_STRING, CLI_FIELD(struct verify_opts, json) },
	{ "--clients", CLI_U64, CLI_FIELD(struct verify_opts, clients), .min = 1, .max = VERIFY_MAX_CLIENTS },
	{ "--timeout", CLI_DURATION, CLI_FIELD(struct verify_opts, timeout_ns), .min = 1, .max = UINT64_MAX },
	{ "--quiet", CLI_BOOL, CLI_FIELD(struct verify_opts, quiet) },
	{ "COMMAND", CLI_REST, CLI_FIELD(struct verify_opts, cmd), .required = true },
	{ NULL },
};

static const struct cli_command VERIFY_CLI = { "verify", usage };

/* Returns 0 to run, or -1 / 1 for cli_exit (err filled on -1). */
static int parse_args(struct verify_opts *o, int argc, char **argv, char *err, size_t errlen)
{
	struct cli_group g = { VERIFY_OPTIONS, o };
	int rc;

	memset(o, 0, sizeof(*o));
	o->clients = 1;
	o->timeout_ns = VERIFY_DEFAULT_TIMEOUT_NS;
	rc = cli_parse(&VERIFY_CLI, &g, 1, argc, argv, err, errlen);
	if (rc == 0)
		rc = cli_check_output(err, errlen, "verify", "--json", o->json);
	return rc;
}

/* argv with every "$RATELAB_URL" replaced by url (malloc'd strings; NULL on OOM). */
static char **child_argv(char **cmd, const char *url)
{
	size_t n = 0;
	char **out;

	while (cmd[n])
		n++;
	if (!(out = calloc(n + 1, sizeof(*out))))
		return NULL;
	for (size_t i = 0; i < n; i++) {
		const char *hit = strstr(cmd[i], "$RATELAB_URL");
		size_t len = strlen(cmd[i]) + strlen(url) + 1;

		if (!(out[i] = malloc(len)))
			continue;
		if (hit)
			snprintf(out[i], len, "%.*s%s%s", (int)(hit - cmd[i]), cmd[i], url, hit + 12);
		else
			snprintf(out[i], len, "%s", cmd[i]);
	}
	return out;
}

/* The environment plus RATELAB_URL and RATELAB_CLIENT (the strings in vars stay the caller's). */
static char **child_env(char *vars[2])
{
	size_t n = 0, j = 0;
	char **env;

	while (environ[n])
		n++;
	if (!(env = calloc(n + 3, sizeof(*env))))
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "RATELAB_URL=", 12) != 0 && strncmp(environ[i], "RATELAB_CLIENT=", 15) != 0)
			env[j++] = environ[i];
	env[j++] = vars[0];
	env[j++] = vars[1];
	return env;
}

static void free_strv(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/*
 * Fork and exec one copy; the child gets its own process group so a timeout
 * kills all it started.  0, -1 (fork failed) or -2 with errno when the
 * command cannot be run at all.
 */
static int spawn(char **cmd, struct verify_child *ch, unsigned k)
{
	char url_var[128], client_var[32];
	char *vars[2] = { url_var, client_var };
	char **argv = child_argv(cmd, ch->url), **env = child_env(vars);
	int rc = -1, failed[2], why;

	snprintf(url_var, sizeof(url_var), "RATELAB_URL=%s", ch->url);
	snprintf(client_var, sizeof(client_var), "RATELAB_CLIENT=%u", k);
	if (!argv || !env || pipe2(failed, O_CLOEXEC) != 0)
		goto free_all;
	ch->pid = fork();
	if (ch->pid == 0) {
		setpgid(0, 0);
		dup2(STDERR_FILENO, STDOUT_FILENO);
		execvpe(argv[0], argv, env);
		/* the pipe closes on a successful exec; here the parent learns why it failed */
		why = errno;
		if (write(failed[1], &why, sizeof(why)) != (ssize_t)sizeof(why))
			fprintf(stderr, "ratelab verify: cannot run '%s': %s\n", argv[0], strerror(why));
		_exit(127);
	}
	close(failed[1]);
	if (ch->pid > 0)
		setpgid(ch->pid, ch->pid);  /* also here, so the group exists before any kill */
	rc = ch->pid > 0 ? 0 : -1;
	if (ch->pid > 0 && read(failed[0], &why, sizeof(why)) == (ssize_t)sizeof(why)) {
		waitpid(ch->pid, NULL, 0);
		ch->done = true;
		errno = why;
		rc = -2;
	}
	close(failed[0]);
free_all:
	free_strv(argv);
	free(env);
	return rc;
}

static int decode_status(int st)
{
	return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
}

/* Reap what has ended; returns how many are still running. */
static unsigned reap(struct verify_child *ch, unsigned n)
{
	unsigned running = 0;

	for (unsigned i = 0; i < n; i++) {
		int st;

		if (ch[i].done)
			continue;
		if (waitpid(ch[i].pid, &st, WNOHANG) == ch[i].pid) {
			ch[i].done = true;
			ch[i].status = decode_status(st);
		} else {
			running++;
		}
	}
	return running;
}

/* SIGTERM every group still running, then SIGKILL after 500 ms; reaps them all. */
static void kill_all(struct verify_child *ch, unsigned n)
{
	uint64_t until = clock_monotonic_ns() + 500 * NS_PER_MS;
	struct timespec ts = { 0, 5 * 1000000L };

	for (unsigned i = 0; i < n; i++)
		if (!ch[i].done)
			kill(-ch[i].pid, SIGTERM);
	while (reap(ch, n) > 0 && clock_monotonic_ns() < until)
		nanosleep(&ts, NULL);
	for (unsigned i = 0; i < n; i++)
		if (!ch[i].done)
			kill(-ch[i].pid, SIGKILL);
	for (unsigned i = 0; i < n; i++)
		if (!ch[i].done && waitpid(ch[i].pid, NULL, 0) == ch[i].pid)
			ch[i].done = true;
}

/* The progress line while the copies run: how many finished, and the time so far. */
static void show_progress(const struct verify_opts *o, unsigned running, unsigned n, uint64_t t0)
{
	progress_line(stderr, "scenario %s: %u of %u clients done, %.1fs", o->scenario, n - running, n,
	              (double)(clock_monotonic_ns() - t0) / 1e9);
}

/* Run the copies and wait, bounded by the timeout; fills *run.  On a terminal a progress line shows. */
static int run_clients(const struct verify_opts *o, int port, struct verify_child *ch,
                       struct verify_grade_run *run)
{
	struct timespec ts = { 0, 2 * 1000000L };
	uint64_t t0 = clock_monotonic_ns(), deadline = t0 + o->timeout_ns;
	unsigned n = (unsigned)o->clients;
	bool show = !o->quiet && progress_wanted(stderr);

	memset(run, 0, sizeof(*run));
	run->timeout_ns = o->timeout_ns;
	for (unsigned k = 0; k < n; k++) {
		if (n == 1)
			snprintf(ch[k].url, sizeof(ch[k].url), "http://127.0.0.1:%d", port);
		else
			snprintf(ch[k].url, sizeof(ch[k].url), "http://127.0.0.1:%d/client-%u", port, k + 1);
		int rc = spawn(o->cmd, &ch[k], k + 1);

		if (rc < 0) {
			kill_all(ch, k);
			return rc;
		}
	}
	for (unsigned tick = 0, running; (running = reap(ch, n)) > 0 && clock_monotonic_ns() < deadline &&
	                                 !verify_interrupted; tick++) {
		/* every 200 ms: the loop naps 2 ms */
		if (show && tick % 100 == 0)
			show_progress(o, running, n, t0);
		nanosleep(&ts, NULL);
	}
	if (show)
		progress_done(stderr);
	run->wall_ns = clock_monotonic_ns() - t0;
	run->killed = reap(ch, n) > 0;
	kill_all(ch, n);
	for (unsigned k = 0; k < n; k++)
		if (ch[k].status != 0 && run->exit_status == 0)
			run->exit_status = ch[k].status;
	return 0;
}

static void print_arrivals(FILE *f, const struct scenario_arrival *log, size_t n)
{
	for (size_t i = 0; i < n && i < VERIFY_SHOW_ARRIVALS; i++) {
		fprintf(f, "  +%7.3fs  %-6s %-18s %-4s -> %d", (double)(log[i].t_ns - log[0].t_ns) / 1e9,
		        log[i].method, log[i].client, log[i].path, log[i].status);
		if (log[i].has_wait)
			fprintf(f, "  (asked to wait %.3fs)", (double)log[i].wait_ns / 1e9);
		if (log[i].idempotency_key[0])
			fprintf(f, "  Idempotency-Key: %s", log[i].idempotency_key);
		fputc('\n', f);
	}
	if (n > VERIFY_SHOW_ARRIVALS)
		fprintf(f, "  ... %zu more\n", n - VERIFY_SHOW_ARRIVALS);
}

static int write_json(const struct verify_opts *o, struct scenario *sc, const struct verify_grade_run *run,
                      const struct verify_grade_verdict *v, size_t nv, bool all)
{
	json_t *root = json_pack("{s:s,s:i,s:b,s:f,s:I,s:b,s:[]}", "scenario", scenario_name(sc), "exit_status",
	                         run->exit_status, "killed", run->killed, "wall_s", (double)run->wall_ns / 1e9,
	                         "clients", (json_int_t)o->clients, "pass", all, "verdicts");
	char *arr = scenario_arrivals_json(sc);
	json_t *arrivals = arr ? json_loads(arr, 0, NULL) : NULL;
	int rc = -1;

	free(arr);
	if (!root || !arrivals)
		goto free_all;
	for (size_t i = 0; i < nv; i++)
		json_array_append_new(json_object_get(root, "verdicts"),
		                      json_pack("{s:s,s:b,s:s}", "name", v[i].name, "pass", v[i].pass, "evidence",
		                                v[i].evidence));
	json_object_set(root, "arrivals", arrivals);
	if (strcmp(o->json, "-") == 0)
		rc = json_dumpf(root, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(9)) == 0 && fputc('\n', stdout) != EOF ? 0 : -1;
	else
		rc = json_dump_file(root, o->json, JSON_INDENT(2) | JSON_REAL_PRECISION(9));
free_all:
	json_decref(arrivals);
	json_decref(root);
	return rc;
}

/* Grade, print and write JSON; returns the exit code (0 or 1). */
static int report(const struct verify_opts *o, struct scenario *sc, const struct verify_grade_expect *ex, size_t nex,
                  const struct verify_grade_run *run)
{
	static struct scenario_arrival log[SCENARIO_LOG_MAX];
	struct verify_grade_verdict *v = calloc(nex, sizeof(*v));
	FILE *f = o->json && strcmp(o->json, "-") == 0 ? stderr : stdout;
	size_t n = scenario_arrivals(sc, log, SCENARIO_LOG_MAX, NULL), held = 0;
	int rc;

	if (!v)
		return 1;
	n = n > SCENARIO_LOG_MAX ? SCENARIO_LOG_MAX : n;
	if (run->killed)
		fprintf(f, "scenario %s: %zu arrivals; command killed at the %.2fs timeout\n", scenario_name(sc), n,
		        (double)run->timeout_ns / 1e9);
	else
		fprintf(f, "scenario %s: %zu arrivals; command exited %d after %.2fs\n", scenario_name(sc), n,
		        run->exit_status, (double)run->wall_ns / 1e9);
	if (!o->quiet)
		print_arrivals(f, log, n);
	for (size_t i = 0; i < nex; i++) {
		verify_grade_one(&ex[i], log, n, run, &v[i]);
		held += v[i].pass;
		fprintf(f, "%s  %-24s %s\n", v[i].pass ? "PASS" : "FAIL", v[i].name, v[i].evidence);
	}
	fprintf(f, "%zu of %zu expectations hold\n", held, nex);
	/* The verdicts are the product: a result file that could not be written fails the run. */
	rc = o->json && write_json(o, sc, run, v, nex, held == nex) < 0 ? -1 : held == nex ? 0 : 1;
	if (rc < 0)
		fprintf(stderr, "ratelab verify: --json: cannot write '%s'\n", o->json);
	free(v);
	return rc < 0 ? 1 : rc;
}

static struct server *start_server(struct scenario *sc, const struct verify_opts *o, struct server_config *cfg)
{
	char err[300];
	struct server *srv;

	server_config_defaults(cfg);
	cfg->port = 0;
	cfg->quiet = true;
	cfg->threads = (unsigned)(o->clients < 4 ? 4 : o->clients);  /* scripted delays hold a thread */
	if (scenario_register(cfg, sc) < 0)
		return NULL;
	srv = server_start(cfg, err, sizeof(err));
	if (!srv)
		fprintf(stderr, "ratelab verify: %s\n", err);
	return srv;
}

static void install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

int verify_main(int argc, char **argv)
{
	struct verify_opts o;
	struct verify_grade_expect ex[VERIFY_GRADE_MAX_EXPECT];
	struct verify_child ch[VERIFY_MAX_CLIENTS];
	struct verify_grade_run run;
	struct server_config *cfg = NULL;
	struct scenario *sc;
	struct server *srv;
	char err[600], why[400];
	size_t nex;
	int rc = parse_args(&o, argc, argv, err, sizeof(err));

	if (rc != 0)
		return cli_exit(&VERIFY_CLI, rc, err);
	if (!(sc = scenario_new(o.scenario, why, sizeof(why))))
		return cli_exit(&VERIFY_CLI, cli_fail(err, sizeof(err), "verify", "--scenario: %s", why), err);
	rc = 2;
	if (verify_grade_parse(o.expect ? o.expect : scenario_default_expect(sc), ex, VERIFY_GRADE_MAX_EXPECT, &nex,
	                       why, sizeof(why)) < 0) {
		rc = cli_exit(&VERIFY_CLI, cli_fail(err, sizeof(err), "verify", "%s", why), err);
		goto free_sc;
	}
	rc = 1;
	install_signals();
	if (!(cfg = malloc(sizeof(*cfg))) || !(srv = start_server(sc, &o, cfg)))
		goto free_sc;
	memset(ch, 0, sizeof(ch));
	rc = run_clients(&o, server_port(srv), ch, &run);
	if (rc == 0)
		rc = verify_interrupted ? 130 : report(&o, sc, ex, nex, &run);
	else
		fprintf(stderr, "ratelab verify: cannot %s '%s': %s\n", rc == -2 ? "run" : "start", o.cmd[0],
		        strerror(errno));
	if (rc < 0)
		rc = rc == -2 ? 2 : 1;
	server_stop(srv);
free_sc:
	free(cfg);
	scenario_free(sc);
	return rc;
}
