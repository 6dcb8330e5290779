#ifndef RATELAB_HEAP_H
#define RATELAB_HEAP_H

#include <stdbool.h>
#include <stdint.h>

/*
 * A binary min-heap of (due time, payload) entries: the hammer's virtual
 * clients waiting to start or retry, and the server's held answers.  Equal
 * due times pop in push order (FIFO), so a herd start is fair.  It grows
 * past its first capacity unless made with a fixed one.  Not thread-safe:
 * the caller locks (or owns it from one thread).
 */
struct heap;

struct heap_entry {
	uint64_t due_ns;
	uint64_t seq;      /* push order, breaks ties */
	uint32_t id;       /* the caller's: a client index */
	void *ptr;         /* the caller's: an object to act on */
};

/*
 * A heap with room for `capacity` entries, or NULL.  With `fixed`, a push
 * past the capacity fails instead of growing.
 */
struct heap *heap_new(uint32_t capacity, bool fixed);
void heap_free(struct heap *h);

/* Add an entry; returns 0, or -1 when full (fixed) or out of memory. */
int heap_push(struct heap *h, uint64_t due_ns, uint32_t id, void *ptr);

/* True and *out = the earliest entry (left in place), false when empty. */
bool heap_peek(const struct heap *h, struct heap_entry *out);

/* True and *out = the earliest entry, removed; false when empty. */
bool heap_pop(struct heap *h, struct heap_entry *out);

/* Entries held. */
uint32_t heap_size(const struct heap *h);

#endif
