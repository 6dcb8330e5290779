/*
 * libFuzzer target: the IETF RateLimit structured-field header as the hammer
 * reads it (ratelimit_parse_t in common/retry.h), e.g. "\"default\";r=0;t=3".
 * Checks: no crash or UB, and a wait never exceeds the saturation value
 * (plus, in the engine, the preset's jitter on top of a server wait).
 * The same bytes also go through retry_decide as a 429's RateLimit header
 * (no Retry-After), so the engine's use of the value is covered too.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/prng.h"
#include "common/retry/retry.h"

#define FUZZ_MAX 512

static void check_decide(const char *s)
{
	static const char *presets[] = { "lab", "signaldb", "wasm", "saia" };
	struct retry_policy p;
	struct retry_input in;
	struct retry_decision d;
	struct prng rng;

	for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++) {
		if (retry_policy_preset(presets[i], &p) != 0)
			abort();
		prng_seed(&rng, 42);
		memset(&in, 0, sizeof(in));
		in.status = 429;
		in.method = "GET";
		in.idempotent = -1;
		in.ratelimit = s;
		in.attempt = 1;
		in.now_wall_s = 1800000000;
		retry_decide(&p, &in, &rng, &d);
		/* a saturated server wait plus the preset's jitter must not wrap */
		if (d.retry && d.wait_ns > RETRY_WAIT_MAX_NS + p.retry_after_jitter_ns)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char s[FUZZ_MAX + 1];
	uint64_t wait = 0;

	if (size > FUZZ_MAX)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (ratelimit_parse_t(s, &wait) == 0 && wait > RETRY_WAIT_MAX_NS)
		abort();
	check_decide(s);
	return 0;
}
