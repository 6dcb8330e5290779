/* The room herd: an armed instant, the pages that started at it, and /room's handlers. */
#include "server/handlers/room.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netinet/in.h>

#include "common/clock.h"
#include "common/parse.h"
#include "common/siphash.h"
#include "common/text.h"
#include "server/clients.h"
#include "server/live.h"
#include "server/stats.h"

#define ROOM_REPORT_MAX 4000   /* attempts in one report: 200 requests of at most 10 tries, twice over */

struct room {
	pthread_mutex_t lock;
	struct room_view v;
	struct room_run runs[ROOM_RUNS];   /* runs[0] the newest; id 0: empty */
	struct room_tally base[ROOM_NAMES]; /* the server's counters when the armed herd was armed */
	size_t nbase;
	struct siphash_key key;             /* room_page_of's */
	uint64_t starters[ROOM_PAGES];      /* the pages that started the armed herd */
	uint32_t nstarters;
};

struct room *room_new(void)
{
	struct room *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	if (siphash_key_random(&r->key) < 0) {
		free(r);
		return NULL;
	}
	pthread_mutex_init(&r->lock, NULL);
	return r;
}

uint64_t room_page_of(const struct room *r, const char *name, const struct sockaddr *client)
{
	unsigned char in[1 + ROOM_NAME_LEN];
	size_t n;
	uint64_t h;

	if (name && (n = text_field_len(name)) > 0) {
		n = n < ROOM_NAME_LEN ? n : ROOM_NAME_LEN;
		in[0] = 'n';
		memcpy(in + 1, name, n);
	} else if (client && client->sa_family == AF_INET) {
		in[0] = '4';
		n = sizeof(struct in_addr);
		memcpy(in + 1, &((const struct sockaddr_in *)client)->sin_addr, n);
	} else if (client && client->sa_family == AF_INET6) {
		in[0] = '6';
		n = sizeof(struct in6_addr);
		memcpy(in + 1, &((const struct sockaddr_in6 *)client)->sin6_addr, n);
	} else {
		return 0;
	}
	h = siphash13(&r->key, in, n + 1);
	return h ? h : 1;
}

/* Whether page is in the n of set; if not, added when there is room.  0: counted; -1: seen already or full. */
static int page_once(uint64_t *set, uint32_t *n, uint64_t page)
{
	if (page == 0)
		return 0;
	for (uint32_t i = 0; i < *n; i++)
		if (set[i] == page)
			return -1;
	if (*n == ROOM_PAGES)
		return -1;
	set[(*n)++] = page;
	return 0;
}

void room_free(struct room *r)
{
	if (!r)
		return;
	pthread_mutex_destroy(&r->lock);
	free(r);
}

/* "" or a name in /play's list of policies (server/handlers/play.html, POLICIES). */
static bool policy_ok(const char *p)
{
	static const char *const NAMES[] = { "", "retry-after", "give-up", "at-once", "fixed", "exponential",
		                             "full", "signaldb", "httpclient", "own" };

	for (size_t i = 0; i < sizeof(NAMES) / sizeof(NAMES[0]); i++)
		if (strcmp(p, NAMES[i]) == 0)
			return true;
	return false;
}

/* What each of now's clients did since base: those with requests since, at most ROOM_NAMES, into out; returns how many. */
static size_t tally_since(const struct room_tally *base, size_t nbase, const struct room_tally *now, size_t n,
                          struct room_tally *out)
{
	size_t k = 0;

	for (size_t i = 0; i < n && k < ROOM_NAMES; i++) {
		struct room_tally d = now[i];
		const struct room_tally *b = NULL;

		for (size_t j = 0; j < nbase && !b; j++)
			if (strcmp(base[j].name, now[i].name) == 0)
				b = &base[j];
		/* a counter below its base was reset since: all of it is new */
		if (b && b->requests <= d.requests) {
			d.requests -= b->requests;
			d.rejected -= b->rejected <= d.rejected ? b->rejected : d.rejected;
			d.retries -= b->retries <= d.retries ? b->retries : d.retries;
			d.early -= b->early <= d.early ? b->early : d.early;
			d.paired -= b->paired <= d.paired ? b->paired : d.paired;
			d.waiting_new -= b->waiting_new <= d.waiting_new ? b->waiting_new : d.waiting_new;
		}
		if (d.requests > 0)
			out[k++] = d;
	}
	return k;
}

