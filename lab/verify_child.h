#ifndef RATELAB_VERIFY_CHILD_H
#define RATELAB_VERIFY_CHILD_H

#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The client command of `ratelab verify`, run as N copies.  Each copy gets
 * RATELAB_URL (its own URL), RATELAB_CLIENT (1..N) and RATELAB_METHOD in its
 * environment, a literal $RATELAB_URL / $RATELAB_METHOD in its arguments
 * replaced, no proxy (http_proxy and the like unset, NO_PROXY set), and a
 * process group of its own.  Stopping them kills every process they started:
 * their groups, and every descendant found through /proc, also those that
 * left the group with setsid (verify is their subreaper, so orphans stay
 * its descendants; an orphan is matched to its run by the RATELAB_URL it
 * inherited).  Not thread-safe per set; separate sets may run in parallel
 * threads.
 */

#define VERIFY_CHILD_MAX 64

struct verify_children;

/* Options of one set. */
struct verify_child_opts {
	char **cmd;                 /* NULL-terminated argv template */
	const char *url;            /* base URL, "http://127.0.0.1:PORT" */
	const char *method;         /* RATELAB_METHOD */
	unsigned n;                 /* copies, 1..VERIFY_CHILD_MAX; with 2 or more each URL ends in /client-K */
	bool quiet;                 /* the command's output goes to /dev/null (else stdout to stderr) */
};

/*
 * Make verify the subreaper of everything it starts (prctl
 * PR_SET_CHILD_SUBREAPER); call once, before any set starts.  0 or -1.
 */
int verify_child_init(void);

/*
 * Start the copies.  Returns the set, or NULL with errno set and a one-line
 * reason in err: "cannot run 'CMD': ..." when the command cannot be
 * executed (*cannot_run true), else "cannot start 'CMD': ...".
 */
struct verify_children *verify_children_start(const struct verify_child_opts *o, bool *cannot_run, char *err,
                                              size_t errlen);

/* Reap the copies that ended; returns how many still run. */
unsigned verify_children_reap(struct verify_children *c);

/*
 * True when every copy not yet reaped is in exit (each of its threads
 * exiting, PF_EXITING, or a zombie): each has ended, and only the kernel's
 * teardown of it is left (on a busy machine that can take seconds), so it is
 * not still running.
 */
bool verify_children_exiting(const struct verify_children *c);

/*
 * Count as ended each copy not yet reaped that is in exit, with the exit
 * status its threads agree on in /proc (reaped later, by the sweep); returns
 * how many still run.  For a copy that has been in exit a while: the kernel's
 * teardown of it is no part of the client, and can outlast any timeout on a
 * busy machine.
 */
unsigned verify_children_take_exiting(struct verify_children *c);

/*
 * Say on f what each copy not yet reaped is doing: every thread's name,
 * state letter and the kernel function it waits in (/proc), and for a thread
 * in uninterruptible sleep (D) its kernel stack where /proc lets us read it.
 * For a copy that outlived its timeout: a client stuck in a futex reads
 * apart from one the machine held in the kernel.
 */
void verify_children_describe(const struct verify_children *c, FILE *f);

/*
 * Stop everything the set started: SIGTERM, then SIGKILL after 500 ms, to the
 * copies' process groups and every descendant found; reaps the copies.
 */
void verify_children_kill(struct verify_children *c);

/* The first non-zero exit status of the copies (exit code, or 128+signal); 0 when all exited 0. */
int verify_children_status(const struct verify_children *c);

/* Free the set (verify_children_kill first).  NULL is a no-op. */
void verify_children_free(struct verify_children *c);

/*
 * Kill every process left under verify (orphans it was made subreaper of),
 * whatever run started it; for the end of verify_main.
 */
void verify_child_sweep(void);

#endif
