#ifndef RATELAB_CONNS_H
#define RATELAB_CONNS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common/siphash.h"
#include "server/http/addr_count.h"
#include "server/http/sched.h"

/*
 * The server's open connections, across all its listeners: a count per
 * client address (--max-connections-per-ip is one cap for the whole
 * server, not one per listener), and a deadline for every request head
 * (--header-timeout), which libmicrohttpd does not have: its timeout is an
 * idle one, and a client that trickles a header line every few seconds is
 * never idle.  Each connection has a timer on the server's scheduler at
 * its head's deadline, which closes it when its head is late (with no lock
 * held that a request takes), then at its body's deadline (--body-timeout:
 * a body that trickles in is never idle either), which answers 408; the
 * drain answers a request whose body is still arriving.
 *
 * A connection's entry lives in its request slot.  The server's threads
 * move it through its stages; its timer (or the drain) takes a connection
 * only with a compare-and-swap on its stage, so the server and the timer
 * never both act on one request.
 */

enum conns_stage {
	CONNS_HEAD,      /* waiting for a request head: the deadline runs from since_ns */
	CONNS_BODY,      /* head in, body arriving since since_ns: its deadline or the drain answers it */
	CONNS_SERVING,   /* the server is deciding or answering: left alone */
	CONNS_TAKEN,     /* its timer or the drain closed or answered it: the server must not answer */
};

struct conns_entry {
	struct conns_entry *prev, *next;     /* the open connections, under the table's lock */
	_Atomic int stage;                   /* enum conns_stage */
	_Atomic uint64_t since_ns;           /* when it began waiting for this head (or, in CONNS_BODY, its body) */
	struct sched_timer timer;            /* its head's deadline (armed while it is open) */
	struct conns *owner;
	int fd;
	bool counted;                        /* its address is counted */
	unsigned char addr[ADDR_COUNT_KEY_LEN];
};

/*
 * What is done to a late or drained connection.  The connection cannot
 * close meanwhile (conns_close waits), so fd is still its socket.  late and
 * body_late run on the timer thread with no lock held; drained with the
 * table locked (the drain, once).
 */
struct conns_ops {
	void (*late)(void *ctx, int fd);      /* its head is past the deadline: close it */
	void (*drained)(void *ctx, int fd);   /* draining, its body still arriving: answer 503 and close */
	void (*body_late)(void *ctx, int fd); /* its body is past the deadline: answer 408 and close */
	void *ctx;
};

struct conns_config {
	uint64_t header_timeout_ns;          /* 0: heads have no deadline */
	uint64_t body_timeout_ns;            /* 0: bodies have no deadline */
	unsigned per_ip;                     /* connections one address may hold; 0: no cap */
	unsigned v6_prefix;                  /* an IPv6 address counts by this prefix (addr_count_key) */
	size_t max_conns;                    /* connections open at once, over every listener; 0: no cap */
	struct siphash_key key;              /* the address table's hash key */
	struct sched *sched;                 /* runs the head deadlines (must outlive the table); NULL: none run */
	struct conns_ops ops;
};

struct conns;

/* A connection table for cfg.  NULL when out of memory. */
struct conns *conns_new(const struct conns_config *cfg);

/* Free.  Only once no connection is open.  NULL is a no-op. */
void conns_free(struct conns *cs);

/* Whether a new connection may open. */
enum conns_verdict {
	CONNS_ADMIT,
	CONNS_FULL,          /* max_conns are open */
	CONNS_ADDRESS_FULL,  /* its address holds per_ip */
};

/*
 * Whether a connection from sa may open now.  Connections accepted at once
 * on several listeners may pass the caps by one per listener.  Thread-safe.
 */
enum conns_verdict conns_admit(struct conns *cs, const struct sockaddr *sa);

/*
 * A connection opened at now_ns (socket fd, peer sa): count its address and
 * start its first head's deadline.  e is the connection's, until
 * conns_close.  Thread-safe.
 */
void conns_open(struct conns *cs, struct conns_entry *e, const struct sockaddr *sa, int fd, uint64_t now_ns);

/* The connection closed: forget e, uncount its address.  Waits for its timer in progress.  Thread-safe. */
void conns_close(struct conns *cs, struct conns_entry *e);

/*
 * Its request head is in at now_ns; body: its body is still to come (its
 * deadline starts).  False when its timer took the connection first (the
 * server then closes it unanswered).
 */
bool conns_head_done(struct conns_entry *e, bool body, uint64_t now_ns);

/* Its body is in.  False when its deadline or the drain answered it first. */
bool conns_body_done(struct conns_entry *e);

/* Its request was answered at now_ns and the connection stays open: the next head's deadline starts. */
void conns_wait_head(struct conns_entry *e, uint64_t now_ns);

/*
 * What every connection's timer would do at now_ns, all at once: close
 * every connection whose head is late (ops.late), answer every one whose
 * body is late (ops.body_late) and, once draining, every one whose body is
 * arriving (ops.drained).  Returns how many
 * it took.  For the drain and for tests (with no scheduler, nothing else
 * takes a connection).  Thread-safe.
 */
size_t conns_sweep(struct conns *cs, uint64_t now_ns);

/*
 * The drain, at now_ns: from now on a connection whose body is arriving is
 * answered (ops.drained): those now at once (conns_sweep), a later one by
 * its timer as soon as its head is in.  Returns how many it took now.
 * Thread-safe.
 */
size_t conns_drain(struct conns *cs, uint64_t now_ns);

/* Connections open now.  Thread-safe. */
size_t conns_open_count(struct conns *cs);

#endif
