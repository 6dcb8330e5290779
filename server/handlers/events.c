/* /events: the tick on the server's timer, the subscribers' buffers, and their parked streams. */
#include "server/handlers/events.h"

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "server/http/addr_count.h"
#include "server/live.h"

#define RATE_SAMPLES 6          /* totals kept for the rates: the last second at 200 ms */
#define STREAM_HEAD "retry: 2000\n\n"
#define HEARTBEAT ":\n\n"       /* a comment line: keeps a quiet stream's connection in use */
#define HEARTBEAT_TICKS 10       /* a quiet stream's heartbeat every 10 ticks (2 s) */

/* Where a subscriber's stream is; the hub's lock guards it. */
enum sub_phase {
	SUB_SENDING,     /* its connection sends from buf (or will soon ask for more) */
	SUB_SUSPENDED,   /* it sent everything: suspended until the next event */
	SUB_DROPPED,     /* its buffer overflowed: freed; the stream ends on the next read */
	SUB_ENDING,      /* the hub stops: the stream ends once buf is sent */
};

struct subscriber {
	struct events *ev;
	struct subscriber *next;
	struct MHD_Connection *conn;
	struct server_park *park;   /* the stream while it waits for the next event */
	enum sub_phase phase;
	char *buf;                  /* EVENTS_BUFFER bytes, NULL once dropped */
	size_t head, len;           /* unsent bytes are buf[head .. head+len) */
	bool keyed;                 /* its client's address is known: addr holds it */
	bool quiet;                 /* ?only=announcements: no figures, only announcements and heartbeats */
	bool admin;                 /* an admin client (the instructor's projector): may take the reserve */
	unsigned char addr[ADDR_COUNT_KEY_LEN];
};

struct events {
	struct server *srv;
	pthread_mutex_t lock;
	struct subscriber *subs;    /* every stream still open, dropped ones included */
	_Atomic unsigned fed;       /* streams fed now (changed under lock, read without) */
	unsigned max;               /* the most fed at once */
	unsigned share;             /* the most fed at once for one address */
	unsigned reserve;           /* of max, kept for admin clients: a room's pages cannot take the projector's */
	unsigned v6_prefix;
	bool stopping;
	struct live_totals samples[RATE_SAMPLES];
	unsigned nsamples;          /* samples taken so far; the newest is samples[(nsamples-1) % RATE_SAMPLES] */
};

struct events *events_new(struct server *srv, unsigned max_subscribers, unsigned v6_prefix)
{
	struct events *ev = calloc(1, sizeof(*ev));

	if (!ev)
		return NULL;
	ev->srv = srv;
	ev->max = max_subscribers;
	ev->share = max_subscribers / 4 ? max_subscribers / 4 : 1;
	ev->reserve = max_subscribers >= 8 ? max_subscribers / 8 : max_subscribers >= 2 ? 1 : 0;
	ev->v6_prefix = v6_prefix;
	pthread_mutex_init(&ev->lock, NULL);
	return ev;
}

/* The parts an event is made of, read now (ri must outlive *p). */
static void parts_now(struct events *ev, struct stats_route_info ri[SERVER_MAX_ROUTES], struct live_parts *p)
{
	server_live_parts(ev->srv, ri, p);
}

/* The oldest sample of the last second (the rates' start), or `now` itself when there is none. Locked. */
static struct live_totals rates_since(const struct events *ev, const struct live_totals *now)
{
	if (ev->nsamples == 0)
		return *now;
	return ev->samples[ev->nsamples < RATE_SAMPLES ? 0 : ev->nsamples % RATE_SAMPLES];
}

/* One event's bytes, "data: JSON\n\n" (malloc'd; *len set), with `buckets` of the timeline; NULL when out of memory. */
static char *event_text(const struct live_parts *p, const struct live_totals *now, const struct live_totals *then,
                        size_t buckets, size_t *len)
{
	char *json = live_event_json(p, now, then, buckets), *text;
	size_t n;

	if (!json)
		return NULL;
	n = strlen(json);
	text = malloc(n + 8);
	if (text) {
		memcpy(text, "data: ", 6);
		memcpy(text + 6, json, n);
		memcpy(text + 6 + n, "\n\n", 2);
		*len = n + 8;
	}
	free(json);
	return text;
}

