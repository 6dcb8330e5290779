/* The MHD daemons: start, drain and stop, the listeners and the server's parts; callbacks.c answers requests. */
#include "server/http/daemon.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>

#include "common/clock.h"
#include "common/siphash.h"
#include "server/http/backend.h"
#include "server/http/callbacks.h"
#include "server/proxy/upstream.h"

#define DRAIN_NS (5 * NS_PER_SEC)

static _Atomic uint64_t server_generation;

int server_port(const struct server *s)
{
	return s->port;
}

struct server_every {
	struct sched_timer timer;
	struct server_every *next;
	struct sched *sched;
	uint64_t period_ns;
	void (*fn)(void *ctx);
	void *ctx;
};

/* A periodic timer's turn: the next is armed first, a period on (from now when it fell behind). */
static void every_due(void *arg)
{
	struct server_every *e = arg;
	uint64_t now = clock_monotonic_ns(), next = e->timer.due_ns + e->period_ns;

	sched_arm(e->sched, &e->timer, next > now ? next : now + e->period_ns);
	e->fn(e->ctx);
}

int server_every(struct server *s, uint64_t period_ns, void (*fn)(void *ctx), void *ctx)
{
	struct server_every *e = calloc(1, sizeof(*e));

	if (!e)
		return -1;
	*e = (struct server_every){ .next = s->ticks, .sched = s->sched, .period_ns = period_ns, .fn = fn, .ctx = ctx };
	sched_timer_init(&e->timer, every_due, e);
	if (sched_arm(s->sched, &e->timer, clock_monotonic_ns() + period_ns) < 0) {
		free(e);
		return -1;
	}
	s->ticks = e;
	return 0;
}

struct server_park {
	struct lifecycle_park p;
};

struct server_park *server_park_new(void)
{
	return calloc(1, sizeof(struct server_park));
}

void server_park_free(struct server_park *p)
{
	free(p);
}

bool server_park(struct server *s, struct server_park *p, void *conn)
{
	return lifecycle_park(&s->life, &p->p, conn, LIFECYCLE_STREAM);
}

bool server_wake(struct server_park *p)
{
	return lifecycle_wake(&p->p, LIFECYCLE_DUE);
}

void server_live_parts(struct server *s, struct stats_route_info *ri, struct live_parts *p)
{
	p->stats = s->stats;
	p->clients = s->clients;
	p->top = s->cfg.top_clients ? s->cfg.top_clients : CLIENTS_TOP_DEFAULT;
	p->routes = ri;
	p->nroutes = routes_infos(&s->routes, ri);
	p->reject_status = s->cfg.reject_status;
	p->upstream = s->upstream;
	p->subscribers = s->plugin && s->cfg.plugin->streams ? s->cfg.plugin->streams(s->plugin) : 0;
}

int server_announce(struct server *s, const char *name, const char *json)
{
	return s->plugin && s->cfg.plugin->announce ? s->cfg.plugin->announce(s->plugin, name, json) : -1;
}

char *server_stats_json(struct server *s)
{
	struct stats_route_info ri[SERVER_MAX_ROUTES];
	struct live_parts p;

	server_live_parts(s, ri, &p);
	return live_stats_json(&p, clock_monotonic_ns());
}

char *server_stats_metrics(struct server *s)
{
	struct stats_route_info ri[SERVER_MAX_ROUTES];
	struct live_parts p;

	server_live_parts(s, ri, &p);
	return live_metrics(&p, clock_monotonic_ns());
}


void server_reset(struct server *s)
{
	routes_reset(&s->routes);
	stats_reset(s->stats, clock_monotonic_ns());
	clients_reset(s->clients);
	hooks_reset(&s->hooks);
}

void server_counts(struct server *s, uint64_t *total, uint64_t *admitted, uint64_t *rejected)
{
	*total = stats_total(s->stats);
	*admitted = *rejected = 0;
	for (size_t i = 0; i < s->routes.n; i++) {
		*admitted += stats_decisions(s->stats, (int)i, STATS_ADMITTED);
		*rejected += stats_decisions(s->stats, (int)i, STATS_REJECTED);
	}
}

bool server_backend_stats(struct server *s, size_t route, struct capacity_stats *out)
{
	if (route >= s->routes.n || s->routes.r[route].backend == NULL)
		return false;
	backend_stats(s->routes.r[route].backend, out);
	return true;
}

