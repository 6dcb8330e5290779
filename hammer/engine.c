/* hammer_run: results, descriptors, the transport's pick, the worker threads. */
#include "hammer/engine.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/progress.h"
#include "hammer/loop.h"
#include "hammer/transport.h"

#define HERD_MARGIN_NS (20 * NS_PER_MS)
#define FDS_SPARE 64

const char *const *hammer_config_urls(const struct hammer_config *cfg, uint32_t *n)
{
	*n = cfg->nurls > 0 ? cfg->nurls : 1;
	return cfg->nurls > 0 ? cfg->urls : &cfg->url;
}

/* Descriptors a run of tops over `threads` loops needs: the transport's, and each loop's epoll and timerfd. */
static uint64_t fds_needed(const struct transport_ops *tops, uint32_t clients, uint32_t threads)
{
	return tops->fds_needed(clients, threads) + 2 * (uint64_t)threads;
}

/* fs.nr_open, the most any process may have open (0 when unknown). */
static uint64_t nr_open(void)
{
	unsigned long long v = 0;
	FILE *f = fopen("/proc/sys/fs/nr_open", "r");

	if (f != NULL) {
		if (fscanf(f, "%llu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

/* The hard limit is below need: raise it (a privileged process may), or say what is needed. */
static int raise_hard(struct rlimit *rl, rlim_t need, uint32_t clients, char *err, size_t errlen)
{
	struct rlimit up = { need, need };
	uint64_t most = nr_open();

	if (setrlimit(RLIMIT_NOFILE, &up) == 0) {
		*rl = up;
		return 0;
	}
	if (most != 0 && need > most)
		snprintf(err, errlen, "%u clients need %llu open files, more than fs.nr_open (%llu) allows "
		         "any process (sysctl fs.nr_open=%llu, then ulimit -Hn %llu)", clients,
		         (unsigned long long)need, (unsigned long long)most, (unsigned long long)need,
		         (unsigned long long)need);
	else
		snprintf(err, errlen, "%u clients need %llu open files but the hard limit is %llu and this "
		         "process may not raise it (ulimit -Hn %llu as root, or LimitNOFILE=%llu)", clients,
		         (unsigned long long)need, (unsigned long long)rl->rlim_max, (unsigned long long)need,
		         (unsigned long long)need);
	return -1;
}

/*
 * Raise the open-file limit to what the clients need, plus up to `extra`
 * more if the hard limit allows (idle connections parked per server);
 * *room gets how many of those extra descriptors there are.
 */
static int raise_nofile(uint64_t need_fds, uint32_t clients, uint64_t extra, uint64_t *room,
                        char *err, size_t errlen)
{
	struct rlimit rl;
	rlim_t need = (rlim_t)need_fds + FDS_SPARE;
	rlim_t want = need + (rlim_t)extra, old;

	*room = 0;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return 0;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need && raise_hard(&rl, need, clients, err, errlen) != 0)
		return -1;
	old = rl.rlim_cur;
	if (old < want) {
		rl.rlim_cur = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want ? rl.rlim_max : want;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0 && old < need) {
			snprintf(err, errlen, "%u clients need %llu open files: %s", clients,
			         (unsigned long long)need, strerror(errno));
			return -1;
		}
		if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
			rl.rlim_cur = old;
	}
	*room = rl.rlim_cur > need ? (uint64_t)(rl.rlim_cur - need) : 0;
	if (*room > extra)
		*room = extra;
	return 0;
}

int hammer_raise_nofile(uint32_t clients, uint32_t threads, char *err, size_t errlen)
{
	uint64_t wire, curl, room;

	threads = threads ? threads : 1;
	wire = fds_needed(&TRANSPORT_WIRE, clients, threads);
	curl = fds_needed(&TRANSPORT_CURL, clients, threads);
	return raise_nofile(wire > curl ? wire : curl, clients, 0, &room, err, errlen);
}

/*
 * Grow the fd table to its final size now, while one thread runs: growing it
 * later, with workers running, waits for an RCU grace period at each
 * doubling and stalls a big herd's start.
 */
static void presize_fd_table(uint64_t fds)
{
	int fd = fcntl(0, F_DUPFD_CLOEXEC, (int)fds + FDS_SPARE / 2);

	if (fd >= 0)
		close(fd);
}

/*
 * Grow and keep the heap in big steps: with glibc's defaults the worker
 * threads' arenas grow a page at a time, and each mprotect call takes the
 * address-space lock for writing and stalls the other worker's page faults.
 * Untouched pad is address space, not resident memory.
 */
static void tune_malloc(void)
{
	mallopt(M_TOP_PAD, 64 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
}

static pthread_once_t process_once = PTHREAD_ONCE_INIT;

static void process_init_once(void)
{
	struct sigaction sa = { 0 };

	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	tune_malloc();
}

/* The own HTTP/1.1 client when the config allows it and it can send to every URL; otherwise libcurl. */
static const struct transport_ops *pick_transport(const struct hammer_config *cfg)
{
	uint32_t n;
	const char *const *urls = hammer_config_urls(cfg, &n);

	if (cfg->sim != NULL)
		return &TRANSPORT_SIM;
	if (cfg->transport == HAMMER_TRANSPORT_CURL)
		return &TRANSPORT_CURL;
	for (uint32_t i = 0; cfg->transport == HAMMER_TRANSPORT_AUTO && i < n; i++)
		if (!TRANSPORT_WIRE.supports(urls[i]))
			return &TRANSPORT_CURL;
	return &TRANSPORT_WIRE;
}

static int check_config(const struct hammer_config *cfg, char *err, size_t errlen)
{
	if (cfg->sim != NULL && cfg->ready != NULL) {
		snprintf(err, errlen, "hammer: a run in virtual time cannot be joined");
		return -1;
	}
	if ((cfg->url == NULL && cfg->nurls == 0) || cfg->policy == NULL || cfg->concurrency == 0) {
		snprintf(err, errlen, "hammer: url, policy and concurrency are required");
		return -1;
	}
	if (cfg->nurls > HAMMER_MAX_URLS || (cfg->nurls > 0 && cfg->urls == NULL)) {
		snprintf(err, errlen, "hammer: at most %d URLs", HAMMER_MAX_URLS);
		return -1;
	}
	if (cfg->requests == 0 && cfg->duration_ns == 0) {
		snprintf(err, errlen, "hammer: give --requests or --duration");
		return -1;
	}
	return 0;
}

struct run {
	struct loop_shared sh;
	struct transport_run *trun;
	uint64_t park_room;          /* descriptors for parked connections, all loops */
	struct loop **loops;
	pthread_t *tids;
	uint32_t nloops;
	uint32_t nstarted;
	uint64_t shown_from;         /* the start instant on CLOCK_MONOTONIC, for the progress line */
	_Atomic uint64_t hold_until;   /* --shared-wait's instant, shared by every loop */
};

static uint64_t share(uint64_t total, uint32_t parts, uint32_t i)
{
	if (total == UINT64_MAX)
		return UINT64_MAX;
	return total / parts + (i < total % parts ? 1 : 0);
}

/* This process's part of the run: share(total, nodes, node), the count of k < total with k % nodes == node. */
static void slice(const struct hammer_config *cfg, uint32_t *node, uint32_t *nodes, uint32_t *clients,
                  uint64_t *requests)
{
	*nodes = cfg->nodes > 1 ? cfg->nodes : 1;
	*node = *nodes > 1 ? cfg->node % *nodes : 0;
	*clients = (uint32_t)share(cfg->concurrency, *nodes, *node);
	*requests = share(cfg->requests ? cfg->requests : UINT64_MAX, *nodes, *node);
}

static int shared_setup(struct run *run, const struct hammer_config *cfg, char *err, size_t errlen)
{
	run->sh.cfg = cfg;
	run->sh.wl = cfg->workload ? cfg->workload : &WORKLOAD_PLAIN;
	run->sh.urls = hammer_config_urls(cfg, &run->sh.nurls);
	run->trun = run->sh.tops->run_new(cfg, run->sh.wl, err, errlen);
	if (run->trun == NULL)
		return -1;
	run->sh.trun = run->trun;
	if (cfg->shared_wait)
		run->sh.hold_until = &run->hold_until;
	if (cfg->policy->budget.kind != BUDGET_NONE) {
		run->sh.budget = retry_budget_new(&cfg->policy->budget, run->sh.clock->origin());
		if (run->sh.budget == NULL) {
			snprintf(err, errlen, "cannot create the retry budget");
			return -1;
		}
	}
	if (cfg->policy->throttle.kind != RETRY_THROTTLE_NONE) {
		run->sh.throttle = retry_throttle_new(&cfg->policy->throttle, run->sh.clock->origin());
		if (run->sh.throttle == NULL) {
			snprintf(err, errlen, "cannot create the adaptive throttle");
			return -1;
		}
	}
	return 0;
}

static int loops_new(struct run *run, const struct hammer_config *cfg, char *err, size_t errlen)
{
	uint32_t n = cfg->threads && !run->sh.clock->one_loop ? cfg->threads : 1, first = 0, clients;
	uint64_t requests;

	slice(cfg, &run->sh.node, &run->sh.nodes, &clients, &requests);
	if (n > clients)
		n = clients > 0 ? clients : 1;
	run->sh.nloops = n;
	run->sh.stride = n * run->sh.nodes;
	run->sh.park_max = run->park_room / n > UINT32_MAX ? UINT32_MAX : (uint32_t)(run->park_room / n);
	run->loops = calloc(n, sizeof(*run->loops));
	run->tids = calloc(n, sizeof(*run->tids));
	if (run->loops == NULL || run->tids == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct loop_part p = { .index = i, .slot = run->sh.node + run->sh.nodes * i, .first_client = first };

		/* loop i takes the process's clients, requests and arrivals j with j % n == i */
		p.clients = (uint32_t)share(clients, n, i);
		p.requests = share(requests, n, i);
		p.rate = cfg->rate / run->sh.stride;
		p.phase_ns = cfg->rate > 0 ? (uint64_t)(1e9 / cfg->rate * p.slot) : 0;
		first += p.clients;
		run->loops[i] = loop_new(&run->sh, &p, err, errlen);
		if (run->loops[i] == NULL)
			return -1;
		run->nloops = i + 1;
	}
	return 0;
}

static void *thread_main(void *arg)
{
	loop_run(arg);
	return NULL;
}

static void show_progress(const struct run *run, const struct hammer_config *cfg)
{
	const char *unit = cfg->progress_unit ? cfg->progress_unit : "requests";
	uint64_t req = 0, calls = 0, r, c, now = clock_monotonic_ns();
	bool fin;
	char done[64];

	for (uint32_t i = 0; i < run->nloops; i++) {
		loop_progress(run->loops[i], &r, &c, &fin);
		req += r;
		calls += c;
	}
	if (cfg->requests)
		snprintf(done, sizeof(done), "%llu/%llu", (unsigned long long)req, (unsigned long long)cfg->requests);
	else
		snprintf(done, sizeof(done), "%llu", (unsigned long long)req);
	/* A herd start lies a moment ahead: the clock shows 0.0s until then. */
	progress_line(cfg->progress, "%s%s%s %s, %llu calls, %.1fs", cfg->progress_label ? cfg->progress_label : "",
	              cfg->progress_label ? ": " : "", done, unit, (unsigned long long)calls,
	              now > run->shown_from ? (double)(now - run->shown_from) / 1e9 : 0.0);
}

/* Wait for every worker, drawing the progress line meanwhile when asked. */
static void wait_workers(struct run *run, const struct hammer_config *cfg)
{
	struct timespec tick = { 0, 200 * (long)NS_PER_MS };
	bool all = false;

	while (cfg->progress != NULL && !all) {
		uint64_t r, c;
		bool fin;

		nanosleep(&tick, NULL);
		all = true;
		for (uint32_t i = 0; i < run->nloops; i++) {
			loop_progress(run->loops[i], &r, &c, &fin);
			all = all && fin;
		}
		show_progress(run, cfg);
	}
	if (cfg->progress != NULL)
		progress_done(cfg->progress);
	for (uint32_t i = 0; i < run->nstarted; i++)
		pthread_join(run->tids[i], NULL);
}

/* The start instant: the caller's (a joined run's common one), or now (a herd: in HERD_MARGIN_NS). */
static int set_start(struct run *run, const struct hammer_config *cfg, struct hammer_result *res,
                     char *err, size_t errlen)
{
	uint64_t origin = run->sh.clock->origin();

	run->sh.start_ns = origin + (cfg->herd ? HERD_MARGIN_NS : 0);
	if (cfg->ready != NULL && cfg->ready(cfg->ready_ctx, &run->sh.start_ns, err, errlen) != 0)
		return -1;
	/* virtual time starts now on the real clock too */
	run->shown_from = clock_monotonic_ns() + (run->sh.start_ns > origin ? run->sh.start_ns - origin : 0);
	res->start_wall_ns = run->sh.start_wall_ns = run->sh.clock->wall_of(run->sh.start_ns);
	run->sh.end_ns = cfg->duration_ns ? run->sh.start_ns + cfg->duration_ns : 0;
	return 0;
}

static int start_workers(struct run *run, const struct hammer_config *cfg, char *err, size_t errlen)
{
	for (uint32_t i = 0; i < run->nloops; i++) {
		int rc = pthread_create(&run->tids[i], NULL, thread_main, run->loops[i]);

		if (rc != 0) {
			snprintf(err, errlen, "cannot start worker thread %u: %s", i, strerror(rc));
			return -1;
		}
		run->nstarted = i + 1;
	}
	return 0;
}

static void run_free(struct run *run)
{
	for (uint32_t i = 0; i < run->nloops; i++)
		loop_free(run->loops[i]);
	free(run->loops);
	free(run->tids);
	if (run->trun != NULL)
		run->sh.tops->run_free(run->trun);
	retry_budget_free(run->sh.budget);
	retry_throttle_free(run->sh.throttle);
}

/* Descriptors and process-wide set-up, before any thread starts. */
static int run_prepare(struct run *run, const struct hammer_config *cfg, char *err, size_t errlen)
{
	uint32_t threads = cfg->threads ? cfg->threads : 1, node, nodes, clients;
	uint64_t need, requests;

	slice(cfg, &node, &nodes, &clients, &requests);
	run->sh.clock = cfg->sim != NULL ? &LOOPCLOCK_VIRTUAL : &LOOPCLOCK_REAL;
	run->sh.tops = pick_transport(cfg);
	need = fds_needed(run->sh.tops, clients, threads);
	if (raise_nofile(need, clients, run->sh.tops->fds_wanted(cfg), &run->park_room, err, errlen) != 0)
		return -1;
	presize_fd_table(fds_needed(run->sh.tops, clients, 1));
	pthread_once(&process_once, process_init_once);
	return run->sh.tops->process_init(err, errlen);
}

int hammer_run(const struct hammer_config *cfg, struct hammer_result *res, char *err, size_t errlen)
{
	struct run run = { 0 };
	int rc = -1;

	if (check_config(cfg, err, errlen) != 0 || run_prepare(&run, cfg, err, errlen) != 0)
		return -1;
	if (shared_setup(&run, cfg, err, errlen) != 0 || loops_new(&run, cfg, err, errlen) != 0 ||
	    set_start(&run, cfg, res, err, errlen) != 0)
		goto free_run;
	if (start_workers(&run, cfg, err, errlen) != 0) {
		if (cfg->cancel != NULL)
			atomic_store(cfg->cancel, 1);
		wait_workers(&run, cfg);
		goto free_run;
	}
	wait_workers(&run, cfg);
	rc = 0;
	res->start_late_ns = UINT64_MAX;
	for (uint32_t i = 0; i < run.nloops && rc == 0; i++) {
		rc = hammer_result_merge(res, loop_result(run.loops[i]));
		if (loop_first_late_ns(run.loops[i]) < res->start_late_ns)
			res->start_late_ns = loop_first_late_ns(run.loops[i]);
	}
	if (res->start_late_ns == UINT64_MAX)
		res->start_late_ns = 0;
	if (rc != 0)
		snprintf(err, errlen, "out of memory merging results");
	res->transport = run.sh.tops->name;
free_run:
	run_free(&run);
	return rc;
}
