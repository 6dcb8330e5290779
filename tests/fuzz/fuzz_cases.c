/*
 * libFuzzer target: the retry-cases JSON table (cases_run_file in
 * hammer/cases.h), what `ratelab cases FILE` replays.  The input is written
 * to an in-memory file (memfd) and read back by path, exactly as a user's
 * file would be.  Checks: a malformed table fails with "FILE:LINE: why"; a
 * replayed one never reports more rows than the input could hold.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lab/cases.h"

#define FUZZ_MAX 16384

static int memfd = -1;
static char path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	unsigned passed = 0, failed = 0;

	if (size > FUZZ_MAX)
		return 0;
	if (memfd < 0) {
		memfd = memfd_create("retry-cases.json", 0);
		if (memfd < 0)
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	}
	if (ftruncate(memfd, 0) != 0 || pwrite(memfd, data, size, 0) != (ssize_t)size)
		abort();
	err[0] = '\0';
	if (cases_run_file(path, -1, NULL, &passed, &failed, err, sizeof(err)) != 0) {
		if (err[0] == '\0')
			abort();
		return 0;
	}
	/* a row is at least "{}" */
	if ((size_t)passed + failed > size / 2 + 1)
		abort();
	return 0;
}
