/* Per-client figures: the threads' shards, the table of announced instants, and the merged snapshot. */
#include "server/clients.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "server/http/client_key.h"

#define SHARDS 16
#define SHARD_SETS 64
#define WAYS 8
#define SHARD_SLOTS (SHARD_SETS * WAYS)

/*
 * An announced instant is one word: the identity's tag (24 bits of its hash,
 * never 0) over the instant in milliseconds since the table started, plus
 * one (40 bits).  0 is an empty way.
 */
#define DUE_SETS 2048
#define DUE_MS_BITS 40
#define DUE_MS_MASK ((1ULL << DUE_MS_BITS) - 1)

struct entry {
	uint64_t hash;                  /* 0: empty */
	struct clients_row row;
};

struct shard {
	_Alignas(64) pthread_mutex_t lock;   /* own cache lines: each shard is its thread's */
	struct entry e[SHARD_SLOTS];
	struct clients_row evicted;     /* the rows evicted from e, summed */
	struct clients_quota quota[CLIENTS_MAX_ROUTES];
};

struct due_set {
	_Alignas(64) _Atomic uint64_t w[WAYS];
};

struct clients {
	struct siphash_key key;
	uint64_t start_ns;
	uint64_t gen;                   /* unique per table: keys the threads' shard choice */
	_Atomic unsigned next_shard;
	struct shard *shards;           /* SHARDS */
	struct due_set *due;            /* DUE_SETS */
};

static _Atomic uint64_t clients_generation;
static _Thread_local uint64_t tl_gen;
static _Thread_local unsigned tl_shard;

struct clients *clients_new(const struct siphash_key *key, uint64_t now_ns)
{
	struct clients *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->key = *key;
	c->start_ns = now_ns;
	c->gen = atomic_fetch_add(&clients_generation, 1) + 1;
	c->shards = aligned_alloc(64, SHARDS * sizeof(*c->shards));
	c->due = aligned_alloc(64, DUE_SETS * sizeof(*c->due));
	if (!c->shards || !c->due) {
		free(c->shards);
		c->shards = NULL;
		clients_free(c);
		return NULL;
	}
	memset(c->shards, 0, SHARDS * sizeof(*c->shards));
	memset(c->due, 0, DUE_SETS * sizeof(*c->due));
	for (size_t i = 0; i < SHARDS; i++)
		pthread_mutex_init(&c->shards[i].lock, NULL);
	return c;
}

void clients_free(struct clients *c)
{
	if (!c)
		return;
	if (c->shards)
		for (size_t i = 0; i < SHARDS; i++)
			pthread_mutex_destroy(&c->shards[i].lock);
	free(c->shards);
	free(c->due);
	free(c);
}

static unsigned shards_used(struct clients *c)
{
	unsigned n = atomic_load(&c->next_shard);

	return n < SHARDS ? n : SHARDS;
}

/* This thread's shard of c: its own while there are at most SHARDS threads. */
static struct shard *my_shard(struct clients *c)
{
	if (tl_gen != c->gen) {
		tl_shard = atomic_fetch_add(&c->next_shard, 1) % SHARDS;
		tl_gen = c->gen;
	}
	return &c->shards[tl_shard];
}

static uint64_t due_tag(uint64_t hash)
{
	return ((hash >> DUE_MS_BITS) | 1) << DUE_MS_BITS;
}

/* The way of set s that holds tag (its word in *word), or -1 (*word 0). */
static int due_find(struct due_set *s, uint64_t tag, uint64_t *word)
{
	for (int i = 0; i < WAYS; i++) {
		uint64_t w = atomic_load_explicit(&s->w[i], memory_order_relaxed);

		if ((w & ~DUE_MS_MASK) == tag) {
			*word = w;
			return i;
		}
	}
	*word = 0;
	return -1;
}

/* The way a new instant takes: an empty one, else the one that fell due first. */
static int due_victim(struct due_set *s)
{
	uint64_t first = UINT64_MAX;
	int way = 0;

	for (int i = 0; i < WAYS; i++) {
		uint64_t w = atomic_load_explicit(&s->w[i], memory_order_relaxed);

		if (w == 0)
			return i;
		if ((w & DUE_MS_MASK) < first) {
			first = w & DUE_MS_MASK;
			way = i;
		}
	}
	return way;
}

