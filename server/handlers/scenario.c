/* Scripted scenarios: parse, answer per client, record every arrival. */
#include "server/handlers/scenario.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/httpdate.h"
#include "common/text.h"
#include "common/parse.h"
#include "server/handlers/scenario_script.h"
#include "server/http/client_key.h"

struct scenario_client {
	char name[SCENARIO_CLIENT_LEN];
	unsigned pos;
	uint64_t attempts;
};

struct scenario {
	char name[256];
	char expect[256];
	const char *method;
	bool stop_when_settled;
	struct scenario_step steps[SCENARIO_MAX_STEPS];
	size_t nsteps;
	pthread_mutex_t lock;
	struct scenario_client *clients;   /* SCENARIO_MAX_CLIENTS */
	size_t nclients;
	struct scenario_arrival *log;      /* SCENARIO_LOG_MAX */
	size_t nlog;
	uint64_t total;
	uint64_t last_ns;                  /* the last arrival, monotonic */
	size_t pending;                    /* answers handed out and not yet done */
	uint32_t gen;                      /* bumped by each reset: a token from before it is stale */
};

static pthread_once_t names_once = PTHREAD_ONCE_INIT;
static char names[1024];

static void build_names(void)
{
	size_t used = 0;

	for (size_t i = 0; i < scenario_nbuiltins && used < sizeof(names); i++)
		used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s", i ? ", " : "",
		                         scenario_builtins[i].name);
}

const char *scenario_builtin_names(void)
{
	pthread_once(&names_once, build_names);
	return names;
}

size_t scenario_builtin_count(void)
{
	return scenario_nbuiltins;
}

const char *scenario_builtin_name(size_t i)
{
	return i < scenario_nbuiltins ? scenario_builtins[i].name : NULL;
}

void scenario_builtin_describe(size_t i, FILE *f)
{
	const struct scenario_builtin *b = &scenario_builtins[i];
	struct scenario_step steps[SCENARIO_MAX_STEPS];
	size_t n = 0;
	char err[160];

	fprintf(f, "%s (%s)\n  answers: %s\n  correct: %s\n  expects: %s%s\n", b->name, b->method, b->answers,
	        b->correct, b->expect, b->stop_when_settled ? " (the run ends once one has failed for good)" : "");
	/* The built-ins' scripts always parse (a unit test parses every one). */
	if (scenario_script_parse(b->json, steps, &n, err, sizeof(err)) == 0)
		fprintf(f, "  speaks:  %s\n", scenario_script_dialect(steps, n));
}

const char *scenario_fault_name(enum scenario_fault f)
{
	static const char *const NAMES[] = { "", "reset", "close-mid-body", "malformed" };

	return (size_t)f < sizeof(NAMES) / sizeof(NAMES[0]) ? NAMES[f] : "";
}

const char *scenario_wait_source_name(enum scenario_wait_source w)
{
	static const char *const NAMES[] = { "", "Retry-After", "RateLimit", "RateLimit-Reset", "X-RateLimit-Reset" };

	return (size_t)w < sizeof(NAMES) / sizeof(NAMES[0]) ? NAMES[w] : "";
}

static struct scenario *alloc_scenario(const char *name)
{
	struct scenario *sc = calloc(1, sizeof(*sc));

	if (!sc)
		return NULL;
	sc->clients = calloc(SCENARIO_MAX_CLIENTS, sizeof(*sc->clients));
	sc->log = calloc(SCENARIO_LOG_MAX, sizeof(*sc->log));
	if (!sc->clients || !sc->log || pthread_mutex_init(&sc->lock, NULL) != 0) {
		free(sc->clients);
		free(sc->log);
		free(sc);
		return NULL;
	}
	snprintf(sc->name, sizeof(sc->name), "%s", name ? name : "script");
	snprintf(sc->expect, sizeof(sc->expect), "succeeds,honours-retry-after");
	sc->method = "GET";
	return sc;
}

struct scenario *scenario_parse(const char *json, const char *name, char *err, size_t errlen)
{
	struct scenario *sc = alloc_scenario(name);

