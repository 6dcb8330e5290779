#ifndef RATELAB_PROGRESS_H
#define RATELAB_PROGRESS_H

#include <stdbool.h>
#include <stdio.h>

/*
 * A progress line on a terminal, redrawn in place: a carriage return, the
 * text, then an erase to the end of the line.  progress_done clears it, so
 * what is printed next starts on a clean line.  Meant for a stream that is a
 * terminal (progress_wanted); a file or a pipe should get no such line.
 */

/* True when f is a terminal. */
bool progress_wanted(FILE *f);

/* Draw the line (printf format) over the previous one and flush. */
void progress_line(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Erase the line. */
void progress_done(FILE *f);

#endif