size_t server_backend_series(struct server *s, size_t route, struct capacity_bucket *out, size_t max)
{
	if (route >= s->routes.n || s->routes.r[route].backend == NULL)
		return 0;
	return backend_series(s->routes.r[route].backend, out, max);
}

/* Fill a socket address for cfg.bind:port; false when bind is not an IPv4/IPv6 literal. */
static bool bind_address(const struct server_config *c, struct sockaddr_storage *ss, bool *v6)
{
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	*v6 = false;
	if (inet_pton(AF_INET, c->bind, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons((uint16_t)c->port);
		return true;
	}
	if (inet_pton(AF_INET6, c->bind, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)c->port);
		*v6 = true;
		return true;
	}
	return false;
}

/*
 * MHD_OPTION_EXTERNAL_LOGGER.  libmicrohttpd 0.9.75 reports the answers it
 * sends before the request line is parsed nowhere but here: the access
 * handler, the URI callback and NOTIFY_COMPLETED never see that request, and
 * its response is gone by NOTIFY_CONNECTION's CLOSED.  Those are 414 (the line
 * outgrows the buffer), 505 (HTTP/0.x or /2 and up) and 400 (a malformed
 * HTTP-version), each logged first by transmit_error_response as "Error
 * processing request (HTTP response code is %u ...".  So 414, 505 and every
 * 400 are counted here, by the status argument; the answers it sends after
 * the line with other statuses (413, 431, 500) are counted at NOTIFY_COMPLETED
 * (callbacks.c) and skipped here.  A 400 after the line is logged the same way
 * and no signal tells the two 400s apart, so 400 stays with the log.  The log
 * also says "Server reached connection limit..." when a daemon's own limit
 * (a backstop behind the accept policy) closes a connection before the
 * accept policy runs.  Nothing is printed.
 */
static void on_mhd_log(void *cls, const char *fm, va_list ap)
{
	static const char ANSWERED[] = "Error processing request (HTTP response code is %u";
	static const char AT_LIMIT[] = "Server reached connection limit";
	struct server *s = cls;
	unsigned status;

	if (strncmp(fm, ANSWERED, sizeof(ANSWERED) - 1) == 0) {
		status = va_arg(ap, unsigned);
		if (status == MHD_HTTP_BAD_REQUEST || status == MHD_HTTP_URI_TOO_LONG ||
		    status == MHD_HTTP_HTTP_VERSION_NOT_SUPPORTED)
			stats_record(s->stats, -1, (int)status, STATS_NONE, clock_monotonic_ns());
	} else if (strncmp(fm, AT_LIMIT, sizeof(AT_LIMIT) - 1) == 0) {
		stats_refused(s->stats, STATS_REFUSED_CONNECTION_LIMIT);
	}
}

/*
 * The accept policy, on the listener's own thread: refuse once the drain
 * asked it to stop accepting, or when the address holds its share.
 */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
	struct listener *l = cls;
	struct server *s = l->owner;

	(void)addrlen;
	if (!listeners_keep_accepting(l))
		return MHD_NO;
	switch (conns_admit(s->conns, addr)) {
	case CONNS_ADMIT:
		return MHD_YES;
	case CONNS_FULL:
		stats_refused(s->stats, STATS_REFUSED_CONNECTION_LIMIT);
		return MHD_NO;
	case CONNS_ADDRESS_FULL:
		break;
	}
	stats_refused(s->stats, STATS_REFUSED_PER_IP);
	return MHD_NO;
}

/*
 * One listener's daemon: one internal polling thread.  The connection
 * table holds the whole server to --max-connections (the accept policy
 * closes a connection past it); each daemon's own limit is only a backstop
 * for accepts racing on several listeners, since the kernel's spread of
 * connections over the listeners is never exactly even.
 */
static struct MHD_Daemon *start_one(void *ctx, struct listener *l, const struct sockaddr *sa, bool share)
{
	struct server *s = ctx;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC | MHD_USE_TURBO |
	                 MHD_USE_ERROR_LOG;
	uint64_t tmo = headers_ceil_secs(s->cfg.connection_timeout_ns);
	unsigned n = s->cfg.threads ? s->cfg.threads : 1;

