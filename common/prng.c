#include "common/prng.h"

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void prng_seed(struct prng *p, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		p->s[i] = splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t prng_next(struct prng *p)
{
	uint64_t *s = p->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

double prng_double(struct prng *p)
{
	return (double)(prng_next(p) >> 11) * 0x1.0p-53;
}

uint64_t prng_below(struct prng *p, uint64_t n)
{
	if (n == 0)
		return 0;
	/* Rejection sampling keeps it exactly uniform. */
	uint64_t limit = UINT64_MAX - UINT64_MAX % n;
	uint64_t x;

	do
		x = prng_next(p);
	while (x >= limit);
	return x % n;
}

uint64_t prng_stream_seed(uint64_t seed, uint64_t stream)
{
	uint64_t x = seed ^ (stream * 0xd1b54a32d192ed03ULL);

	return splitmix64(&x);
}
