#include "hammer/engine.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>

#include "common/clock.h"
#include "hammer/loop.h"

#define HERD_MARGIN_NS (20 * NS_PER_MS)
#define FDS_SPARE 64

int hammer_result_init(struct hammer_result *r, uint64_t interval_ns)
{
	memset(r, 0, sizeof(*r));
	r->latency = histogram_new();
	r->lateness = histogram_new();
	r->timeline = timeline_new(interval_ns ? interval_ns : 100 * NS_PER_MS);
	r->servers = calloc(HAMMER_MAX_URLS, sizeof(*r->servers));
	r->nservers = 1;
	if (r->latency == NULL || r->lateness == NULL || r->timeline == NULL || r->servers == NULL) {
		hammer_result_destroy(r);
		return -1;
	}
	return 0;
}

void hammer_result_destroy(struct hammer_result *r)
{
	histogram_free(r->latency);
	histogram_free(r->lateness);
	timeline_free(r->timeline);
	free(r->servers);
	r->latency = r->lateness = NULL;
	r->timeline = NULL;
	r->servers = NULL;
}

static void add_array(uint64_t *dst, const uint64_t *src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] += src[i];
}

static void merge_servers(struct hammer_result *dst, const struct hammer_result *src)
{
	if (src->nservers > dst->nservers)
		dst->nservers = src->nservers;
	for (uint32_t i = 0; i < src->nservers; i++) {
		struct hammer_server *d = &dst->servers[i];
		const struct hammer_server *s = &src->servers[i];

		if (d->url == NULL)
			d->url = s->url;
		add_array(d->status, s->status, RETRY_STATUS_MAX);
		d->errors += s->errors;
		d->requests += s->requests;
		d->ok += s->ok;
		d->failed += s->failed;
		d->calls += s->calls;
		d->retries += s->retries;
	}
}

int hammer_result_merge(struct hammer_result *dst, const struct hammer_result *src)
{
	merge_servers(dst, src);
	add_array(dst->status, src->status, RETRY_STATUS_MAX);
	add_array(dst->attempt_status, src->attempt_status, RETRY_STATUS_MAX);
	add_array(dst->final_errors, src->final_errors, HAMMER_ERR_KINDS);
	add_array(dst->attempt_errors, src->attempt_errors, HAMMER_ERR_KINDS);
	add_array(dst->gave_up, src->gave_up, RETRY_REASON_COUNT);
	dst->requests += src->requests;
	dst->ok += src->ok;
	dst->failed += src->failed;
	dst->calls += src->calls;
	dst->retries += src->retries;
	dst->answered += src->answered;
	dst->unfinished += src->unfinished;
	dst->dropped += src->dropped;
	dst->budget_refused += src->budget_refused;
	if (src->wall_ns > dst->wall_ns)
		dst->wall_ns = src->wall_ns;
	dst->interrupted = dst->interrupted || src->interrupted;
	histogram_merge(dst->latency, src->latency);
	histogram_merge(dst->lateness, src->lateness);
	return timeline_merge(dst->timeline, src->timeline);
}

const char *hammer_error_name(enum retry_error e)
{
	static const char *const names[] = { "none", "refused", "reset", "timeout", "other" };

	return (unsigned)e < HAMMER_ERR_KINDS ? names[e] : "other";
}

/* Make room for one socket per client; -1 with err when the hard limit forbids it. */
/*
 * Raise the open-file limit to what the clients need, plus up to `extra`
 * more if the hard limit allows (idle connections parked per server);
 * *room gets how many of those extra descriptors there are.
 */
static int raise_nofile(uint32_t clients, uint32_t threads, uint64_t extra, uint64_t *room,
                        char *err, size_t errlen)
{
	struct rlimit rl;
	rlim_t need = (rlim_t)loop_fds_needed(clients, threads ? threads : 1) + FDS_SPARE;
	rlim_t want = need + (rlim_t)extra, old;

	*room = 0;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return 0;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need) {
		snprintf(err, errlen, "%u clients need %llu open files but the hard limit is %llu "
		         "(raise it: ulimit -Hn)", clients, (unsigned long long)need,
		         (unsigned long long)rl.rlim_max);
		return -1;
	}
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
	uint64_t room;

	return raise_nofile(clients, threads, 0, &room, err, errlen);
}