	/* "::" is every address, IPv4 ones too; another IPv6 address is that one only. */
	if (sa->sa_family == AF_INET6)
		flags |= strcmp(s->cfg.bind, "::") == 0 ? MHD_USE_DUAL_STACK : MHD_USE_IPv6;
	/* /events streams are suspended between events, and the delays and asynchronous stores hold requests. */
	flags |= MHD_ALLOW_SUSPEND_RESUME;
	/* The logger must be the first option, or MHD prints what comes before it. */
	return MHD_start_daemon(flags, 0, on_accept, l, callbacks_request, s,
	                        MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s,
	                        MHD_OPTION_NOTIFY_COMPLETED, callbacks_completed, s,
	                        MHD_OPTION_NOTIFY_CONNECTION, callbacks_connection, s,
	                        MHD_OPTION_URI_LOG_CALLBACK, callbacks_uri, s,
	                        MHD_OPTION_UNESCAPE_CALLBACK, callbacks_unescape, s,
	                        MHD_OPTION_SOCK_ADDR, sa,
	                        MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)share,
	                        MHD_OPTION_CONNECTION_LIMIT, s->cfg.max_connections + n,
	                        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)(tmo ? tmo : 1),
	                        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)SERVER_MEMORY_LIMIT,
	                        MHD_OPTION_CONNECTION_MEMORY_INCREMENT, (size_t)SERVER_MEMORY_INCREMENT,
	                        MHD_OPTION_LISTEN_BACKLOG_SIZE, 4096u,
	                        MHD_OPTION_END);
}

static int start_daemon(struct server *s, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	bool v6;

	if (!bind_address(&s->cfg, &ss, &v6)) {
		snprintf(err, errlen, "--bind '%s': not an IPv4 or IPv6 address", s->cfg.bind);
		return -1;
	}
	if (listeners_start(&s->listeners, s->cfg.threads ? s->cfg.threads : 1, &ss, start_one, s, err, errlen) < 0) {
		snprintf(err, errlen, "cannot listen on %s:%u (address in use or not available)", s->cfg.bind,
		         s->cfg.port);
		return -1;
	}
	s->port = s->listeners.port;
	s->running = true;
	return 0;
}

static void free_parts(struct server *s)
{
	upstream_free(s->upstream);
	sched_stop(s->sched);
	while (s->ticks) {
		struct server_every *e = s->ticks;

		s->ticks = e->next;
		free(e);
	}
	conns_free(s->conns);
	responses_destroy(&s->resp);
	routes_free(&s->routes);
	stats_free(s->stats);
	clients_free(s->clients);
	if (s->plugin && s->cfg.plugin->free)
		s->cfg.plugin->free(s->plugin);
	sched_free(s->sched);
	if (s->life.sched)
		lifecycle_destroy(&s->life);
	free(s);
}

/* The per-client table, its hash keyed at random (from the time and the generation when the kernel has none). */
static struct clients *new_clients(const struct server *s)
{
	struct siphash_key key;

	if (siphash_key_random(&key) < 0)
		key = (struct siphash_key){ clock_wall_ns(), s->gen * 0x9e3779b97f4a7c15ULL };
	return clients_new(&key, s->epoch_ns);
}

/* The open-file limit (RLIMIT_NOFILE's soft value); 1024 when unknown. */
static uint64_t nofile_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
		return 1024;
	return (uint64_t)rl.rlim_cur;
}

/* The connection table: per-address counts under a random hash key, and head deadlines. */
static int setup_conns(struct server *s, char *err, size_t errlen)
{
	char msg[256];
	struct conns_config cc = { .header_timeout_ns = s->cfg.header_timeout_ns,
		                   .body_timeout_ns = s->cfg.body_timeout_ns,
		                   .ops = { .late = callbacks_close_late, .drained = callbacks_answer_drained,
		                            .body_late = callbacks_answer_body_late, .ctx = s } };
	size_t slots;

	/* A limit given over the open-file limit is the caller's to refuse (serve does); here it stands. */
	server_config_fit_connections(&s->cfg, nofile_limit(), msg, sizeof(msg));
	cc.per_ip = s->cfg.max_connections_per_ip;
	cc.v6_prefix = s->cfg.ipv6_prefix;
	cc.max_conns = s->cfg.max_connections;
	/* Per connection: its head deadline and its request's park; then the backends' and the ticks'. */
	slots = 2 * ((size_t)cc.max_conns + LISTENERS_MAX) + 64;
	if (!(s->sched = sched_new(slots, routes_backend_timer_slots(&s->routes) + 16))) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	lifecycle_init(&s->life, s->sched, NULL);
	cc.sched = s->sched;
	if (siphash_key_random(&cc.key) < 0 || !(s->conns = conns_new(&cc))) {
		snprintf(err, errlen, "cannot set up the connection table");
		return -1;
	}
	return 0;
}