	if (!sc) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (scenario_script_parse(json, sc->steps, &sc->nsteps, err, errlen) < 0) {
		scenario_free(sc);
		return NULL;
	}
	return sc;
}

static char *read_file(const char *path, char *err, size_t errlen)
{
	enum text_read_error why;
	char *text = text_read_file(path, 65535, NULL, &why);

	if (text == NULL && why == TEXT_READ_OPEN)
		snprintf(err, errlen, "'%s' is neither a built-in scenario (ratelab verify --list names them) "
		         "nor a readable file", path);
	else if (text == NULL)
		snprintf(err, errlen, "%s: %s", path, why == TEXT_READ_NOMEM ? "out of memory" : "unreadable or over 64 KiB");
	return text;
}

struct scenario *scenario_new(const char *name_or_file, char *err, size_t errlen)
{
	struct scenario *sc;
	char why[200];
	char *text;

	for (size_t i = 0; i < scenario_nbuiltins; i++) {
		const struct scenario_builtin *b = &scenario_builtins[i];

		if (strcmp(name_or_file, b->name) != 0)
			continue;
		if (!(sc = scenario_parse(b->json, b->name, err, errlen)))
			return NULL;
		snprintf(sc->expect, sizeof(sc->expect), "%s", b->expect);
		sc->method = b->method;
		sc->stop_when_settled = b->stop_when_settled;
		return sc;
	}
	/* A script given inline, as JSON: "[{\"status\":429,...},...]" */
	if (name_or_file[0] == '[') {
		if (!(sc = scenario_parse(name_or_file, "script", why, sizeof(why))))
			snprintf(err, errlen, "'%.60s%s': %s", name_or_file, strlen(name_or_file) > 60 ? "..." : "", why);
		return sc;
	}
	if (!(text = read_file(name_or_file, err, errlen)))
		return NULL;
	sc = scenario_parse(text, name_or_file, why, sizeof(why));
	if (!sc)
		snprintf(err, errlen, "%s: %s", name_or_file, why);
	free(text);
	return sc;
}

void scenario_free(struct scenario *sc)
{
	if (!sc)
		return;
	pthread_mutex_destroy(&sc->lock);
	free(sc->clients);
	free(sc->log);
	free(sc);
}

const char *scenario_name(const struct scenario *sc)
{
	return sc->name;
}

const char *scenario_default_expect(const struct scenario *sc)
{
	return sc->expect;
}

const char *scenario_method(const struct scenario *sc)
{
	return sc->method;
}

bool scenario_stops_when_settled(const struct scenario *sc)
{
	return sc->stop_when_settled;
}

/* What a client sent, kept to show and to put in the arrivals' JSON (jansson refuses a string that is not UTF-8). */
static void shown(const char *s, char *buf, size_t len)
{
	text_printable(s, strlen(s), buf, len);
}

void scenario_client_name(const char *key, size_t keylen, const char *path, char *buf, size_t len)
{
	char who[SCENARIO_CLIENT_LEN];
	const char *p;
	size_t n;

	client_key_name(key, keylen, who, sizeof(who));
	if (path && strncmp(path, "/client-", 8) == 0) {
		p = path + 8;
		n = strspn(p, "0123456789");
		if (n > 0 && n < 8) {
			snprintf(buf, len, "%.*s/client-%.*s", (int)text_fit(who, 40), who, (int)n, p);
			return;
		}
	}
	snprintf(buf, len, "%s", who);
}

/* The client's slot (created on first sight); past the table's cap, clients share the last slot. */
static struct scenario_client *find_client(struct scenario *sc, const char *name)
{
	for (size_t i = 0; i < sc->nclients; i++)
		if (strcmp(sc->clients[i].name, name) == 0)
			return &sc->clients[i];
	if (sc->nclients == SCENARIO_MAX_CLIENTS)
		return &sc->clients[SCENARIO_MAX_CLIENTS - 1];
	snprintf(sc->clients[sc->nclients].name, SCENARIO_CLIENT_LEN, "%s", name);
	sc->clients[sc->nclients].pos = 0;
	sc->clients[sc->nclients].attempts = 0;
	return &sc->clients[sc->nclients++];
}

