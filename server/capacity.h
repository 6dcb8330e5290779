#ifndef RATELAB_CAPACITY_H
#define RATELAB_CAPACITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A backend that can be overloaded honestly: the capacity model behind a
 * route.  W virtual workers each serve one request at a time for a service
 * time (fixed, normal or exponential); a request that finds every worker
 * busy waits in a bounded FIFO or LIFO queue.  The model does no work and
 * keeps no clock: the caller says when things happen (now_ns) and acts on
 * the events it gets back (start a service timer, or shed a request with a
 * 503).  Randomness comes from the seed given at creation.  Not thread-safe:
 * the caller locks.
 *
 * What makes a retry storm metastable is here on purpose: a request whose
 * client has gone away is still served when it reaches a worker (the caller
 * says at the end of each service whether the client was still there, and
 * that work is counted apart), unless the queue drops it first
 * (queue-timeout).  A rejection can cost work too (reject-cost): free
 * workers do it, one service time at a time, before the next request.
 *
 * Triggers take capacity away: "25%@5s+3s" leaves a quarter of the workers
 * (rounded, at least 0) from 5 s for 3 s, counted from the model's epoch
 * (creation or capacity_reset).  A busy worker over the reduced count
 * finishes its request; no new one starts until the busy count is under it.
 */

#define CAPACITY_MAX_TRIGGERS 8
#define CAPACITY_BUCKET_NS (100ULL * 1000 * 1000)   /* the series: 100 ms rows */
#define CAPACITY_BUCKETS 1200                        /* 2 minutes; later events land in the last row */
#define CAPACITY_MAX_WORKERS 10000
#define CAPACITY_MAX_QUEUE 1000000

enum capacity_service_kind {
	CAPACITY_SERVICE_FIXED,    /* "10ms" */
	CAPACITY_SERVICE_NORMAL,   /* "10ms±2ms" (or +-): normal, clamped to [0, mean + 4 sd] */
	CAPACITY_SERVICE_EXP,      /* "exp:10ms": exponential with that mean, clamped to 50 means */
};

enum capacity_queue_kind {
	CAPACITY_FIFO,             /* oldest first; a full queue refuses the newcomer */
	CAPACITY_LIFO,             /* newest first; a full queue drops its oldest to make room */
};

struct capacity_trigger {
	double fraction;           /* of the workers left, 0..1 */
	uint64_t start_ns;         /* from the epoch */
	uint64_t len_ns;           /* > 0 */
};

struct capacity_params {
	unsigned workers;          /* 0: no model (the route answers at once) */
	enum capacity_service_kind service;
	uint64_t service_ns;       /* the mean, > 0 */
	uint64_t service_sd_ns;    /* NORMAL */
	enum capacity_queue_kind queue;
	uint32_t queue_max;        /* waiting requests at most; 0: none wait */
	uint64_t queue_timeout_ns; /* a request that waited longer is dropped unserved; 0: never */
	double reject_cost;        /* worker time a refused or dropped request costs, in mean service times */
	struct capacity_trigger triggers[CAPACITY_MAX_TRIGGERS];
	unsigned ntriggers;
};

enum capacity_event_kind {
	CAPACITY_START,            /* a worker took job: its service ends at done_ns */
	CAPACITY_SHED,             /* job leaves unserved (why): answer it 503 */
	CAPACITY_DEBT,             /* a worker does rejection work (job NULL) until done_ns */
};

enum capacity_shed_reason {
	CAPACITY_SHED_FULL,        /* the queue was full (FIFO) or no queue */
	CAPACITY_SHED_EVICTED,     /* dropped from a full LIFO queue for a newer request */
	CAPACITY_SHED_EXPIRED,     /* waited past queue-timeout */
	CAPACITY_SHED_FLUSHED,     /* the model was closed (the server is stopping) */
	CAPACITY_SHED_REASONS
};

struct capacity_event {
	enum capacity_event_kind kind;
	void *job;                 /* the caller's request (NULL for DEBT) */
	uint64_t done_ns;          /* START, DEBT */
	uint64_t service_ns;       /* START, DEBT: the work it takes */
	enum capacity_shed_reason why;  /* SHED */
};

/* Who a finished service was for. */
enum capacity_client {
	CAPACITY_PRESENT,          /* the client was still there */
	CAPACITY_GONE,             /* the client had gone away: wasted work */
	CAPACITY_NOBODY,           /* rejection work (a DEBT event) */
};

