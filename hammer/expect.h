#ifndef RATELAB_EXPECT_H
#define RATELAB_EXPECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * --expect checks, e.g. "ok>=30,429<=5,wall<=10s,calls<=200".  Keys: a status
 * code (100-599), ok (2xx), failed (not 2xx, errors included), requests,
 * calls, retries, errors, wall (a duration).  Operators: >= <= > < = == !=.
 */
struct expect;

/* The figures a run is checked against. */
struct expect_facts {
	const uint64_t *status;    /* final outcomes by status code, index 0..nstatus-1 */
	size_t nstatus;
	uint64_t ok, failed, requests, calls, retries, errors;
	uint64_t wall_ns;
};

/* Parse spec; NULL with a one-line reason in err (naming the bad part) when malformed. */
struct expect *expect_parse(const char *spec, char *err, size_t errlen);
void expect_free(struct expect *e);

/*
 * True when every check holds.  Otherwise false and `why` lists the failed
 * checks with the actual values ("ok>=30 (got 7), wall<=10s (got 12.3s)").
 */
bool expect_check(const struct expect *e, const struct expect_facts *f, char *why, size_t len);

/* How many checks e holds. */
size_t expect_count(const struct expect *e);

/*
 * Check i (0..expect_count-1) against f: true when it holds.  text gets the
 * check as written ("ok>=30"), got the actual value ("7", "12.3s").
 */
bool expect_item(const struct expect *e, size_t i, const struct expect_facts *f, char *text, size_t tlen, char *got,
                 size_t glen);

#endif
