/*
 * The in-process key table: a hash table split into shards, each with its own
 * lock, chained buckets and an LRU list.
 *
 * Layout, for speed: a node is one 64-byte cache line for
 * the small limiters (token-bucket, gcra, ...): links, hash and key in 48
 * bytes, then the limiter's state.  Links are 32-bit indices into the shard's
 * node chunks, not pointers, and buckets hold indices too.  A shard's hot
 * fields (lock, LRU ends, bucket array) share one line, and the lock is a
 * spinlock: the critical section is a few dozen instructions, shorter than
 * an uncontended pthread mutex's lock and unlock.
 *
 * Keys are hashed with SipHash-1-3 under a key of the table's own, drawn
 * from getrandom(2) when the table is made: a client cannot compute keys
 * that collide, so it cannot turn a bucket chain into a list it makes the
 * server walk.  Keys up to STORE_KEY_INLINE bytes are copied inline (an IPv6
 * key is 17); a longer key is stored as its first STORE_KEY_INLINE - 16 bytes
 * plus the two halves of its 128-bit SipHash (a collision needs both to
 * match: negligible).  Each shard holds at most its share of max_keys; past
 * it the least recently used key of the shard is evicted.  Idle keys
 * (ops->idle, and unused for about a second) are expired lazily from the LRU
 * tail when a new key arrives.
 *
 * Nothing is sized by the cap up front, so a huge cap costs nothing until
 * keys arrive: a shard starts with STORE_BUCKETS_MIN buckets and doubles
 * them (rehashing under its lock) whenever it holds more keys than buckets,
 * up to the power of two at or above its cap; nodes come from chunks
 * allocated as the shard fills (the last one cut to the cap) and are
 * recycled through a free list, so once the table is full, decide() never
 * allocates.  A reset gives the memory back.
 */
#include <stdlib.h>
#include <string.h>

#include "server/store/store_memory_impl.h"

/* 64x64 -> 128-bit multiply, folded: the mixing step of wyhash. */
static inline uint64_t store_mum(uint64_t a, uint64_t b)
{
	__extension__ unsigned __int128 r = a;

	r *= b;

	return (uint64_t)r ^ (uint64_t)(r >> 64);
}

/*
 * A fast 64-bit hash in the manner of wyhash: keys up to 16 bytes take two
 * overlapping loads and two folded multiplies; longer keys one more multiply
 * per 16 bytes.  Unkeyed, so its values are public: the table does not use it.
 */
static uint64_t store_hash(const char *key, size_t len, uint64_t seed)
{
	const uint64_t k1 = 0xa0761d6478bd642fULL, k2 = 0xe7037ed1a0b428dbULL;
	const char *p = key;
	uint64_t a = 0, b = 0;
	size_t rest = len;

	if (len <= 16) {
		if (len >= 8) {
			a = store_read64(p);
			b = store_read64(p + len - 8);
		} else if (len >= 4) {
			a = store_read32(p);
			b = store_read32(p + len - 4);
		} else if (len > 0) {
			a = (uint64_t)(unsigned char)p[0] << 16 | (uint64_t)(unsigned char)p[len / 2] << 8 |
			    (uint64_t)(unsigned char)p[len - 1];
		}
	} else {
		for (; rest > 16; p += 16, rest -= 16)
			seed = store_mum(store_read64(p) ^ k1, store_read64(p + 8) ^ seed);
		a = store_read64(p + rest - 16);
		b = store_read64(p + rest - 8);
	}
	return store_mum(k1 ^ len, store_mum(a ^ k1, b ^ seed ^ k2));
}

/* Fill the looked-up form of key; returns its hash. */
static uint64_t store_key_make(const struct store_memory *m, struct store_key *k, const char *key, size_t len)
{
	struct siphash_128 w;

	if (len <= STORE_KEY_INLINE) {
		k->bytes = key;
		k->len = (uint8_t)len;
		return siphash13(&m->hash_key, key, len);
	}
	w = siphash13_128(&m->hash_key, key, len);
	k->bytes = k->buf;
	k->len = STORE_KEY_HASHED;
	memcpy(k->buf, key, STORE_KEY_INLINE - 16);
	memcpy(k->buf + STORE_KEY_INLINE - 16, &w.lo, 8);
	memcpy(k->buf + STORE_KEY_INLINE - 8, &w.hi, 8);
	return w.lo;
}

/*
 * Take the shard's lock: one atomic exchange when free.  A waiter spins
 * briefly, then yields, so a holder preempted on a busy machine gets the CPU.
 */
