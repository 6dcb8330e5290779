/* The client key's byte format: written for the limiters, read back as a name. */
#include "server/http/client_key.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/text.h"
#include "server/store/store.h"

#define HASH_HEX 16
#define HASH_SEED 0x9e3779b97f4a7c15ULL

/*
 * tag + the value; a value too long to fit keeps its head and ends in the hex
 * of its whole hash.  That hash is unkeyed on purpose: replicas sharing one
 * Redis store must turn the same header into the same key.  It cannot flood
 * the memory table (which hashes keys under its own random key); forging a
 * long value that digests like another client's would only share that
 * client's limit.
 */
static size_t key_set(char *key, char tag, const void *p, size_t n)
{
	key[0] = tag;
	if (n > CLIENT_KEY_LEN - 1) {
		size_t head = CLIENT_KEY_LEN - 1 - HASH_HEX;
		char hex[HASH_HEX + 1];

		snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)store_memory_hash(p, n, HASH_SEED));
		memcpy(key + 1, p, head);
		memcpy(key + 1 + head, hex, HASH_HEX);
		return CLIENT_KEY_LEN;
	}
	memcpy(key + 1, p, n);
	return n + 1;
}

size_t client_key_global(char key[CLIENT_KEY_LEN])
{
	return key_set(key, '*', "", 0);
}

size_t client_key_header(char key[CLIENT_KEY_LEN], const char *value, size_t n)
{
	return key_set(key, 'h', value, n);
}

size_t client_key_named(char key[CLIENT_KEY_LEN], const char *name, size_t n)
{
	return key_set(key, 'n', name, n);
}

bool client_key_ipv6_cut(const struct in6_addr *a, unsigned prefix, unsigned char out[16])
{
	if (prefix == 0 || prefix >= 128 || IN6_IS_ADDR_V4MAPPED(a))
		return false;
	memcpy(out, a->s6_addr, 16);
	for (unsigned bit = prefix; bit < 128; bit++)
		out[bit / 8] &= (unsigned char)~(0x80u >> (bit % 8));
	return true;
}

size_t client_key_address(char key[CLIENT_KEY_LEN], const struct sockaddr *sa, unsigned v6_prefix)
{
	unsigned char cut[17];

	if (sa && sa->sa_family == AF_INET)
		return key_set(key, 'i', &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
	if (sa && sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;

		if (!client_key_ipv6_cut(a, v6_prefix, cut))
			return key_set(key, 'i', a, 16);
		cut[16] = (unsigned char)v6_prefix;
		return key_set(key, 'i', cut, 17);
	}
	return key_set(key, 'i', "?", 1);
}

/* "2001:db8::/64": an IPv6 prefix's 16 bytes and its length. */
static void prefix_name(const char *bytes, unsigned prefix, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	if (!inet_ntop(AF_INET6, bytes, a, sizeof(a)))
		snprintf(buf, len, "?");
	else
		snprintf(buf, len, "%s/%u", a, prefix);
}

void client_key_name(const char *key, size_t keylen, char *buf, size_t len)
{
	int af = keylen == 5 ? AF_INET : AF_INET6;

	if (!key || keylen == 0) {
		snprintf(buf, len, "-");
	} else if (key[0] == 'i' && (keylen == 5 || keylen == 17)) {
		if (!inet_ntop(af, key + 1, buf, (socklen_t)len))
			snprintf(buf, len, "?");
	} else if (key[0] == 'i' && keylen == 18) {
		prefix_name(key + 1, (unsigned char)key[17], buf, len);
	} else if ((key[0] == 'h' || key[0] == 'i' || key[0] == 'n') && keylen > 1) {
		text_printable(key + 1, keylen - 1, buf, len);
	} else {
		text_printable(key, keylen, buf, len);
	}
}