/* The run of herd id, or NULL.  Locked. */
static struct room_run *run_find(struct room *r, uint64_t id)
{
	for (size_t i = 0; i < ROOM_RUNS; i++)
		if (r->runs[i].id == id && id != 0)
			return &r->runs[i];
	return NULL;
}

int room_arm(struct room *r, int64_t now_ms, int64_t lead_ms, const char *policy, uint32_t requests,
             uint32_t concurrency, const struct room_tally *clients, size_t n)
{
	struct room_run *prev;

	if (lead_ms < 0 || lead_ms > ROOM_LEAD_MS_MAX || !policy_ok(policy))
		return -1;
	if (n > ROOM_NAMES)
		n = ROOM_NAMES;
	pthread_mutex_lock(&r->lock);
	prev = run_find(r, r->v.id);
	if (prev && !prev->closed) {
		prev->nseen = tally_since(r->base, r->nbase, clients, n, prev->seen);
		prev->closed = true;
	}
	if (n)
		memcpy(r->base, clients, n * sizeof(*clients));
	r->nbase = n;
	r->v.id++;
	r->v.start_ms = now_ms + lead_ms;
	snprintf(r->v.policy, sizeof(r->v.policy), "%s", policy);
	r->v.requests = requests;
	r->v.concurrency = concurrency;
	r->v.started = 0;
	r->v.first_ms = r->v.last_ms = 0;
	r->nstarters = 0;
	pthread_mutex_unlock(&r->lock);
	return 0;
}

bool room_started(struct room *r, uint64_t id, uint64_t page, int64_t now_ms)
{
	bool counted;

	pthread_mutex_lock(&r->lock);
	/* A page whose clock runs far off may start early; a second before the instant is its limit. */
	counted = id != 0 && id == r->v.id && now_ms >= r->v.start_ms - 1000 && now_ms <= r->v.start_ms + ROOM_LATE_MS &&
	          page_once(r->starters, &r->nstarters, page) == 0;
	if (counted) {
		if (r->v.started == 0 || now_ms < r->v.first_ms)
			r->v.first_ms = now_ms;
		if (r->v.started == 0 || now_ms > r->v.last_ms)
			r->v.last_ms = now_ms;
		r->v.started++;
	}
	pthread_mutex_unlock(&r->lock);
	return counted;
}

void room_view(struct room *r, struct room_view *out)
{
	pthread_mutex_lock(&r->lock);
	*out = r->v;
	pthread_mutex_unlock(&r->lock);
}

void room_reset(void *ctx)
{
	struct room *r = ctx;
	uint64_t id;

	pthread_mutex_lock(&r->lock);
	/* Ids keep counting: a page still holding the old herd's id must not match a new one. */
	id = r->v.id;
	memset(&r->v, 0, sizeof(r->v));
	memset(r->runs, 0, sizeof(r->runs));
	r->nbase = 0;                  /* the server's counters start again from 0 too */
	r->nstarters = 0;
	r->v.id = id;
	pthread_mutex_unlock(&r->lock);
}

/* The run of herd id: found, or made in front (when id is the armed herd), or NULL. */
static struct room_run *run_of(struct room *r, uint64_t id)
{
	struct room_run *run = run_find(r, id);

	if (run || id != r->v.id)
		return run;
	memmove(&r->runs[1], &r->runs[0], (ROOM_RUNS - 1) * sizeof(r->runs[0]));
	memset(&r->runs[0], 0, sizeof(r->runs[0]));
	r->runs[0].id = id;
	snprintf(r->runs[0].policy, sizeof(r->runs[0].policy), "%s", r->v.policy);
	return &r->runs[0];
}

int room_report(struct room *r, const struct room_report *rep)
{
	struct room_run *run;

	if (rep->id == 0)
		return -1;
	pthread_mutex_lock(&r->lock);
	run = run_of(r, rep->id);
	if (run && page_once(run->reporters, &run->nreporters, rep->page) != 0)
		run = NULL;
	if (run) {
		run->pages++;
		run->ok += rep->ok;
		run->failed += rep->failed;
		run->calls += rep->calls;
		run->retries += rep->retries;
		if (rep->done_ms > run->done_ms)
			run->done_ms = rep->done_ms;
		for (size_t i = 0; i < rep->nattempts; i++)
			if (rep->attempts_ms[i] / 100 < ROOM_BUCKETS)
				run->buckets[rep->attempts_ms[i] / 100]++;
	}
	pthread_mutex_unlock(&r->lock);
	return run ? 0 : -1;
}

