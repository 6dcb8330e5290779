/* verify --baseline: today's accepted verdicts, and what got better or worse since. */
#include "lab/verify_baseline.h"

#include <errno.h>
#include <string.h>

#define BASELINE_VERSION 1

/* The outcome of verdict k of r as written in a baseline. */
static const char *outcome_of(const struct verify_result *r, size_t k)
{
	return r->state != VERIFY_GRADED ? "fail" : verify_outcome_name(r->v[k].outcome);
}

/* pass 2, not observed 1 (0 with --strict), fail or anything else 0. */
static int rank(const char *o, bool strict)
{
	if (strcmp(o, "pass") == 0)
		return 2;
	return strcmp(o, "not observed") == 0 && !strict ? 1 : 0;
}

json_t *verify_baseline_load(const char *path, char *err, size_t errlen)
{
	json_error_t je;
	FILE *f = fopen(path, "r");
	json_t *root;

	if (!f) {
		snprintf(err, errlen, "cannot be read (%s)", strerror(errno));
		return NULL;
	}
	root = json_loadf(f, 0, &je);
	fclose(f);
	if (!root || json_integer_value(json_object_get(root, "ratelab_verify_baseline")) != BASELINE_VERSION ||
	    !json_is_object(json_object_get(root, "verdicts"))) {
		snprintf(err, errlen, "is not a verify baseline (write one with --write-baseline)");
		json_decref(root);
		return NULL;
	}
	return root;
}

int verify_baseline_write(const char *path, const struct verify_result *rs, size_t n)
{
	json_t *root = json_pack("{s:i,s:{}}", "ratelab_verify_baseline", BASELINE_VERSION, "verdicts");
	json_t *all = root ? json_object_get(root, "verdicts") : NULL;
	int rc;

	for (size_t i = 0; all && i < n; i++) {
		json_t *sc = json_object();

		for (size_t k = 0; sc && k < rs[i].nex; k++)
			json_object_set_new(sc, rs[i].ex[k].text, json_string(outcome_of(&rs[i], k)));
		json_object_set_new(all, rs[i].scenario, sc);
	}
	rc = root ? json_dump_file(root, path, JSON_INDENT(2)) : -1;
	json_decref(root);
	return rc;
}

void verify_baseline_compare(FILE *f, const char *path, json_t *base, const struct verify_result *rs, size_t n,
                             bool strict, struct verify_baseline_diff *d)
{
	json_t *all = json_object_get(base, "verdicts");

	memset(d, 0, sizeof(*d));
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < rs[i].nex; k++) {
			const char *was = json_string_value(json_object_get(json_object_get(all, rs[i].scenario),
			                                                    rs[i].ex[k].text));
			const char *now = outcome_of(&rs[i], k);
			int a = rank(was ? was : "pass", strict), b = rank(now, strict);

			if (a == b) {
				d->same++;
				continue;
			}
			*(b > a ? &d->better : &d->worse) += 1;
			fprintf(f, "%s %s %s: %s -> %s\n", b > a ? "better " : "WORSE  ", rs[i].scenario, rs[i].ex[k].text,
			        was ? was : "(not in the baseline)", now);
		}
	fprintf(f, "baseline %s: %zu worse, %zu better, %zu the same\n", path, d->worse, d->better, d->same);
}
