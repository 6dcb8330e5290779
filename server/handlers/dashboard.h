#ifndef RATELAB_DASHBOARD_H
#define RATELAB_DASHBOARD_H

/*
 * GET /dashboard: one HTML page made for a projector, served by the server
 * itself and needing no network: the live figures of /events (requests/s,
 * 2xx/s, rejections/s, faults/s, live keys, totals), a chart of the last 60 s
 * in 100 ms buckets (admitted under rejected), the route's RateLimit-Policy
 * and, for --key global, its live quota, and the clients table with each
 * client's retries, early retries, new requests sent while told to wait and
 * verdict, laid out in as many columns (then as small a type) as it takes
 * for every row and every verdict to be on one screen.  The chart is drawn on a canvas by the
 * page's own few lines of script; the figures and the table need no chart.
 * When /events refuses the page (full), it polls /stats instead.  Each live
 * figure carries data-metric="NAME" (e.g. rejected_total) for tests and
 * scripts; each client row data-client="NAME".
 */

/* The page (malloc'd, the caller frees), or NULL when out of memory.  Thread-safe. */
char *dashboard_page(void);

#endif
