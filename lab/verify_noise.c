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
	struct verify_grade_stall stalls[VERIFY_GRADE_MAX_STALLS];
	size_t nstalls;
};

static void *probe(void *arg)
{
	struct verify_noise *v = arg;
	struct timespec ts = { 0, (long)VERIFY_NOISE_SLEEP_NS };

	while (!atomic_load(&v->stop)) {
		uint64_t t0 = clock_monotonic_ns(), t1, late;

		nanosleep(&ts, NULL);
		t1 = clock_monotonic_ns();
		late = t1 - t0 > VERIFY_NOISE_SLEEP_NS ? t1 - t0 - VERIFY_NOISE_SLEEP_NS : 0;
		v->late[v->n++ % VERIFY_NOISE_SAMPLES] = late;
		if (late >= VERIFY_NOISE_STALL_NS && v->nstalls < VERIFY_GRADE_MAX_STALLS)
			v->stalls[v->nstalls++] = (struct verify_grade_stall){ t1 - late, t1 };
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

void verify_noise_stop(struct verify_noise *v, struct verify_noise_report *out)
{
	size_t n;

	memset(out, 0, sizeof(*out));
	if (!v)
		return;
	atomic_store(&v->stop, true);
	pthread_join(v->thread, NULL);
	n = v->n < VERIFY_NOISE_SAMPLES ? v->n : VERIFY_NOISE_SAMPLES;
	qsort(v->late, n, sizeof(v->late[0]), cmp_u64);
	out->p90_ns = n ? v->late[n * 9 / 10] : 0;
	memcpy(out->stalls, v->stalls, v->nstalls * sizeof(v->stalls[0]));
	out->nstalls = v->nstalls;
	free(v);
}
