#ifndef RATELAB_CLI_HELP_H
#define RATELAB_CLI_HELP_H

#include <stddef.h>
#include <stdio.h>

#include "common/cli.h"

/*
 * What a command's option tables look like to a reader: --help in the one
 * layout every command shares (struct cli_help, in cli.h), and the plain
 * option list that the completion generator and the man-page test read.
 * Each writes only to the FILE it is given; no state.
 */

/* Write help in the shared layout to out. */
void cli_help_write(FILE *out, const struct cli_help *help);

/*
 * Write lead (e.g. "  --port N") then text wrapped at 80 columns, each line
 * indented to col ('\n' in text breaks a line); lead longer than col - 2
 * gets a line of its own.  For sections a command computes (hammer's presets).
 */
void cli_help_write_wrapped(FILE *out, const char *lead, size_t col, const char *text);

/*
 * The tables' options (NULL-terminated list), one line each: "NAME KIND
 * [WORD...]", KIND being flag (no value), value, file (a free string, most
 * often a path), or positional; WORDs are the
 * values the option takes (CLI_CHOICE words, or those of a values function).
 * Returns 0, or -1 when out fails.
 */
int cli_help_write_options(FILE *out, const struct cli_option *const *tables);

/*
 * Two comma lists of words (spaces after a comma or none) as one, into out:
 * "a, b, c", each word once, a's first.  For an option's `values`, such as
 * a command's own policies and the retry presets.
 */
void cli_words_join(char *out, size_t len, const char *a, const char *b);

#endif