void store_memory_lock(struct store_shard *sh)
{
	unsigned spins = 0;

	while (atomic_exchange_explicit(&sh->lock, 1, memory_order_acquire) != 0) {
		while (atomic_load_explicit(&sh->lock, memory_order_relaxed) != 0) {
			if (++spins < STORE_SPINS) {
				store_pause();
			} else {
				sched_yield();
				spins = 0;
			}
		}
	}
}

/* Buckets for nbuckets chains, every one empty; NULL when out of memory. */
uint32_t *store_memory_buckets_new(size_t nbuckets)
{
	uint32_t *b = malloc(nbuckets * sizeof(*b));

	if (b != NULL)
		memset(b, 0xff, nbuckets * sizeof(*b));
	return b;
}

static void lru_unlink(struct store_shard *sh, struct store_node *n)
{
	if (n->prev != STORE_NIL)
		node_at(sh, n->prev)->next = n->next;
	else
		sh->head = n->next;
	if (n->next != STORE_NIL)
		node_at(sh, n->next)->prev = n->prev;
	else
		sh->tail = n->prev;
}

static void lru_push_front(struct store_shard *sh, struct store_node *n, uint32_t i)
{
	n->prev = STORE_NIL;
	n->next = sh->head;
	if (sh->head != STORE_NIL)
		node_at(sh, sh->head)->prev = i;
	else
		sh->tail = i;
	sh->head = i;
}

/* Equal key bytes; the hash already matched, so this is almost always true: compare in words. */
static inline bool store_key_eq(const char *a, const char *b, size_t len)
{
	size_t i = 0;

	if (len < 8)
		return memcmp(a, b, len) == 0;
	for (; i + 8 < len; i += 8)
		if (store_read64(a + i) != store_read64(b + i))
			return false;
	return store_read64(a + len - 8) == store_read64(b + len - 8);
}

/* The index of k's node in a locked shard, or STORE_NIL. */
static uint32_t shard_find(const struct store_shard *sh, uint64_t hash, const struct store_key *k)
{
	uint32_t i = sh->buckets[hash & sh->mask];
	size_t len = store_key_bytes(k);

	while (i != STORE_NIL) {
		const struct store_node *n = node_at(sh, i);

		if (n->hash == (uint32_t)hash && n->keylen == k->len && store_key_eq(n->key, k->bytes, len))
			return i;
		i = n->chain;
	}
	return STORE_NIL;
}

/* Unlink node i from its bucket and the LRU list. */
static void shard_remove(struct store_shard *sh, uint32_t i)
{
	struct store_node *n = node_at(sh, i);
	uint32_t *pp = &sh->buckets[n->hash & sh->mask];

	while (*pp != i)
		pp = &node_at(sh, *pp)->chain;
	*pp = n->chain;
	lru_unlink(sh, n);
	sh->live--;
}

/* Room in chunks[] for chunk c; returns 0, or -1 when out of memory. */
static int shard_chunk_slot(struct store_shard *sh, size_t c)
{
	size_t n = sh->nchunks * 2 > c + 1 ? sh->nchunks * 2 : c + 1;
	char **p;

	if (c < sh->nchunks)
		return 0;
	p = realloc(sh->chunks, n * sizeof(*p));
	if (p == NULL)
		return -1;
	memset(p + sh->nchunks, 0, (n - sh->nchunks) * sizeof(*p));
	sh->chunks = p;
	sh->nchunks = n;
	return 0;
}

/* A never-used node index, allocating its chunk on first use; STORE_NIL when out of memory. */
static uint32_t shard_fresh(struct store_shard *sh)
{
	size_t c = sh->fresh >> sh->chunk_shift;

	if (sh->fresh >= sh->cap || shard_chunk_slot(sh, c) != 0)
		return STORE_NIL;
	if (sh->chunks[c] == NULL) {
		size_t n = (size_t)1 << sh->chunk_shift;

		/* The last chunk holds only what is left of the cap. */
		if (n > sh->cap - (c << sh->chunk_shift))
			n = sh->cap - (c << sh->chunk_shift);
		sh->chunks[c] = aligned_alloc(64, n * sh->node_size);
		if (sh->chunks[c] == NULL)
			return STORE_NIL;
	}
	return sh->fresh++;
}

/* A node for a new key: expires idle tail keys, evicts the LRU one at the cap, or takes a free one. */
static uint32_t shard_take(struct store_memory *m, struct store_shard *sh, uint64_t now)
{
	uint32_t i;

	for (int k = 0; k < STORE_EXPIRE_SCAN && sh->live > 0; k++) {
		struct store_node *n = node_at(sh, i = sh->tail);

		if (store_tick(now) - n->used < STORE_GRACE_TICKS || !m->ops->idle(&m->params, n->state, now))
			break;
		shard_remove(sh, i);
		sh->expirations++;
		n->chain = sh->free;
		sh->free = i;
	}
	if (sh->live >= sh->cap) {
		i = sh->tail;
		shard_remove(sh, i);
		sh->evictions++;
		return i;
	}
	if (sh->free != STORE_NIL) {
		i = sh->free;
		sh->free = node_at(sh, i)->chain;
		return i;
	}
	return shard_fresh(sh);
}

