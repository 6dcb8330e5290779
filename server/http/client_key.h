#ifndef RATELAB_CLIENT_KEY_H
#define RATELAB_CLIENT_KEY_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

/*
 * The client key: the bytes a route's limiter state is kept under, which the
 * stores and the scenarios see too.  One tag byte, then:
 *
 *   '*'                   nothing: every client is one (--key global)
 *   'h' + header value    the value of the keying header (--key header:NAME)
 *   'i' + address         4 bytes (IPv4) or 16 (IPv6), or "?" when unknown; an IPv6
 *                         address cut to a prefix is its 16 bytes, the bits past the
 *                         prefix cleared, then one byte of the prefix length
 *   'n' + name            the name a client gives itself (X-Client-Name): the
 *                         per-client figures' identity only, never a limiter's key
 *
 * A value too long to fit keeps its head and ends in 16 hex digits of a hash
 * of the whole value, so that long values still make distinct keys.  This
 * module is the one place that writes and reads the format.  Pure functions,
 * thread-safe.
 */

#define CLIENT_KEY_LEN 128   /* the longest key, tag included */

/* The key of every client ("*") into key; returns its length. */
size_t client_key_global(char key[CLIENT_KEY_LEN]);

/* The key of a header value (n bytes, any content) into key; returns its length. */
size_t client_key_header(char key[CLIENT_KEY_LEN], const char *value, size_t n);

/* The identity of a client that names itself (n bytes of X-Client-Name) into key; returns its length. */
size_t client_key_named(char key[CLIENT_KEY_LEN], const char *name, size_t n);

/*
 * The key of a client address (AF_INET or AF_INET6; anything else or NULL is
 * "?"); returns its length.  An IPv6 address is cut to its first v6_prefix
 * bits (1..127; 0 or 128 keeps it whole), so one host's /64 is one client;
 * an IPv4-mapped one (::ffff:a.b.c.d) stays whole.
 */
size_t client_key_address(char key[CLIENT_KEY_LEN], const struct sockaddr *sa, unsigned v6_prefix);

/*
 * a's first `prefix` bits into out, the rest cleared.  False (out untouched)
 * when a is IPv4-mapped or prefix is 0 (unset) or 128 or more: the address stays whole.
 */
bool client_key_ipv6_cut(const struct in6_addr *a, unsigned prefix, unsigned char out[16]);

/*
 * A key as one printable word into buf: the address ("127.0.0.1", "::1",
 * "2001:db8::/64" for a prefix),
 * the header value, the client's own name, or "*", with bytes outside printable ASCII as '?';
 * "-" for no key (NULL or empty).  Always NUL-terminates (len > 0).
 */
void client_key_name(const char *key, size_t keylen, char *buf, size_t len);

#endif
