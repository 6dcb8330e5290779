/* The client command's copies: start them, reap them, and stop all they started. */
#include "lab/verify_child.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/proc_threads.h"

#define PROC_MAX 32768             /* processes read from /proc per scan */
#define FOUND_MAX 512              /* descendants stopped per set */
#define DEPTH_MAX 64               /* ancestors walked per process */
#define GRACE_NS (500ULL * 1000000ULL)
#define SWEEP_NS (10ULL * 1000000000ULL)   /* the longest a sweep keeps finding and killing */
#define NO_PROXY_HOSTS "127.0.0.1,localhost,::1"

extern char **environ;

struct verify_child {
	pid_t pid;
	int status;                    /* exit code or 128+signal, once reaped */
	bool done;
	char url[112];
};

struct verify_children {
	struct verify_child ch[VERIFY_CHILD_MAX];
	unsigned n;
	char marker[128];              /* "RATELAB_URL=http://127.0.0.1:PORT": inherited by all they start */
};

struct proc_entry {
	pid_t pid, ppid;
};

/* Variables the copies must not inherit: ours (set fresh) and every proxy setting. */
static const char *const DROPPED[] = {
	"RATELAB_URL=", "RATELAB_CLIENT=", "RATELAB_METHOD=", "http_proxy=", "HTTP_PROXY=", "https_proxy=",
	"HTTPS_PROXY=", "all_proxy=", "ALL_PROXY=", "no_proxy=", "NO_PROXY=", "ftp_proxy=", "FTP_PROXY=",
};

int verify_child_init(void)
{
	return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0 ? 0 : -1;
}

/* s with every "$RATELAB_URL" and "$RATELAB_METHOD" replaced (malloc'd; NULL on OOM). */
static char *expand(const char *s, const char *url, const char *method)
{
	size_t len = strlen(s) + 1, used = 0;
	char *out;

	for (const char *p = s; (p = strchr(p, '$')); p++)
		len += strlen(url) + strlen(method);
	if (!(out = malloc(len)))
		return NULL;
	while (*s) {
		if (strncmp(s, "$RATELAB_URL", 12) == 0) {
			used += (size_t)snprintf(out + used, len - used, "%s", url);
			s += 12;
		} else if (strncmp(s, "$RATELAB_METHOD", 15) == 0) {
			used += (size_t)snprintf(out + used, len - used, "%s", method);
			s += 15;
		} else {
			out[used++] = *s++;
		}
	}
	out[used] = '\0';
	return out;
}

static void free_strv(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

static char **child_argv(char **cmd, const char *url, const char *method)
{
	size_t n = 0;
	char **out;

	while (cmd[n])
		n++;
	if (!(out = calloc(n + 1, sizeof(*out))))
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!(out[i] = expand(cmd[i], url, method))) {
			free_strv(out);
			return NULL;
		}
	return out;
}

static bool dropped(const char *var)
{
	for (size_t i = 0; i < sizeof(DROPPED) / sizeof(DROPPED[0]); i++)
		if (strncmp(var, DROPPED[i], strlen(DROPPED[i])) == 0)
			return true;
	return false;
}

/* The environment without DROPPED, plus vars (NULL-terminated; the strings stay the caller's). */
static char **child_env(char *const *vars)
{
	size_t n = 0, j = 0, nv = 0;
	char **env;

	while (environ[n])
		n++;
	while (vars[nv])
		nv++;
	if (!(env = calloc(n + nv + 1, sizeof(*env))))
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!dropped(environ[i]))
			env[j++] = environ[i];
	for (size_t i = 0; i < nv; i++)
		env[j++] = vars[i];
	return env;
}

/*
 * Start copy k with posix_spawnp: its own process group, default signals
 * and an empty mask, stdout to our stderr (or both to /dev/null when quiet).
 * Not fork: a fork copies this process's memory map under its lock, and
 * every other thread of verify (the scenario server's among them) that
 * touches a page meanwhile waits; beside hundreds of processes exiting that
 * copy took 20 s in a soak run.  glibc's posix_spawn shares the map until
 * the exec (CLONE_VM | CLONE_VFORK) and reports an exec's failure.
 * 0; -1 (no process, errno); -2 with errno when the command cannot be run.
 */
