/* The memory store's tables: made, cleared, counted and freed (decisions: store_memory.c). */
#include <stdlib.h>
#include <string.h>

#include "server/store/store_memory_impl.h"

/* The buckets a new or reset shard starts with: STORE_BUCKETS_MIN, or fewer for a small cap. */
static size_t shard_first_buckets(const struct store_shard *sh)
{
	return (size_t)sh->max_mask + 1 < STORE_BUCKETS_MIN ? (size_t)sh->max_mask + 1 : STORE_BUCKETS_MIN;
}

/* Free every node chunk of a locked shard, shrink its buckets back to the first size, zero its counters. */
static void shard_clear(struct store_shard *sh)
{
	size_t first = shard_first_buckets(sh);
	uint32_t *b;

	for (size_t c = 0; c < sh->nchunks; c++) {
		free(sh->chunks[c]);
		sh->chunks[c] = NULL;
	}
	/* Out of memory for the small array, the large one is kept and emptied. */
	if ((size_t)sh->mask + 1 > first && (b = store_memory_buckets_new(first)) != NULL) {
		free(sh->buckets);
		sh->buckets = b;
		sh->mask = (uint32_t)(first - 1);
	}
	memset(sh->buckets, 0xff, ((size_t)sh->mask + 1) * sizeof(*sh->buckets));
	sh->head = sh->tail = sh->free = STORE_NIL;
	sh->fresh = 0;
	sh->live = 0;
	sh->evictions = 0;
	sh->expirations = 0;
}

static void memory_reset(struct store *s)
{
	struct store_memory *m = (struct store_memory *)s;

	for (size_t i = 0; i < m->nshards; i++) {
		store_memory_lock(&m->shards[i]);
		shard_clear(&m->shards[i]);
		store_memory_unlock(&m->shards[i]);
	}
}

static void memory_stats(struct store *s, struct store_stats *out)
{
	struct store_memory *m = (struct store_memory *)s;

	*out = (struct store_stats){ 0 };
	for (size_t i = 0; i < m->nshards; i++) {
		struct store_shard *sh = &m->shards[i];

		store_memory_lock(sh);
		out->live_keys += sh->live;
		out->evictions += sh->evictions;
		out->expirations += sh->expirations;
		store_memory_unlock(sh);
	}
}

static void shard_destroy(struct store_shard *sh)
{
	for (size_t c = 0; c < sh->nchunks; c++)
		free(sh->chunks[c]);
	free(sh->chunks);
	free(sh->buckets);
}

static void memory_free(struct store *s)
{
	struct store_memory *m = (struct store_memory *)s;

	if (m == NULL)
		return;
	for (size_t i = 0; i < m->nshards; i++)
		shard_destroy(&m->shards[i]);
	free(m->shards);
	free(m);
}

static const struct store_ops STORE_MEMORY_OPS = {
	.name = "memory",
	.decide = store_memory_decide,
	.release = store_memory_release,
	.reset = memory_reset,
	.stats = memory_stats,
	.free = memory_free,
};

static size_t store_pow2_at_least(size_t n)
{
	size_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

/* Nodes per chunk, as a shift: about STORE_CHUNK_BYTES, at least one node. */
static unsigned store_chunk_shift(size_t node_size)
{
	unsigned s = 0;

	while (s < STORE_CHUNK_SHIFT_MAX && (node_size << (s + 1)) <= STORE_CHUNK_BYTES)
		s++;
	return s;
}

/* Set up shard i of m (its share of max_keys); returns 0 or -1 (nothing to undo). */
static int shard_init(struct store_memory *m, size_t i, size_t max_keys)
{
	struct store_shard *sh = &m->shards[i];

	memset(sh, 0, sizeof(*sh));
	atomic_init(&sh->lock, 0);
	sh->cap = (uint32_t)(max_keys / m->nshards + (i < max_keys % m->nshards));
	sh->node_size = m->node_size;
	sh->chunk_shift = store_chunk_shift(m->node_size);
	sh->nchunks = 1;
	sh->max_mask = (uint32_t)(store_pow2_at_least(sh->cap) - 1);
	sh->mask = (uint32_t)(shard_first_buckets(sh) - 1);
	sh->chunks = calloc(sh->nchunks, sizeof(*sh->chunks));
	sh->buckets = store_memory_buckets_new((size_t)sh->mask + 1);
	if (sh->buckets == NULL || sh->chunks == NULL) {
		free(sh->buckets);
		free(sh->chunks);
		return -1;
	}
	shard_clear(sh);
	return 0;
}

/* Shards: a power of two, at most max_keys (every shard holds at least one key), and enough
 * that no shard holds more than STORE_SHARD_MAX. */
static size_t store_shard_count(size_t shards, size_t max_keys)
{
	size_t n = shards == 0 ? STORE_SHARDS_DEFAULT : shards;

	if (n > (1u << 20))
		n = 1u << 20;
	n = store_pow2_at_least(n);
	while (n > 1 && n > max_keys)
		n >>= 1;
	while (max_keys / n >= STORE_SHARD_MAX)
		n <<= 1;
	return n;
}

/* A node's bytes for ops and p: whole cache lines, so that a small limiter's node is exactly one. */
static size_t store_node_size(const struct limiter_ops *ops, const struct limiter_params *p)
{
	return (sizeof(struct store_node) + ops->state_size(p) + 63) / 64 * 64;
}

size_t store_memory_key_bytes(const struct limiter_ops *ops, const struct limiter_params *p)
{
	/* A full shard's buckets are a power of two at or above its cap: at most two per key. */
	return store_node_size(ops, p) + 2 * sizeof(uint32_t);
}

struct store *store_memory_new_keyed(const struct limiter_ops *ops, const struct limiter_params *p,
                                     size_t max_keys, size_t shards, const struct siphash_key *key)
{
	struct store_memory *m;
	size_t i;

	if (ops == NULL || p == NULL || key == NULL || max_keys == 0)
		return NULL;
	m = calloc(1, sizeof(*m));
	if (m == NULL)
		return NULL;
	m->base.ops = &STORE_MEMORY_OPS;
	m->ops = ops;
	m->params = *p;
	m->hash_key = *key;
	m->node_size = store_node_size(ops, p);
	m->nshards = store_shard_count(shards, max_keys);
	m->shards = aligned_alloc(alignof(struct store_shard), m->nshards * sizeof(*m->shards));
	if (m->shards == NULL)
		goto free_store;
	for (i = 0; i < m->nshards; i++)
		if (shard_init(m, i, max_keys) != 0)
			goto free_shards;
	return &m->base;

free_shards:
	while (i-- > 0)
		shard_destroy(&m->shards[i]);
	free(m->shards);
free_store:
	free(m);
	return NULL;
}

struct store *store_memory_new(const struct limiter_ops *ops, const struct limiter_params *p,
                               size_t max_keys, size_t shards)
{
	struct siphash_key key;

	if (siphash_key_random(&key) != 0)
		return NULL;
	return store_memory_new_keyed(ops, p, max_keys, shards, &key);
}

