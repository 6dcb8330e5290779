#ifndef RATELAB_ADDR_COUNT_H
#define RATELAB_ADDR_COUNT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "common/siphash.h"

/*
 * Open connections per client address: a fixed table (open addressing,
 * linear probing, SipHash under a key the caller draws, so a client cannot
 * choose addresses that share a chain), sized once for the most addresses
 * it may ever hold.  An address whose count falls to 0 leaves the table.
 * Not thread-safe: the caller locks.
 */

#define ADDR_COUNT_KEY_LEN 16

struct addr_count;

/* A table for at most max_addrs distinct addresses at once.  NULL when out of memory. */
struct addr_count *addr_count_new(size_t max_addrs, struct siphash_key key);
void addr_count_free(struct addr_count *t);

/*
 * The key of an address: IPv6 cut to its first v6_prefix bits (client_key.h;
 * 128 keeps it whole), IPv4 as ::ffff:a.b.c.d (so both spellings meet).  False for other families.
 */
bool addr_count_key(const struct sockaddr *sa, unsigned v6_prefix, unsigned char key[ADDR_COUNT_KEY_LEN]);

/* Connections counted for key (0 when absent). */
unsigned addr_count_get(const struct addr_count *t, const unsigned char key[ADDR_COUNT_KEY_LEN]);

/* Count one more connection for key.  Returns 0, or -1 when the table holds max_addrs others. */
int addr_count_add(struct addr_count *t, const unsigned char key[ADDR_COUNT_KEY_LEN]);

/* Count one fewer (a key absent or at 0 is left alone). */
void addr_count_sub(struct addr_count *t, const unsigned char key[ADDR_COUNT_KEY_LEN]);

/* Distinct addresses held now. */
size_t addr_count_addrs(const struct addr_count *t);

#endif
