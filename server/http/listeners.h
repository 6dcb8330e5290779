#ifndef RATELAB_LISTENERS_H
#define RATELAB_LISTENERS_H

#include <microhttpd.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

/*
 * The server's listeners: N libmicrohttpd daemons, each with one internal
 * polling thread and a listening socket of its own, all on one port
 * (SO_REUSEPORT: the kernel spreads new connections over them by address
 * and port).  None has a worker pool.
 *
 * Stopping to accept (the drain) never races a daemon's thread: each daemon
 * is quiesced on its own thread, from its accept-policy callback
 * (listeners_keep_accepting), which the drain wakes with loopback
 * connections of its own.  libmicrohttpd 0.9.75 removes the listening socket
 * from a daemon's epoll set both in MHD_quiesce_daemon and in the daemon's
 * loop, and aborts when the second removal finds it gone; on one thread the
 * two never overlap.
 */

#define LISTENERS_MAX 64

enum listener_phase {
	LISTENER_SERVING,      /* accepting */
	LISTENER_ASKED,        /* the drain asked it to stop accepting */
	LISTENER_QUIESCING,    /* one thread is quiescing it */
	LISTENER_QUIET,        /* quiesced: fd is its listening socket, ours to close */
};

struct listener {
	struct MHD_Daemon *daemon;
	void *owner;                       /* the ctx given to listeners_start */
	_Atomic int phase;                 /* enum listener_phase */
	MHD_socket fd;
};

struct listeners {
	struct listener l[LISTENERS_MAX];
	size_t n;
	int port;
	struct sockaddr_storage addr;      /* the address given to the daemons: MHD keeps the pointer */
	struct sockaddr_storage poke;      /* where the drain connects to wake a daemon */
	socklen_t poke_len;
};

/*
 * Start one daemon for listener l on address sa (its port filled in), with
 * l as the accept-policy callback's cls; share: set SO_REUSEPORT.  Returns
 * the daemon, or NULL.
 */
typedef struct MHD_Daemon *(*listeners_start_fn)(void *ctx, struct listener *l, const struct sockaddr *sa, bool share);

/*
 * Start n daemons (1..LISTENERS_MAX) on sa through start, all on the port of
 * sa (0: the first one picks it).  A port another socket listens on is
 * refused even though the daemons share theirs.  ls starts zeroed.  Returns
 * 0, or -1 with a one-line reason in err (nothing left running).
 */
int listeners_start(struct listeners *ls, size_t n, const struct sockaddr_storage *sa, listeners_start_fn start,
                    void *ctx, char *err, size_t errlen);

/*
 * For the accept-policy callback, on l's own thread: true to go on with the
 * connection's other checks; false (refuse it) once a quiesce was asked, and
 * then l has been quiesced here, on its thread.
 */
bool listeners_keep_accepting(struct listener *l);

/*
 * Stop accepting on every daemon, each on its own thread: ask, then connect
 * to the port until each has seen an accept (at most 250 ms); a daemon that
 * saw none (its thread held up that long, or at libmicrohttpd's own
 * connection limit, when its listening socket is out of its epoll set
 * anyway) is quiesced from here.
 * Then the listening sockets close: new connections are refused, those in a
 * backlog reset.  Connections already accepted go on being served.  Call
 * once, before listeners_stop.
 */
void listeners_quiesce(struct listeners *ls);

/* Stop every daemon (closing its connections) and close the listening sockets.  Idempotent. */
void listeners_stop(struct listeners *ls);

#endif
