#include "hammer/timerheap.h"

#include <stdlib.h>

struct timerheap {
	struct timer_entry *e;
	uint32_t n;
	uint32_t cap;
	uint64_t next_seq;
};

struct timerheap *timerheap_new(uint32_t capacity)
{
	struct timerheap *h = calloc(1, sizeof(*h));

	if (h == NULL)
		return NULL;
	h->cap = capacity ? capacity : 16;
	h->e = malloc(sizeof(*h->e) * h->cap);
	if (h->e == NULL) {
		free(h);
		return NULL;
	}
	return h;
}

void timerheap_free(struct timerheap *h)
{
	if (h == NULL)
		return;
	free(h->e);
	free(h);
}

static bool before(const struct timer_entry *a, const struct timer_entry *b)
{
	return a->due_ns < b->due_ns || (a->due_ns == b->due_ns && a->seq < b->seq);
}

int timerheap_push(struct timerheap *h, uint64_t due_ns, uint32_t id)
{
	struct timer_entry x = { due_ns, h->next_seq++, id };
	uint32_t i;

	if (h->n == h->cap) {
		uint32_t ncap = h->cap * 2;
		struct timer_entry *ne = realloc(h->e, sizeof(*ne) * ncap);

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

bool timerheap_peek(const struct timerheap *h, struct timer_entry *out)
{
	if (h->n == 0)
		return false;
	*out = h->e[0];
	return true;
}

bool timerheap_pop(struct timerheap *h, struct timer_entry *out)
{
	struct timer_entry last;
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

uint32_t timerheap_size(const struct timerheap *h)
{
	return h->n;
}
