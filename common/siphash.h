#ifndef RATELAB_SIPHASH_H
#define RATELAB_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

/*
 * SipHash (Aumasson and Bernstein), written from the reference algorithm: a
 * keyed hash whose values an attacker who does not know the key cannot
 * predict, so keys chosen to collide in a hash table cannot be computed
 * offline.  SipHash-2-4 is the reference's default; SipHash-1-3 (one
 * compression round, three finalisation rounds) is the faster variant hash
 * tables use.  Each comes with 64- and 128-bit output.  The byte order is the
 * reference's (little-endian loads), so values match its test vectors on
 * every machine.  All functions are pure and thread-safe except
 * siphash_key_random, which reads the kernel's random source.
 */

struct siphash_key {
	uint64_t k0, k1;                 /* the 16 key bytes, little-endian halves */
};

struct siphash_128 {
	uint64_t lo, hi;                 /* output bytes 0-7 and 8-15, little-endian */
};

/* The key made of bytes[0..15], as the reference reads a key. */
struct siphash_key siphash_key_from_bytes(const unsigned char bytes[16]);

/*
 * Fill *key with 16 bytes from getrandom(2).  Returns 0, or -1 when the
 * kernel gives none (the key is then left zeroed: callers must not use it).
 */
int siphash_key_random(struct siphash_key *key);

/* SipHash-2-4 of len bytes at in, 64-bit and 128-bit output. */
uint64_t siphash24(const struct siphash_key *key, const void *in, size_t len);
struct siphash_128 siphash24_128(const struct siphash_key *key, const void *in, size_t len);

/* SipHash-1-3 of len bytes at in, 64-bit and 128-bit output. */
uint64_t siphash13(const struct siphash_key *key, const void *in, size_t len);
struct siphash_128 siphash13_128(const struct siphash_key *key, const void *in, size_t len);

#endif
