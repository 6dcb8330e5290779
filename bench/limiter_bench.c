/*
 * limiter_bench: ns per decision (key-table lookup + decide) for the limiters,
 * on one thread and on two threads with distinct keys, plus the bare decide
 * and the RSS growth of 1,000,000 distinct keys under a 100,000-key cap.
 * Time is injected (a counter), so only the table and the limiter are
 * measured, and the figures are thread CPU time, so other load on the
 * machine inflates them less than wall time would.  Usage: limiter_bench [--limiter NAME|all] [--decisions N]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/parse.h"
#include "server/store/store.h"

#define BENCH_KEYS_MAX 65536

/* Distinct keys per thread (--keys): 1024 by default, like a busy server's clients. */
static size_t bench_keys_n = 1024;
#define BENCH_KEYLEN 32

struct bench_thread {
	struct store *s;
	int id;
	uint64_t n;
	uint64_t admitted;
	uint64_t ns;
	char keys[BENCH_KEYS_MAX][BENCH_KEYLEN];
	size_t lens[BENCH_KEYS_MAX];
};

/* CPU time of the calling thread: the machine may be shared, and wall time would count other
 * processes' slices. */
static uint64_t bench_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* n decisions over the thread's keys from *now on; returns the number admitted. */
static uint64_t bench_loop(struct bench_thread *t, uint64_t n, uint64_t *now)
{
	struct limiter_decision d;
	uint64_t admitted = 0;
	/* Visit keys in a scattered order without a division per step. */
	size_t k = 0, step = 7919 % bench_keys_n;

	for (uint64_t i = 0; i < n; i++) {
		k += step;
		if (k >= bench_keys_n)
			k -= bench_keys_n;

		*now += 50;
		if (t->s->ops->decide(t->s, t->keys[k], t->lens[k], *now, 1, &d) == 0 && d.admitted) {
			admitted++;
			if (t->s->ops->release != NULL)
				t->s->ops->release(t->s, t->keys[k], t->lens[k], *now);
		}
	}
	return admitted;
}

static void *bench_run(void *p)
{
	struct bench_thread *t = p;
	uint64_t now = 1000 * NS_PER_SEC, start;

	/* Warm up: create the keys and fill the caches before timing. */
	bench_loop(t, t->n / 8 + bench_keys_n, &now);
	start = bench_cpu_ns();
	t->admitted = bench_loop(t, t->n, &now);
	t->ns = bench_cpu_ns() - start;
	return NULL;
}

static void bench_keys(struct bench_thread *t, int id)
{
	t->id = id;
	for (size_t k = 0; k < bench_keys_n; k++) {
		snprintf(t->keys[k], BENCH_KEYLEN, "10.%d.%u.%u", id % 256, (unsigned)(k / 256) % 256, (unsigned)(k % 256));
		t->lens[k] = strlen(t->keys[k]);
	}
}

/* ns per decision with `nthreads` threads over one store; -1 on failure. */
static double bench_store(const struct limiter_ops *ops, const struct limiter_params *p, int nthreads,
                          uint64_t n, double *admitted_share)
{
	struct bench_thread *t = calloc((size_t)nthreads, sizeof(*t));
	pthread_t tid[2];
	double ns = 0, admitted = 0;

	if (t == NULL)
		return -1;
	t[0].s = store_memory_new(ops, p, 100000, 0);
	for (int i = 0; i < nthreads && t[0].s != NULL; i++) {
		t[i].s = t[0].s;
		t[i].n = n;
		bench_keys(&t[i], i);
		pthread_create(&tid[i], NULL, bench_run, &t[i]);
	}
	for (int i = 0; i < nthreads && t[0].s != NULL; i++) {
		pthread_join(tid[i], NULL);
		ns += (double)t[i].ns / (double)n / nthreads;
		admitted += (double)t[i].admitted / (double)n / nthreads;
	}
	if (t[0].s != NULL)
		t[0].s->ops->free(t[0].s);
	else
		ns = -1;
	free(t);
	*admitted_share = admitted;
	return ns;
}

