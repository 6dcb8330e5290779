#ifndef RATELAB_PLAY_H
#define RATELAB_PLAY_H

/*
 * GET /play: the attendees' page, served by the server itself and needing no
 * network, made for any laptop or phone.  An attendee types a name (sent as
 * X-Client-Name), picks what their client does after a 429 (give up, retry
 * at once, a fixed wait, exponential, full jitter, wait for Retry-After plus
 * jitter, two seed presets) or writes their own JavaScript
 * `wait(attempt, retryAfter, status)`, sets requests, how many at once and
 * tries per request, and runs against "/" of the same server.  Every call
 * says Retry-Attempt and Retry-Request (server/clients.h), so the server
 * judges each retry against its own rejection; "share the wait" holds every
 * request of the run off until the latest Retry-After.  Each run becomes a
 * card beside the earlier ones: 2xx and 429 counts, calls, retries, wall
 * time and a strip of its attempts (data-ok, data-429, data-calls, ... on
 * the card for tests).  The page's `window.ratelabPlay.run()` is the Run
 * button.
 */

/* The page (malloc'd, the caller frees), or NULL when out of memory.  Thread-safe. */
char *play_page(void);

#endif
