#ifndef RATELAB_PATH_H
#define RATELAB_PATH_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Request paths for route matching: one normal form, so that "//api",
 * "/./api", "/x/../api" and "/%61pi" all meet the route "/api", and a
 * segment-boundary prefix match, so that "/api" covers "/api/x" but not
 * "/apix".  Pure, thread-safe, no allocation: output goes to the caller's
 * buffer.
 */

/*
 * Normalise the len bytes of a request path at in into out (cap bytes,
 * NUL-terminated), its length in *outlen:
 * - a '?' or '#' ends the path (what follows is the query or fragment);
 * - percent-escapes of unreserved characters (ALPHA DIGIT - . _ ~) are
 *   decoded; every other escape stays encoded, its hex digits upper-cased
 *   (so "%2f" and "%2F" are one path, and an encoded '/' never splits a
 *   segment);
 * - empty segments ("//") are dropped, "." segments removed, and ".."
 *   removes the segment before it, never climbing above the root;
 * - the result starts with '/' (an empty path is "/"), keeps a trailing
 *   '/', and keeps case: "/API" is not "/api", as in nginx.
 * The result is never longer than len + 1 bytes, so cap >= len + 2 always
 * fits.  Returns 0, or -1 when the path holds a NUL byte or a '%' not
 * followed by two hex digits, or when the result does not fit in cap (out
 * is then unspecified).
 */
int path_normalize(const char *in, size_t len, char *out, size_t cap, size_t *outlen);

/*
 * Whether the route prefix (plen bytes, normalised) covers the normalised
 * path (len bytes): "/" covers every path; a prefix ending in '/' covers the
 * paths that start with it; any other prefix covers itself and the paths
 * that continue it with '/' ("/api" covers "/api", "/api/" and "/api/x",
 * not "/apix").  Case-sensitive.
 */
bool path_prefix_covers(const char *prefix, size_t plen, const char *path, size_t len);

#endif