/* Append n bytes to sb's buffer; false when they do not fit.  Locked. */
static bool sub_append(struct subscriber *sb, const char *text, size_t n)
{
	if (!sb->buf || sb->len + n > EVENTS_BUFFER)
		return false;
	if (sb->head + sb->len + n > EVENTS_BUFFER) {
		memmove(sb->buf, sb->buf + sb->head, sb->len);
		sb->head = 0;
	}
	memcpy(sb->buf + sb->head + sb->len, text, n);
	sb->len += n;
	return true;
}

/* Wake sb's connection when it waits for bytes (its read then finds them, or the end).  Locked. */
static void sub_wake(struct subscriber *sb, enum sub_phase next)
{
	bool suspended = sb->phase == SUB_SUSPENDED;

	sb->phase = next;
	if (suspended)
		server_wake(sb->park);
}

/* Stop feeding sb: its buffer goes, it no longer counts, and its stream ends.  Locked. */
static void sub_drop(struct events *ev, struct subscriber *sb)
{
	free(sb->buf);
	sb->buf = NULL;
	sb->len = 0;
	ev->fed--;
	sub_wake(sb, SUB_DROPPED);
}

/* Which streams an event goes to. */
enum fan_to {
	FAN_FIGURES,     /* the streams of figures (not quiet) */
	FAN_QUIET,       /* the quiet ones */
	FAN_ALL,
};

/* Hand one event to every subscriber being fed that `to` names.  Locked. */
static void fan_out(struct events *ev, enum fan_to to, const char *text, size_t n)
{
	for (struct subscriber *sb = ev->subs; sb; sb = sb->next) {
		if (sb->phase != SUB_SENDING && sb->phase != SUB_SUSPENDED)
			continue;
		if ((to == FAN_FIGURES && sb->quiet) || (to == FAN_QUIET && !sb->quiet))
			continue;
		if (!sub_append(sb, text, n))
			sub_drop(ev, sb);
		else
			sub_wake(sb, SUB_SENDING);
	}
}

/*
 * Take this tick's totals sample; build and hand out an event when someone
 * listens.  Locked on entry and exit; the figures are read and the event
 * built unlocked, so streams and subscriptions go on meanwhile.
 */
static void tick(struct events *ev)
{
	struct stats_route_info ri[SERVER_MAX_ROUTES];
	struct live_parts p;
	struct live_totals now, then;
	char *text = NULL;
	size_t n = 0;

	pthread_mutex_unlock(&ev->lock);
	parts_now(ev, ri, &p);
	live_totals_at(&p, clock_monotonic_ns(), &now);
	pthread_mutex_lock(&ev->lock);
	then = rates_since(ev, &now);
	ev->samples[ev->nsamples++ % RATE_SAMPLES] = now;
	if (atomic_load(&ev->fed) == 0 || ev->stopping)
		return;
	if (ev->nsamples % HEARTBEAT_TICKS == 0)
		fan_out(ev, FAN_QUIET, HEARTBEAT, sizeof(HEARTBEAT) - 1);
	pthread_mutex_unlock(&ev->lock);
	text = event_text(&p, &now, &then, EVENTS_RECENT_BUCKETS, &n);
	pthread_mutex_lock(&ev->lock);
	if (text && !ev->stopping)
		fan_out(ev, FAN_FIGURES, text, n);
	free(text);
}

/* The server's timer, every EVENTS_PERIOD_NS: this tick's sample, and an event for the streams. */
static void on_tick(void *arg)
{
	struct events *ev = arg;

	pthread_mutex_lock(&ev->lock);
	if (!ev->stopping)
		tick(ev);
	pthread_mutex_unlock(&ev->lock);
}

int events_start(struct events *ev)
{
	return server_every(ev->srv, EVENTS_PERIOD_NS, on_tick, ev);
}

void events_stop(struct events *ev)
{
	if (!ev)
		return;
	pthread_mutex_lock(&ev->lock);
	ev->stopping = true;
	for (struct subscriber *sb = ev->subs; sb; sb = sb->next)
		if (sb->phase == SUB_SENDING || sb->phase == SUB_SUSPENDED)
			sub_wake(sb, SUB_ENDING);
	pthread_mutex_unlock(&ev->lock);
}

