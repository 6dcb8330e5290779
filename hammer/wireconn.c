#include "hammer/wireconn.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

void wireconn_init(struct wireconn *c)
{
	c->fd = -1;
	c->mask = 0;
	c->phase = WIRECONN_IDLE;
	c->reused = false;
	c->sent = 0;
	c->reqlen = 0;
	c->src = 0;
	c->req = NULL;
	wire_resp_init(&c->resp, false);
}

/* Register the socket for mask, costing an epoll_ctl only when it changes. */
static int set_mask(struct wireconn *c, int epfd, uint64_t tag, uint32_t mask)
{
	struct epoll_event ev = { .events = mask, .data.u64 = tag };

	if (c->mask == mask)
		return 0;
	if (epoll_ctl(epfd, c->mask ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c->fd, &ev) != 0)
		return -1;
	c->mask = mask;
	return 0;
}

void wireconn_close(struct wireconn *c, int epfd)
{
	if (c->fd >= 0) {
		if (c->mask)
			epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
		close(c->fd);
	}
	c->fd = -1;
	c->mask = 0;
	c->phase = WIRECONN_IDLE;
}

void wireconn_abort_fd(int fd)
{
	struct linger lg = { 1, 0 };

	if (fd < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
}

void wireconn_abort(struct wireconn *c, int epfd)
{
	struct linger lg = { 1, 0 };

	if (c->fd >= 0)
		setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	wireconn_close(c, epfd);
}

int wireconn_park(struct wireconn *c)
{
	int fd = c->fd;

	c->fd = -1;
	c->mask = 0;
	c->phase = WIRECONN_IDLE;
	return fd;
}

void wireconn_adopt(struct wireconn *c, int fd)
{
	c->fd = fd;
	/* an idle kept-alive socket is always registered for reading only */
	c->mask = fd >= 0 ? EPOLLIN : 0;
	c->phase = WIRECONN_IDLE;
}

bool wireconn_connecting(const struct wireconn *c)
{
	return c->phase == WIRECONN_CONNECTING;
}

static enum wireconn_result fail(struct wireconn *c, int epfd, enum retry_error *err, enum retry_error kind)
{
	wireconn_close(c, epfd);
	*err = kind;
	return WIRECONN_FAILED;
}

static enum wireconn_result open_conn(struct wireconn *c, const struct wire_target *t, int epfd,
                                      uint64_t tag, enum retry_error *err);

/* The connection died with no answer: a kept-alive one is reopened once, as libcurl does. */
static enum wireconn_result dead(struct wireconn *c, const struct wire_target *t, int epfd,
                                 uint64_t tag, enum retry_error *err)
{
	bool again = c->reused && c->resp.seen == 0;

	wireconn_close(c, epfd);
	if (!again) {
		*err = RETRY_ERR_RESET;
		return WIRECONN_FAILED;
	}
	return open_conn(c, t, epfd, tag, err);
}

static enum wireconn_result send_request(struct wireconn *c, const struct wire_target *t, int epfd,
                                         uint64_t tag, enum retry_error *err)
{
	while (c->sent < c->reqlen) {
		ssize_t n = send(c->fd, c->req + c->sent, c->reqlen - c->sent, MSG_NOSIGNAL);

		if (n > 0) {
			c->sent += (uint32_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			c->phase = WIRECONN_SENDING;
			return set_mask(c, epfd, tag, EPOLLOUT) == 0 ? WIRECONN_PENDING
			                                              : fail(c, epfd, err, RETRY_ERR_OTHER);
		}
		return dead(c, t, epfd, tag, err);
	}
	c->phase = WIRECONN_READING;
	return set_mask(c, epfd, tag, EPOLLIN) == 0 ? WIRECONN_PENDING : fail(c, epfd, err, RETRY_ERR_OTHER);
}

/*
 * Bind the socket to c's own loopback source address, its port left for
 * connect to pick (IP_BIND_ADDRESS_NO_PORT), so each source address has the
 * whole ephemeral port range towards the target.
 */
static int bind_source(const struct wireconn *c, const struct wire_target *t)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	int one = 1;

	if (c->src == 0 || !t->loopback)
		return 0;
	sin.sin_addr.s_addr = htonl(c->src);
	setsockopt(c->fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
	return bind(c->fd, (const struct sockaddr *)&sin, sizeof(sin));
}

static enum wireconn_result open_conn(struct wireconn *c, const struct wire_target *t, int epfd,
                                      uint64_t tag, enum retry_error *err)
{
	int one = 1;

	c->reused = false;
	c->sent = 0;
	c->mask = 0;
	c->fd = socket(t->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return fail(c, epfd, err, RETRY_ERR_OTHER);
	/* one send per request already; this only matters for a request split by a full buffer */
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (bind_source(c, t) != 0)
		return fail(c, epfd, err, RETRY_ERR_OTHER);
	if (connect(c->fd, (const struct sockaddr *)&t->addr, t->addrlen) == 0)
		return send_request(c, t, epfd, tag, err);
	if (errno != EINPROGRESS)
		return fail(c, epfd, err, RETRY_ERR_REFUSED);
	c->phase = WIRECONN_CONNECTING;
	return set_mask(c, epfd, tag, EPOLLOUT) == 0 ? WIRECONN_PENDING : fail(c, epfd, err, RETRY_ERR_OTHER);
}

enum wireconn_result wireconn_begin(struct wireconn *c, const struct wire_target *t, const char *req,
                                    size_t len, int epfd, uint64_t tag, enum retry_error *err)
{
	c->req = req;
	c->reqlen = (uint32_t)len;
	wire_resp_init(&c->resp, t->head);
	if (c->fd < 0)
		return open_conn(c, t, epfd, tag, err);
	c->reused = true;
	c->sent = 0;
	return send_request(c, t, epfd, tag, err);
}

static enum wireconn_result read_answer(struct wireconn *c, const struct wire_target *t, int epfd,
                                        uint64_t tag, char *buf, size_t cap, enum retry_error *err)
{
	ssize_t n = recv(c->fd, buf, cap, 0);
	size_t used = 0;
	enum wire_parse p;

	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return WIRECONN_PENDING;
	if (n == 0 && wire_resp_eof(&c->resp) == WIRE_DONE) {
		wireconn_close(c, epfd);
		return WIRECONN_DONE;
	}
	if (n == 0 || (n < 0 && (errno == ECONNRESET || errno == EPIPE)))
		return dead(c, t, epfd, tag, err);
	if (n < 0)
		return fail(c, epfd, err, RETRY_ERR_RESET);
	p = wire_resp_feed(&c->resp, buf, (size_t)n, &used);
	if (p == WIRE_MORE)
		return WIRECONN_PENDING;
	if (p == WIRE_BAD)
		return fail(c, epfd, err, RETRY_ERR_OTHER);
	/* bytes past the answer would be a pipelined one we never asked for */
	if (used < (size_t)n || c->resp.close)
		wireconn_close(c, epfd);
	else
		c->phase = WIRECONN_IDLE;
	return WIRECONN_DONE;
}

static enum wireconn_result connected(struct wireconn *c, const struct wire_target *t, int epfd,
                                      uint64_t tag, enum retry_error *err)
{
	int soerr = 0;
	socklen_t len = sizeof(soerr);

	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0 || soerr != 0)
		return fail(c, epfd, err, RETRY_ERR_REFUSED);
	return send_request(c, t, epfd, tag, err);
}

enum wireconn_result wireconn_event(struct wireconn *c, const struct wire_target *t, int epfd,
                                    uint64_t tag, char *buf, size_t cap, enum retry_error *err)
{
	switch (c->phase) {
	case WIRECONN_CONNECTING:
		return connected(c, t, epfd, tag, err);
	case WIRECONN_SENDING:
		return send_request(c, t, epfd, tag, err);
	case WIRECONN_READING:
		return read_answer(c, t, epfd, tag, buf, cap, err);
	default:
		return fail(c, epfd, err, RETRY_ERR_OTHER);
	}
}