static void row_add(struct clients_row *dst, const struct clients_row *src)
{
	dst->clients += src->clients;
	dst->requests += src->requests;
	dst->admitted += src->admitted;
	dst->rejected += src->rejected;
	dst->retries += src->retries;
	dst->early += src->early;
	dst->early_ns += src->early_ns;
	if (src->early_max_ns > dst->early_max_ns)
		dst->early_max_ns = src->early_max_ns;
	if (src->last_ns > dst->last_ns)
		dst->last_ns = src->last_ns;
}

/* The row of hash in sh: found, or made in an empty way, or in the least recently seen one's place. */
static struct clients_row *shard_row(struct shard *sh, uint64_t hash, const struct clients_event *e)
{
	struct entry *set = &sh->e[(hash >> 8) % SHARD_SETS * WAYS], *slot = NULL;

	for (int i = 0; i < WAYS && !slot; i++) {
		if (set[i].hash == hash)
			return &set[i].row;
		if (set[i].hash == 0)
			slot = &set[i];
	}
	if (!slot) {
		slot = &set[0];
		for (int i = 1; i < WAYS; i++)
			if (set[i].row.last_ns < slot->row.last_ns)
				slot = &set[i];
		row_add(&sh->evicted, &slot->row);
	}
	memset(slot, 0, sizeof(*slot));
	slot->hash = hash;
	slot->row.clients = 1;
	client_key_name(e->id, e->idlen, slot->row.name, sizeof(slot->row.name));
	/* The aggregate's name is taken: a client called that is shown apart (one /metrics series each). */
	if (strcmp(slot->row.name, CLIENTS_REST_NAME) == 0)
		snprintf(slot->row.name, sizeof(slot->row.name), "%s", CLIENTS_REST_NAME " (a client)");
	return &slot->row;
}

/* Count e in this thread's shard: a retry when an episode was open, early by early_ns (0: not early). */
static void count(struct clients *c, uint64_t hash, const struct clients_event *e, bool retry, uint64_t early_ns,
                  uint64_t now_ns)
{
	struct shard *sh = my_shard(c);
	struct clients_row *r;

	pthread_mutex_lock(&sh->lock);
	r = shard_row(sh, hash, e);
	r->requests++;
	r->admitted += e->admitted;
	r->rejected += !e->admitted;
	r->retries += retry;
	if (early_ns > 0) {
		r->early++;
		r->early_ns += early_ns;
		if (early_ns > r->early_max_ns)
			r->early_max_ns = early_ns;
	}
	r->last_ns = now_ns;
	if (e->route >= 0 && e->route < CLIENTS_MAX_ROUTES)
		sh->quota[e->route] = (struct clients_quota){ true, e->remaining, e->limit, now_ns };
	pthread_mutex_unlock(&sh->lock);
}

void clients_record(struct clients *c, const struct clients_event *e, uint64_t now_ns)
{
	uint64_t hash = siphash13(&c->key, e->id, e->idlen) | 1;
	struct due_set *s = &c->due[hash % DUE_SETS];
	uint64_t tag = due_tag(hash), word, rel = now_ns > c->start_ns ? now_ns - c->start_ns : 0, due_ns;
	int way = due_find(s, tag, &word);

	due_ns = way >= 0 ? ((word & DUE_MS_MASK) - 1) * NS_PER_MS : 0;
	if (!e->admitted) {
		uint64_t next = tag | (((rel + e->announced_ns) / NS_PER_MS + 1) & DUE_MS_MASK);

		/* Most rejections of a busy client fall in the same millisecond: no store, no shared write. */
		if (next != word)
			atomic_store_explicit(&s->w[way >= 0 ? way : due_victim(s)], next, memory_order_relaxed);
	} else if (way >= 0) {
		/* Only this episode's word: a rejection on another thread may have written a newer one. */
		atomic_compare_exchange_strong_explicit(&s->w[way], &word, 0, memory_order_relaxed,
		                                        memory_order_relaxed);
	}
	count(c, hash, e, way >= 0, due_ns > rel ? due_ns - rel : 0, now_ns);
}

