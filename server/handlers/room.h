#ifndef RATELAB_ROOM_H
#define RATELAB_ROOM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "server/server.h"

/*
 * The room herd: the instructor arms one (POST /room, an admin action:
 * loopback or --admin-token), naming an instant a few seconds ahead on the
 * server's wall clock and, optionally, the policy, requests and concurrency
 * every page runs.  The herd is announced at once over /events (event
 * "herd", server_announce) to every /play page listening there
 * (/events?only=announcements).  GET /room says the server's time now (so a
 * page estimates its clock's offset from the round trip) and the armed
 * herd: a page reads it when its stream (re)opens, and polls it only while
 * it has no stream.  Each page fires at the instant, corrected
 * for its offset, and right behind its first requests tells the server it started (POST
 * /room/start?id=N).  The server keeps, for the armed herd, how many pages
 * started and the spread of their arrivals on its own clock: the figure the
 * start's precision is judged by.  When its run is over a page reports it
 * (POST /room/report?id=N&ok=&failed=&calls=&retries=&done_ms= with its
 * attempts' milliseconds from the start, comma-separated, one a call, as
 * the body: a report whose figures do not add up is a 400).  A page counts
 * once per herd, by its X-Client-Name or else its address (room_page_of): a
 * second start or report from it is answered {"counted":false}.  The
 * room sums the reports of each of the last ROOM_RUNS herds, so the
 * dashboard shows the runs side by side: pages, calls per request, the peak
 * attempts in any 100 ms, and the time until the last request was done.
 * Beside the pages' reports, each run carries the server's own counts: the
 * handler hands room_arm and room_runs the clients' counters as the server
 * keeps them (server/clients.h), and a run's tally is what each client did
 * from its herd's arming until the next herd was armed (or now): requests,
 * retries, early retries, new requests while told to wait, so its verdict.
 * One herd armed at a time; the state is a few counters and ROOM_RUNS x
 * ROOM_BUCKETS counts.  Times come in as arguments (wall milliseconds);
 * thread-safe.
 */

#define ROOM_POLICY_LEN 24
#define ROOM_LEAD_MS_MAX (60 * 1000)        /* an instant at most a minute ahead */
#define ROOM_LATE_MS (10 * 1000)           /* a start counts up to 10 s after the instant */
#define ROOM_RUNS 4                        /* herd runs kept, newest first */
#define ROOM_BUCKETS 600                   /* 100 ms each: a run's first minute */
#define ROOM_NAMES 64                      /* clients a run's tally keeps (the most active) */
#define ROOM_NAME_LEN 48
#define ROOM_PAGES 256                     /* pages one herd counts: a start and a report each */

/* One client's counters as the server keeps them, or what it did during a run. */
struct room_tally {
	char name[ROOM_NAME_LEN];
	uint64_t requests, rejected, retries, early, paired, waiting_new;
};

/* One herd's run, summed over the pages that reported it. */
struct room_run {
	uint64_t id;
	char policy[ROOM_POLICY_LEN];
	uint32_t pages;
	uint64_t ok, failed, calls, retries;
	uint64_t done_ms;                  /* the slowest page's run, start to last answer */
	uint32_t buckets[ROOM_BUCKETS];    /* attempts per 100 ms from the start */
	struct room_tally seen[ROOM_NAMES];  /* the server's counts: each client with requests during the run */
	size_t nseen;
	bool closed;                       /* the next herd was armed: seen is final */
	uint64_t reporters[ROOM_PAGES];    /* the pages (room_page_of) whose report counted */
	uint32_t nreporters;
};

/* One page's report of its run of herd `id`. */
struct room_report {
	uint64_t id, ok, failed, calls, retries, done_ms;
	const uint32_t *attempts_ms;       /* each attempt's ms from the start */
	size_t nattempts;
	uint64_t page;                     /* who sent it (room_page_of); 0: any number of reports count */
};

struct room;

/* What GET /room says. */
struct room_view {
	uint64_t id;                       /* the armed herd; 0: none yet */
	int64_t start_ms;                  /* its instant, server wall ms */
	char policy[ROOM_POLICY_LEN];      /* "" : each page runs its own */
	uint32_t requests, concurrency;    /* 0: each page's own */
	uint32_t started;                  /* pages whose start reached the server */
	int64_t first_ms, last_ms;         /* when the first and the last of those arrived */
};

/* A room with no herd, or NULL when out of memory. */
struct room *room_new(void);
void room_free(struct room *r);

/*
 * Arm herd id+1 at now_ms + lead_ms running `policy` ("" or the name of one
 * of /play's policies, such as "at-once" or "full"), requests
 * and concurrency (0: the page's own).  clients (n of them, NULL when 0) are
 * the server's counters now: the new herd's tally counts from them, and the
 * previous herd's run, if any, is closed with its tally up to them.
 * Returns 0, or -1 (lead over ROOM_LEAD_MS_MAX, a bad policy name).
 */
int room_arm(struct room *r, int64_t now_ms, int64_t lead_ms, const char *policy, uint32_t requests,
             uint32_t concurrency, const struct room_tally *clients, size_t n);

/*
 * Who a page is, for counting it once: its X-Client-Name (name, NULL when
 * none), else its address (client, NULL when unknown: 0, not deduplicated).
 * A keyed hash: a page cannot pick a name that collides with another's.
 */
uint64_t room_page_of(const struct room *r, const char *name, const struct sockaddr *client);

/*
 * Page `page` (room_page_of; 0: not deduplicated) started herd id at now_ms:
 * counted when id is the armed herd, now_ms is in its window, and that page
 * has not started it already (at most ROOM_PAGES pages).  True if counted.
 */
bool room_started(struct room *r, uint64_t id, uint64_t page, int64_t now_ms);

/* The room as it is. */
void room_view(struct room *r, struct room_view *out);

/*
 * Add a page's report to its herd's run (made when it is the first; the
 * oldest run is then dropped).  0, or -1 (no such herd, or rep->page has
 * reported this run already, or ROOM_PAGES pages have).
 */
int room_report(struct room *r, const struct room_report *rep);

/*
 * The runs, newest first, into out (room for ROOM_RUNS); returns how many.
 * The armed herd's run has its tally up to `now` (n of the server's
 * counters now; NULL when 0).
 */
size_t room_runs(struct room *r, const struct room_tally *now, size_t n, struct room_run *out);

/* A run's tally summed: early retries and new requests while told to wait; *polite: clients with no early retry. */
void room_run_early(const struct room_run *run, uint64_t *early, uint64_t *waiting_new, uint32_t *polite);

/* The most attempts in one 100 ms of a run. */
uint32_t room_run_peak(const struct room_run *run);

/* Forget the herd (POST /reset). */
void room_reset(void *r);

/* Add GET/POST /room and POST /room/start over r (which must outlive the server).  0, or -1 when full. */
int room_register(struct server_config *c, struct room *r);

#endif