void events_free(struct events *ev)
{
	if (!ev)
		return;
	events_stop(ev);
	/* The daemon has stopped, so every stream's free ran: the list is empty. */
	pthread_mutex_destroy(&ev->lock);
	free(ev);
}

int events_announce(struct events *ev, const char *name, const char *json)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	bool sent = false;

	if (strpbrk(name, "\r\n") || strpbrk(json, "\r\n") || !(f = open_memstream(&text, &len)))
		return -1;
	fprintf(f, "event: %s\ndata: %s\n\n", name, json);
	if (fclose(f) != 0) {
		free(text);
		return -1;
	}
	pthread_mutex_lock(&ev->lock);
	if (!ev->stopping) {
		fan_out(ev, FAN_ALL, text, len);
		sent = true;
	}
	pthread_mutex_unlock(&ev->lock);
	free(text);
	return sent ? 0 : -1;
}

unsigned events_subscribers(struct events *ev)
{
	return atomic_load(&ev->fed);
}

/* MHD asks for the stream's next bytes: what is buffered, else the end, else suspend until the next event. */
static ssize_t sub_read(void *ctx, uint64_t pos, char *buf, size_t max)
{
	struct subscriber *sb = ctx;
	struct events *ev = sb->ev;
	ssize_t n;

	(void)pos;
	pthread_mutex_lock(&ev->lock);
	if (sb->len > 0) {
		n = (ssize_t)(sb->len < max ? sb->len : max);
		memcpy(buf, sb->buf + sb->head, (size_t)n);
		sb->head += (size_t)n;
		sb->len -= (size_t)n;
	} else if (sb->phase == SUB_DROPPED) {
		n = MHD_CONTENT_READER_END_WITH_ERROR;
	} else if (sb->phase == SUB_ENDING) {
		n = MHD_CONTENT_READER_END_OF_STREAM;
	} else if (server_park(ev->srv, sb->park, sb->conn)) {
		sb->phase = SUB_SUSPENDED;
		n = 0;
	} else {
		/* the server drains: no more events */
		n = MHD_CONTENT_READER_END_OF_STREAM;
	}
	pthread_mutex_unlock(&ev->lock);
	return n;
}

/* The stream's answer is over: unlink and free sb. */
static void sub_free(void *ctx)
{
	struct subscriber *sb = ctx;
	struct events *ev = sb->ev;

	pthread_mutex_lock(&ev->lock);
	for (struct subscriber **p = &ev->subs; *p; p = &(*p)->next)
		if (*p == sb) {
			*p = sb->next;
			break;
		}
	if (sb->buf)
		ev->fed--;
	pthread_mutex_unlock(&ev->lock);
	server_park_free(sb->park);
	free(sb->buf);
	free(sb);
}

/* Streams fed now for sb's address.  Locked. */
static unsigned fed_for(const struct events *ev, const struct subscriber *sb)
{
	unsigned n = 0;

	for (const struct subscriber *o = ev->subs; o; o = o->next)
		if (o->buf && o->keyed && memcmp(o->addr, sb->addr, ADDR_COUNT_KEY_LEN) == 0)
			n++;
	return n;
}

/*
 * Link and count sb, unless the hub is stopping, full (for a client that is
 * not an admin, the reserve counts as full), or its address has its share.
 * Locked.
 */
static bool sub_link(struct events *ev, struct subscriber *sb)
{
	unsigned room = sb->admin ? ev->max : ev->max - ev->reserve;

	if (ev->stopping || atomic_load(&ev->fed) >= room || (sb->keyed && fed_for(ev, sb) >= ev->share))
		return false;
	sb->next = ev->subs;
	ev->subs = sb;
	ev->fed++;
	return true;
}

/*
 * A new subscriber on conn from `client` (NULL: unknown), quiet or not, its
 * buffer holding the stream's head and then `first` (n bytes; NULL: none), linked and counted in one
 * step, so no event can go out ahead of `first`.  NULL when the hub is full
 * or stopping, its address has its share, or out of memory.
 */
