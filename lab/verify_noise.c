/* The noise probe: a sleeper's oversleep while a verify run goes on. */
#include "lab/verify_noise.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"

struct verify_noise {
	pthread_t thread;
	atomic_bool stop;
	uint64_t late[VERIFY_NOISE_SAMPLES];  /* a ring: the latest samples */
	size_t n;
};

static void *probe(void *arg)
{
	struct verify_noise *v = arg;
	struct timespec ts = { 0, (long)VERIFY_NOISE_SLEEP_NS };

	while (!atomic_load(&v->stop)) {
		uint64_t t0 = clock_monotonic_ns(), slept;

		nanosleep(&ts, NULL);
		slept = clock_monotonic_ns() - t0;
		v->late[v->n++ % VERIFY_NOISE_SAMPLES] = slept > VERIFY_NOISE_SLEEP_NS ? slept - VERIFY_NOISE_SLEEP_NS : 0;
	}
	return NULL;
}

struct verify_noise *verify_noise_start(void)
{
	struct verify_noise *v = calloc(1, sizeof(*v));

	if (v && pthread_create(&v->thread, NULL, probe, v) != 0) {
		free(v);
		return NULL;
	}
	return v;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

uint64_t verify_noise_stop(struct verify_noise *v)
{
	size_t n;
	uint64_t p90;

	if (!v)
		return 0;
	atomic_store(&v->stop, true);
	pthread_join(v->thread, NULL);
	n = v->n < VERIFY_NOISE_SAMPLES ? v->n : VERIFY_NOISE_SAMPLES;
	qsort(v->late, n, sizeof(v->late[0]), cmp_u64);
	p90 = n ? v->late[n * 9 / 10] : 0;
	free(v);
	return p90;
}
