/*
 * bench-floor: what a hand-written HTTP/1.1 front would cost, for `make bench`.
 *
 * Not part of ratelab.  It answers every request with the bytes of ratelab's
 * rejection (status line, Date, the RateLimit headers, the problem+json body),
 * and does nothing else: no limiter, no stats, no routing, no timeouts.  It is
 * the floor of the "leave libmicrohttpd on the reject path" option: the cost
 * that a front of our own could not go under.  Two threads, one epoll each,
 * one shared listening socket (EPOLLEXCLUSIVE), edge-triggered connections,
 * one recv and one send per request, like libmicrohttpd and nginx here.
 *
 * usage: bench-floor [--port N] [--threads N]
 * Prints "listening on http://127.0.0.1:PORT" once ready; SIGINT/SIGTERM stop it (exit 0).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define FLOOR_MAX_THREADS 16
#define FLOOR_REQ_MAX 8192

/*
 * ratelab serve --limit 100 --key global's rejection body as a connection's
 * first rejection sends it: the 16 spaces of slack sit before the closing brace.
 */
static const char FLOOR_BODY[] =
	"{\"type\":\"about:blank\",\"title\":\"Too Many Requests\",\"status\":429,"
	"\"limiter\":\"token-bucket\",\"policy\":{\"name\":\"default\",\"quota\":100,\"window_s\":1},"
	"\"remaining\":0,\"layer\":0,\"retry_after_s\":1,\"wait_ms\":9.871234,"
	"\"detail\":\"rate limit exceeded: retry in 9.871234 ms (Retry-After rounds up to 1 s)\""
	"                }\n";

struct floor_conn {
	int fd;
	size_t n;
	char buf[FLOOR_REQ_MAX];
};

struct floor_thread {
	pthread_t tid;
	int listen_fd;
	time_t date_sec;
	size_t resp_len;
	char resp[1024];
};

/* The response with this second's Date; rebuilt once a second per thread. */
static void floor_render(struct floor_thread *t, time_t now)
{
	char date[40];
	struct tm tm;
	int n;

	gmtime_r(&now, &tm);
	strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
	n = snprintf(t->resp, sizeof(t->resp),
	             "HTTP/1.1 429 Too Many Requests\r\nDate: %s\r\n"
	             "Content-Type: application/problem+json\r\nRetry-After: 1\r\n"
	             "RateLimit-Policy: \"default\";q=100;w=1\r\nRateLimit: \"default\";r=0;t=1\r\n"
	             "Content-Length: %zu\r\n\r\n%s",
	             date, sizeof(FLOOR_BODY) - 1, FLOOR_BODY);
	t->resp_len = n > 0 && (size_t)n < sizeof(t->resp) ? (size_t)n : 0;
	t->date_sec = now;
}

static void floor_accept(int ep, int lfd)
{
	int one = 1, fd;

	while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		struct floor_conn *c = malloc(sizeof(*c));
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP | EPOLLET };

		if (!c) {
			close(fd);
			continue;
		}
		c->fd = fd;
		c->n = 0;
		ev.data.ptr = c;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
			close(fd);
			free(c);
		}
	}
}

/* Answer every complete request head in c's buffer; -1 to close. */
static int floor_answer(struct floor_thread *t, struct floor_conn *c)
{
	char *end;

	while ((end = memmem(c->buf, c->n, "\r\n\r\n", 4)) != NULL) {
		size_t used = (size_t)(end + 4 - c->buf);
		time_t now = time(NULL);

		if (now != t->date_sec)
			floor_render(t, now);
		if (send(c->fd, t->resp, t->resp_len, MSG_NOSIGNAL) != (ssize_t)t->resp_len)
			return -1;  /* a short send: this floor does not queue output */
		memmove(c->buf, c->buf + used, c->n - used);
		c->n -= used;
	}
	return c->n < sizeof(c->buf) ? 0 : -1;
}

/* Read what c has (edge-triggered: until a short read); -1 to close. */
static int floor_read(struct floor_thread *t, struct floor_conn *c)
{
	for (int i = 0; i < 64; i++) {
		size_t room = sizeof(c->buf) - c->n;
		ssize_t r = recv(c->fd, c->buf + c->n, room, 0);

		if (r == 0)
			return -1;
		if (r < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		c->n += (size_t)r;
		if (floor_answer(t, c) < 0)
			return -1;
		if ((size_t)r < room)
			return 0;
	}
	return 0;
}

static void *floor_main(void *arg)
{
	struct floor_thread *t = arg;
	struct epoll_event ev = { .events = EPOLLIN | EPOLLEXCLUSIVE, .data.ptr = NULL }, evs[64];
	int ep = epoll_create1(EPOLL_CLOEXEC);

	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, t->listen_fd, &ev) < 0) {
		perror("bench-floor: epoll");
		exit(1);
	}
	floor_render(t, time(NULL));
	for (;;) {
		int n = epoll_wait(ep, evs, 64, -1);

		for (int i = 0; i < n; i++) {
			struct floor_conn *c = evs[i].data.ptr;

			if (!c) {
				floor_accept(ep, t->listen_fd);
			} else if (floor_read(t, c) < 0 || (evs[i].events & (EPOLLHUP | EPOLLERR))) {
				close(c->fd);
				free(c);
			}
		}
	}
	return NULL;
}

static int floor_listen(unsigned port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	socklen_t alen = sizeof(a);
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 1024) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &alen) < 0) {
		perror("bench-floor: listen");
		return -1;
	}
	printf("listening on http://127.0.0.1:%u\n", ntohs(a.sin_port));
	fflush(stdout);
	return fd;
}

static int floor_num(const char *flag, const char *v, unsigned max, unsigned *out)
{
	char *end;
	unsigned long n;

	errno = 0;
	n = v ? strtoul(v, &end, 10) : 0;
	if (!v || errno || *end || end == v || n > max) {
		fprintf(stderr, "bench-floor: %s '%s': want 0 to %u\n", flag, v ? v : "", max);
		return -1;
	}
	*out = (unsigned)n;
	return 0;
}

int main(int argc, char **argv)
{
	static struct floor_thread threads[FLOOR_MAX_THREADS];
	unsigned port = 0, nthreads = 2;
	sigset_t sigs;
	int lfd, sig;

	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(argv[i], "--port") == 0) {
			if (floor_num("--port", v, 65535, &port) < 0)
				return 2;
		} else if (strcmp(argv[i], "--threads") == 0) {
			if (floor_num("--threads", v, FLOOR_MAX_THREADS, &nthreads) < 0)
				return 2;
		} else {
			fprintf(stderr, "bench-floor: unknown option '%s' (usage: bench-floor [--port N] [--threads N])\n",
			        argv[i]);
			return 2;
		}
		i++;
	}
	if (nthreads == 0)
		nthreads = 1;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	lfd = floor_listen(port);
	if (lfd < 0)
		return 1;
	for (unsigned i = 0; i < nthreads; i++) {
		threads[i].listen_fd = lfd;
		if (pthread_create(&threads[i].tid, NULL, floor_main, &threads[i]) != 0) {
			fprintf(stderr, "bench-floor: cannot start a thread\n");
			return 1;
		}
	}
	sigwait(&sigs, &sig);
	return 0;
}
