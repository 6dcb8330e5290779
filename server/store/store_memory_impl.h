#ifndef RATELAB_STORE_MEMORY_IMPL_H
#define RATELAB_STORE_MEMORY_IMPL_H

/*
 * Inside the memory store (store_memory.c: lookups and decisions;
 * store_memory_table.c: making, clearing and freeing the tables).  Not an
 * interface: only those two files include it.
 */
#include <sched.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "common/siphash.h"
#include "server/store/store.h"

#define STORE_KEY_INLINE   27
#define STORE_KEY_HASHED   (STORE_KEY_INLINE + 1)  /* keylen marker of a hashed-down key */
#define STORE_SHARDS_DEFAULT 16
#define STORE_EXPIRE_SCAN  2                      /* idle tail keys checked per new key */
#define STORE_NIL          UINT32_MAX             /* the null node index */
#define STORE_SHARD_MAX    (1ULL << 31)           /* keys per shard: indices stay below STORE_NIL */
#define STORE_CHUNK_BYTES  (256 * 1024)           /* nodes are allocated this much at a time */
#define STORE_CHUNK_SHIFT_MAX 12                  /* at most 4096 nodes per chunk */
#define STORE_SPINS        64                     /* pauses before a waiting thread yields */
#define STORE_BUCKETS_MIN  256                    /* a new or reset shard's buckets */
/*
 * An idle key is expired only once it has also gone unused for
 * STORE_GRACE_TICKS ticks of 2^20 ns (about 1.07 s): a client whose bucket
 * refilled between two requests keeps its node instead of churning through
 * expire and re-create.  Ticks are 32 bits and wrap after ~52 days; a
 * comparison across a wrap only delays an expiry.
 */
#define STORE_TICK_SHIFT   20
#define STORE_GRACE_TICKS  1024u

struct store_node {
	uint32_t prev, next;             /* LRU: prev is newer, next older; STORE_NIL at the ends */
	uint32_t chain;                  /* next in bucket, or in the free list */
	uint32_t hash;                   /* low half of the key's hash: bucket and quick compare */
	uint32_t used;                   /* last use, in STORE_TICK units of monotonic time */
	uint8_t keylen;
	char key[STORE_KEY_INLINE];
	uint64_t state[];                /* the limiter's blob, at byte 48, 8-byte aligned */
};

_Static_assert(sizeof(struct store_node) == 48, "a token-bucket node must fill one cache line");

struct store_shard {
	/* First cache line: everything a decision on a known key touches. */
	alignas(64) atomic_uint lock;    /* 0 free, 1 held */
	uint32_t head, tail;             /* LRU ends: newest, oldest */
	uint32_t mask;                   /* nbuckets - 1; grows up to max_mask */
	uint32_t *buckets;               /* node index of each chain's first node */
	char **chunks;                   /* node storage, chunk i >> chunk_shift */
	size_t node_size;
	unsigned chunk_shift;
	uint32_t live, cap;
	uint32_t free;                   /* recycled nodes, linked by chain */
	uint32_t fresh;                  /* nodes at or past this index were never used */
	/* Second line: the rarely touched. */
	size_t nchunks;                  /* slots in chunks[]: doubled as the shard fills */
	uint32_t max_mask;               /* buckets at the cap, minus one */
	uint64_t evictions, expirations;
};

struct store_memory {
	struct store base;
	const struct limiter_ops *ops;
	struct limiter_params params;
	size_t node_size;
	size_t nshards;
	struct store_shard *shards;
	struct siphash_key hash_key;
};

/* A key as looked up: the caller's bytes when short, else prefix + two hashes in buf. */
struct store_key {
	const char *bytes;
	uint8_t len;
	char buf[STORE_KEY_INLINE];
};

static inline uint64_t store_read64(const char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static inline uint64_t store_read32(const char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static inline size_t store_key_bytes(const struct store_key *k)
{
	return k->len == STORE_KEY_HASHED ? STORE_KEY_INLINE : k->len;
}

static inline uint32_t store_tick(uint64_t now)
{
	return (uint32_t)(now >> STORE_TICK_SHIFT);
}

static inline void store_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static inline struct store_node *node_at(const struct store_shard *sh, uint32_t i)
{
	return (struct store_node *)(void *)(sh->chunks[i >> sh->chunk_shift] +
	                                     (size_t)(i & ((1u << sh->chunk_shift) - 1)) * sh->node_size);
}


/* The shard's spinlock (store_memory.c). */
void store_memory_lock(struct store_shard *sh);

static inline void store_memory_unlock(struct store_shard *sh)
{
	atomic_store_explicit(&sh->lock, 0, memory_order_release);
}

/* Buckets for nbuckets chains, every one empty; NULL when out of memory. */
uint32_t *store_memory_buckets_new(size_t nbuckets);

/* The store ops on the hot path (store_memory.c). */
int store_memory_decide(struct store *s, const char *key, size_t keylen, uint64_t now, uint64_t cost,
                        struct limiter_decision *d);
void store_memory_release(struct store *s, const char *key, size_t keylen, uint64_t now);

#endif