enum retry_error hammer_curl_error(CURLcode rc)
{
	switch (rc) {
	case CURLE_OK:
		return RETRY_ERR_NONE;
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
		return RETRY_ERR_REFUSED;
	case CURLE_OPERATION_TIMEDOUT:
		return RETRY_ERR_TIMEOUT;
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
		return RETRY_ERR_RESET;
	default:
		return RETRY_ERR_OTHER;
	}
}

/*
 * Grow the fd table to its final size now, while one thread runs: growing it
 * later, with workers running, waits for an RCU grace period at each
 * doubling and stalls a 10,000-client start by tens of milliseconds.
 */
static void presize_fd_table(uint32_t clients)
{
	int fd = fcntl(0, F_DUPFD_CLOEXEC, (int)loop_fds_needed(clients, 1) + FDS_SPARE / 2);

	if (fd >= 0)
		close(fd);
}

/*
 * Grow and keep the heap in big steps.  With glibc's defaults, a 10,000-client
 * run made 26,746 mprotect calls growing the worker threads' arenas a page at
 * a time; each takes the address-space lock for writing and stalls the other
 * worker's page faults.  With these two settings it made 42.  Untouched pad
 * is address space, not resident memory.
 */
static void tune_malloc(void)
{
	mallopt(M_TOP_PAD, 64 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init_once(void)
{
	struct sigaction sa = { 0 };

	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	tune_malloc();
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* Idle connections the own HTTP/1.1 path would keep to the other servers: one per client and server. */
static uint64_t park_wanted(const struct hammer_config *cfg)
{
	if (cfg->transport == HAMMER_TRANSPORT_CURL || cfg->nurls < 2)
		return 0;
	return (uint64_t)cfg->concurrency * (cfg->nurls - 1);
}

static int check_config(const struct hammer_config *cfg, char *err, size_t errlen)
{
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
	struct wire_target *targets;
	uint64_t park_room;          /* descriptors for parked connections, all loops */
	struct loop **loops;
	pthread_t *tids;
	uint32_t nloops;
	uint32_t nstarted;
};

static uint64_t share(uint64_t total, uint32_t parts, uint32_t i)
{
	if (total == UINT64_MAX)
		return UINT64_MAX;
	return total / parts + (i < total % parts ? 1 : 0);
}

static void targets_free(struct run *run)
{
	for (uint32_t i = 0; run->targets != NULL && i < run->sh.nurls; i++)
		wire_target_destroy(&run->targets[i]);
	free(run->targets);
	run->targets = NULL;
	run->sh.targets = NULL;
}

/*
 * The own HTTP/1.1 path when the transport allows it and every URL is plain
 * http:// that resolves; otherwise libcurl (auto), or an error (wire).
 */
static int targets_setup(struct run *run, const struct hammer_config *cfg, char *err, size_t errlen)
{
	struct wire_spec spec = { cfg->method, cfg->headers, cfg->nheaders, cfg->data };
	char why[256] = "";

	if (cfg->transport == HAMMER_TRANSPORT_CURL)
		return 0;
	run->targets = calloc(run->sh.nurls, sizeof(*run->targets));
	if (run->targets == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (uint32_t i = 0; i < run->sh.nurls; i++) {
		bool supported = wire_url_supported(run->sh.urls[i]);

		if (wire_target_init(&run->targets[i], run->sh.urls[i], &spec, why, sizeof(why)) == 0)
			continue;
		targets_free(run);
		/* auto leaves what the own path cannot send to libcurl; an unknown host is an error either way */
		if (cfg->transport == HAMMER_TRANSPORT_AUTO && !supported)
			return 0;
		snprintf(err, errlen, "%s%s", supported ? "" : "--transport wire: ", why);
		return -1;
	}
	run->sh.targets = run->targets;
	return 0;
}

static int shared_setup(struct run *run, const struct hammer_config *cfg, char *err, size_t errlen)
{
	struct curl_slist *h;

	run->sh.cfg = cfg;
	run->sh.urls = cfg->nurls > 0 ? cfg->urls : &cfg->url;
	run->sh.nurls = cfg->nurls > 0 ? cfg->nurls : 1;
	/* no "Expect: 100-continue" round trip for bodies */
	run->sh.headers = curl_slist_append(NULL, "Expect:");
	for (size_t i = 0; run->sh.headers != NULL && i < cfg->nheaders; i++) {
		h = curl_slist_append(run->sh.headers, cfg->headers[i]);
		if (h == NULL) {
			curl_slist_free_all(run->sh.headers);
			run->sh.headers = NULL;
		}
		run->sh.headers = h;
	}
	if (run->sh.headers == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (targets_setup(run, cfg, err, errlen) != 0)
		return -1;
	if (cfg->policy->budget.kind != BUDGET_NONE) {
		run->sh.budget = retry_budget_new(&cfg->policy->budget, clock_monotonic_ns());
		if (run->sh.budget == NULL) {
			snprintf(err, errlen, "cannot create the retry budget");
			return -1;
		}
	}
	return 0;
}

static int loops_new(struct run *run, const struct hammer_config *cfg, char *err, size_t errlen)
{
	uint32_t n = cfg->threads ? cfg->threads : 1;

	if (n > cfg->concurrency)
		n = cfg->concurrency;
	run->sh.nloops = n;
	run->sh.park_max = run->park_room / n > UINT32_MAX ? UINT32_MAX : (uint32_t)(run->park_room / n);
	run->loops = calloc(n, sizeof(*run->loops));
	run->tids = calloc(n, sizeof(*run->tids));
	if (run->loops == NULL || run->tids == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct loop_part p = { .index = i };

		p.clients = (uint32_t)share(cfg->concurrency, n, i);
		p.requests = share(cfg->requests ? cfg->requests : UINT64_MAX, n, i);
		p.rate = cfg->rate / n;
		p.phase_ns = cfg->rate > 0 ? (uint64_t)(1e9 / cfg->rate * i) : 0;
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

static void show_progress(const struct run *run, FILE *f, uint64_t total)
{
	uint64_t req = 0, calls = 0, r, c;
	bool fin;
	char line[128];

	for (uint32_t i = 0; i < run->nloops; i++) {
		loop_progress(run->loops[i], &r, &c, &fin);
		req += r;
		calls += c;
	}
	if (total)
		snprintf(line, sizeof(line), "%llu/%llu requests, %llu calls", (unsigned long long)req,
		         (unsigned long long)total, (unsigned long long)calls);
	else
		snprintf(line, sizeof(line), "%llu requests, %llu calls", (unsigned long long)req,
		         (unsigned long long)calls);
	fprintf(f, "\r%s, %.1fs\033[K", line,
	        (double)(clock_monotonic_ns() - run->sh.start_ns) / 1e9);
	fflush(f);
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
		show_progress(run, cfg->progress, cfg->requests);
	}
	if (cfg->progress != NULL)
		fprintf(cfg->progress, "\r\033[K");
	for (uint32_t i = 0; i < run->nstarted; i++)
		pthread_join(run->tids[i], NULL);
}

static int start_workers(struct run *run, const struct hammer_config *cfg, char *err, size_t errlen)
{
	run->sh.start_ns = clock_monotonic_ns() + (cfg->herd ? HERD_MARGIN_NS : 0);
	run->sh.end_ns = cfg->duration_ns ? run->sh.start_ns + cfg->duration_ns : 0;
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
	curl_slist_free_all(run->sh.headers);
	targets_free(run);
	retry_budget_free(run->sh.budget);
}

int hammer_run(const struct hammer_config *cfg, struct hammer_result *res, char *err, size_t errlen)
{
	struct run run = { 0 };
	int rc = -1;

	if (check_config(cfg, err, errlen) != 0 ||
	    raise_nofile(cfg->concurrency, cfg->threads, park_wanted(cfg), &run.park_room, err, errlen) != 0)
		return -1;
	presize_fd_table(cfg->concurrency);
	pthread_once(&curl_once, curl_init_once);
	if (curl_init_rc != CURLE_OK) {
		snprintf(err, errlen, "curl_global_init: %s", curl_easy_strerror(curl_init_rc));
		return -1;
	}
	if (shared_setup(&run, cfg, err, errlen) != 0 || loops_new(&run, cfg, err, errlen) != 0)
		goto free_run;
	if (start_workers(&run, cfg, err, errlen) != 0) {
		if (cfg->cancel != NULL)
			atomic_store(cfg->cancel, 1);
		wait_workers(&run, cfg);
		goto free_run;
	}
	wait_workers(&run, cfg);
	rc = 0;
	for (uint32_t i = 0; i < run.nloops && rc == 0; i++)
		rc = hammer_result_merge(res, loop_result(run.loops[i]));
	if (rc != 0)
		snprintf(err, errlen, "out of memory merging results");
	res->wire = run.sh.targets != NULL;
free_run:
	run_free(&run);
	return rc;
}
