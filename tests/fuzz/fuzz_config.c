/*
 * libFuzzer target: the server's JSON config (config_parse in
 * server/config.h), the file `ratelab serve --config FILE` reads.  Checks:
 * a success yields at most the room given, each route with a NUL-terminated
 * prefix starting with '/'; a failure always says "NAME:LINE: why".
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/config.h"

#define FUZZ_MAX 8192

static struct config_route routes[CONFIG_MAX_ROUTES];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char text[FUZZ_MAX + 1];
	char err[512];
	size_t n = 0;

	if (size > FUZZ_MAX)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	err[0] = '\0';
	if (config_parse(text, "fuzz.json", routes, CONFIG_MAX_ROUTES, &n, err, sizeof(err)) != 0) {
		if (strncmp(err, "fuzz.json:", 10) != 0)
			abort();
		return 0;
	}
	if (n > CONFIG_MAX_ROUTES)
		abort();
	for (size_t i = 0; i < n; i++) {
		if (memchr(routes[i].prefix, '\0', sizeof(routes[i].prefix)) == NULL)
			abort();
		if (routes[i].prefix[0] != '/')
			abort();
	}
	return 0;
}