struct capacity_stats {
	uint64_t arrived, started;
	uint64_t served, served_gone;        /* services ended; served_gone of them for gone clients */
	uint64_t work_ns, work_gone_ns;      /* service time done; work_gone_ns of it for gone clients */
	uint64_t debt_work_ns;               /* rejection work taken by workers */
	uint64_t shed[CAPACITY_SHED_REASONS];
	uint32_t queue, busy, workers;       /* now: waiting, serving, workers the triggers leave */
	uint32_t queue_peak;                 /* since the epoch */
	uint32_t served_1s, served_gone_1s;  /* services ended in the last 10 rows (about 1 s) */
};

/* One 100 ms row of the series, from the epoch. */
struct capacity_bucket {
	uint32_t queue_max, queue_end;       /* waiting requests: the most, and at the row's last event */
	uint32_t workers;                    /* workers the triggers leave at the row's start */
	uint32_t arrived, shed;
	uint32_t served, served_gone;
	uint64_t work_ns, work_gone_ns;
};

/*
 * Parse a --capacity SPEC, "workers=4,service=10ms,queue=fifo:1000,
 * queue-timeout=1s,reject-cost=0.1", into *p (keys in any order; missing
 * ones: 4 workers, 10ms, fifo:1000, no timeout, no cost; triggers left
 * alone).  Returns 0, or -1 with a one-line reason in err.  Pure.
 */
int capacity_parse(const char *spec, struct capacity_params *p, char *err, size_t errlen);

/* Parse a --trigger "F@START+LEN" (F as 25% or 0.25) into *t.  Returns 0, or -1 with a reason.  Pure. */
int capacity_trigger_parse(const char *spec, struct capacity_trigger *t, char *err, size_t errlen);

/* "4 workers, service 10ms, fifo queue of 1000" (and what else is set), truncated to len.  Pure. */
void capacity_describe(const struct capacity_params *p, char *buf, size_t len);

/* "25% of the workers from 5s for 3s". */
void capacity_trigger_describe(const struct capacity_trigger *t, char *buf, size_t len);

/* Workers the triggers leave at `offset_ns` from the epoch.  Pure. */
unsigned capacity_workers_at(const struct capacity_params *p, uint64_t offset_ns);

/* A model at epoch now_ns drawing service times from seed; NULL on allocation failure or workers 0. */
struct capacity *capacity_new(const struct capacity_params *p, uint64_t now_ns, uint64_t seed);
void capacity_free(struct capacity *c);

/*
 * A request (job, the caller's pointer) arrives at now.  Writes at most max
 * (>= 1) events and returns how many: job or others started or shed,
 * rejection work.  No event for job: it waits, and a later call's events say
 * when it starts or is shed.  A job is never lost: one that is placed or
 * refused always is, within max.
 */
size_t capacity_arrive(struct capacity *c, uint64_t now, void *job, struct capacity_event *ev, size_t max);

/*
 * The service (or rejection work) of a START (or DEBT) event ended at now:
 * its worker is free.  service_ns is the event's (ignored for rejection
 * work, counted when a worker took it); client says for whom it was.
 * Returns the events this frees up (at most max; call capacity_poll for the
 * rest).
 */
size_t capacity_done(struct capacity *c, uint64_t now, uint64_t service_ns, enum capacity_client client,
                     struct capacity_event *ev, size_t max);

/* Start what can start now and drop what expired (after a trigger ends, say).  Returns the events. */
size_t capacity_poll(struct capacity *c, uint64_t now, struct capacity_event *ev, size_t max);

/* The next trigger start or end after now (absolute ns), or UINT64_MAX. */
uint64_t capacity_next_change(const struct capacity *c, uint64_t now);

/*
 * Close the model: every waiting request is shed (FLUSHED) and none starts
 * again; later arrivals are shed at once.  Returns up to max events; call
 * until it returns 0.
 */
size_t capacity_flush(struct capacity *c, uint64_t now, struct capacity_event *ev, size_t max);

/*
 * Zero the counters and the series and restart the triggers' clock at now.
 * Waiting and busy requests stay: they are real requests, served as before.
 */
void capacity_reset(struct capacity *c, uint64_t now);

/* The counters, and the queue and workers now. */
void capacity_stats(const struct capacity *c, uint64_t now, struct capacity_stats *out);

/*
 * Copy the series into out (at most max rows, from the epoch to the last
 * row with an event, rows with none carrying the queue forward).  Returns
 * the rows copied.
 */
size_t capacity_series(const struct capacity *c, struct capacity_bucket *out, size_t max);

/* "full", "evicted", "expired", "flushed". */
const char *capacity_shed_name(enum capacity_shed_reason r);

#endif