static int spawn(const struct verify_child_opts *o, struct verify_child *ch, unsigned k)
{
	char url_var[160], client_var[32], method_var[48];
	char *vars[] = { url_var, client_var, method_var, "NO_PROXY=" NO_PROXY_HOSTS, "no_proxy=" NO_PROXY_HOSTS, NULL };
	char **argv = child_argv(o->cmd, ch->url, o->method), **env = child_env(vars);
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, dfl;
	int rc = -1, err;

	snprintf(url_var, sizeof(url_var), "RATELAB_URL=%s", ch->url);
	snprintf(client_var, sizeof(client_var), "RATELAB_CLIENT=%u", k);
	snprintf(method_var, sizeof(method_var), "RATELAB_METHOD=%s", o->method);
	if (!argv || !env) {
		errno = ENOMEM;
		goto free_all;
	}
	sigemptyset(&none);
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGPIPE);
	sigaddset(&dfl, SIGINT);
	sigaddset(&dfl, SIGTERM);
	posix_spawnattr_init(&at);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	posix_spawnattr_setpgroup(&at, 0);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &dfl);
	posix_spawn_file_actions_init(&fa);
	if (o->quiet) {
		posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
		posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
	} else {
		posix_spawn_file_actions_adddup2(&fa, STDERR_FILENO, STDOUT_FILENO);
	}
	err = posix_spawnp(&ch->pid, argv[0], &fa, &at, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (err == 0) {
		rc = 0;
	} else {
		/* no process (EAGAIN, ENOMEM), or one that could not exec (ENOENT, EACCES, ...): already reaped */
		ch->pid = -1;
		ch->done = true;
		rc = err == EAGAIN || err == ENOMEM ? -1 : -2;
		errno = err;
	}
free_all:
	free_strv(argv);
	free(env);
	return rc;
}

struct verify_children *verify_children_start(const struct verify_child_opts *o, bool *cannot_run, char *err,
                                              size_t errlen)
{
	struct verify_children *c = calloc(1, sizeof(*c));

	*cannot_run = false;
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	c->n = o->n;
	snprintf(c->marker, sizeof(c->marker), "RATELAB_URL=%s", o->url);
	for (unsigned k = 0; k < o->n; k++) {
		int rc;

		if (o->n == 1)
			snprintf(c->ch[k].url, sizeof(c->ch[k].url), "%s", o->url);
		else
			snprintf(c->ch[k].url, sizeof(c->ch[k].url), "%s/client-%u", o->url, k + 1);
		if ((rc = spawn(o, &c->ch[k], k + 1)) < 0) {
			int e = errno;

			*cannot_run = rc == -2;
			snprintf(err, errlen, "cannot %s '%s': %s", rc == -2 ? "run" : "start", o->cmd[0], strerror(e));
			c->n = k;
			verify_children_kill(c);
			free(c);
			errno = e;
			return NULL;
		}
	}
	return c;
}

static int decode_status(int st)
{
	return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
}

/*
 * Mark done each copy that ended: reaped by waitpid, or (in_exit) in exit
 * with its status read from /proc, left for the sweep to reap.  Returns how
 * many still run.
 */
static unsigned mark_ended(struct verify_children *c, bool in_exit)
{
	unsigned running = 0;

	for (unsigned i = 0; i < c->n; i++) {
		pid_t pid = c->ch[i].pid;
		int st;

		if (c->ch[i].done)
			continue;
		if (in_exit ? proc_threads_exiting(pid, &st) : waitpid(pid, &st, WNOHANG) == pid) {
			c->ch[i].done = true;
			c->ch[i].status = decode_status(st);
		} else {
			running++;
		}
	}
	return running;
}

unsigned verify_children_reap(struct verify_children *c)
{
	return mark_ended(c, false);
}

unsigned verify_children_take_exiting(struct verify_children *c)
{
	return mark_ended(c, true);
}

static bool proc_stat(pid_t pid, char *state, pid_t *ppid, unsigned *flags);

bool verify_children_exiting(const struct verify_children *c)
{
	for (unsigned i = 0; i < c->n; i++)
		if (!c->ch[i].done && !proc_threads_exiting(c->ch[i].pid, NULL))
			return false;
	return true;
}

