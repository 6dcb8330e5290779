/* N daemons on one port, and stopping them without racing their threads. */
#include "server/http/listeners.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"

#define QUIESCE_WAIT_NS (250 * NS_PER_MS)
#define POKE_WAIT_NS (2 * NS_PER_MS)
#define POKES_MAX (8 * LISTENERS_MAX + 16)

static int port_of(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return ntohs(((const struct sockaddr_in *)ss)->sin_port);
}

static void set_port(struct sockaddr_storage *ss, int port)
{
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
	else
		((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
}

static socklen_t len_of(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

/*
 * True when some socket already listens on sa's port.  The daemons share
 * their port with SO_REUSEPORT, which would let them join another process's
 * group on it; a plain bind (SO_REUSEADDR, as libmicrohttpd sets) fails there.
 */
static bool port_taken(const struct sockaddr_storage *sa)
{
	int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, rc;

	if (fd < 0)
		return false;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (sa->ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	rc = bind(fd, (const struct sockaddr *)sa, len_of(sa));
	close(fd);
	return rc != 0 && errno == EADDRINUSE;
}

/* Where the drain's own connections go: the bound address, or loopback for a wildcard one. */
static void set_poke(struct listeners *ls, const struct sockaddr_storage *sa)
{
	memcpy(&ls->poke, sa, sizeof(*sa));
	ls->poke_len = len_of(sa);
	if (sa->ss_family == AF_INET6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ls->poke;

		if (IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr))
			in6->sin6_addr = in6addr_loopback;
	} else {
		struct sockaddr_in *in4 = (struct sockaddr_in *)&ls->poke;

		if (in4->sin_addr.s_addr == htonl(INADDR_ANY))
			in4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	}
	set_port(&ls->poke, ls->port);
}

int listeners_start(struct listeners *ls, size_t n, const struct sockaddr_storage *sa, listeners_start_fn start,
                    void *ctx, char *err, size_t errlen)
{
	struct sockaddr_storage *at = &ls->addr;

	*at = *sa;
	if (n < 1 || n > LISTENERS_MAX) {
		snprintf(err, errlen, "%zu listeners: from 1 to %d", n, LISTENERS_MAX);
		return -1;
	}
	if (n > 1 && port_of(sa) != 0 && port_taken(sa))
		goto in_use;
	for (ls->n = 0; ls->n < n; ls->n++) {
		struct listener *l = &ls->l[ls->n];
		const union MHD_DaemonInfo *di;

		l->owner = ctx;
		l->fd = MHD_INVALID_SOCKET;
		atomic_init(&l->phase, LISTENER_SERVING);
		if (!(l->daemon = start(ctx, l, (const struct sockaddr *)at, n > 1)))
			goto in_use;
		if (ls->n == 0) {
			di = MHD_get_daemon_info(l->daemon, MHD_DAEMON_INFO_BIND_PORT);
			ls->port = di ? (int)di->port : port_of(sa);
			set_port(at, ls->port);
		}
	}
	set_poke(ls, at);
	return 0;
in_use:
	listeners_stop(ls);
	snprintf(err, errlen, "cannot listen on port %d (address in use or not available)", port_of(sa));
	return -1;
}

/* Quiesce l if this thread wins it (ASKED -> QUIESCING); true when it did. */
static bool take_and_quiesce(struct listener *l)
{
	int asked = LISTENER_ASKED;

	if (!atomic_compare_exchange_strong(&l->phase, &asked, LISTENER_QUIESCING))
		return false;
	l->fd = MHD_quiesce_daemon(l->daemon);
	atomic_store(&l->phase, LISTENER_QUIET);
	return true;
}

bool listeners_keep_accepting(struct listener *l)
{
	if (atomic_load_explicit(&l->phase, memory_order_relaxed) == LISTENER_SERVING)
		return true;
	take_and_quiesce(l);
	return false;
}

static size_t quiet_count(const struct listeners *ls)
{
	size_t k = 0;

	for (size_t i = 0; i < ls->n; i++)
		k += atomic_load(&ls->l[i].phase) == LISTENER_QUIET;
	return k;
}

/* A connection of our own to the port, left to the kernel's choice of daemon; -1 on failure. */
static int poke(const struct listeners *ls)
{
	int fd = socket(ls->poke.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd >= 0 && connect(fd, (const struct sockaddr *)&ls->poke, ls->poke_len) != 0 && errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Wait (at most POKE_WAIT_NS) for one more daemon to be quiet than `had`. */
static void wait_progress(const struct listeners *ls, size_t had)
{
	uint64_t until = clock_monotonic_ns() + POKE_WAIT_NS;
	struct timespec ts = { 0, 100 * 1000L };

	while (quiet_count(ls) == had && clock_monotonic_ns() < until)
		nanosleep(&ts, NULL);
}

/*
 * Close the quiesced daemons' listening sockets, all at once: new connections
 * are refused from now on, and those left in a backlog are reset, rather than
 * one socket's reset clients reconnecting to the next one still open.  A
 * quiesced daemon never touches its listening socket again.
 */
static void close_quiet(struct listeners *ls)
{
	struct timespec ts = { 0, 100 * 1000L };

	for (size_t i = 0; i < ls->n; i++) {
		struct listener *l = &ls->l[i];

		/* Its own thread may be inside MHD_quiesce_daemon: wait for it (a few instructions; 1 s at most). */
		for (int k = 0; k < 10000 && atomic_load(&l->phase) == LISTENER_QUIESCING; k++)
			nanosleep(&ts, NULL);
		if (atomic_load(&l->phase) == LISTENER_QUIET && l->fd != MHD_INVALID_SOCKET) {
			close(l->fd);
			l->fd = MHD_INVALID_SOCKET;
		}
	}
}

void listeners_quiesce(struct listeners *ls)
{
	int pokes[POKES_MAX];
	size_t np = 0, quiet;
	uint64_t deadline = clock_monotonic_ns() + QUIESCE_WAIT_NS;

	for (size_t i = 0; i < ls->n; i++) {
		int serving = LISTENER_SERVING;

		atomic_compare_exchange_strong(&ls->l[i].phase, &serving, LISTENER_ASKED);
	}
	while ((quiet = quiet_count(ls)) < ls->n && np < POKES_MAX && clock_monotonic_ns() < deadline) {
		int fd = poke(ls);

		if (fd >= 0)
			pokes[np++] = fd;
		wait_progress(ls, quiet);
	}
	/* One that accepted nothing was held up, or is at MHD's own limit (its socket out of its epoll set). */
	for (size_t i = 0; i < ls->n; i++)
		take_and_quiesce(&ls->l[i]);
	for (size_t i = 0; i < np; i++)
		close(pokes[i]);
	close_quiet(ls);
}

void listeners_stop(struct listeners *ls)
{
	close_quiet(ls);
	for (size_t i = 0; i < ls->n; i++) {
		if (ls->l[i].daemon)
			MHD_stop_daemon(ls->l[i].daemon);
		ls->l[i].daemon = NULL;
	}
	ls->n = 0;
}
