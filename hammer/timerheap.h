#ifndef RATELAB_TIMERHEAP_H
#define RATELAB_TIMERHEAP_H

#include <stdbool.h>
#include <stdint.h>

/*
 * A binary min-heap of (due time, id) pairs: the virtual clients of one
 * event loop waiting to retry or to start.  Equal due times pop in push
 * order (FIFO), so a herd start is fair.  Not thread-safe: one per loop.
 */
struct timerheap;

struct timer_entry {
	uint64_t due_ns;
	uint64_t seq;      /* push order, breaks ties */
	uint32_t id;
};

/* A heap with room for `capacity` entries (it grows past it), or NULL. */
struct timerheap *timerheap_new(uint32_t capacity);
void timerheap_free(struct timerheap *h);

/* Add an entry; returns 0, or -1 when out of memory. */
int timerheap_push(struct timerheap *h, uint64_t due_ns, uint32_t id);

/* True and *out = the earliest entry (left in place), false when empty. */
bool timerheap_peek(const struct timerheap *h, struct timer_entry *out);

/* True and *out = the earliest entry, removed; false when empty. */
bool timerheap_pop(struct timerheap *h, struct timer_entry *out);

/* Entries held. */
uint32_t timerheap_size(const struct timerheap *h);

#endif
