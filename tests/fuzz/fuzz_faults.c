/*
 * libFuzzer target: `--faults` specs and the `?status=&delay=` query form
 * (faults_parse, faults_parse_query in server/faults.h).  Checks what the
 * server relies on after a successful parse: at most FAULTS_MAX entries,
 * statuses in 100..599, percentages in 0..100, each exclusive group adding up
 * to at most 100, and faults_pick only ever choosing a configured fault.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/prng.h"
#include "server/faults.h"

#define FUZZ_MAX 512

static void check_entries(const struct faults *f)
{
	double group_status = 0, group_delay = 0;

	if (f->n > FAULTS_MAX)
		abort();
	for (size_t i = 0; i < f->n; i++) {
		const struct fault_entry *e = &f->e[i];

		if (!(e->percent >= 0 && e->percent <= 100))
			abort();
		if (e->kind == FAULT_STATUS && (e->status < 100 || e->status > 599))
			abort();
		if (e->kind == FAULT_STATUS || e->kind == FAULT_RESET)
			group_status += e->percent;
		if (e->kind == FAULT_DELAY)
			group_delay += e->percent;
	}
	if (group_status > 100 + 1e-9 || group_delay > 100 + 1e-9)
		abort();
}

static bool has_status(const struct faults *f, int status)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->e[i].kind == FAULT_STATUS && f->e[i].status == status)
			return true;
	return false;
}

static bool has_delay(const struct faults *f, uint64_t ns)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->e[i].kind == FAULT_DELAY && f->e[i].delay_ns == ns)
			return true;
	return false;
}

static void check_picks(const struct faults *f)
{
	struct prng rng;
	struct fault_pick pk;

	prng_seed(&rng, 7);
	for (int i = 0; i < 32; i++) {
		faults_pick(f, &rng, &pk);
		if (pk.status && !has_status(f, pk.status))
			abort();
		if (pk.delay_ns && !has_delay(f, pk.delay_ns))
			abort();
		if (pk.status && pk.reset)
			abort(); /* one exclusive group */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char s[FUZZ_MAX + 1], err[256];
	struct faults f;
	char *amp;

	if (size > FUZZ_MAX)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	memset(&f, 0, sizeof(f));
	if (faults_parse(s, &f, err, sizeof(err)) == 0) {
		check_entries(&f);
		check_picks(&f);
	}
	/* the query form: "STATUS-LIST&DELAY-LIST" split at the first '&' */
	memset(&f, 0, sizeof(f));
	amp = strchr(s, '&');
	if (amp)
		*amp = '\0';
	if (faults_parse_query(s, amp ? amp + 1 : NULL, &f, err, sizeof(err)) == 0) {
		check_entries(&f);
		check_picks(&f);
	}
	return 0;
}