int verify_children_status(const struct verify_children *c)
{
	for (unsigned i = 0; i < c->n; i++)
		if (c->ch[i].status != 0)
			return c->ch[i].status;
	return 0;
}

void verify_children_free(struct verify_children *c)
{
	free(c);
}

/* ---- /proc ---- */

/* pid's state letter, parent and flags from /proc/PID/stat; false when it is gone. */
static bool proc_stat(pid_t pid, char *state, pid_t *ppid, unsigned *flags)
{
	char path[48], buf[512];
	const char *rp;
	ssize_t n;
	int fd, pp;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* The command name may hold spaces and parentheses: the fields start after the last ')'. */
	if (!(rp = strrchr(buf, ')')) || sscanf(rp + 1, " %c %d %*d %*d %*d %*d %u", state, &pp, flags) != 3)
		return false;
	*ppid = (pid_t)pp;
	return true;
}

void verify_children_describe(const struct verify_children *c, FILE *f)
{
	for (unsigned i = 0; i < c->n; i++) {
		if (c->ch[i].done)
			continue;
		fprintf(f, "ratelab verify: pid %d was still running at the timeout; its threads (id:name, state, kernel wait):",
		        (int)c->ch[i].pid);
		proc_threads_describe(c->ch[i].pid, f);
		fputc('\n', f);
	}
}

/* pid's parent from /proc/PID/stat; false when it is gone or a zombie. */
static bool proc_parent(pid_t pid, pid_t *ppid)
{
	unsigned flags;
	char state;

	return proc_stat(pid, &state, ppid, &flags) && state != 'Z';
}

static int by_pid(const void *a, const void *b)
{
	const struct proc_entry *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Every live process (at most PROC_MAX), sorted by pid; *n entries, malloc'd (NULL on failure). */
static struct proc_entry *proc_table(size_t *n)
{
	struct proc_entry *t = malloc(PROC_MAX * sizeof(*t));
	DIR *d = opendir("/proc");
	struct dirent *de;

	*n = 0;
	while (t && d && (de = readdir(d)) && *n < PROC_MAX) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end == '\0' && pid > 0 && proc_parent((pid_t)pid, &t[*n].ppid))
			t[(*n)++].pid = (pid_t)pid;
	}
	if (d)
		closedir(d);
	if (t)
		qsort(t, *n, sizeof(*t), by_pid);
	return t;
}

/* The parent of pid from the table, or 0. */
static pid_t parent_of(const struct proc_entry *t, size_t n, pid_t pid)
{
	struct proc_entry key = { pid, 0 }, *e = bsearch(&key, t, n, sizeof(*t), by_pid);

	return e ? e->ppid : 0;
}

/* True when pid descends from `root` (by parent links, at most DEPTH_MAX of them). */
static bool descends(const struct proc_entry *t, size_t n, pid_t pid, pid_t root)
{
	for (int d = 0; d < DEPTH_MAX && pid > 1; d++) {
		pid = parent_of(t, n, pid);
		if (pid == root)
			return true;
	}
	return false;
}

/* True when pid's environment holds marker as a whole entry, or followed by '/'. */
static bool has_marker(pid_t pid, const char *marker)
{
	static _Thread_local char env[65536];
	char path[48];
	size_t ml = strlen(marker);
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	n = read(fd, env, sizeof(env) - 1);
	close(fd);
	if (n <= 0)
		return false;
	env[n] = '\0';
	for (char *p = env; p < env + n; p += strlen(p) + 1)
		if (strncmp(p, marker, ml) == 0 && (p[ml] == '\0' || p[ml] == '/'))
			return true;
	return false;
}

/* True when pid is one of the set's: below one of its copies, or below verify and carrying its marker. */
static bool belongs(const struct verify_children *c, const struct proc_entry *t, size_t n, pid_t pid)
{
	for (unsigned i = 0; i < c->n; i++)
		if (pid == c->ch[i].pid || descends(t, n, pid, c->ch[i].pid))
			return true;
	return descends(t, n, pid, getpid()) && has_marker(pid, c->marker);
}