/*
 * One Retry-After field of a step answered at wall time `sent_wall` (when the
 * answer is planned to go out) into ra; true with *wait_ns, *date when it asks
 * for a wait a client can read.
 */
static bool render_ra(const struct scenario_retry_after *r, uint64_t sent_wall, char *ra, size_t len,
                      uint64_t *wait_ns, bool *date)
{
	size_t digits = strspn(r->text, "0123456789");

	*date = r->date;
	if (r->date) {
		/* The first whole second at or after the answer's time + N, so a wait of N is never asked short. */
		int64_t due = (int64_t)(sent_wall / NS_PER_SEC) + r->offset_s + (sent_wall % NS_PER_SEC != 0);
		char d[HTTPDATE_LEN];

		httpdate_format((time_t)due, d);
		snprintf(ra, len, "%s", d);
		*wait_ns = due * (int64_t)NS_PER_SEC > (int64_t)sent_wall ? (uint64_t)(due * (int64_t)NS_PER_SEC) - sent_wall : 0;
		return true;
	}
	snprintf(ra, len, "%s", r->text);
	if (digits == 0 || digits > 9 || r->text[digits])
		return false;
	*wait_ns = (uint64_t)strtoull(r->text, NULL, 10) * NS_PER_SEC;
	return true;
}

/* The Retry-After lines of st into out->headers, and the longest wait they ask; returns the bytes used. */
static size_t render_retry_after(const struct scenario_step *st, uint64_t sent_wall, struct scenario_answer *out)
{
	size_t used = 0;

	for (size_t k = 0; k < st->nra; k++) {
		char ra[SCENARIO_RA_LEN + HTTPDATE_LEN];
		uint64_t w = 0;
		bool date;

		if (render_ra(&st->ra[k], sent_wall, ra, sizeof(ra), &w, &date) && (!out->has_wait || w > out->wait_ns)) {
			out->has_wait = true;
			out->wait_source = SCENARIO_WAIT_RETRY_AFTER;
			out->wait_ns = w;
			out->wait_date = date;
		}
		used += (size_t)snprintf(out->headers + used, sizeof(out->headers) - used, "Retry-After: %s\n", ra);
	}
	return used;
}

/*
 * st's epoch header into out->headers at `used`: the first whole second at or
 * after the answer's time + N, so the wait it asks is never short; when it is
 * the answer's wait, that wait runs to the instant.
 */
static void render_epoch(const struct scenario_step *st, uint64_t sent_wall, struct scenario_answer *out, size_t used)
{
	int64_t due = (int64_t)(sent_wall / NS_PER_SEC) + st->epoch_offset_s + (sent_wall % NS_PER_SEC != 0);

	snprintf(out->headers + used, sizeof(out->headers) - used, "%s: %lld\n", st->epoch_name, (long long)due);
	if (out->wait_source == st->header_wait && st->header_wait_epoch) {
		out->wait_ns = (uint64_t)due * NS_PER_SEC - sent_wall;
		out->wait_date = true;
	}
}

/* Render step st's answer to a request that arrived at wall time wall_ns. */
static void render(const struct scenario *sc, const struct scenario_step *st, unsigned pos, uint64_t wall_ns,
                   struct scenario_answer *out)
{
	size_t used;

	memset(out, 0, sizeof(*out));
	out->status = st->status;
	out->fault = st->fault;
	out->delay_ns = st->delay_ns;
	if (st->fault == SCENARIO_FAULT_MALFORMED)
		snprintf(out->body, sizeof(out->body), "HTTP/1.1 OOPS this is not a status line\r\n\r\n");
	else
		snprintf(out->body, sizeof(out->body), "scenario %.40s step %u: %d\n", sc->name, pos + 1, st->status);
	used = render_retry_after(st, wall_ns + st->delay_ns, out);
	if (!out->has_wait && st->header_wait != SCENARIO_WAIT_NONE) {
		out->has_wait = true;
		out->wait_source = st->header_wait;
		out->wait_ns = st->header_wait_ns;
	}
	if (used < sizeof(out->headers))
		used += (size_t)snprintf(out->headers + used, sizeof(out->headers) - used, "%s", st->headers);
	if (st->epoch_name[0] && used < sizeof(out->headers))
		render_epoch(st, wall_ns + st->delay_ns, out, used);
}

