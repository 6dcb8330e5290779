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
 * never 0) over a closed bit (an admission ended the episode, the wait
 * itself still known) and the instant in milliseconds since the table
 * started, plus one (39 bits).  0 is an empty way.
 */
#define DUE_SETS 2048
#define DUE_MS_BITS 40
#define DUE_TAG_MASK (~((1ULL << DUE_MS_BITS) - 1))
#define DUE_CLOSED (1ULL << (DUE_MS_BITS - 1))
#define DUE_MS_MASK (DUE_CLOSED - 1)

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

/*
 * told[i] is when w[i]'s wait was announced, as tag over milliseconds plus
 * one: a pair written without a lock, so a reader checks the tag of both.
 */
struct due_set {
	_Alignas(64) _Atomic uint64_t w[WAYS];
	_Atomic uint64_t told[WAYS];
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

		if ((w & DUE_TAG_MASK) == tag) {
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
	dst->paired += src->paired;
	dst->waiting_new += src->waiting_new;
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

/* How one request is counted: a retry or not, early by early_ns, paired, a first attempt during a wait. */
struct judged {
	bool retry, paired, waiting_new;
	uint64_t early_ns;
};

/* Count e in this thread's shard as j says. */
static void count(struct clients *c, uint64_t hash, const struct clients_event *e, const struct judged *j,
                  uint64_t now_ns)
{
	struct shard *sh = my_shard(c);
	struct clients_row *r;

	pthread_mutex_lock(&sh->lock);
	r = shard_row(sh, hash, e);
	r->requests++;
	r->admitted += e->admitted;
	r->rejected += !e->admitted;
	r->retries += j->retry;
	r->paired += j->paired;
	r->waiting_new += j->waiting_new;
	if (j->early_ns > 0) {
		r->early++;
		r->early_ns += j->early_ns;
		if (j->early_ns > r->early_max_ns)
			r->early_max_ns = j->early_ns;
	}
	r->last_ns = now_ns;
	if (e->route >= 0 && e->route < CLIENTS_MAX_ROUTES)
		sh->quota[e->route] = (struct clients_quota){ true, e->remaining, e->limit, now_ns };
	pthread_mutex_unlock(&sh->lock);
}

/* One open wait in the instants table: a client's latest, or one request's (keyed by its Retry-Request). */
struct due_ref {
	struct due_set *s;
	uint64_t tag, word;
	int way;                 /* -1: none known */
	bool open;               /* known, and no admission since */
	uint64_t due_ns;         /* since the table's start; valid when way >= 0 */
	uint64_t told_ns;        /* when it was announced; UINT64_MAX: not known */
};

static void due_open(struct clients *c, uint64_t hash, struct due_ref *d)
{
	d->s = &c->due[hash % DUE_SETS];
	d->tag = due_tag(hash);
	d->way = due_find(d->s, d->tag, &d->word);
	d->due_ns = d->way >= 0 ? ((d->word & DUE_MS_MASK) - 1) * NS_PER_MS : 0;
	d->open = d->way >= 0 && !(d->word & DUE_CLOSED);
	d->told_ns = UINT64_MAX;
	if (d->way >= 0) {
		uint64_t t = atomic_load_explicit(&d->s->told[d->way], memory_order_relaxed);

		if ((t & DUE_TAG_MASK) == d->tag && (t & DUE_MS_MASK) > 0)
			d->told_ns = ((t & DUE_MS_MASK) - 1) * NS_PER_MS;
	}
}

/* A rejection at rel announced `announced`: the wait is due then (to the millisecond below). */
static void due_set_at(struct due_ref *d, uint64_t rel, uint64_t announced)
{
	uint64_t next = d->tag | (((rel + announced) / NS_PER_MS + 1) & DUE_MS_MASK);

	int way;

	/* Most rejections of a busy client fall in the same millisecond: no store, no shared write. */
	if (next == d->word)
		return;
	way = d->way >= 0 ? d->way : due_victim(d->s);
	atomic_store_explicit(&d->s->w[way], next, memory_order_relaxed);
	atomic_store_explicit(&d->s->told[way], d->tag | ((rel / NS_PER_MS + 1) & DUE_MS_MASK), memory_order_relaxed);
}

/*
 * An admission ends the episode but not the wait it announced: only this
 * episode's word, as a rejection on another thread may have written a newer one.
 */
static void due_close(struct due_ref *d)
{
	if (d->open)
		atomic_compare_exchange_strong_explicit(&d->s->w[d->way], &d->word, d->word | DUE_CLOSED,
		                                        memory_order_relaxed, memory_order_relaxed);
}

/* The rule of clients.h: client is the client's latest wait, req this request's own (way -1 without a key). */
static void judge(const struct clients_event *e, const struct due_ref *client, const struct due_ref *req,
                  uint64_t rel, struct judged *j)
{
	const struct due_ref *by = client;

	memset(j, 0, sizeof(*j));
	if (e->said == CLIENTS_SAID_FIRST) {
		/* One that left before the 429 could have reached the client was not sent while told. */
		j->waiting_new = client->way >= 0 && client->due_ns > rel && client->told_ns != UINT64_MAX &&
		                 rel >= client->told_ns + CLIENTS_HEARD_NS;
		return;
	}
	if (e->said == CLIENTS_SAID_RETRY && req->open) {
		by = req;
		j->paired = true;
	}
	j->retry = e->said == CLIENTS_SAID_RETRY || client->open;
	if (by->open && by->due_ns > rel)
		j->early_ns = by->due_ns - rel;
}

void clients_record(struct clients *c, const struct clients_event *e, uint64_t now_ns)
{
	uint64_t hash = siphash13(&c->key, e->id, e->idlen) | 1;
	uint64_t rel = now_ns > c->start_ns ? now_ns - c->start_ns : 0;
	struct due_ref client, req = { .way = -1 };
	struct judged j;

	due_open(c, hash, &client);
	/* A request's own wait is keyed by its client and its key, so two clients' keys never meet. */
	if (e->request != NULL && e->requestlen > 0)
		due_open(c, (siphash13(&c->key, e->request, e->requestlen) ^ (hash * 0x9e3779b97f4a7c15ULL)) | 1, &req);
	judge(e, &client, &req, rel, &j);
	if (!e->admitted) {
		due_set_at(&client, rel, e->announced_ns);
		if (e->request != NULL && e->requestlen > 0)
			due_set_at(&req, rel, e->announced_ns);
	} else {
		due_close(&client);
		due_close(&req);
	}
	count(c, hash, e, &j, now_ns);
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
		for (int k = 0; k < WAYS; k++) {
			atomic_store_explicit(&c->due[i].w[k], 0, memory_order_relaxed);
			atomic_store_explicit(&c->due[i].told[k], 0, memory_order_relaxed);
		}
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

/* One entry per identity: the shards' rows of one client summed, still one client.  Returns the count left. */
static size_t merge_same(struct entry *all, size_t n)
{
	size_t m = 0;

	qsort(all, n, sizeof(*all), by_hash);
	for (size_t i = 0; i < n; i++) {
		if (m > 0 && all[m - 1].hash == all[i].hash) {
			row_add(&all[m - 1].row, &all[i].row);
			all[m - 1].row.clients = 1;
		} else {
			all[m++] = all[i];
		}
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

void clients_explain(const struct clients_row *r, char *buf, size_t len)
{
	int n;

	if (r->retries == 0)
		n = snprintf(buf, len, "no retries");
	else if (r->early == 0)
		n = snprintf(buf, len, "every retry waited %s", r->paired ? "its own Retry-After" : "the Retry-After it was given");
	else
		n = snprintf(buf, len, "%llu of %llu retries came back before %s wait was over, %.1f s early on average",
		             (unsigned long long)r->early, (unsigned long long)r->retries, r->paired ? "their own" : "the",
		             (double)r->early_ns / (double)r->early / 1e9);
	if (r->waiting_new > 0 && n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, "; %llu new request%s went out while told to wait",
		         (unsigned long long)r->waiting_new, r->waiting_new == 1 ? "" : "s");
}
