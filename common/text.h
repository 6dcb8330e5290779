#ifndef RATELAB_TEXT_H
#define RATELAB_TEXT_H

#include <stddef.h>

/*
 * Text that came from outside (a header, a path, a name) made fit to show
 * and to put in JSON: printable ASCII and whole, well-formed UTF-8 letters
 * stay as they are (José, 李); any other byte becomes '?'.  Pure.
 */

/* The length of the well-formed UTF-8 letter at s (n bytes left), or 0: ASCII,
 * a stray or cut byte, an overlong form, a surrogate, past U+10FFFF, or a C1
 * control (U+0080..U+009F). */
size_t text_utf8_char(const char *s, size_t n);

/* s[0..n) into buf (len bytes, always terminated when len > 0), cut before a
 * letter that does not fit whole. */
void text_printable(const char *s, size_t n, char *buf, size_t len);

/*
 * v as a Prometheus label value into buf (len bytes, always terminated when
 * len > 0): backslash, double quote and newline escaped.  A value cut to fit
 * is cut before an escape, never inside one; 2 * strlen(v) + 1 bytes always fit.
 */
void text_label_value(const char *v, char *buf, size_t len);

/* Why text_read_file gave NULL. */
enum text_read_error { TEXT_READ_OPEN = 1, TEXT_READ_TOO_BIG, TEXT_READ_FAILED, TEXT_READ_NOMEM };

/*
 * The whole of path (a file, a pipe such as <(cat f), a FIFO once it has a
 * writer), NUL-terminated, read up to EOF; its length in *len when len is not
 * NULL.  NULL with *why set when it cannot be opened, holds more than max
 * bytes, fails to read, or memory runs out.  The buffer grows with what is
 * read, never past max + 1 bytes.
 */
char *text_read_file(const char *path, size_t max, size_t *len, enum text_read_error *why);

/*
 * The length of header field value v without its trailing whitespace (spaces
 * and tabs): RFC 9110 5.5 makes them no part of the value, and libmicrohttpd
 * drops only the leading ones.  "a " and "a" are one client, one name.
 */
size_t text_field_len(const char *v);

/* The bytes of s's head that fit in max bytes without cutting a UTF-8 letter. */
size_t text_fit(const char *s, size_t max);

#endif
