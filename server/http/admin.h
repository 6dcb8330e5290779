#ifndef RATELAB_ADMIN_H
#define RATELAB_ADMIN_H

#include <stdbool.h>
#include <sys/socket.h>

/*
 * Who may use an admin endpoint (one that changes the server's state, such
 * as POST /reset): the rule behind server_admin_allowed, over the request's
 * parts, so it can be tested with any client address.  Pure.
 */

struct admin_request {
	const struct sockaddr *client;   /* the peer, or NULL when unknown */
	const char *authorization;       /* the headers, NULL when absent */
	const char *content_type;
	const char *origin;
	const char *host;
};

/*
 * NULL when a is allowed, else why not, one phrase.  token is --admin-token
 * (NULL: none).  In order:
 * - a body of a type an HTML form or a no-preflight fetch can send
 *   (application/x-www-form-urlencoded, multipart/form-data, text/plain) is
 *   refused;
 * - an Origin other than "http://" + Host (the page the request came from is
 *   not the server's own; "null" included) is refused;
 * - "Authorization: Bearer TOKEN" with the right token is allowed;
 * - a client that is not on a loopback address is refused;
 * - from loopback, a browser's request (it has an Origin) to a Host that is
 *   a name other than localhost is refused: a page can rebind a name it
 *   owns to 127.0.0.1 (DNS rebinding), never an address literal;
 * - anything else from loopback is allowed.
 */
const char *admin_refusal(const struct admin_request *a, const char *token);

/* True for 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104. */
bool admin_is_loopback(const struct sockaddr *sa);

#endif
