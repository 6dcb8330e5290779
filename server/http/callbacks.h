/* The MHD callbacks of one request and one connection, and the connection sweep's actions. */
#ifndef RATELAB_CALLBACKS_H
#define RATELAB_CALLBACKS_H

#include <microhttpd.h>
#include <stddef.h>

/*
 * libmicrohttpd 0.9.75 zeroes a connection's whole memory pool before every
 * request, so the pool is kept small: 8 KiB holds any ordinary request (a
 * 6 KB header block still parses); bigger ones get 414/431.
 */
#ifndef SERVER_MEMORY_LIMIT
#define SERVER_MEMORY_LIMIT (8 * 1024)
#endif
#define SERVER_MEMORY_INCREMENT 1024
/* A path in normal form is at most one byte longer than the target, which fits the pool. */
#define SERVER_PATH_CAP (SERVER_MEMORY_LIMIT + 2)

/*
 * The access handler (cls: the struct server): a request's first call judges
 * its head and picks its route or special handler; later calls take the
 * upload, then answer through the hook, the 404 or the limited path.
 */
enum MHD_Result callbacks_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls);

/* MHD_OPTION_URI_LOG_CALLBACK: the request begins once its line is read; returns its struct request. */
void *callbacks_uri(void *cls, const char *uri, struct MHD_Connection *c);

/* MHD_OPTION_UNESCAPE_CALLBACK: query arguments decoded as MHD does; the path left as sent. */
size_t callbacks_unescape(void *cls, struct MHD_Connection *c, char *s);

/* MHD_OPTION_NOTIFY_COMPLETED: a request ends, answered or abandoned; its slots are given back. */
void callbacks_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe);

/* MHD_OPTION_NOTIFY_CONNECTION: a connection opens (its entry in the table) or closes. */
void callbacks_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe);

/* The sweep's actions (conns.h), ctx the struct server: a head past its deadline is closed; */
void callbacks_close_late(void *ctx, int fd);

/* a request caught by the drain before its answer gets 503 and a close; */
void callbacks_answer_drained(void *ctx, int fd);

/* a body past its deadline gets 408 and a close. */
void callbacks_answer_body_late(void *ctx, int fd);

#endif