size_t room_runs(struct room *r, const struct room_tally *now, size_t n, struct room_run *out)
{
	size_t k = 0;

	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < ROOM_RUNS; i++) {
		if (r->runs[i].id == 0)
			continue;
		out[k] = r->runs[i];
		if (!out[k].closed && out[k].id == r->v.id)
			out[k].nseen = tally_since(r->base, r->nbase, now, n < ROOM_NAMES ? n : ROOM_NAMES, out[k].seen);
		k++;
	}
	pthread_mutex_unlock(&r->lock);
	return k;
}

void room_run_early(const struct room_run *run, uint64_t *early, uint64_t *waiting_new, uint32_t *polite)
{
	*early = *waiting_new = 0;
	*polite = 0;
	for (size_t i = 0; i < run->nseen; i++) {
		*early += run->seen[i].early;
		*waiting_new += run->seen[i].waiting_new;
		*polite += run->seen[i].early == 0;
	}
}

uint32_t room_run_peak(const struct room_run *run)
{
	uint32_t peak = 0;

	for (size_t i = 0; i < ROOM_BUCKETS; i++)
		if (run->buckets[i] > peak)
			peak = run->buckets[i];
	return peak;
}

static int64_t wall_ms(void)
{
	return (int64_t)(clock_wall_ns() / NS_PER_MS);
}

/* The answer: body (malloc'd; NULL: out of memory), never cached, after the headers already in out (an Allow). */
static int reply(struct server_reply *out, int status, char *body)
{
	size_t used = strnlen(out->headers, sizeof(out->headers));

	if (!body)
		return -1;
	out->status = status;
	out->content_type = "application/json";
	out->body = body;
	out->body_len = strlen(body);
	snprintf(out->headers + used, sizeof(out->headers) - used, "Cache-Control: no-store\n");
	return 0;
}

/* The server's counters of its most active ROOM_NAMES clients now into out (room for ROOM_NAMES); returns how many. */
static size_t server_tally(struct server *s, struct room_tally *out)
{
	struct stats_route_info ri[SERVER_MAX_ROUTES];
	struct live_parts p;
	struct clients_snapshot snap;
	size_t n = 0;

	server_live_parts(s, ri, &p);
	if (clients_snapshot(p.clients, ROOM_NAMES, &snap) != 0)
		return 0;
	for (size_t i = 0; i < snap.n && n < ROOM_NAMES; i++, n++) {
		const struct clients_row *c = &snap.rows[i];

		out[n] = (struct room_tally){ .requests = c->requests, .rejected = c->rejected, .retries = c->retries,
		                              .early = c->early, .paired = c->paired, .waiting_new = c->waiting_new };
		snprintf(out[n].name, sizeof(out[n].name), "%s", c->name);
	}
	clients_snapshot_destroy(&snap);
	return n;
}

/* s as a JSON string into f: quotes, backslashes and control characters escaped. */
static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* A run's tally, each client's requests, retries, early ones and verdict, as a JSON array into f. */
static void tally_json(FILE *f, const struct room_run *run)
{
	fputc('[', f);
	for (size_t i = 0; i < run->nseen; i++) {
		const struct room_tally *t = &run->seen[i];
		struct clients_row row = { .requests = t->requests, .retries = t->retries, .early = t->early };

		fputs(i ? ",{\"name\":" : "{\"name\":", f);
		json_str(f, t->name);
		fprintf(f, ",\"requests\":%llu,\"rejected\":%llu,\"retries\":%llu,\"early\":%llu,\"new_while_waiting\":%llu,"
		        "\"verdict\":\"%s\"}", (unsigned long long)t->requests, (unsigned long long)t->rejected,
		        (unsigned long long)t->retries, (unsigned long long)t->early, (unsigned long long)t->waiting_new,
		        clients_verdict_name(clients_verdict_of(&row)));
	}
	fputc(']', f);
}

/* One run as JSON into f: the pages' reports, then the server's own counts. */
static void run_json(FILE *f, const struct room_run *run)
{
	uint64_t req = run->ok + run->failed, early, waiting_new;
	uint32_t polite;

	room_run_early(run, &early, &waiting_new, &polite);
	fprintf(f, "{\"id\":%llu,\"policy\":\"%s\",\"pages\":%u,\"requests\":%llu,\"ok\":%llu,\"calls\":%llu,"
	        "\"retries\":%llu,\"calls_per_request\":%.2f,\"done_s\":%.2f,\"peak_per_100ms\":%u,"
	        "\"server\":{\"clients\":%zu,\"early\":%llu,\"new_while_waiting\":%llu,\"polite\":%u,\"closed\":%s,\"tally\":",
	        (unsigned long long)run->id, run->policy, run->pages, (unsigned long long)req, (unsigned long long)run->ok,
	        (unsigned long long)run->calls, (unsigned long long)run->retries,
	        req ? (double)run->calls / (double)req : 0.0, (double)run->done_ms / 1000.0, room_run_peak(run),
	        run->nseen, (unsigned long long)early, (unsigned long long)waiting_new, polite,
	        run->closed ? "true" : "false");
	tally_json(f, run);
	fputs("}}", f);
}

