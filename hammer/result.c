/* A run's result: set up, merged, freed. */
#include "hammer/result.h"

#include <stdlib.h>
#include <string.h>

#include "common/clock.h"

int hammer_result_init(struct hammer_result *r, uint64_t interval_ns)
{
	memset(r, 0, sizeof(*r));
	r->latency = histogram_new();
	r->lateness = histogram_new();
	r->timeline = timeline_new(interval_ns ? interval_ns : 100 * NS_PER_MS);
	r->servers = calloc(HAMMER_MAX_URLS, sizeof(*r->servers));
	r->nservers = 1;
	if (r->latency == NULL || r->lateness == NULL || r->timeline == NULL || r->servers == NULL) {
		hammer_result_destroy(r);
		return -1;
	}
	return 0;
}

void hammer_result_destroy(struct hammer_result *r)
{
	histogram_free(r->latency);
	histogram_free(r->lateness);
	timeline_free(r->timeline);
	timeline_free(r->by_start);
	free(r->servers);
	r->latency = r->lateness = NULL;
	r->timeline = r->by_start = NULL;
	r->servers = NULL;
}

static void add_array(uint64_t *dst, const uint64_t *src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] += src[i];
}

static bool same_url(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* How many of servers[0..n) have url as their URL. */
static uint32_t earlier_with_url(const struct hammer_server *servers, uint32_t n, const char *url)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < n; i++)
		k += same_url(servers[i].url, url);
	return k;
}

/* The index of the k-th (0-based) of servers[0..n) whose URL is url, or n. */
static uint32_t nth_with_url(const struct hammer_server *servers, uint32_t n, const char *url, uint32_t k)
{
	for (uint32_t i = 0; i < n; i++)
		if (same_url(servers[i].url, url) && k-- == 0)
			return i;
	return n;
}

/*
 * src's servers into dst's, paired by URL: the k-th of src's with a URL goes
 * to the k-th of dst's with it, or to a new entry (one run's threads list the
 * config's URLs alike; runs against other servers keep each its own).  0, or
 * HAMMER_MERGE_TOO_MANY_URLS with dst unchanged.
 */
static int merge_servers(struct hammer_result *dst, const struct hammer_result *src)
{
	const struct hammer_server *first = &dst->servers[0];
	/* init's one entry, with no URL and nothing counted, is free */
	uint32_t have = dst->nservers == 1 && first->url == NULL && first->requests == 0 && first->calls == 0
	                    ? 0
	                    : dst->nservers;
	uint32_t to[HAMMER_MAX_URLS], n = have;

	if (src->nservers > HAMMER_MAX_URLS)
		return HAMMER_MERGE_TOO_MANY_URLS;
	for (uint32_t i = 0; i < src->nservers; i++) {
		const char *url = src->servers[i].url;

		to[i] = nth_with_url(dst->servers, have, url, earlier_with_url(src->servers, i, url));
		if (to[i] == have) {
			if (n == HAMMER_MAX_URLS)
				return HAMMER_MERGE_TOO_MANY_URLS;
			to[i] = n++;
		}
	}
	for (uint32_t i = 0; i < src->nservers; i++) {
		struct hammer_server *d = &dst->servers[to[i]];
		const struct hammer_server *s = &src->servers[i];

		if (d->url == NULL)
			d->url = s->url;
		add_array(d->status, s->status, RETRY_STATUS_MAX);
		d->errors += s->errors;
		d->requests += s->requests;
		d->ok += s->ok;
		d->failed += s->failed;
		d->calls += s->calls;
		d->retries += s->retries;
	}
	if (n > 0)
		dst->nservers = n;
	return 0;
}

int hammer_result_merge(struct hammer_result *dst, const struct hammer_result *src)
{
	return hammer_result_merge_at(dst, src, 0);
}

int hammer_result_merge_at(struct hammer_result *dst, const struct hammer_result *src, uint32_t shift)
{
	int rc = merge_servers(dst, src);

	if (rc != 0)
		return rc;
	add_array(dst->status, src->status, RETRY_STATUS_MAX);
	add_array(dst->attempt_status, src->attempt_status, RETRY_STATUS_MAX);
	add_array(dst->final_errors, src->final_errors, HAMMER_ERR_KINDS);
	add_array(dst->attempt_errors, src->attempt_errors, HAMMER_ERR_KINDS);
	add_array(dst->gave_up, src->gave_up, RETRY_REASON_COUNT);
	dst->requests += src->requests;
	dst->ok += src->ok;
	dst->failed += src->failed;
	dst->calls += src->calls;
	dst->retries += src->retries;
	dst->answered += src->answered;
	dst->unfinished += src->unfinished;
	dst->dropped += src->dropped;
	dst->budget_refused += src->budget_refused;
	dst->throttled += src->throttled;
	dst->unsent += src->unsent;
	if (src->wall_ns > dst->wall_ns)
		dst->wall_ns = src->wall_ns;
	if (src->last_ok_ns > dst->last_ok_ns)
		dst->last_ok_ns = src->last_ok_ns;
	/* several runs together start when the first did, and are as late as the latest */
	if (src->start_wall_ns != 0 && (dst->start_wall_ns == 0 || src->start_wall_ns < dst->start_wall_ns))
		dst->start_wall_ns = src->start_wall_ns;
	if (src->start_late_ns > dst->start_late_ns)
		dst->start_late_ns = src->start_late_ns;
	dst->interrupted = dst->interrupted || src->interrupted;
	if (dst->transport == NULL)
		dst->transport = src->transport;
	histogram_merge(dst->latency, src->latency);
	histogram_merge(dst->lateness, src->lateness);
	if (src->by_start != NULL && dst->by_start == NULL &&
	    (dst->by_start = timeline_new(timeline_interval_ns(src->by_start))) == NULL)
		return -1;
	if (src->by_start != NULL && timeline_merge_shifted(dst->by_start, src->by_start, shift) != 0)
		return -1;
	return timeline_merge_shifted(dst->timeline, src->timeline, shift);
}

const char *hammer_error_name(enum retry_error e)
{
	static const char *const names[] = { "none", "refused", "reset", "timeout", "other" };

	return (unsigned)e < HAMMER_ERR_KINDS ? names[e] : "other";
}
