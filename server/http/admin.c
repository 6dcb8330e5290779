/* The admin endpoints' rule: loopback or a token, and nothing a web page could send. */
#include "server/http/admin.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

bool admin_is_loopback(const struct sockaddr *sa)
{
	static const unsigned char mapped127[13] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127 };
	const struct sockaddr_in6 *in6;

	if (sa && sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (!sa || sa->sa_family != AF_INET6)
		return false;
	in6 = (const struct sockaddr_in6 *)(const void *)sa;
	return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) || memcmp(in6->sin6_addr.s6_addr, mapped127, 13) == 0;
}

/* True when the media type of a Content-Type value (before ';', case-insensitive) is t. */
static bool media_type_is(const char *ct, const char *t)
{
	size_t n = strlen(t);

	while (*ct == ' ' || *ct == '\t')
		ct++;
	if (strncasecmp(ct, t, n) != 0)
		return false;
	ct += n;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	return *ct == '\0' || *ct == ';';
}

static bool form_like(const char *ct)
{
	return ct && (media_type_is(ct, "application/x-www-form-urlencoded") ||
	              media_type_is(ct, "multipart/form-data") || media_type_is(ct, "text/plain"));
}

/* True when origin is "http://" + host (scheme and host case-insensitive). */
static bool own_origin(const char *origin, const char *host)
{
	static const char scheme[] = "http://";

	return host && strncasecmp(origin, scheme, sizeof(scheme) - 1) == 0 &&
	       strcasecmp(origin + sizeof(scheme) - 1, host) == 0;
}

/* True when the bearer token in an Authorization value is token (compared in constant time). */
static bool bearer_is(const char *auth, const char *token)
{
	size_t n = strlen(token), m;
	unsigned char diff = 0;

	if (!auth || strncasecmp(auth, "Bearer ", 7) != 0)
		return false;
	auth += 7;
	m = strlen(auth);
	for (size_t i = 0; i < n; i++)
		diff |= (unsigned char)(token[i] ^ (i < m ? auth[i] : 0));
	return diff == 0 && m == n;
}

/* True when a Host value names the machine by address literal or "localhost", any port. */
static bool host_is_literal(const char *host)
{
	char name[64];
	const char *colon;
	size_t n;
	struct in6_addr a6;
	struct in_addr a4;

	if (!host)
		return false;
	if (host[0] == '[') {
		const char *end = strchr(host, ']');

		n = end ? (size_t)(end - host - 1) : sizeof(name);
		if (n >= sizeof(name))
			return false;
		memcpy(name, host + 1, n);
		name[n] = '\0';
		return inet_pton(AF_INET6, name, &a6) == 1;
	}
	colon = strchr(host, ':');
	n = colon ? (size_t)(colon - host) : strlen(host);
	if (n >= sizeof(name))
		return false;
	memcpy(name, host, n);
	name[n] = '\0';
	return strcasecmp(name, "localhost") == 0 || inet_pton(AF_INET, name, &a4) == 1;
}

const char *admin_refusal(const struct admin_request *a, const char *token)
{
	if (form_like(a->content_type))
		return "a form or text/plain body, which any web page can send";
	if (a->origin && !own_origin(a->origin, a->host))
		return "an Origin other than the server's own";
	if (token && token[0] && bearer_is(a->authorization, token))
		return NULL;
	if (!admin_is_loopback(a->client))
		return token && token[0] ? "not from loopback, and no Authorization: Bearer with the admin token"
		                         : "not from loopback (start the server with --admin-token to admit others)";
	if (a->origin && !host_is_literal(a->host))
		return "a browser's request to a host name (use http://127.0.0.1 or http://localhost)";
	return NULL;
}