/* The runs as a JSON array into f, newest first, the armed herd's tally up to the server's counters now. */
static void runs_json(FILE *f, struct server *s, struct room *r)
{
	struct room_run *runs = malloc(ROOM_RUNS * sizeof(*runs));
	struct room_tally *now = malloc(ROOM_NAMES * sizeof(*now));
	size_t n = runs && now ? room_runs(r, now, server_tally(s, now), runs) : 0;

	fputc('[', f);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputc(',', f);
		run_json(f, &runs[i]);
	}
	fputc(']', f);
	free(now);
	free(runs);
}

/* The armed herd as JSON into f (what GET /room and the "herd" announcement carry). */
static void herd_json(FILE *f, const struct room_view *v)
{
	fprintf(f, "{\"id\":%llu,\"start_ms\":%lld,\"policy\":\"%s\",\"requests\":%u,\"concurrency\":%u}",
	        (unsigned long long)v->id, (long long)v->start_ms, v->policy, v->requests, v->concurrency);
}

/* The room as JSON (malloc'd), with the server's time now. */
static char *view_json(struct server *srv, struct room *r)
{
	struct room_view v;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	room_view(r, &v);
	fprintf(f, "{\"now_ms\":%lld,\"herd\":", (long long)wall_ms());
	herd_json(f, &v);
	fprintf(f, ",\"started\":%u,\"spread_ms\":%lld,\"runs\":", v.started,
	        (long long)(v.started ? v.last_ms - v.first_ms : 0));
	runs_json(f, srv, r);
	fputs("}\n", f);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

/* A query number in [0, max], or def when absent; -1 when it does not parse or is out of range. */
static int64_t query_num(const struct server_request *req, const char *name, int64_t def, int64_t max)
{
	const char *v = server_request_query(req, name);
	uint64_t n;
	char why[80];

	if (!v)
		return def;
	if (parse_u64(v, 0, (uint64_t)max, &n, why, sizeof(why)) != 0)
		return -1;
	return (int64_t)n;
}

/* Tell every /events stream of the armed herd now (event "herd"); a page that misses it reads GET /room. */
static void announce(struct server *s, struct room *r)
{
	struct room_view v;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return;
	room_view(r, &v);
	fprintf(f, "{\"now_ms\":%lld,\"herd\":", (long long)wall_ms());
	herd_json(f, &v);
	fputc('}', f);
	if (fclose(f) == 0)
		server_announce(s, "herd", text);
	free(text);
}

/* POST /room?in=MS&policy=NAME&requests=N&concurrency=N: arm a herd (admin). */
static int arm(struct server *s, struct room *r, const struct server_request *req, struct server_reply *out)
{
	const char *policy = server_request_query(req, "policy");
	int64_t lead = query_num(req, "in", 5000, ROOM_LEAD_MS_MAX), n = query_num(req, "requests", 0, 200);
	int64_t c = query_num(req, "concurrency", 0, 10);

	struct room_tally *now;
	size_t k;
	int rc;

	if (server_admin_refused(s, req, out))
		return 0;
	if (!(now = malloc(ROOM_NAMES * sizeof(*now))))
		return -1;
	k = server_tally(s, now);
	rc = lead < 0 || n < 0 || c < 0 ? -1 : room_arm(r, wall_ms(), lead, policy ? policy : "", (uint32_t)n, (uint32_t)c, now, k);
	free(now);
	if (rc != 0)
		return reply(out, 400, strdup("{\"error\":\"in (ms, at most 60000), policy (a /play policy name), requests "
		                              "(at most 200) and concurrency (at most 10)\"}\n"));
	announce(s, r);
	return reply(out, 200, view_json(s, r));
}

static int handle_room(struct server *s, void *ctx, const struct server_request *req, struct server_reply *out)
{
	if (strcmp(req->method, "POST") == 0)
		return arm(s, ctx, req, out);
	if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "HEAD") != 0) {
		snprintf(out->headers, sizeof(out->headers), "Allow: GET, HEAD, POST\n");
		return reply(out, 405, strdup("{\"error\":\"GET /room, or POST /room to arm a herd\"}\n"));
	}
	return reply(out, 200, view_json(s, ctx));
}

