#ifndef RATELAB_CLI_H
#define RATELAB_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * One table-driven flag parser for every `ratelab` subcommand.
 *
 * A command describes its flags in tables of struct cli_option; each table
 * writes into one caller struct (its group's base) at the offsets the table
 * names.  Semantics are getopt_long's, without abbreviations: `--flag value`
 * and `--flag=value`; flags without a value; repeatable flags (CLI_LIST, or a
 * callback that appends); positional arguments anywhere among the flags; `--`
 * ends the flags; `--help` and `-h` ask for the usage.  A value-taking flag
 * takes the next argument whatever it looks like, except another flag of the
 * same command (`--limit --port` is a forgotten value; `--data=--port` passes
 * it).  A later flag overrides an earlier one.
 *
 * Every mistake is one line, `ratelab CMD: ...`:
 *   unknown option '--x'            (+ " (did you mean --y?)" when one is close)
 *   --flag needs a value            (+ " before --other" when a flag came instead)
 *   --flag takes no value
 *   --flag: 'v' is not a number from A to B
 *   --flag: 'v' is not a duration such as 250ms, 2s or 1m
 *   --flag: 'v' is not a duration above 0 | of at least MIN | from MIN to MAX
 *   --flag: '500' needs a unit, e.g. 500ms or 500s (ns, us, ms, s, m, h, d)
 *   --flag: 'v' is not a size such as 64K, 1M or 1MiB (A to B)
 *   --flag: 'v' is not a rate such as 50, 2.5 or 30/1m (A to B per second)
 *   --flag: 'v' is not one of a, b, c (did you mean b?)
 *   --flag: 'v' is one too many (at most N)
 *   --flag: 'v' WHY                 (a callback's reason; + " (did you mean b?)"
 *                                    when the flag lists its values)
 *   --flag is required
 *   missing NAME | missing NAME after --
 *   unexpected argument 'x'         (+ " (NAME goes after --)" for CLI_REST)
 * "Did you mean" names the closest word by edit distance (a swap of two
 * neighbours counts one) when it is at most a third of the typed length away.
 * Sizes are binary everywhere: K, KB and KiB all mean 1024 bytes (M, G, T
 * likewise), in either case.
 * A quoted value is cut at 120 bytes, and every message has its control
 * characters escaped (\r, \n, \t, \xNN), whatever a reason quotes, so a
 * message is always one line.
 */

struct cli_option;

/* Where a flag shows in --help: the groups every command prints, in this order. */
enum cli_section {
	CLI_SEC_RUN,       /* "what to run": the target, the load, the inputs */
	CLI_SEC_DOES,      /* "what it does": the behaviour being studied */
	CLI_SEC_OUTPUT,    /* "output": files, formats, checks, verbosity */
	CLI_SEC_ADVANCED,  /* "advanced": tuning, limits, many machines */
	CLI_SEC_COUNT,
};

/*
 * A custom value: parse `value` (NULL for CLI_ACTION) into the group's base.
 * Returns 0, or -1 with a reason in why that reads after the quoted value,
 * e.g. "is not an IPv4 or IPv6 address".
 */
typedef int (*cli_fn)(void *base, const struct cli_option *opt, const char *value, char *why, size_t whylen);

enum cli_kind {
	CLI_BOOL,      /* no value; the bool at `at` becomes true */
	CLI_ACTION,    /* no value; calls fn with value NULL */
	CLI_STRING,    /* the const char * at `at` points into argv */
	CLI_LIST,      /* appends a const char * to the array at `at` (at most max); count at count_at */
	CLI_U64,       /* a decimal integer in [min, max], stored in the unsigned field of `size` bytes */
	CLI_DURATION,  /* nanoseconds in [min, max] (a uint64_t) */
	CLI_RATE,      /* per second in [dmin, dmax] (a double): "R" or "COUNT/PERIOD" such as 30/1m */
	CLI_DOUBLE,    /* a decimal number in [dmin, dmax] (a double) */
	CLI_CHOICE,    /* the index of value in words, stored in the unsigned field of `size` bytes */
	CLI_CUSTOM,    /* calls fn with the value */
	CLI_BYTES,     /* a size in [min, max] bytes (parse_bytes: 65536, 64K, 1M, 1MB, 1MiB), unsigned field */
	CLI_REST,      /* positional only: the char ** at `at` gets argv after "--" (NULL-terminated) */
};

struct cli_option {
	const char *name;          /* "--limit"; a name without a leading '-' ("URL", "FILE")
	                            * describes the positional arguments (one such entry per command) */
	enum cli_kind kind;
	size_t at, size;           /* the destination in the base (CLI_FIELD) */
	uint64_t min, max;         /* CLI_U64, CLI_DURATION (ns); CLI_LIST: max entries */
	double dmin, dmax;         /* CLI_RATE, CLI_DOUBLE */
	const char *const *words;  /* CLI_CHOICE: NULL-terminated */
	cli_fn fn;                 /* CLI_CUSTOM, CLI_ACTION */
	size_t count_at, count_size;  /* CLI_LIST: the unsigned count (CLI_COUNT) */
	size_t given_at;           /* offset + 1 of a bool set when the flag is given (CLI_GIVEN); 0: none */
	bool required;             /* positional: at least one; flag: must be given (a CLI_GIVEN
	                            * bool, or a CLI_STRING the caller left NULL) */
	const char *(*values)(void);  /* the words the flag takes ("a, b, c"), for completion and
	                            * (CLI_CUSTOM) "did you mean", item by item of a comma
	                            * list; NULL: free-form or CLI_CHOICE's words */
	const char *needs;         /* the flag this one goes with ("--sim", or "--sim or --compare"): given
	                            * without it, a usage error; NULL: none */
	const char *arg;           /* --help: the value's name ("N", "DUR", "a|b"); NULL: no value */
	const char *help;          /* --help: what the flag does, wrapped at 80 columns ('\n'
	                            * breaks a line); the words it takes are appended unless
	                            * arg lists them (a|b) or help points to --list */
	enum cli_section section;  /* --help: its group */
};

/* The destination of an option: member of type (nested members work: cfg.port). */
#define CLI_FIELD(type, member) .at = offsetof(type, member), .size = sizeof(((type *)0)->member)
#define CLI_COUNT(type, member) .count_at = offsetof(type, member), .count_size = sizeof(((type *)0)->member)
#define CLI_GIVEN(type, member) .given_at = offsetof(type, member) + 1

/* One table (ending with an entry whose name is NULL) and the struct it writes into. */
struct cli_group {
	const struct cli_option *options;
	void *base;
};

/*
 * A command's --help, in the one layout every command shares: usage lines, one
 * paragraph, the flags by section (what to run, what it does, output,
 * advanced), notes, then the exit statuses.  Lines stay within 80 columns.
 */
struct cli_help {
	const char *usage;           /* "ratelab serve [options]"; '\n' between several forms */
	const char *about;           /* one paragraph, wrapped */
	const struct cli_option *const *tables;  /* the command's option tables, NULL-terminated */
	const char *notes;           /* free text after the flags (NULL: none), printed as is */
	void (*more)(FILE *out);     /* a section computed at run time (NULL: none), after notes */
	const char *exits;           /* "0\tmeaning\n1\tmeaning\n...": the exit statuses */
};

/*
 * Every command's exit status when its results could not be written: standard
 * output, or a file such as --json (sysexits' EX_IOERR).  main checks
 * standard output after any command; a command checks its own files.
 */
#define CLI_EXIT_WRITE 74
#define CLI_EXIT_WRITE_LINE "74\tthe results could not be written (standard output, or a file such as --json)\n"

struct cli_command {
	const char *name;            /* "serve": messages start "ratelab serve: " */
	void (*usage)(FILE *out);    /* the --help text when help is NULL */
	const struct cli_help *help; /* the --help text and the table --cli-options writes */
};

/*
 * Parse argv[1..argc-1] (argv[0] is the subcommand's name) into the groups,
 * in order.  Returns 0 when parsed, 1 when --help or -h came first (nothing
 * printed), or -1 with one line in err ("ratelab CMD: ...", no newline).
 * Values point into argv.  Pure: no output, no allocation; thread-safe.
 * `CMD --cli-options` alone returns 2: cli_exit then writes the command's
 * option table (cli_help_write_options); the completion generator and the man-page
 * test read the table that way.
 */
int cli_parse(const struct cli_command *cmd, const struct cli_group *groups, size_t ngroups,
              int argc, char **argv, char *err, size_t errlen);

/*
 * The exit code of a cli_parse (or later check) result that is not 0: for 1,
 * writes the usage to stdout (cli_help_write) and returns 0; for 2, writes the option table
 * (cmd->help's tables) to stdout and returns 0; for -1, writes err and a
 * newline to stderr and returns 2.
 */
int cli_exit(const struct cli_command *cmd, int rc, const char *err);

/*
 * Fill err with "ratelab CMD: FLAG: 'VALUE' " followed by the formatted reason
 * (the value quoted as above); for checks made after cli_parse.  Returns -1.
 */
int cli_bad_value(char *err, size_t errlen, const char *cmd, const char *flag, const char *value,
                  const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* Fill err with "ratelab CMD: " followed by the formatted text.  Returns -1. */
int cli_fail(char *err, size_t errlen, const char *cmd, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/*
 * Result files (common/cli_output.c).  Whether a result file given to flag
 * can be written, found before a run rather than after it: path is writable, or absent in a writable
 * directory ("-", stdout, and NULL, not given, are fine).  Returns 0, or -1
 * with "ratelab CMD: FLAG: 'PATH' cannot be written (why)" in err.  Creates
 * nothing; only stat(2) and access(2).
 */
int cli_check_output(char *err, size_t errlen, const char *cmd, const char *flag, const char *path);

/* A command's result file: its flag and the path given (NULL: not given; "-": standard output). */
struct cli_output {
	const char *flag;
	const char *path;
};

/*
 * cli_check_output for each of outs[0..n), and at most one of them "-": two
 * documents on standard output cannot be read apart.  Returns 0, or -1 with
 * "ratelab CMD: --json and --junit both write to standard output ('-')".
 */
int cli_check_outputs(char *err, size_t errlen, const char *cmd, const struct cli_output *outs, size_t n);

/* Whether one of outs[0..n) is standard output: then the command's text goes to stderr. */
bool cli_outputs_take_stdout(const struct cli_output *outs, size_t n);

/* True when s holds a CR or an LF (a header, method or URL must not). */
bool cli_has_crlf(const char *s);

/*
 * The words option o takes ("a, b, c"): its values function's, or a
 * CLI_CHOICE's written into buf; NULL when it is free-form.  Pure.
 */
const char *cli_option_words(const struct cli_option *o, char *buf, size_t len);


/* True when o takes a value (every kind but CLI_BOOL and CLI_ACTION). */
bool cli_option_takes_value(const struct cli_option *o);

/* True when o describes the positional arguments (its name has no leading '-'). */
bool cli_option_is_positional(const struct cli_option *o);

#endif
