#ifndef RATELAB_HAMMER_CASES_H
#define RATELAB_HAMMER_CASES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Entry point of 'ratelab cases'.  argv[0] is "cases".  Returns the exit code:
 * 0 all rows pass, 1 a row failed, 2 usage error or malformed table. */
int cases_main(int argc, char **argv);

/*
 * Replay the retry-cases table at path through retry_decide with a fixed RNG
 * (seed_given when it is >= 0, else the table's "rng_seed", default 1; one
 * stream per row), printing one
 * "ok"/"FAIL" line per row and a closing "N passed, N failed" line to out
 * (out may be NULL).  Returns 0 when the table was replayed, whatever the
 * results, with the counts in *passed and *failed; -1 when it cannot be read
 * or is malformed, with "FILE:LINE: why" in err (nothing more is replayed).
 * Thread-safe (no globals).
 */
int cases_run_file(const char *path, int64_t seed_given, FILE *out, unsigned *passed, unsigned *failed,
                   char *err, size_t errlen);

struct junit;

/*
 * cases_run_file, and besides one JUnit testcase per row into junit (a
 * testsuite named after the file; junit may be NULL): classname
 * "ratelab.cases.PRESET", name "ID NAME", a failure saying what was expected
 * and what the engine decided.
 */
int cases_run_junit(const char *path, int64_t seed_given, FILE *out, struct junit *junit, unsigned *passed,
                    unsigned *failed, char *err, size_t errlen);

#endif
