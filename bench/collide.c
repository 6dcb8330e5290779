/*
 * bench-collide: X-Key values that all land in one bucket of one shard of the
 * key table as it was before it used SipHash: the unkeyed store_memory_hash
 * under the fixed seed 0x5bd1e995, the shard from hash bits 40 and up, the
 * bucket from the low bits, 16 shards, buckets the power of two at or above a
 * shard's share of --max-keys.  The server's table key for `--key header:X-Key`
 * is 'h' followed by the value, so that is what is hashed.  Found by brute
 * force over "f" + 12 hex digits, counted up in place: about 2^17 tries a key at
 * the default cap.
 *
 * usage: bench-collide [--count N] [--max-keys N] [--shards N] [--seed N]
 * Prints N values, one a line.  For bench/run's hashflood section.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "server/store/store.h"

#define COLLIDE_OLD_SEED 0x5bd1e995ULL
#define COLLIDE_TRIES_MAX (1ULL << 40)
#define COLLIDE_DIGITS 12

struct collide_opts {
	uint64_t count, max_keys, shards, seed;
};

static uint64_t collide_pow2_at_least(uint64_t n)
{
	uint64_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

static int collide_usage(FILE *f)
{
	fprintf(f, "usage: bench-collide [--count N] [--max-keys N] [--shards N] [--seed N]\n"
	           "  X-Key values that share one shard and bucket of the old, unkeyed key table\n"
	           "  (defaults: 6000 values, --max-keys 100000, 16 shards, seed 0x5bd1e995)\n");
	return f == stdout ? 0 : 2;
}

static int collide_args(int argc, char **argv, struct collide_opts *o)
{
	char why[160];

	*o = (struct collide_opts){ 6000, 100000, 16, COLLIDE_OLD_SEED };
	for (int i = 1; i < argc; i++) {
		uint64_t *dst = strcmp(argv[i], "--count") == 0      ? &o->count
		              : strcmp(argv[i], "--max-keys") == 0   ? &o->max_keys
		              : strcmp(argv[i], "--shards") == 0     ? &o->shards
		              : strcmp(argv[i], "--seed") == 0       ? &o->seed
		                                                     : NULL;

		if (strcmp(argv[i], "--help") == 0)
			return collide_usage(stdout) - 1;
		if (dst == NULL || i + 1 >= argc) {
			fprintf(stderr, "bench-collide: %s: unknown option or missing value (see --help)\n", argv[i]);
			return 2;
		}
		if (parse_u64(argv[++i], 1, UINT64_MAX, dst, why, sizeof(why)) != 0) {
			fprintf(stderr, "bench-collide: %s: %s\n", argv[i - 1], why);
			return 2;
		}
	}
	return 0;
}

/* Count the hex digits at d[0..n) up by one, in place. */
static void collide_next(char *d, int n)
{
	for (int i = n - 1; i >= 0; i--) {
		if (d[i] == 'f') {
			d[i] = '0';
			continue;
		}
		d[i] = d[i] == '9' ? 'a' : (char)(d[i] + 1);
		return;
	}
}

int main(int argc, char **argv)
{
	struct collide_opts o;
	int rc = collide_args(argc, argv, &o);
	uint64_t shard_mask, bucket_mask, found = 0, want = 0;
	char key[32];

	if (rc != 0)
		return rc < 0 ? 0 : rc;
	shard_mask = collide_pow2_at_least(o.shards) - 1;
	bucket_mask = collide_pow2_at_least((o.max_keys + shard_mask) / (shard_mask + 1)) - 1;
	/* 'h' + "f" + the digits: the table key of X-Key: f<digits>. */
	memset(key, '0', sizeof(key));
	key[0] = 'h';
	key[1] = 'f';
	key[2 + COLLIDE_DIGITS] = '\0';
	for (uint64_t n = 0; found < o.count && n < COLLIDE_TRIES_MAX; n++, collide_next(key + 2, COLLIDE_DIGITS)) {
		uint64_t h = store_memory_hash(key, 2 + COLLIDE_DIGITS, o.seed);
		uint64_t where = ((h >> 40) & shard_mask) << 32 | (h & bucket_mask);

		/* The first key fixes the shard and bucket every other one must share. */
		if (found == 0)
			want = where;
		if (where == want) {
			puts(key + 1);
			found++;
		}
	}
	return found == o.count ? 0 : 1;
}