void clients_reset(struct clients *c)
{
	unsigned used = shards_used(c);

	for (unsigned i = 0; i < used; i++) {
		struct shard *sh = &c->shards[i];

		pthread_mutex_lock(&sh->lock);
		memset(sh->e, 0, sizeof(sh->e));
		memset(&sh->evicted, 0, sizeof(sh->evicted));
		memset(sh->quota, 0, sizeof(sh->quota));
		pthread_mutex_unlock(&sh->lock);
	}
	for (size_t i = 0; i < DUE_SETS; i++)
		for (int k = 0; k < WAYS; k++)
			atomic_store_explicit(&c->due[i].w[k], 0, memory_order_relaxed);
}

static int by_hash(const void *a, const void *b)
{
	uint64_t x = ((const struct entry *)a)->hash, y = ((const struct entry *)b)->hash;

	return x < y ? -1 : x > y;
}

/* Most requests first, then by name: a stable order for equal counts. */
static int by_activity(const void *a, const void *b)
{
	const struct clients_row *x = &((const struct entry *)a)->row, *y = &((const struct entry *)b)->row;

	if (x->requests != y->requests)
		return x->requests > y->requests ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Copy shard sh's rows into all (from *n on), its evicted sum into out->rest, its newer quotas into out. */
static void shard_collect(struct shard *sh, struct entry *all, size_t *n, struct clients_snapshot *out)
{
	pthread_mutex_lock(&sh->lock);
	for (size_t i = 0; i < SHARD_SLOTS; i++)
		if (sh->e[i].hash != 0)
			all[(*n)++] = sh->e[i];
	row_add(&out->rest, &sh->evicted);
	for (size_t r = 0; r < CLIENTS_MAX_ROUTES; r++)
		if (sh->quota[r].known && sh->quota[r].at_ns >= out->quota[r].at_ns)
			out->quota[r] = sh->quota[r];
	pthread_mutex_unlock(&sh->lock);
}

/* One entry per identity: the shards' rows of one client summed.  Returns the count left. */
static size_t merge_same(struct entry *all, size_t n)
{
	size_t m = 0;

	qsort(all, n, sizeof(*all), by_hash);
	for (size_t i = 0; i < n; i++) {
		if (m > 0 && all[m - 1].hash == all[i].hash)
			row_add(&all[m - 1].row, &all[i].row);
		else
			all[m++] = all[i];
	}
	return m;
}

int clients_snapshot(struct clients *c, size_t top, struct clients_snapshot *out)
{
	unsigned used = shards_used(c);
	struct entry *all = malloc(((size_t)used * SHARD_SLOTS + 1) * sizeof(*all));
	size_t n = 0;

	memset(out, 0, sizeof(*out));
	snprintf(out->rest.name, sizeof(out->rest.name), "%s", CLIENTS_REST_NAME);
	if (!all)
		return -1;
	for (unsigned i = 0; i < used; i++)
		shard_collect(&c->shards[i], all, &n, out);
	n = merge_same(all, n);
	qsort(all, n, sizeof(*all), by_activity);
	out->n = n < top ? n : top;
	out->rows = malloc((out->n + 1) * sizeof(*out->rows));
	if (!out->rows) {
		free(all);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		if (i < out->n)
			out->rows[i] = all[i].row;
		else
			row_add(&out->rest, &all[i].row);
	}
	free(all);
	return 0;
}

void clients_snapshot_destroy(struct clients_snapshot *s)
{
	free(s->rows);
	s->rows = NULL;
	s->n = 0;
}

enum clients_verdict clients_verdict_of(const struct clients_row *r)
{
	if (r->early == 0)
		return CLIENTS_POLITE;
	return r->early * 2 >= r->retries ? CLIENTS_IGNORES_RETRY_AFTER : CLIENTS_TOO_EARLY;
}

const char *clients_verdict_name(enum clients_verdict v)
{
	static const char *const NAMES[] = { "polite", "too early", "ignores Retry-After" };

	return v <= CLIENTS_IGNORES_RETRY_AFTER ? NAMES[v] : "?";
}
