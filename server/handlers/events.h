#ifndef RATELAB_EVENTS_H
#define RATELAB_EVENTS_H

#include <stdint.h>

#include "server/server.h"

/*
 * GET /events: the live figures (server/live.h) as Server-Sent Events, one
 * "data:" line of JSON per event, every EVENTS_PERIOD_NS.  A new subscriber
 * first gets one event with the last 60 s of the timeline, then events with
 * the last few buckets.  Announcements (events_announce: a named event,
 * "event: NAME", such as the room herd's "herd") go to every stream at once,
 * not at the next tick.  GET /events?only=announcements is a quiet stream:
 * no figures, only the announcements and a comment line (":") every 2 s
 * that keeps its connection in use; /play pages listen so.
 *
 * A tick on the server's timer thread (server_every) builds each event once
 * and appends it to every subscriber's buffer.  A subscriber's connection
 * sends from its buffer and, once it has sent everything, is parked
 * (server_park) until the next event wakes it,
 * so a stream holds no server thread.  Bounded: at most max_subscribers
 * streams (the next gets 503), each buffer EVENTS_BUFFER bytes, and one
 * client address (an IPv6 one by its prefix) at most a fair share of them,
 * a quarter (at least 1): its next stream gets 503 while others still find
 * room, so one client looping connect-read-close cannot keep the hub full.  A
 * subscriber whose buffer would overflow (it does not read) is dropped: its
 * buffer is freed, it no longer counts, and its stream ends; its connection
 * closes after EVENTS_STALL_S without progress.  Nothing waits for a
 * subscriber: a slow one costs the server nothing but its own buffer.
 */

#define EVENTS_PERIOD_NS (200ULL * 1000 * 1000)
#define EVENTS_BUFFER (256 * 1024)
#define EVENTS_STALL_S 5
#define EVENTS_RECENT_BUCKETS 5

struct events;
struct server_request;
struct server_reply;

/*
 * A hub for server srv (its parts must outlive it) with room for
 * max_subscribers, addresses told apart as addr_count_key does with
 * v6_prefix; NULL when out of memory.
 */
struct events *events_new(struct server *srv, unsigned max_subscribers, unsigned v6_prefix);

/* Start the ticks (on the server's timer).  Returns 0, or -1 when out of room. */
int events_start(struct events *ev);

/*
 * End every stream (each sends what it has, then ends), refuse new ones and
 * stop building events.  Before the daemon stops.  Idempotent, thread-safe.
 */
void events_stop(struct events *ev);

/* events_stop, then free.  Only once no stream is left (the daemon stopped).  NULL: no-op. */
void events_free(struct events *ev);

/*
 * Hand every stream fed now the event "event: NAME\ndata: JSON\n\n" and wake
 * the ones waiting, now.  name and json are one line each.  Returns 0, or -1
 * (a line break in them, out of memory, the hub stopping).  Thread-safe.
 */
int events_announce(struct events *ev, const char *name, const char *json);

/* Streams being fed now (dropped ones not counted).  Thread-safe. */
unsigned events_subscribers(struct events *ev);

/*
 * Answer req (GET /events) into out: a stream (out->stream_*) that starts
 * with the history event, or 503 when the hub is full or stopping.  Returns
 * 0, or -1 when out of memory.  Called from the server's threads.
 */
int events_subscribe(struct events *ev, const struct server_request *req, struct server_reply *out);

#endif
