#include "server/faults.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"

static int parse_percent(const char *s, double *out, char *err, size_t errlen)
{
	if (!s) {
		*out = 100.0;
		return 0;
	}
	return parse_double(s, 0.0, 100.0, out, err, errlen);
}

static int parse_kind(char *kind, struct fault_entry *e, char *err, size_t errlen)
{
	uint64_t v;

	if (strcmp(kind, "reset") == 0) {
		e->kind = FAULT_RESET;
		return 0;
	}
	if (strcmp(kind, "no-retry-after") == 0) {
		e->kind = FAULT_NO_RETRY_AFTER;
		return 0;
	}
	if (strncmp(kind, "delay=", 6) == 0) {
		e->kind = FAULT_DELAY;
		if (parse_duration(kind + 6, &e->delay_ns, err, errlen) < 0)
			return -1;
		if (e->delay_ns > 60 * 1000000000ULL) {
			snprintf(err, errlen, "delay '%s' is over 60s", kind + 6);
			return -1;
		}
		return 0;
	}
	if (*kind && strspn(kind, "0123456789") == strlen(kind)) {
		/* A final answer: 1xx is informational only. */
		if (parse_u64(kind, 200, 599, &v, NULL, 0) < 0) {
			snprintf(err, errlen, "status '%s' is not in 200..599", kind);
			return -1;
		}
		e->kind = FAULT_STATUS;
		e->status = (int)v;
		return 0;
	}
	snprintf(err, errlen, "unknown fault '%s' (STATUS, reset, no-retry-after, delay=DUR)", kind);
	return -1;
}

static int parse_entry(char *tok, struct faults *f, char *err, size_t errlen)
{
	char *colon = strrchr(tok, ':');
	struct fault_entry e = { 0 };

	if (f->n >= FAULTS_MAX) {
		snprintf(err, errlen, "too many fault entries (at most %d)", FAULTS_MAX);
		return -1;
	}
	if (colon)
		*colon = '\0';
	if (parse_kind(tok, &e, err, errlen) < 0 ||
	    parse_percent(colon ? colon + 1 : NULL, &e.percent, err, errlen) < 0)
		return -1;
	f->e[f->n++] = e;
	return 0;
}

static double group_sum(const struct faults *f, bool delay)
{
	double sum = 0;

	for (size_t i = 0; i < f->n; i++) {
		bool is_delay = f->e[i].kind == FAULT_DELAY;
		bool is_outcome = f->e[i].kind == FAULT_STATUS || f->e[i].kind == FAULT_RESET;

		if ((delay && is_delay) || (!delay && is_outcome))
			sum += f->e[i].percent;
	}
	return sum;
}

int faults_parse(const char *spec, struct faults *f, char *err, size_t errlen)
{
	char buf[512], inner[256];
	char *save = NULL;
	int rc = 0;

	if (!spec || !*spec || strlen(spec) >= sizeof(buf)) {
		snprintf(err, errlen, "empty or too long");
		return -1;
	}
	strcpy(buf, spec);
	for (char *tok = strtok_r(buf, ",", &save); tok && rc == 0; tok = strtok_r(NULL, ",", &save)) {
		rc = parse_entry(tok, f, inner, sizeof(inner));
		if (rc < 0)
			snprintf(err, errlen, "%s", inner);
	}
	if (rc == 0 && (group_sum(f, false) > 100.0 || group_sum(f, true) > 100.0)) {
		snprintf(err, errlen, "percentages of one group add up to more than 100");
		rc = -1;
	}
	return rc;
}

static int parse_prefixed(const char *list, const char *prefix, struct faults *f, char *err, size_t errlen)
{
	char buf[512];
	size_t used = 0;
	const char *p = list;

	while (*p && used < sizeof(buf) - 64) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		int w = snprintf(buf + used, sizeof(buf) - used, "%s%s%.*s", used ? "," : "", prefix, (int)n, p);

		if (w < 0 || (size_t)w >= sizeof(buf) - used)
			break;
		used += (size_t)w;
		p += n + (comma ? 1 : 0);
		if (!comma)
			break;
	}
	return faults_parse(buf, f, err, errlen);
}

int faults_parse_query(const char *status, const char *delay, struct faults *f, char *err, size_t errlen)
{
	if (status && parse_prefixed(status, "", f, err, errlen) < 0)
		return -1;
	if (delay && parse_prefixed(delay, "delay=", f, err, errlen) < 0)
		return -1;
	return 0;
}

bool faults_empty(const struct faults *f)
{
	return f->n == 0;
}

static const struct fault_entry *draw(const struct faults *f, double r, bool delay)
{
	double acc = 0;

	for (size_t i = 0; i < f->n; i++) {
		const struct fault_entry *e = &f->e[i];
		bool is_delay = e->kind == FAULT_DELAY;
		bool is_outcome = e->kind == FAULT_STATUS || e->kind == FAULT_RESET;

		if ((delay && !is_delay) || (!delay && !is_outcome))
			continue;
		acc += e->percent;
		if (r < acc)
			return e;
	}
	return NULL;
}

void faults_pick(const struct faults *f, struct prng *rng, struct fault_pick *out)
{
	double r_outcome = prng_double(rng) * 100.0;
	double r_delay = prng_double(rng) * 100.0;
	double r_nra = prng_double(rng) * 100.0;
	const struct fault_entry *o = draw(f, r_outcome, false);
	const struct fault_entry *d = draw(f, r_delay, true);

	memset(out, 0, sizeof(*out));
	if (o && o->kind == FAULT_RESET)
		out->reset = true;
	else if (o)
		out->status = o->status;
	if (d)
		out->delay_ns = d->delay_ns;
	for (size_t i = 0; i < f->n; i++)
		if (f->e[i].kind == FAULT_NO_RETRY_AFTER && r_nra < f->e[i].percent)
			out->no_retry_after = true;
}
