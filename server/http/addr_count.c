/* Connections per client address, in one open-addressing table. */
#include "server/http/addr_count.h"

#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/http/client_key.h"

struct slot {
	unsigned char key[ADDR_COUNT_KEY_LEN];
	unsigned count;                    /* 0: empty */
};

struct addr_count {
	struct siphash_key hkey;
	size_t mask;                       /* slots - 1 (a power of two) */
	size_t max, used;
	struct slot slots[];
};

struct addr_count *addr_count_new(size_t max_addrs, struct siphash_key key)
{
	size_t n = 8;
	struct addr_count *t;

	/* At most half full, so probes stay short. */
	while (n < 2 * max_addrs && n < ((size_t)1 << 40))
		n *= 2;
	t = calloc(1, sizeof(*t) + n * sizeof(t->slots[0]));
	if (!t)
		return NULL;
	t->hkey = key;
	t->mask = n - 1;
	t->max = max_addrs;
	return t;
}

void addr_count_free(struct addr_count *t)
{
	free(t);
}

bool addr_count_key(const struct sockaddr *sa, unsigned v6_prefix, unsigned char key[ADDR_COUNT_KEY_LEN])
{
	static const unsigned char v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (sa && sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;

		if (!client_key_ipv6_cut(a, v6_prefix, key))
			memcpy(key, a, ADDR_COUNT_KEY_LEN);
		return true;
	}
	if (sa && sa->sa_family == AF_INET) {
		memcpy(key, v4mapped, sizeof(v4mapped));
		memcpy(key + 12, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
		return true;
	}
	return false;
}

static size_t home(const struct addr_count *t, const unsigned char *key)
{
	return (size_t)siphash13(&t->hkey, key, ADDR_COUNT_KEY_LEN) & t->mask;
}

/* The slot holding key, or the empty slot where it would go. */
static size_t find(const struct addr_count *t, const unsigned char *key)
{
	size_t i = home(t, key);

	while (t->slots[i].count != 0 && memcmp(t->slots[i].key, key, ADDR_COUNT_KEY_LEN) != 0)
		i = (i + 1) & t->mask;
	return i;
}

unsigned addr_count_get(const struct addr_count *t, const unsigned char key[ADDR_COUNT_KEY_LEN])
{
	return t->slots[find(t, key)].count;
}

int addr_count_add(struct addr_count *t, const unsigned char key[ADDR_COUNT_KEY_LEN])
{
	struct slot *s = &t->slots[find(t, key)];

	if (s->count == 0) {
		if (t->used >= t->max)
			return -1;
		memcpy(s->key, key, ADDR_COUNT_KEY_LEN);
		t->used++;
	}
	s->count++;
	return 0;
}

/* Empty slot i, moving back the entries after it that probed past it (no tombstones). */
static void remove_at(struct addr_count *t, size_t i)
{
	size_t j = i;

	for (;;) {
		size_t h;

		j = (j + 1) & t->mask;
		if (t->slots[j].count == 0)
			break;
		h = home(t, t->slots[j].key);
		/* Entry j stays unless its home lies cyclically outside (i, j]. */
		if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
			continue;
		t->slots[i] = t->slots[j];
		i = j;
	}
	t->slots[i].count = 0;
	t->used--;
}

void addr_count_sub(struct addr_count *t, const unsigned char key[ADDR_COUNT_KEY_LEN])
{
	size_t i = find(t, key);

	if (t->slots[i].count == 0)
		return;
	if (--t->slots[i].count == 0)
		remove_at(t, i);
}

size_t addr_count_addrs(const struct addr_count *t)
{
	return t->used;
}