/* ns per bare decide() on one state. */
static double bench_decide(const struct limiter_ops *ops, const struct limiter_params *p, uint64_t n)
{
	void *state = calloc(1, ops->state_size(p) + 8);
	struct limiter_decision d;
	uint64_t now = 1000 * NS_PER_SEC, start, admitted = 0;

	if (state == NULL)
		return -1;
	ops->init(p, state, now);
	start = bench_cpu_ns();
	for (uint64_t i = 0; i < n; i++) {
		now += 50 * bench_keys_n;  /* the per-key gap of bench_run */
		ops->decide(p, state, now, 1, &d);
		admitted += d.admitted;
		if (ops->release != NULL && d.admitted)
			ops->release(p, state);
	}
	start = bench_cpu_ns() - start;
	free(state);
	/* Use the count so the loop is not optimised away. */
	return admitted <= n ? (double)start / (double)n : -1;
}

/* Params for `name`: admitting almost everything, or rejecting almost everything (100/s). */
static int bench_params(const struct limiter_ops *ops, bool admit, struct limiter_params *p)
{
	char err[256];

	*p = (struct limiter_params){ .limit = admit ? 100000 : 100, .window_ns = NS_PER_SEC };
	if (strcmp(ops->name, "sliding-log") == 0 && admit) {
		p->limit = 1000;
		p->window_ns = 10 * NS_PER_MS;
	}
	if (strcmp(ops->name, "layered") == 0) {
		p->nlayers = 2;
		p->layers[0] = (struct limiter_layer){ p->limit, NS_PER_SEC };
		p->layers[1] = (struct limiter_layer){ p->limit * 10, 60 * NS_PER_SEC };
	}
	if (limiter_params_check(ops, p, err, sizeof(err)) != 0) {
		fprintf(stderr, "limiter_bench: %s\n", err);
		return -1;
	}
	return 0;
}

static long bench_rss_kb(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f == NULL)
		return -1;
	if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
		rss = -1;
	fclose(f);
	return rss < 0 ? -1 : rss * (sysconf(_SC_PAGESIZE) / 1024);
}

/* RSS growth for 1,000,000 distinct keys with a 100,000-key cap (token-bucket). */
static void bench_memory_keys(void)
{
	struct limiter_params p = { .limit = 5, .window_ns = NS_PER_SEC };
	const struct limiter_ops *ops = limiter_find("token-bucket");
	struct limiter_decision d;
	struct store_stats st;
	struct store *s;
	long before = bench_rss_kb();
	char key[48];

	limiter_params_check(ops, &p, key, sizeof(key));
	s = store_memory_new(ops, &p, 100000, 0);
	if (s == NULL)
		return;
	for (int i = 0; i < 1000000; i++) {
		int len = snprintf(key, sizeof(key), "2001:db8::%x:%x", i >> 16, i & 0xffff);

		s->ops->decide(s, key, (size_t)len, (uint64_t)i, 1, &d);
	}
	s->ops->stats(s, &st);
	printf("memory: 1000000 distinct keys, max-keys 100000: RSS +%.1f MB (live %llu, evictions %llu)\n",
	       (double)(bench_rss_kb() - before) / 1024.0, (unsigned long long)st.live_keys,
	       (unsigned long long)st.evictions);
	s->ops->free(s);
}

/*
 * The worst case of a large-state limiter: sliding-log --limit 1000 with the cap serve
 * picks by default (64 MiB / its key bytes), every key's log full (1000 requests each).
 */
static void bench_memory_full_logs(void)
{
	struct limiter_params p = { .limit = 1000, .window_ns = 3600 * NS_PER_SEC };
	const struct limiter_ops *ops = limiter_find("sliding-log");
	struct limiter_decision d;
	struct store_stats st;
	struct store *s;
	long before = bench_rss_kb();
	uint64_t admitted = 0;
	size_t cap;
	char key[48];

	limiter_params_check(ops, &p, key, sizeof(key));
	cap = (64u << 20) / store_memory_key_bytes(ops, &p);
	s = store_memory_new(ops, &p, cap, 0);
	if (s == NULL)
		return;
	for (size_t i = 0; i < cap; i++) {
		int len = snprintf(key, sizeof(key), "10.9.%zu.%zu", i / 256, i % 256);

		for (int j = 0; j < 1000; j++) {
			s->ops->decide(s, key, (size_t)len, (uint64_t)j, 1, &d);
			admitted += d.admitted;
		}
	}
	s->ops->stats(s, &st);
	printf("memory: sliding-log --limit 1000, %zu keys (the default cap), every log full: RSS +%.1f MB "
	       "(live %llu, admitted %llu)\n", cap, (double)(bench_rss_kb() - before) / 1024.0,
	       (unsigned long long)st.live_keys, (unsigned long long)admitted);
	s->ops->free(s);
}