static struct subscriber *sub_new(struct events *ev, struct MHD_Connection *conn, const struct sockaddr *client,
                                  bool quiet, bool admin, const char *first, size_t n)
{
	struct subscriber *sb = calloc(1, sizeof(*sb));

	if (sb && (!(sb->buf = malloc(EVENTS_BUFFER)) || !(sb->park = server_park_new()))) {
		free(sb->buf);
		free(sb);
		sb = NULL;
	}
	if (!sb)
		return NULL;
	sb->ev = ev;
	sb->conn = conn;
	sb->keyed = addr_count_key(client, ev->v6_prefix, sb->addr);
	sb->quiet = quiet;
	sb->admin = admin;
	memcpy(sb->buf, STREAM_HEAD, sizeof(STREAM_HEAD) - 1);
	sb->len = sizeof(STREAM_HEAD) - 1;
	if (first)
		sub_append(sb, first, n);
	pthread_mutex_lock(&ev->lock);
	if (!sub_link(ev, sb)) {
		pthread_mutex_unlock(&ev->lock);
		server_park_free(sb->park);
		free(sb->buf);
		free(sb);
		return NULL;
	}
	pthread_mutex_unlock(&ev->lock);
	return sb;
}

/* The first event of a stream (malloc'd, *n set): the last 60 s of the timeline, the rates of the last second. */
static char *history_text(struct events *ev, size_t *n)
{
	struct stats_route_info ri[SERVER_MAX_ROUTES];
	struct live_parts p;
	struct live_totals now, then;

	parts_now(ev, ri, &p);
	live_totals_at(&p, clock_monotonic_ns(), &now);
	pthread_mutex_lock(&ev->lock);
	then = rates_since(ev, &now);
	pthread_mutex_unlock(&ev->lock);
	return event_text(&p, &now, &then, STATS_BUCKETS, n);
}

static int refuse(struct server_reply *out, const char *why)
{
	out->status = MHD_HTTP_SERVICE_UNAVAILABLE;
	out->content_type = "text/plain";
	snprintf(out->headers, sizeof(out->headers), "Retry-After: 5\n");
	out->body = strdup(why);
	out->body_len = out->body ? strlen(out->body) : 0;
	return out->body ? 0 : -1;
}

static int refuse_only(struct server_reply *out)
{
	out->status = MHD_HTTP_BAD_REQUEST;
	out->content_type = "text/plain";
	out->body = strdup("GET /events, or /events?only=announcements\n");
	out->body_len = out->body ? strlen(out->body) : 0;
	return out->body ? 0 : -1;
}

int events_subscribe(struct events *ev, const struct server_request *req, struct server_reply *out)
{
	struct MHD_Connection *conn = req->conn;
	struct subscriber *sb = NULL;
	const char *only = server_request_query(req, "only");
	bool quiet = only && strcmp(only, "announcements") == 0;
	char why[192], *first = NULL;
	size_t n = 0;

	if (only && !quiet)
		return refuse_only(out);
	/* A full hub refuses before building anything: refusals stay cheap. */
	if (atomic_load(&ev->fed) < ev->max) {
		if (!quiet)
			first = history_text(ev, &n);
		sb = sub_new(ev, conn, req->client, quiet, server_admin_allowed(ev->srv, req, NULL, 0), first, n);
		free(first);
	}
	if (!sb) {
		snprintf(why, sizeof(why), "no room for another /events stream (at most %u, %u from one address, %u kept "
		         "for admin clients; --max-subscribers)\n", ev->max, ev->share, ev->reserve);
		return refuse(out, why);
	}
	/* A healthy stream sends every EVENTS_PERIOD_NS (a quiet one every HEARTBEAT_TICKS of them): one that
	 * makes no progress this long is closed. */
	MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned)EVENTS_STALL_S);
	out->status = MHD_HTTP_OK;
	out->content_type = "text/event-stream";
	snprintf(out->headers, sizeof(out->headers), "Cache-Control: no-store\nX-Accel-Buffering: no\n");
	out->stream_read = sub_read;
	out->stream_free = sub_free;
	out->stream_ctx = sb;
	return 0;
}