/* The processes the set started that are alive (c NULL: everything below verify); at most max. */
static size_t collect(const struct verify_children *c, pid_t *out, size_t max)
{
	size_t n, found = 0;
	struct proc_entry *t = proc_table(&n);

	for (size_t i = 0; t && i < n && found < max; i++) {
		if (t[i].pid == getpid())
			continue;
		/* One in exit runs nothing more and no signal reaches it: the sweep does not wait on its teardown. */
		if ((c ? belongs(c, t, n, t[i].pid) : descends(t, n, t[i].pid, getpid())) &&
		    !proc_threads_exiting(t[i].pid, NULL))
			out[found++] = t[i].pid;
	}
	free(t);
	return found;
}

/* ---- stopping ---- */

/*
 * Reap what is ours to reap among pids (orphans verify is subreaper of); count
 * the ones still alive (one in exit is not: only the kernel's teardown is left).
 */
static size_t alive(pid_t *pids, size_t n)
{
	size_t left = 0;

	for (size_t i = 0; i < n; i++) {
		pid_t pp;

		if (pids[i] <= 0)
			continue;
		if (waitpid(pids[i], NULL, WNOHANG) == pids[i] || !proc_parent(pids[i], &pp) ||
		    proc_threads_exiting(pids[i], NULL))
			pids[i] = 0;
		else
			left++;
	}
	return left;
}

static void signal_all(struct verify_children *c, const pid_t *pids, size_t n, int sig)
{
	for (unsigned i = 0; i < c->n; i++)
		kill(-c->ch[i].pid, sig);
	for (size_t i = 0; i < n; i++)
		if (pids[i] > 0)
			kill(pids[i], sig);
}

void verify_children_kill(struct verify_children *c)
{
	static _Thread_local pid_t pids[FOUND_MAX];
	uint64_t until = clock_monotonic_ns() + GRACE_NS;
	struct timespec ts = { 0, 5 * 1000000L };
	size_t n = collect(c, pids, FOUND_MAX);

	signal_all(c, pids, n, SIGTERM);
	while ((verify_children_reap(c) > 0 || alive(pids, n) > 0) && clock_monotonic_ns() < until)
		nanosleep(&ts, NULL);
	/*
	 * Whatever was started since the first look, and what outlived SIGTERM:
	 * FOUND_MAX at a time, looking again until a look finds none (bounded).
	 */
	until = clock_monotonic_ns() + SWEEP_NS;
	do {
		uint64_t grace = clock_monotonic_ns() + GRACE_NS;

		n = collect(c, pids, FOUND_MAX);
		signal_all(c, pids, n, SIGKILL);
		/* A copy is done once reaped, or once in exit (its status from /proc): its teardown is the kernel's. */
		while (verify_children_reap(c) > 0 && verify_children_take_exiting(c) > 0 && clock_monotonic_ns() < until)
			nanosleep(&ts, NULL);
		while (alive(pids, n) > 0 && clock_monotonic_ns() < grace)
			nanosleep(&ts, NULL);
	} while (n > 0 && clock_monotonic_ns() < until);
	/* Held in the kernel past every bound (SIGKILL sent, not yet in exit): it ends killed. */
	for (unsigned i = 0; i < c->n; i++)
		if (!c->ch[i].done) {
			c->ch[i].done = true;
			c->ch[i].status = 128 + SIGKILL;
		}
}

/* Reap every child of verify that has ended (orphans it is subreaper of); for the sweep, when no set runs. */
static void reap_any(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

/*
 * Everything below verify, by parent links: whatever its environment and
 * session (env -i, setsid), since verify is the subreaper of all it starts.
 * FOUND_MAX at a time, looking again until a look finds none, within
 * SWEEP_NS (a fork bomb outruns any bound; SIGKILL of the groups first).
 */
void verify_child_sweep(void)
{
	static pid_t pids[FOUND_MAX];
	uint64_t until = clock_monotonic_ns() + SWEEP_NS;
	struct timespec ts = { 0, 2 * 1000000L };
	size_t n;

	do {
		uint64_t grace = clock_monotonic_ns() + GRACE_NS;

		n = collect(NULL, pids, FOUND_MAX);
		for (size_t i = 0; i < n; i++)
			kill(pids[i], SIGKILL);
		reap_any();
		while (alive(pids, n) > 0 && clock_monotonic_ns() < grace) {
			reap_any();
			nanosleep(&ts, NULL);
		}
	} while (n > 0 && clock_monotonic_ns() < until);
	reap_any();
}