/* Each figure in a child of its own, so memory one case freed cannot hide the next one's growth. */
static void bench_memory(void)
{
	void (*const cases[])(void) = { bench_memory_keys, bench_memory_full_logs };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		pid_t pid;

		fflush(stdout);
		pid = fork();
		if (pid == 0) {
			cases[i]();
			fflush(stdout);
			_exit(0);
		}
		if (pid > 0)
			waitpid(pid, NULL, 0);
	}
}

static void bench_one(const struct limiter_ops *ops, uint64_t n)
{
	struct limiter_params p;
	double share1, share2;

	/* none and concurrency (released at once) never reject: one row. */
	bool rejects = ops->release == NULL && strcmp(ops->name, "none") != 0;

	for (int admit = 1; admit >= (rejects ? 0 : 1); admit--) {
		if (bench_params(ops, admit, &p) != 0)
			continue;
		double one = bench_store(ops, &p, 1, n, &share1);
		double two = bench_store(ops, &p, 2, n, &share2);
		double bare = bench_decide(ops, &p, n);

		printf("%-15s %-7s %8.1f ns %10.1f ns %10.1f ns %9.1f%%\n", ops->name,
		       admit ? "admit" : "reject", one, two, bare, 100.0 * share1);
	}
}

static int bench_usage(FILE *f)
{
	fprintf(f, "usage: limiter_bench [--limiter NAME|all] [--decisions N] [--keys N] [--no-memory]\n"
	           "  ns per decision (key lookup + decide) on 1 thread and on 2 threads with\n"
	           "  distinct keys (per decision, per thread), and a bare decide().\n"
	           "  --keys N: distinct keys per thread, 1..65536 (default 1024)\n"
	           "  limiters: %s (default token-bucket)\n", limiter_names());
	return f == stdout ? 0 : 2;
}

int main(int argc, char **argv)
{
	const char *name = "token-bucket";
	uint64_t n = 2000000;
	bool memory = true, bad = false;
	char why[128] = "";

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0)
			return bench_usage(stdout);
		if (strcmp(argv[i], "--limiter") == 0 && i + 1 < argc)
			name = argv[++i];
		else if (strcmp(argv[i], "--decisions") == 0 && i + 1 < argc)
			bad = bad || parse_u64(argv[++i], 1, UINT64_MAX, &n, why, sizeof(why)) != 0;
		else if (strcmp(argv[i], "--keys") == 0 && i + 1 < argc)
			bad = bad || parse_u64(argv[++i], 1, BENCH_KEYS_MAX, &bench_keys_n, why, sizeof(why)) != 0;
		else if (strcmp(argv[i], "--no-memory") == 0)
			memory = false;
		else {
			fprintf(stderr, "limiter_bench: unknown option '%s' (try --help)\n", argv[i]);
			return 2;
		}
	}
	if (bad) {
		fprintf(stderr, "limiter_bench: --decisions or --keys: %s\n", why);
		return 2;
	}
	if (strcmp(name, "all") != 0 && limiter_find(name) == NULL) {
		fprintf(stderr, "limiter_bench: --limiter '%s': unknown (known: all, %s)\n", name, limiter_names());
		return 2;
	}
	if (memory)
		bench_memory();
	printf("%-15s %-7s %11s %13s %13s %10s\n", "limiter", "case", "1 thread", "2 threads",
	       "decide only", "admitted");
	for (size_t i = 0; limiter_at(i) != NULL; i++)
		if (strcmp(name, "all") == 0 || strcmp(name, limiter_at(i)->name) == 0)
			bench_one(limiter_at(i), n);
	return 0;
}