/* 405 with Allow: POST, and what to send instead. */
static int post_only(struct server_reply *out, const char *what)
{
	char body[160];

	snprintf(out->headers, sizeof(out->headers), "Allow: POST\n");
	snprintf(body, sizeof(body), "{\"error\":\"%s\"}\n", what);
	return reply(out, 405, strdup(body));
}

static int handle_start(struct server *s, void *ctx, const struct server_request *req, struct server_reply *out)
{
	const char *id = server_request_query(req, "id");
	uint64_t n = 0, page;
	char why[80];

	(void)s;
	if (strcmp(req->method, "POST") != 0)
		return post_only(out, "POST /room/start?id=N");
	if (!id || parse_u64(id, 1, UINT64_MAX, &n, why, sizeof(why)) != 0)
		return reply(out, 400, strdup("{\"error\":\"POST /room/start?id=N\"}\n"));
	page = room_page_of(ctx, server_request_header(req, "X-Client-Name"), req->client);
	return reply(out, 200, strdup(room_started(ctx, n, page, wall_ms()) ? "{\"counted\":true}\n" : "{\"counted\":false}\n"));
}

/* The body's comma-separated milliseconds (digits only) into ms (room for max); returns how many, or -1 when malformed. */
static long attempts_of(const char *body, uint32_t *ms, size_t max)
{
	size_t n = 0;

	while (*body) {
		char *end;
		unsigned long v = *body >= '0' && *body <= '9' ? strtoul(body, &end, 10) : 0;

		if (*body < '0' || *body > '9' || n == max || (*end != ',' && *end != '\0'))
			return -1;
		ms[n++] = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
		body = *end ? end + 1 : end;
	}
	return (long)n;
}

static int handle_report(struct server *s, void *ctx, const struct server_request *req, struct server_reply *out)
{
	struct room_report rep = { 0 };
	uint32_t *ms = malloc(ROOM_REPORT_MAX * sizeof(*ms));
	int64_t f[6];
	long n = -1;
	int rc;

	(void)s;
	if (strcmp(req->method, "POST") != 0) {
		free(ms);
		return post_only(out, "POST /room/report?id=&ok=&failed=&calls=&retries=&done_ms=");
	}
	f[0] = query_num(req, "id", -1, INT64_MAX);
	f[1] = query_num(req, "ok", -1, 1000000);
	f[2] = query_num(req, "failed", -1, 1000000);
	f[3] = query_num(req, "calls", -1, 1000000);
	f[4] = query_num(req, "retries", -1, 1000000);
	f[5] = query_num(req, "done_ms", -1, 24LL * 3600 * 1000);
	if (ms)
		n = attempts_of(req->body, ms, ROOM_REPORT_MAX);
	/* A page's figures add up: each request ends ok or failed after its retries, and each call is an attempt. */
	if (n < 0 || f[0] < 1 || f[1] < 0 || f[2] < 0 || f[3] < 0 || f[4] < 0 || f[5] < 0 ||
	    f[1] + f[2] + f[4] != f[3] || n != f[3]) {
		free(ms);
		return reply(out, 400, strdup("{\"error\":\"POST /room/report?id=&ok=&failed=&calls=&retries=&done_ms= "
		                              "(calls = ok + failed + retries) with the attempts' ms from the start, "
		                              "comma-separated, one a call, as the body\"}\n"));
	}
	rep = (struct room_report){ (uint64_t)f[0], (uint64_t)f[1], (uint64_t)f[2], (uint64_t)f[3], (uint64_t)f[4],
	                            (uint64_t)f[5], ms, (size_t)n,
	                            room_page_of(ctx, server_request_header(req, "X-Client-Name"), req->client) };
	rc = room_report(ctx, &rep);
	free(ms);
	return reply(out, 200, strdup(rc == 0 ? "{\"counted\":true}\n" : "{\"counted\":false}\n"));
}

int room_register(struct server_config *c, struct room *r)
{
	if (server_config_add_handler(c, "/room", handle_room, r) != 0 ||
	    server_config_add_handler(c, "/room/start", handle_start, r) != 0 ||
	    server_config_add_handler(c, "/room/report", handle_report, r) != 0)
		return -1;
	c->handlers[c->nhandlers - 3].reset = room_reset;
	return 0;
}
