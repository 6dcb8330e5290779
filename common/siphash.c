/*
 * SipHash-c-d from the reference algorithm (https://github.com/veorq/SipHash):
 * four 64-bit lanes seeded from the key, c rounds per 8-byte block and after
 * the length-tagged tail, d rounds of finalisation.  The 128-bit variant
 * differs only in its 0xee / 0xdd constants and a second finalisation.  The
 * round counts are constants at each call of the core, so the compiler
 * unrolls them.
 */
#include "common/siphash.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/random.h>

#define SIPHASH_RANDOM_TRIES 8

struct sip_state {
	uint64_t v0, v1, v2, v3;
};

static inline uint64_t sip_rotl(uint64_t x, unsigned b)
{
	return (x << b) | (x >> (64 - b));
}

static inline uint64_t sip_load64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

static inline void sip_rounds(struct sip_state *s, int n)
{
	for (int i = 0; i < n; i++) {
		s->v0 += s->v1;
		s->v1 = sip_rotl(s->v1, 13);
		s->v1 ^= s->v0;
		s->v0 = sip_rotl(s->v0, 32);
		s->v2 += s->v3;
		s->v3 = sip_rotl(s->v3, 16);
		s->v3 ^= s->v2;
		s->v0 += s->v3;
		s->v3 = sip_rotl(s->v3, 21);
		s->v3 ^= s->v0;
		s->v2 += s->v1;
		s->v1 = sip_rotl(s->v1, 17);
		s->v1 ^= s->v2;
		s->v2 = sip_rotl(s->v2, 32);
	}
}

/* Seed the lanes from key and compress every block of in, the length-tagged tail last. */
static inline void sip_absorb(struct sip_state *s, const struct siphash_key *key, const void *in, size_t len,
                              int c, bool wide)
{
	const unsigned char *p = in, *end = p + (len & ~(size_t)7);
	uint64_t m, b = (uint64_t)len << 56;

	s->v0 = 0x736f6d6570736575ULL ^ key->k0;
	s->v1 = 0x646f72616e646f6dULL ^ key->k1 ^ (wide ? 0xee : 0);
	s->v2 = 0x6c7967656e657261ULL ^ key->k0;
	s->v3 = 0x7465646279746573ULL ^ key->k1;
	for (; p != end; p += 8) {
		m = sip_load64(p);
		s->v3 ^= m;
		sip_rounds(s, c);
		s->v0 ^= m;
	}
	for (size_t i = len & 7; i > 0; i--)
		b |= (uint64_t)p[i - 1] << (8 * (i - 1));
	s->v3 ^= b;
	sip_rounds(s, c);
	s->v0 ^= b;
}

static inline uint64_t sip_final(struct sip_state *s, uint64_t lane2, int d)
{
	s->v2 ^= lane2;
	sip_rounds(s, d);
	return s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
}

static inline uint64_t sip_64(const struct siphash_key *key, const void *in, size_t len, int c, int d)
{
	struct sip_state s;

	sip_absorb(&s, key, in, len, c, false);
	return sip_final(&s, 0xff, d);
}

static inline struct siphash_128 sip_128(const struct siphash_key *key, const void *in, size_t len, int c, int d)
{
	struct sip_state s;
	struct siphash_128 out;

	sip_absorb(&s, key, in, len, c, true);
	out.lo = sip_final(&s, 0xee, d);
	s.v1 ^= 0xdd;
	out.hi = sip_final(&s, 0, d);
	return out;
}

uint64_t siphash24(const struct siphash_key *key, const void *in, size_t len)
{
	return sip_64(key, in, len, 2, 4);
}

struct siphash_128 siphash24_128(const struct siphash_key *key, const void *in, size_t len)
{
	return sip_128(key, in, len, 2, 4);
}

uint64_t siphash13(const struct siphash_key *key, const void *in, size_t len)
{
	return sip_64(key, in, len, 1, 3);
}

struct siphash_128 siphash13_128(const struct siphash_key *key, const void *in, size_t len)
{
	return sip_128(key, in, len, 1, 3);
}

struct siphash_key siphash_key_from_bytes(const unsigned char bytes[16])
{
	struct siphash_key k = { sip_load64(bytes), sip_load64(bytes + 8) };

	return k;
}

int siphash_key_random(struct siphash_key *key)
{
	unsigned char buf[16];
	size_t got = 0;

	memset(key, 0, sizeof(*key));
	/* 16 bytes come in one call once the pool is initialised; EINTR can still cut one short. */
	for (int i = 0; i < SIPHASH_RANDOM_TRIES && got < sizeof(buf); i++) {
		ssize_t n = getrandom(buf + got, sizeof(buf) - got, 0);

		if (n > 0)
			got += (size_t)n;
		else if (n < 0 && errno != EINTR)
			break;
	}
	if (got < sizeof(buf))
		return -1;
	*key = siphash_key_from_bytes(buf);
	memset(buf, 0, sizeof(buf));
	return 0;
}