/* Record one arrival; returns its token (0 past the log's end). */
/*
 * A request on a connection whose last answer is still pending: that answer
 * was read by then (HTTP/1.1 takes the next request only once the previous
 * answer is out), so it left no later than now.  Its completion can come
 * after the client's next request (libmicrohttpd reports it after the write,
 * on a thread the machine may not run at once), and a retry stamped before
 * its answer left would not be graded as one.  The last SETTLE_BACK arrivals
 * are looked at, newest first.
 */
#define SETTLE_BACK 64
static void settle_connection(struct scenario *sc, const void *conn, uint64_t now_ns)
{
	for (size_t i = sc->nlog, n = 0; conn && i > 0 && n < SETTLE_BACK; i--, n++) {
		struct scenario_arrival *e = &sc->log[i - 1];

		if (e->conn != conn)
			continue;
		if (e->end == SCENARIO_END_PENDING) {
			e->end_ns = now_ns;
			e->end = SCENARIO_END_SENT;
			sc->pending -= sc->pending > 0;
		}
		return;
	}
}

static uint64_t record(struct scenario *sc, const struct scenario_request *req, const char *client, unsigned pos,
                       const struct scenario_answer *a)
{
	struct scenario_arrival *e;

	settle_connection(sc, req->conn, req->now_ns);
	sc->total++;
	if (sc->nlog == SCENARIO_LOG_MAX)
		return 0;
	e = &sc->log[sc->nlog++];
	memset(e, 0, sizeof(*e));
	e->t_ns = req->now_ns;
	e->delay_ns = a->delay_ns;
	shown(req->method ? req->method : "?", e->method, sizeof(e->method));
	shown(req->path ? req->path : "/", e->path, sizeof(e->path));
	snprintf(e->client, sizeof(e->client), "%s", client);
	if (req->idempotency_key)
		shown(req->idempotency_key, e->idempotency_key, sizeof(e->idempotency_key));
	if (req->traceparent)
		shown(req->traceparent, e->traceparent, sizeof(e->traceparent));
	e->step = pos;
	e->status = a->status;
	e->fault = a->fault;
	e->has_wait = a->has_wait;
	e->wait_source = a->wait_source;
	e->wait_date = a->wait_date;
	e->wait_ns = a->wait_ns;
	e->conn = req->conn;
	return (uint64_t)sc->gen << 32 | sc->nlog;
}

int scenario_answer(struct scenario *sc, const struct scenario_request *req, struct scenario_answer *out)
{
	char client[SCENARIO_CLIENT_LEN];
	struct scenario_client *c;
	unsigned pos;

	scenario_client_name(req->key, req->keylen, req->path, client, sizeof(client));
	pthread_mutex_lock(&sc->lock);
	c = find_client(sc, client);
	c->attempts++;
	sc->last_ns = req->now_ns;
	pos = c->pos;
	if (c->pos + 1 < sc->nsteps)
		c->pos++;
	render(sc, &sc->steps[pos], pos, req->wall_ns, out);
	out->token = record(sc, req, client, pos, out);
	sc->pending += out->token != 0;
	pthread_mutex_unlock(&sc->lock);
	return 0;
}

void scenario_done(struct scenario *sc, uint64_t token, bool sent, uint64_t now_ns)
{
	size_t i = (size_t)(token & 0xffffffffu);

	pthread_mutex_lock(&sc->lock);
	if (i > 0 && i <= sc->nlog && (uint32_t)(token >> 32) == sc->gen && sc->log[i - 1].end == SCENARIO_END_PENDING) {
		sc->log[i - 1].end_ns = now_ns;
		sc->log[i - 1].end = sent ? SCENARIO_END_SENT : SCENARIO_END_FAILED;
		sc->pending -= sc->pending > 0;
	}
	pthread_mutex_unlock(&sc->lock);
}

