#ifndef RATELAB_PRNG_H
#define RATELAB_PRNG_H

#include <stdint.h>

/*
 * xoshiro256** seeded through splitmix64.  One per thread (or per test);
 * never shared, so no locking.  Same seed, same sequence, on every machine.
 */
struct prng {
	uint64_t s[4];
};

void prng_seed(struct prng *p, uint64_t seed);

/* Next 64 random bits. */
uint64_t prng_next(struct prng *p);

/* Uniform double in [0, 1). */
double prng_double(struct prng *p);

/* Uniform integer in [0, n); 0 when n is 0. */
uint64_t prng_below(struct prng *p, uint64_t n);

/* A fresh seed derived from `seed` and a stream number (one per thread). */
uint64_t prng_stream_seed(uint64_t seed, uint64_t stream);

#endif