/* The plugin's handlers (the built-ins) after the config's; 0, or -1 with a one-line reason in err. */
static int start_plugin(struct server *s, char *err, size_t errlen)
{
	struct server_handler h[SERVER_MAX_PLUGIN_HANDLERS];
	int n = 0;

	memset(h, 0, sizeof(h));
	if (s->cfg.plugin && (n = s->cfg.plugin->start(s, &s->cfg, h, SERVER_MAX_PLUGIN_HANDLERS, &s->plugin)) < 0) {
		s->plugin = NULL;
		snprintf(err, errlen, "cannot start the built-in handlers");
		return -1;
	}
	hooks_setup(&s->hooks, &s->cfg, h, (size_t)n);
	return 0;
}

/* --upstream: the proxy's client; 0, or -1 with a one-line reason in err. */
static int setup_upstream(struct server *s, char *err, size_t errlen)
{
	struct upstream_config uc = { .max_conns = s->cfg.upstream_max_conns,
		                      .connect_timeout_ns = s->cfg.upstream_connect_timeout_ns,
		                      .timeout_ns = s->cfg.upstream_timeout_ns,
		                      .max_body = s->cfg.upstream_max_body,
		                      /* every connection's worth of answers may wait for slow clients at once, no more */
		                      .max_buffered = s->cfg.upstream_max_body * s->cfg.upstream_max_conns };

	if (!s->cfg.upstream[0])
		return 0;
	snprintf(uc.url, sizeof(uc.url), "%s", s->cfg.upstream);
	if (!upstream_url_ok(uc.url, err, errlen))
		return -1;
	return (s->upstream = upstream_new(&uc, err, errlen)) ? 0 : -1;
}

/* The parts of s before its daemon starts; 0, or -1 with a one-line reason in err. */
static int setup_parts(struct server *s, char *err, size_t errlen)
{
	if (routes_setup(&s->routes, &s->cfg, err, errlen) < 0 || setup_conns(s, err, errlen) < 0)
		return -1;
	s->stats = stats_new(s->routes.n, s->epoch_ns);
	s->clients = new_clients(s);
	if (!s->stats || !s->clients || responses_init(&s->resp, &s->cfg, s->gen) < 0) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (sched_start(s->sched) < 0) {
		snprintf(err, errlen, "cannot start the timer thread");
		return -1;
	}
	routes_start_backends(&s->routes, &s->life);
	if (setup_upstream(s, err, errlen) < 0)
		return -1;
	return start_plugin(s, err, errlen);
}

struct server *server_start(const struct server_config *c, char *err, size_t errlen)
{
	struct server *s = aligned_alloc(64, (sizeof(*s) + 63) / 64 * 64);

	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	memset(s, 0, sizeof(*s));
	s->cfg = *c;
	s->gen = atomic_fetch_add(&server_generation, 1) + 1;
	s->epoch_ns = clock_monotonic_ns();
	if (setup_parts(s, err, errlen) < 0 || start_daemon(s, err, errlen) < 0) {
		free_parts(s);
		return NULL;
	}
	return s;
}

void server_drain(struct server *s)
{
	if (!s || !s->running)
		return;
	lifecycle_close(&s->life);
	/* Streams end now: they would hold the drain, and none may stay suspended when the daemon stops. */
	if (s->plugin && s->cfg.plugin->stop)
		s->cfg.plugin->stop(s->plugin);
	listeners_quiesce(&s->listeners);
	/* A body still arriving gets its 503 now rather than hold the drain to its deadline. */
	conns_drain(s->conns, clock_monotonic_ns());
	/* Requests waiting in a backend are shed now; those being served are woken below with the rest. */
	routes_close_backends(&s->routes);
	/*
	 * No new request or park from here; every parked request is woken as
	 * shed (a held answer goes out now, a backend's service ends early) and
	 * the drain waits on a condition until none is in flight.
	 */
	lifecycle_drain(&s->life, clock_monotonic_ns() + DRAIN_NS);
	/* No upstream answer may wake a request past this. */
	upstream_stop(s->upstream);
	sched_stop(s->sched);
	/* No connection may stay suspended on a store past this: MHD_stop_daemon would abort. */
	routes_quiesce(&s->routes);
	listeners_stop(&s->listeners);
	s->running = false;
}

void server_stop(struct server *s)
{
	if (!s)
		return;
	server_drain(s);
	free_parts(s);
}