void scenario_relayed(struct scenario *sc, uint64_t token, int status)
{
	size_t i = (size_t)(token & 0xffffffffu);

	pthread_mutex_lock(&sc->lock);
	if (i > 0 && i <= sc->nlog && (uint32_t)(token >> 32) == sc->gen) {
		sc->log[i - 1].status = status;
		sc->log[i - 1].relayed = true;
	}
	pthread_mutex_unlock(&sc->lock);
}

size_t scenario_arrivals(struct scenario *sc, struct scenario_arrival *out, size_t max, uint64_t *dropped)
{
	size_t total;

	pthread_mutex_lock(&sc->lock);
	if (out && max > 0)
		memcpy(out, sc->log, (max < sc->nlog ? max : sc->nlog) * sizeof(*out));
	total = sc->nlog;
	if (dropped)
		*dropped = sc->total - sc->nlog;
	pthread_mutex_unlock(&sc->lock);
	return total;
}

size_t scenario_counts(struct scenario *sc, struct scenario_count *out, size_t max)
{
	size_t n;

	pthread_mutex_lock(&sc->lock);
	n = sc->nclients;
	for (size_t i = 0; i < n && i < max; i++) {
		snprintf(out[i].client, sizeof(out[i].client), "%s", sc->clients[i].name);
		out[i].attempts = sc->clients[i].attempts;
	}
	pthread_mutex_unlock(&sc->lock);
	return n;
}

uint64_t scenario_last_activity(struct scenario *sc, size_t *pending)
{
	uint64_t last;

	pthread_mutex_lock(&sc->lock);
	last = sc->last_ns;
	*pending = sc->pending;
	pthread_mutex_unlock(&sc->lock);
	return last;
}

void scenario_reset(struct scenario *sc)
{
	pthread_mutex_lock(&sc->lock);
	sc->nclients = 0;
	sc->pending = 0;
	sc->nlog = 0;
	sc->total = 0;
	sc->gen++;
	pthread_mutex_unlock(&sc->lock);
}

static const char *end_name(enum scenario_end e)
{
	return e == SCENARIO_END_SENT ? "sent" : e == SCENARIO_END_FAILED ? "failed" : "pending";
}

static json_t *arrival_json(const struct scenario_arrival *e, uint64_t t0)
{
	json_t *o = json_pack("{s:f,s:s,s:s,s:s,s:i,s:i,s:s}", "t_ms", (double)(e->t_ns - t0) / 1e6, "method",
	                      e->method, "path", e->path, "client", e->client, "step", (int)e->step + 1,
	                      "status", e->status, "end", end_name(e->end));

	if (!o)
		return NULL;
	if (e->end != SCENARIO_END_PENDING)
		json_object_set_new(o, "end_ms", json_real((double)(e->end_ns - t0) / 1e6));
	if (e->fault != SCENARIO_FAULT_NONE)
		json_object_set_new(o, "fault", json_string(scenario_fault_name(e->fault)));
	if (e->has_wait) {
		json_object_set_new(o, "wait_ms", json_real((double)e->wait_ns / 1e6));
		json_object_set_new(o, "wait_from", json_string(scenario_wait_source_name(e->wait_source)));
	}
	if (e->delay_ns)
		json_object_set_new(o, "delay_ms", json_real((double)e->delay_ns / 1e6));
	if (e->relayed)
		json_object_set_new(o, "upstream", json_true());
	if (e->idempotency_key[0])
		json_object_set_new(o, "idempotency_key", json_string(e->idempotency_key));
	if (e->traceparent[0])
		json_object_set_new(o, "traceparent", json_string(e->traceparent));
	return o;
}

char *scenario_arrivals_json(struct scenario *sc)
{
	struct scenario_arrival *log = malloc(SCENARIO_LOG_MAX * sizeof(*log));
	json_t *arr = json_array();
	char *text = NULL;
	size_t n;

	if (!log || !arr)
		goto free_all;
	n = scenario_arrivals(sc, log, SCENARIO_LOG_MAX, NULL);
	for (size_t i = 0; i < n; i++)
		if (json_array_append_new(arr, arrival_json(&log[i], log[0].t_ns)) < 0)
			goto free_all;
	text = json_dumps(arr, JSON_INDENT(2) | JSON_REAL_PRECISION(9));
free_all:
	json_decref(arr);
	free(log);
	return text;
}
