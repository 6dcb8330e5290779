/*
 * The transport of the hammer's own HTTP/1.1 client (hammer/wire.h,
 * hammer/wireconn.h) for plain http:// URLs: one kept-alive connection per
 * client, request bytes laid out once per server and call shape, and two
 * deadline lists (the attempt's timeout, the connect timeout).
 */
#include "hammer/transport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "hammer/wire.h"
#include "hammer/wireconn.h"

/* epoll data of a client's socket: this bit, its server << 32 and the client's id */
#define WIRE_TAG (UINT64_C(1) << 63)
#define WIRE_BUF (64 * 1024)
#define NO_ID UINT32_MAX

struct transport_run {
	struct wire_target *targets;   /* server s, shape k: targets[s * nshapes + k] */
	uint32_t nurls, nshapes;
	uint32_t nsources;             /* loopback source addresses, 127.0.0.1 on; <= 1: the kernel picks */
	uint64_t timeout_ns, connect_timeout_ns;
};

/*
 * Clients waiting on a deadline, oldest first.  Every deadline is "now + a
 * constant" (the call's timeout, or the connect timeout), so appending
 * keeps the order and the earliest is always at the head.
 */
struct dlist {
	uint32_t head, tail;
};

struct dlink {
	uint32_t prev, next;
	uint64_t due;
	bool in;
};

enum { DL_CALL, DL_CONNECT };

struct wclient {
	struct wireconn wc;
	uint32_t wc_server;       /* the server wc talks to */
	bool busy;                /* a call is under way */
	int *parked;              /* several URLs: an idle kept-alive socket per server, or -1 */
	char *dyn;                /* a call with lines of its own: its bytes */
	size_t dyn_cap;
	struct dlink dl[2];
};

struct transport_loop {
	const struct transport_run *run;
	struct transport_env env;
	struct wclient *c;
	struct dlist dl[2];
	uint32_t nparked;         /* idle connections held in clients' parked slots */
	char *rbuf;               /* scratch for reading answers */
};

static bool wire_supports(const char *url)
{
	return wire_url_supported(url);
}

static uint64_t wire_fds_needed(uint32_t clients, uint32_t loops)
{
	(void)loops;
	return clients;
}

static uint64_t wire_fds_wanted(const struct hammer_config *cfg)
{
	uint32_t n;

	hammer_config_urls(cfg, &n);
	return n < 2 ? 0 : (uint64_t)cfg->concurrency * (n - 1);
}

static int wire_process_init(char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	return 0;
}

static void wire_run_free(struct transport_run *r)
{
	if (r == NULL)
		return;
	for (uint32_t i = 0; r->targets != NULL && i < r->nurls * r->nshapes; i++)
		wire_target_destroy(&r->targets[i]);
	free(r->targets);
	free(r);
}

/* The request of shape sh to url: a NULL field of the shape takes the run's. */
static int target_init(struct wire_target *t, const char *url, const struct hammer_config *cfg,
                       const struct workload_shape *sh, char *err, size_t errlen)
{
	struct wire_spec spec = { sh->method ? sh->method : cfg->method, cfg->headers, cfg->nheaders,
	                          sh->body ? sh->body : cfg->data, sh->path };
	char why[256] = "";

	if (wire_target_init(t, url, &spec, why, sizeof(why)) == 0)
		return 0;
	snprintf(err, errlen, "%s%s", wire_url_supported(url) ? "" : "--transport wire: ", why);
	return -1;
}

/* Ports one source address has towards one server: net.ipv4.ip_local_port_range's span. */
static uint32_t port_range(void)
{
	unsigned lo = 32768, hi = 60999;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");

	if (f != NULL) {
		if (fscanf(f, "%u %u", &lo, &hi) != 2 || hi < lo)
			lo = 32768, hi = 60999;
		fclose(f);
	}
	return hi - lo + 1;
}

