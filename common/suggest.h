#ifndef RATELAB_SUGGEST_H
#define RATELAB_SUGGEST_H

#include <stdbool.h>
#include <stddef.h>

/*
 * "Did you mean": the word closest to what was typed, by edit distance
 * (insert, delete, replace, and a swap of two neighbours each count one),
 * when it is at most a third of the typed length away (leading '-' not
 * counted; at least 1 edit) and not the typed word itself.  Words longer
 * than SUGGEST_WORD_MAX bytes are never suggested.  Pure; thread-safe.
 */

#define SUGGEST_WORD_MAX 64

/* A search in progress: offer words one by one, then ask whether one was close. */
struct suggest {
	const char *typed;
	size_t best, limit;  /* the closest distance so far (limit: none yet) */
	char *out;
	size_t outlen;
};

/* Start a search for typed; out (outlen > 0 bytes, caller's) becomes "" and later the best word. */
void suggest_init(struct suggest *s, const char *typed, char *out, size_t outlen);

/* Offer word[0..len); kept in out when it is closer than every word offered before. */
void suggest_consider(struct suggest *s, const char *word, size_t len);

/* True when a word offered so far is close enough (it is in out). */
bool suggest_found(const struct suggest *s);

/*
 * The word of list (separated by commas and/or spaces) closest to typed:
 * written to out (NUL-terminated) and true when one is close enough.
 * False when outlen is 0 or list is NULL.
 */
bool suggest_closest(const char *typed, const char *list, char *out, size_t outlen);

#endif
