#include "server/handlers/occ.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/parse.h"

struct occ {
	pthread_mutex_t lock;
	uint64_t version;
	uint64_t writes;
	uint64_t conflicts;
};

struct occ *occ_new(void)
{
	struct occ *o = calloc(1, sizeof(*o));

	if (!o)
		return NULL;
	if (pthread_mutex_init(&o->lock, NULL) != 0) {
		free(o);
		return NULL;
	}
	return o;
}

void occ_free(struct occ *o)
{
	if (!o)
		return;
	pthread_mutex_destroy(&o->lock);
	free(o);
}

uint64_t occ_version(struct occ *o)
{
	uint64_t v;

	pthread_mutex_lock(&o->lock);
	v = o->version;
	pthread_mutex_unlock(&o->lock);
	return v;
}

void occ_reset(struct occ *o)
{
	pthread_mutex_lock(&o->lock);
	o->version = 0;
	o->writes = 0;
	o->conflicts = 0;
	pthread_mutex_unlock(&o->lock);
}

/* True when an If-Match value names `version` (a list, "*", weak tags never match). */
static bool etag_matches(const char *if_match, uint64_t version)
{
	char want[32];
	const char *p = if_match;
	size_t wl;

	snprintf(want, sizeof(want), "\"%llu\"", (unsigned long long)version);
	wl = strlen(want);
	while (*p) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (*p == '*')
			return true;
		if (strncmp(p, want, wl) == 0 && (p[wl] == '\0' || p[wl] == ',' || p[wl] == ' '))
			return true;
		while (*p && *p != ',')
			p++;
	}
	return false;
}

static void reply_fill(struct occ_reply *r, int status, const struct occ *o)
{
	r->status = status;
	r->version = o->version;
	r->allow = NULL;
	snprintf(r->etag, sizeof(r->etag), "\"%llu\"", (unsigned long long)o->version);
	snprintf(r->body, sizeof(r->body), "{\"version\":%llu,\"writes\":%llu,\"conflicts\":%llu}\n",
	         (unsigned long long)o->version, (unsigned long long)o->writes,
	         (unsigned long long)o->conflicts);
}

void occ_handle(struct occ *o, const char *method, const char *if_match, struct occ_reply *r)
{
	int status = 200;

	pthread_mutex_lock(&o->lock);
	if (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0) {
		status = 200;
	} else if (strcmp(method, "PUT") != 0) {
		status = 405;
	} else if (!if_match || !*if_match) {
		status = 428;
	} else if (etag_matches(if_match, o->version)) {
		o->version++;
		o->writes++;
	} else {
		o->conflicts++;
		status = 409;
	}
	reply_fill(r, status, o);
	pthread_mutex_unlock(&o->lock);
	if (status == 405)
		r->allow = "GET, PUT";
}

static int delay_fail(char *err, size_t errlen, const char *s)
{
	if (err && errlen)
		snprintf(err, errlen, "--delay: bad value '%s' (want MEAN[±SD], e.g. 20ms±5ms)", s);
	return -1;
}

int occ_delay_parse(const char *s, struct occ_delay *d, char *err, size_t errlen)
{
	char mean[64];
	const char *sep = strstr(s, "\xc2\xb1");
	size_t seplen = 2;

	if (!sep) {
		sep = strstr(s, "+-");
		seplen = 2;
	}
	if (strlen(s) >= sizeof(mean))
		return delay_fail(err, errlen, s);
	d->sd_ns = 0;
	if (sep) {
		memcpy(mean, s, (size_t)(sep - s));
		mean[sep - s] = '\0';
		if (parse_duration(sep + seplen, &d->sd_ns, NULL, 0) != 0)
			return delay_fail(err, errlen, s);
	} else {
		strcpy(mean, s);
	}
	if (parse_duration(mean, &d->mean_ns, NULL, 0) != 0)
		return delay_fail(err, errlen, s);
	return 0;
}

uint64_t occ_delay_sample(const struct occ_delay *d, struct prng *rng)
{
	double u1, u2, z, v;

	if (d->sd_ns == 0)
		return d->mean_ns;
	/* Box-Muller; 1 - u keeps log() away from 0. */
	u1 = 1.0 - prng_double(rng);
	u2 = prng_double(rng);
	z = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
	if (z > 4.0)
		z = 4.0;
	v = (double)d->mean_ns + z * (double)d->sd_ns;
	return v <= 0 ? 0 : (uint64_t)v;
}

/* One PRNG per server thread, seeded from the route's seed and a thread counter. */
static _Thread_local struct prng tl_rng;
static _Thread_local bool tl_seeded;
static _Atomic uint64_t thread_counter;

int occ_route_handler(struct server *srv, void *ctx, const struct server_request *req, struct server_reply *out)
{
	struct occ_route *r = ctx;
	struct occ_reply rep;
	size_t n;

	(void)srv;
	if (!tl_seeded) {
		prng_seed(&tl_rng, prng_stream_seed(r->seed, thread_counter++));
		tl_seeded = true;
	}
	/* The record is read or written now and the answer waits out the delay (on
	 * the server's timer, not this thread).  The window between a GET's read and
	 * the client's PUT commit is still one delay plus the client's turnaround, as
	 * when the delay came first, so the herd's conflicts are the same. */
	if (r->delay.mean_ns || r->delay.sd_ns)
		out->delay_ns = occ_delay_sample(&r->delay, &tl_rng);
	occ_handle(r->occ, req->method, server_request_header(req, "If-Match"), &rep);
	out->status = rep.status;
	out->content_type = "application/json";
	n = strlen(rep.body);
	out->body = malloc(n + 1);
	if (!out->body)
		return -1;
	memcpy(out->body, rep.body, n + 1);
	out->body_len = n;
	snprintf(out->headers, sizeof(out->headers), "ETag: %s\n%s%s%s", rep.etag,
	         rep.allow ? "Allow: " : "", rep.allow ? rep.allow : "", rep.allow ? "\n" : "");
	return 0;
}

void occ_route_reset(void *ctx)
{
	occ_reset(((struct occ_route *)ctx)->occ);
}

int occ_route_register(struct server_config *c, struct occ_route *r)
{
	return server_config_add_stateful_handler(c, "/occ", occ_route_handler, occ_route_reset, r);
}

static int opt_delay(void *base, const struct cli_option *o, const char *v, char *why, size_t wl)
{
	(void)o;
	if (occ_delay_parse(v, &((struct occ_route *)base)->delay, NULL, 0) != 0)
		return snprintf(why, wl, "is not a delay such as 20ms or 20ms\xc2\xb1" "5ms"), -1;
	return 0;
}

const struct cli_option occ_route_options[] = {
	{ "--delay", CLI_CUSTOM, .fn = opt_delay, .section = CLI_SEC_DOES, .arg = "MEAN[±SD]",
	  .help = "mimic network delay on /occ answers (e.g. 2ms±1ms); /occ is one versioned "
	          "record: GET gives its ETag, PUT with If-Match writes (200) or conflicts (409)" },
	{ NULL },
};
