#include "common/heap.h"

#include <stdlib.h>

struct heap {
	struct heap_entry *e;
	uint32_t n;
	uint32_t cap;
	bool fixed;
	uint64_t next_seq;
};

struct heap *heap_new(uint32_t capacity, bool fixed)
{
	struct heap *h = calloc(1, sizeof(*h));

	if (h == NULL)
		return NULL;
	h->cap = capacity ? capacity : 16;
	h->fixed = fixed;
	h->e = malloc(sizeof(*h->e) * h->cap);
	if (h->e == NULL) {
		free(h);
		return NULL;
	}
	return h;
}

void heap_free(struct heap *h)
{
	if (h == NULL)
		return;
	free(h->e);
	free(h);
}

static bool before(const struct heap_entry *a, const struct heap_entry *b)
{
	return a->due_ns < b->due_ns || (a->due_ns == b->due_ns && a->seq < b->seq);
}

int heap_push(struct heap *h, uint64_t due_ns, uint32_t id, void *ptr)
{
	struct heap_entry x = { due_ns, h->next_seq++, id, ptr };
	uint32_t i;

	if (h->n == h->cap) {
		uint32_t ncap = h->cap * 2;
		struct heap_entry *ne;

		if (h->fixed || h->cap > UINT32_MAX / 2)
			return -1;
		ne = realloc(h->e, sizeof(*ne) * ncap);
		if (ne == NULL)
			return -1;
		h->e = ne;
		h->cap = ncap;
	}
	i = h->n++;
	while (i > 0 && before(&x, &h->e[(i - 1) / 2])) {
		h->e[i] = h->e[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->e[i] = x;
	return 0;
}

bool heap_peek(const struct heap *h, struct heap_entry *out)
{
	if (h->n == 0)
		return false;
	*out = h->e[0];
	return true;
}

bool heap_pop(struct heap *h, struct heap_entry *out)
{
	struct heap_entry last;
	uint32_t i = 0, c;

	if (h->n == 0)
		return false;
	*out = h->e[0];
	last = h->e[--h->n];
	for (;;) {
		c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && before(&h->e[c + 1], &h->e[c]))
			c++;
		if (!before(&h->e[c], &last))
			break;
		h->e[i] = h->e[c];
		i = c;
	}
	if (h->n > 0)
		h->e[i] = last;
	return true;
}

uint32_t heap_size(const struct heap *h)
{
	return h->n;
}
