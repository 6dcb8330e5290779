#ifndef RATELAB_PARSE_H
#define RATELAB_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Parsers for what users type on the command line and in config files.
 * All return 0 on success and -1 on error; on error they write a one-line
 * reason (no trailing newline) into err when err is not NULL.  Pure and
 * thread-safe.  Values that would overflow 64-bit nanoseconds are errors.
 */

/*
 * A duration: a non-negative decimal number with a unit, e.g. "250ms",
 * "1.5s", "2s", "1m", "1h", "1d", "100us", "10ns".  A bare "0" is allowed.
 */
int parse_duration(const char *s, uint64_t *out_ns, char *err, size_t errlen);

/*
 * A rate: "COUNT/PERIOD" where PERIOD is a duration or a bare unit
 * ("5/s", "30/1m", "500/1h", "2000/d", "10/250ms").  COUNT >= 1.
 */
int parse_rate(const char *s, uint64_t *count, uint64_t *period_ns, char *err, size_t errlen);

/* A decimal unsigned integer in [min, max]. */
int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out, char *err, size_t errlen);

/*
 * A size in bytes in [min, max]: a whole number, optionally with a binary
 * unit K, M, G or T (1024, 1024^2, ...), alone or followed by B or iB, in
 * either case ("65536", "64M", "64MiB", "1g").
 */
int parse_bytes(const char *s, uint64_t min, uint64_t max, uint64_t *out, char *err, size_t errlen);

/* bytes as a short binary size ("64 MiB", "787.5 MiB", "1.5 GiB", "512 B"). */
void parse_format_bytes(uint64_t bytes, char *buf, size_t len);

/* A finite decimal number in [min, max]. */
int parse_double(const char *s, double min, double max, double *out, char *err, size_t errlen);

/* v in decimal at out (room for PARSE_U64_CHARS bytes), NUL-terminated; returns the length.  No printf. */
#define PARSE_U64_CHARS 21
size_t parse_format_u64(char *out, uint64_t v);

/* Format ns as a short human duration ("7.59s", "250ms", "1m30s"). */
void parse_format_duration(uint64_t ns, char *buf, size_t len);

/* ns in the largest unit that divides it exactly ("10s", "1500ms", "3m", "7ns"; 0 is "0ns"):
 * what parse_duration reads back as ns. */
void parse_format_exact_duration(uint64_t ns, char *buf, size_t len);

#endif
