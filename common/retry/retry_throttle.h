#ifndef RATELAB_RETRY_THROTTLE_H
#define RATELAB_RETRY_THROTTLE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/prng.h"

/*
 * Client-side adaptive throttling (Google SRE book, "Handling Overload"):
 * the client rejects a request locally, before it is sent, with probability
 *
 *     max(0, (requests - K * accepts) / (requests + 1))
 *
 * where requests (every attempt the client wanted to send, local rejections
 * included) and accepts (attempts the backend accepted) are counted over a
 * trailing window.  The backend then receives about K times what it accepts.
 *
 * The window slides in twentieths: counts live in RETRY_THROTTLE_SLOTS
 * buckets of window/20, and a bucket leaves the window whole, so the window
 * holds between 19/20 of window_ns and window_ns of history.  Memory is
 * fixed.  Time and randomness are passed in.
 *
 * How the hammer engine drives it (one throttle per run, shared by the run's
 * threads; NULL when the policy has none):
 *
 *   1. Before sending any attempt, first or retry: admit = retry_throttle_admit(t, now, rng),
 *      with the thread's own PRNG.  When the run also has a retry budget,
 *      ask the throttle first, then spend from the budget.
 *   2. admit false: the attempt is not sent.  The request ends at once with
 *      RETRY_REASON_THROTTLED ("gave up: throttled"): no backoff, no retry.
 *      admit has already counted it (as a request not accepted): do not call
 *      retry_throttle_record for it.  retry_throttle_rejected() counts these.
 *   3. admit true: send it.  When the attempt ends (answer, transport error
 *      or timeout), call retry_throttle_record(t, now, retry_throttle_accepted(status)),
 *      status 0 when no answer came.  Exactly once per sent attempt.
 */

#define RETRY_THROTTLE_SLOTS 20

enum retry_throttle_kind {
	RETRY_THROTTLE_NONE,
	RETRY_THROTTLE_SRE,        /* the SRE book's adaptive throttling */
};

struct retry_throttle_params {
	enum retry_throttle_kind kind;
	double k;                  /* SRE: accepts multiplier, 2 (1 = most aggressive) */
	uint64_t window_ns;        /* SRE: trailing window, 2 min */
};

#define RETRY_THROTTLE_K_DEFAULT 2.0
#define RETRY_THROTTLE_WINDOW_DEFAULT_NS (120ULL * 1000000000ULL)

struct retry_throttle;

/* A throttle at now_ns with empty counts; NULL for RETRY_THROTTLE_NONE or on
 * allocation failure.  Free with retry_throttle_free (NULL is a no-op).  All
 * functions below are thread-safe (internal lock). */
struct retry_throttle *retry_throttle_new(const struct retry_throttle_params *tp, uint64_t now_ns);
void retry_throttle_free(struct retry_throttle *t);

/* One sent attempt ended at now_ns: count a request, and an accept when accepted.
 * A now_ns older than the window is ignored.  No effect on NULL. */
void retry_throttle_record(struct retry_throttle *t, uint64_t now_ns, bool accepted);

/* The local rejection probability now, in [0, 1); 0 for NULL.  Read-only. */
double retry_throttle_probability(struct retry_throttle *t, uint64_t now_ns);

/*
 * Send an attempt now?  Draws exactly one prng_double from rng (the caller's,
 * never shared) whatever the answer, so a seeded run replays.  False (reject
 * locally) when the draw is under retry_throttle_probability; the rejection
 * is then counted as a request not accepted.  True, with no draw, for NULL.
 */
bool retry_throttle_admit(struct retry_throttle *t, uint64_t now_ns, struct prng *rng);

/* Requests and accepts inside the window now (for tests, reports and `--json`). */
void retry_throttle_counts(struct retry_throttle *t, uint64_t now_ns, uint64_t *requests, uint64_t *accepts);

/* Local rejections since the throttle was made; 0 for NULL. */
uint64_t retry_throttle_rejected(struct retry_throttle *t);

/* Did the backend accept an attempt that ended with this status (0: no answer:
 * refused, reset, timed out)?  False for no answer, 429, 502, 503 and 504
 * (overload and gateway answers); true for any other status.  Pure. */
bool retry_throttle_accepted(int status);

#endif