/*
 * Double a locked shard's buckets and move every chain over: O(keys), once
 * per doubling.  Out of memory, the shard keeps its buckets: chains grow
 * longer, lookups stay correct.
 */
static void shard_grow(struct store_shard *sh)
{
	size_t n = ((size_t)sh->mask + 1) * 2;
	uint32_t *b = store_memory_buckets_new(n);

	if (b == NULL)
		return;
	for (size_t c = 0; c <= sh->mask; c++) {
		uint32_t i = sh->buckets[c];

		while (i != STORE_NIL) {
			struct store_node *nd = node_at(sh, i);
			uint32_t next = nd->chain;

			/* The node's hash is the low 32 bits; a mask never needs more. */
			nd->chain = b[nd->hash & (n - 1)];
			b[nd->hash & (n - 1)] = i;
			i = next;
		}
	}
	free(sh->buckets);
	sh->buckets = b;
	sh->mask = (uint32_t)(n - 1);
}

static struct store_node *shard_insert(struct store_memory *m, struct store_shard *sh, uint64_t hash,
                                       const struct store_key *k, uint64_t now)
{
	uint32_t i = shard_take(m, sh, now);
	struct store_node *n;

	if (i == STORE_NIL)
		return NULL;
	n = node_at(sh, i);
	n->hash = (uint32_t)hash;
	n->used = store_tick(now);
	n->keylen = k->len;
	memcpy(n->key, k->bytes, store_key_bytes(k));
	m->ops->init(&m->params, n->state, now);
	n->chain = sh->buckets[hash & sh->mask];
	sh->buckets[hash & sh->mask] = i;
	lru_push_front(sh, n, i);
	sh->live++;
	if (sh->live > sh->mask && sh->mask < sh->max_mask)
		shard_grow(sh);
	return n;
}

static struct store_shard *store_shard_of(struct store_memory *m, uint64_t hash)
{
	/* High bits pick the shard, low bits the bucket, so the two stay independent. */
	return &m->shards[(hash >> 40) & (m->nshards - 1)];
}

/* k's node in a locked shard, made the most recent, or created; NULL when out of memory. */
static struct store_node *shard_get(struct store_memory *m, struct store_shard *sh, uint64_t hash,
                                    const struct store_key *k, uint64_t now)
{
	uint32_t i = shard_find(sh, hash, k);
	struct store_node *n;

	if (i == STORE_NIL)
		return shard_insert(m, sh, hash, k, now);
	n = node_at(sh, i);
	n->used = store_tick(now);
	if (sh->head != i) {
		lru_unlink(sh, n);
		lru_push_front(sh, n, i);
	}
	return n;
}

int store_memory_decide(struct store *s, const char *key, size_t keylen, uint64_t now, uint64_t cost,
                         struct limiter_decision *d)
{
	struct store_memory *m = (struct store_memory *)s;
	struct store_key k;
	uint64_t hash = store_key_make(m, &k, key, keylen);
	struct store_shard *sh = store_shard_of(m, hash);
	struct store_node *n;

	store_memory_lock(sh);
	n = shard_get(m, sh, hash, &k, now);
	if (n != NULL)
		m->ops->decide(&m->params, n->state, now, cost, d);
	store_memory_unlock(sh);
	return n != NULL ? 0 : -1;
}

void store_memory_release(struct store *s, const char *key, size_t keylen, uint64_t now)
{
	struct store_memory *m = (struct store_memory *)s;
	struct store_key k;
	struct store_shard *sh;
	uint64_t hash;
	uint32_t i;

	(void)now;
	/* Callers release every admitted request; most limiters have nothing to give back. */
	if (m->ops->release == NULL)
		return;
	hash = store_key_make(m, &k, key, keylen);
	sh = store_shard_of(m, hash);
	store_memory_lock(sh);
	i = shard_find(sh, hash, &k);
	/* A key evicted while in flight was already forgotten: nothing to give back. */
	if (i != STORE_NIL)
		m->ops->release(&m->params, node_at(sh, i)->state);
	store_memory_unlock(sh);
}


uint64_t store_memory_hash(const void *key, size_t len, uint64_t seed)
{
	return store_hash(key, len, seed);
}