/*
 * Source addresses for a run of `clients` to loopback servers: `want`, or
 * enough that each holds at most half its port range (the rest for
 * TIME_WAIT and other programs).  At most 127.0.0.1 .. 127.255.255.254.
 */
static uint32_t sources_for(uint32_t clients, uint32_t want)
{
	uint32_t per = port_range() / 2, n;

	n = want ? want : (clients + per - 1) / (per ? per : 1);
	return n > (1u << 24) - 2 ? (1u << 24) - 2 : n;
}

static struct transport_run *wire_run_new(const struct hammer_config *cfg, const struct workload_ops *wl,
                                          char *err, size_t errlen)
{
	struct transport_run *r = calloc(1, sizeof(*r));
	const char *const *urls;

	if (r == NULL || (r->targets = calloc((size_t)HAMMER_MAX_URLS * wl->nshapes, sizeof(*r->targets))) == NULL) {
		free(r);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	urls = hammer_config_urls(cfg, &r->nurls);
	r->nshapes = wl->nshapes;
	r->timeout_ns = cfg->timeout_ns;
	r->connect_timeout_ns = cfg->connect_timeout_ns;
	r->nsources = sources_for(cfg->concurrency, cfg->sources);
	for (uint32_t s = 0; s < r->nurls; s++)
		for (uint32_t k = 0; k < r->nshapes; k++)
			if (target_init(&r->targets[s * r->nshapes + k], urls[s], cfg, &wl->shapes[k], err, errlen) != 0) {
				wire_run_free(r);
				return NULL;
			}
	return r;
}

static int parked_new(struct transport_loop *t)
{
	for (uint32_t i = 0; t->run->nurls > 1 && i < t->env.clients; i++) {
		t->c[i].parked = malloc(sizeof(int) * t->run->nurls);
		if (t->c[i].parked == NULL)
			return -1;
		for (uint32_t k = 0; k < t->run->nurls; k++)
			t->c[i].parked[k] = -1;
	}
	return 0;
}

static void wire_loop_free(struct transport_loop *t)
{
	if (t == NULL)
		return;
	for (uint32_t i = 0; t->c != NULL && i < t->env.clients; i++) {
		struct wclient *c = &t->c[i];

		/* the run is over: no TIME_WAIT left behind for the next one (wireconn_abort) */
		wireconn_abort(&c->wc, t->env.epfd);
		for (uint32_t k = 0; c->parked != NULL && k < t->run->nurls; k++)
			wireconn_abort_fd(c->parked[k]);
		free(c->parked);
		free(c->dyn);
	}
	free(t->c);
	free(t->rbuf);
	free(t);
}

static struct transport_loop *wire_loop_new(const struct transport_run *r, const struct transport_env *env)
{
	struct transport_loop *t = calloc(1, sizeof(*t));
	uint32_t n = env->clients;

	if (t == NULL)
		return NULL;
	t->run = r;
	t->env = *env;
	t->dl[DL_CALL].head = t->dl[DL_CALL].tail = NO_ID;
	t->dl[DL_CONNECT].head = t->dl[DL_CONNECT].tail = NO_ID;
	t->c = calloc(n ? n : 1, sizeof(*t->c));
	t->rbuf = malloc(WIRE_BUF);
	if (t->c == NULL || t->rbuf == NULL) {
		wire_loop_free(t);
		return NULL;
	}
	for (uint32_t i = 0; i < n; i++) {
		wireconn_init(&t->c[i].wc);
		/* by run-wide index, so the nodes of a joined run on one machine share the addresses evenly */
		if (r->nsources > 1)
			t->c[i].wc.src = 0x7f000001u + (env->index0 + i * env->stride) % r->nsources;
	}
	if (parked_new(t) != 0) {
		wire_loop_free(t);
		return NULL;
	}
	return t;
}

/* ---- deadlines ---- */

static void dl_push(struct transport_loop *t, int which, uint32_t id, uint64_t due)
{
	struct dlist *d = &t->dl[which];
	struct dlink *k = &t->c[id].dl[which];

	k->due = due;
	k->prev = d->tail;
	k->next = NO_ID;
	k->in = true;
	if (d->tail != NO_ID)
		t->c[d->tail].dl[which].next = id;
	else
		d->head = id;
	d->tail = id;
}

static void dl_remove(struct transport_loop *t, int which, uint32_t id)
{
	struct dlist *d = &t->dl[which];
	struct dlink *k = &t->c[id].dl[which];

	if (!k->in)
		return;
	if (k->prev != NO_ID)
		t->c[k->prev].dl[which].next = k->next;
	else
		d->head = k->next;
	if (k->next != NO_ID)
		t->c[k->next].dl[which].prev = k->prev;
	else
		d->tail = k->prev;
	k->in = false;
}

/* Earliest deadline of a list, or UINT64_MAX. */
static uint64_t dl_due(const struct transport_loop *t, int which)
{
	uint32_t h = t->dl[which].head;

	return h == NO_ID ? UINT64_MAX : t->c[h].dl[which].due;
}

/* Keep client id in the connect-deadline list exactly while it is connecting. */
static void sync_connect(struct transport_loop *t, uint32_t id, uint64_t now)
{
	struct wclient *c = &t->c[id];
	bool connecting = wireconn_connecting(&c->wc);

	if (connecting && !c->dl[DL_CONNECT].in && t->run->connect_timeout_ns)
		dl_push(t, DL_CONNECT, id, now + t->run->connect_timeout_ns);
	else if (!connecting)
		dl_remove(t, DL_CONNECT, id);
}

/* ---- calls ---- */

static uint64_t wire_tag(uint32_t server, uint32_t id)
{
	return WIRE_TAG | (uint64_t)server << 32 | id;
}

/* Client id's call ended: an answer (err NONE) or err. */
static void call_end(struct transport_loop *t, uint32_t id, enum retry_error err, uint64_t now)
{
	const struct wire_resp *r = &t->c[id].wc.resp;
	struct workload_answer a = { err, r->status, NULL, NULL, NULL };

	dl_remove(t, DL_CALL, id);
	dl_remove(t, DL_CONNECT, id);
	t->c[id].busy = false;
	/* headers of an answer that broke off are not the server's word */
	if (err == RETRY_ERR_NONE) {
		a.retry_after = r->retry_after[0] ? r->retry_after : NULL;
		a.ratelimit = r->ratelimit[0] ? r->ratelimit : NULL;
		a.etag = r->etag[0] ? r->etag : NULL;
	}
	t->env.ended(t->env.ctx, id, &a, now);
}

/*
 * c's call goes to another server: keep the idle connection to the old one
 * for later (while descriptors allow) and take the new one's.
 */
static void switch_server(struct transport_loop *t, struct wclient *c, uint32_t server)
{
	int fd = wireconn_park(&c->wc);

	if (fd >= 0 && t->nparked >= t->env.park_max) {
		epoll_ctl(t->env.epfd, EPOLL_CTL_DEL, fd, NULL);
		close(fd);
		fd = -1;
	}
	t->nparked += fd >= 0;
	c->parked[c->wc_server] = fd;
	fd = c->parked[server];
	t->nparked -= fd >= 0;
	wireconn_adopt(&c->wc, fd);
	c->parked[server] = -1;
	c->wc_server = server;
}

/* The bytes of a call with lines of its own: the shape's headers, the lines, the blank line and body. */
static const char *with_extra(struct wclient *c, const struct wire_target *tg, const struct workload_call *call,
                              size_t *len)
{
	size_t need = tg->reqlen + 1, off = tg->head_len;

	for (uint32_t i = 0; i < call->nextra; i++)
		need += strlen(call->extra[i]) + 2;
	if (need > c->dyn_cap) {
		char *p = realloc(c->dyn, need);

		if (p == NULL)
			return NULL;
		c->dyn = p;
		c->dyn_cap = need;
	}
	memcpy(c->dyn, tg->request, tg->head_len);
	for (uint32_t i = 0; i < call->nextra; i++) {
		size_t n = strlen(call->extra[i]);

		memcpy(c->dyn + off, call->extra[i], n);
		memcpy(c->dyn + off + n, "\r\n", 2);
		off += n + 2;
	}
	memcpy(c->dyn + off, tg->request + tg->head_len, tg->reqlen - tg->head_len);
	*len = off + tg->reqlen - tg->head_len;
	return c->dyn;
}

static int wire_begin(struct transport_loop *t, uint32_t id, uint32_t server, const struct workload_call *call,
                      uint64_t now, enum retry_error *err)
{
	struct wclient *c = &t->c[id];
	const struct wire_target *tg = &t->run->targets[server * t->run->nshapes + call->shape];
	const char *req = tg->request;
	size_t len = tg->reqlen;

	*err = RETRY_ERR_OTHER;
	if (call->nextra > 0 && (req = with_extra(c, tg, call, &len)) == NULL)
		return -1;
	if (c->wc_server != server)
		switch_server(t, c, server);
	if (wireconn_begin(&c->wc, tg, req, len, t->env.epfd, wire_tag(server, id), err) == WIRECONN_FAILED)
		return -1;
	c->busy = true;
	dl_push(t, DL_CALL, id, now + t->run->timeout_ns);
	sync_connect(t, id, now);
	return 0;
}

/* A parked connection to another server became readable: the server closed it. */
static void parked_closed(struct transport_loop *t, struct wclient *c, uint32_t server)
{
	epoll_ctl(t->env.epfd, EPOLL_CTL_DEL, c->parked[server], NULL);
	close(c->parked[server]);
	c->parked[server] = -1;
	t->nparked--;
}

static void wire_event(struct transport_loop *t, uint64_t tag, uint32_t events, uint64_t now)
{
	uint32_t id = (uint32_t)tag, server = (uint32_t)(tag >> 32) & 0xffff;
	struct wclient *c = &t->c[id];
	const struct wire_target *tg = &t->run->targets[server * t->run->nshapes];
	enum retry_error err = RETRY_ERR_OTHER;
	enum wireconn_result r;

	(void)events;
	if (server != c->wc_server) {
		parked_closed(t, c, server);
		return;
	}
	if (!c->busy) {
		/* a kept-alive connection between calls: the server closed it */
		wireconn_close(&c->wc, t->env.epfd);
		return;
	}
	r = wireconn_event(&c->wc, tg, t->env.epfd, wire_tag(server, id), t->rbuf, WIRE_BUF, &err);
	if (r == WIRECONN_DONE)
		call_end(t, id, RETRY_ERR_NONE, now);
	else if (r == WIRECONN_FAILED)
		call_end(t, id, err, now);
	else
		sync_connect(t, id, now);
}

/* Time out the calls (and connects) whose deadline passed. */
static void wire_expire(struct transport_loop *t, uint64_t now)
{
	for (int which = DL_CALL; which <= DL_CONNECT; which++) {
		while (dl_due(t, which) <= now) {
			uint32_t id = t->dl[which].head;

			wireconn_close(&t->c[id].wc, t->env.epfd);
			call_end(t, id, RETRY_ERR_TIMEOUT, now);
		}
	}
}

static uint64_t wire_next_due(const struct transport_loop *t)
{
	uint64_t a = dl_due(t, DL_CALL), b = dl_due(t, DL_CONNECT);

	return a < b ? a : b;
}

const struct transport_ops TRANSPORT_WIRE = {
	.name = "wire",
	.supports = wire_supports,
	.fds_needed = wire_fds_needed,
	.fds_wanted = wire_fds_wanted,
	.process_init = wire_process_init,
	.run_new = wire_run_new,
	.run_free = wire_run_free,
	.loop_new = wire_loop_new,
	.loop_free = wire_loop_free,
	.begin = wire_begin,
	.event = wire_event,
	.expire = wire_expire,
	.next_due = wire_next_due,
};
