/* Scripted scenarios: parse, answer per client, record every arrival. */
#include "server/handlers/scenario.h"

#include <ctype.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/httpdate.h"
#include "common/parse.h"
#include "server/http/client_key.h"
#include "server/server.h"

struct scenario_client {
	char name[SCENARIO_CLIENT_LEN];
	unsigned pos;
};

struct scenario {
	char name[256];
	char expect[256];
	struct scenario_step steps[SCENARIO_MAX_STEPS];
	size_t nsteps;
	pthread_mutex_t lock;
	struct scenario_client *clients;   /* SCENARIO_MAX_CLIENTS */
	size_t nclients;
	struct scenario_arrival *log;      /* SCENARIO_LOG_MAX */
	size_t nlog;
	uint64_t total;
};

static const struct {
	const char *name;
	const char *json;
	const char *expect;
} BUILTINS[] = {
	{ "retry-after-seconds",
	  "[{\"status\":429,\"retry_after\":\"2\"},{\"status\":429,\"retry_after\":\"2\"},{\"status\":200}]",
	  "succeeds,honours-retry-after,max-attempts<=3" },
	{ "retry-after-date",
	  "[{\"status\":429,\"retry_after\":\"date:2\"},{\"status\":429,\"retry_after\":\"date:2\"},{\"status\":200}]",
	  "succeeds,honours-retry-after,max-attempts<=3" },
	{ "no-retry-after", "[{\"status\":429},{\"status\":429},{\"status\":200}]",
	  "succeeds,backs-off,max-attempts<=3" },
	{ "retry-after-too-long", "[{\"status\":429,\"retry_after\":\"3600\"}]",
	  "honours-retry-after,gives-up-within=5s" },
	{ "post-503", "[{\"status\":503},{\"status\":200}]", "no-retry-non-idempotent" },
	{ "post-429", "[{\"status\":429,\"retry_after\":\"2\"},{\"status\":200}]",
	  "succeeds,honours-retry-after,max-attempts<=2" },
	{ "server-errors", "[{\"status\":503},{\"status\":502},{\"status\":504},{\"status\":200}]",
	  "succeeds,backs-off,max-attempts<=4" },
	{ "persistent-429", "[{\"status\":429,\"retry_after\":\"1\"}]",
	  "honours-retry-after,stops-after-attempts,max-attempts<=5" },
	{ "layered",
	  "[{\"status\":429,\"retry_after\":\"2\",\"headers\":{"
	  "\"RateLimit-Policy\":\"\\\"minute\\\";q=30;w=60, \\\"hour\\\";q=500;w=3600\","
	  "\"RateLimit\":\"\\\"minute\\\";r=0;t=2\"}},"
	  "{\"status\":200,\"headers\":{\"RateLimit-Policy\":\"\\\"minute\\\";q=30;w=60, \\\"hour\\\";q=500;w=3600\","
	  "\"RateLimit\":\"\\\"minute\\\";r=29;t=60\"}}]",
	  "succeeds,honours-retry-after,max-attempts<=2" },
};

#define NBUILTINS (sizeof(BUILTINS) / sizeof(BUILTINS[0]))

const char *scenario_builtin_names(void)
{
	return "retry-after-seconds, retry-after-date, no-retry-after, retry-after-too-long, post-503, "
	       "post-429, server-errors, persistent-429, layered";
}

static int fail(char *err, size_t errlen, size_t step, const char *why)
{
	snprintf(err, errlen, "step %zu: %s", step + 1, why);
	return -1;
}

/* retry_after: "N" (delta seconds), "date:N" (now+N as an HTTP-date), any verbatim text, or a number. */
static int parse_retry_after(json_t *v, struct scenario_step *st, size_t i, char *err, size_t errlen)
{
	const char *s;
	char num[32];

	if (!v)
		return 0;
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
		s = num;
	} else if (json_is_string(v)) {
		s = json_string_value(v);
	} else {
		return fail(err, errlen, i, "\"retry_after\" must be a string or a non-negative integer");
	}
	if (strncmp(s, "date:", 5) == 0) {
		char *end;
		long n = strtol(s + 5, &end, 10);

		if (end == s + 5 || *end || n < 0 || n > 86400 * 365)
			return fail(err, errlen, i, "\"retry_after\" \"date:N\" needs N seconds (0..31536000)");
		st->retry_after_date = true;
		snprintf(num, sizeof(num), "%ld", n);
		s = num;
	}
	if (strlen(s) >= sizeof(st->retry_after) || strpbrk(s, "\r\n"))
		return fail(err, errlen, i, "\"retry_after\" is too long or has a line break");
	snprintf(st->retry_after, sizeof(st->retry_after), "%s", s);
	return 0;
}

static int parse_headers(json_t *v, struct scenario_step *st, size_t i, char *err, size_t errlen)
{
	const char *k;
	json_t *val;
	size_t used = 0;

	if (!v)
		return 0;
	if (!json_is_object(v))
		return fail(err, errlen, i, "\"headers\" must be an object of strings");
	json_object_foreach(v, k, val) {
		const char *s = json_string_value(val);
		int n;

		if (!s || !*k || strpbrk(k, ":\r\n \t") || strpbrk(s, "\r\n"))
			return fail(err, errlen, i, "\"headers\": each name must be a token and each value one line");
		n = snprintf(st->headers + used, sizeof(st->headers) - used, "%s: %s\n", k, s);
		if (n < 0 || (size_t)n >= sizeof(st->headers) - used)
			return fail(err, errlen, i, "\"headers\" too long (320 bytes in all)");
		used += (size_t)n;
	}
	return 0;
}

static int parse_delay(json_t *v, struct scenario_step *st, size_t i, char *err, size_t errlen)
{
	char why[160];

	if (!v)
		return 0;
	if (json_is_integer(v) && json_integer_value(v) >= 0)
		st->delay_ns = (uint64_t)json_integer_value(v) * NS_PER_MS;
	else if (!json_is_string(v) || parse_duration(json_string_value(v), &st->delay_ns, why, sizeof(why)) < 0)
		return fail(err, errlen, i, "\"delay\" must be milliseconds or a duration like \"250ms\"");
	if (st->delay_ns > SCENARIO_MAX_DELAY_NS)
		return fail(err, errlen, i, "\"delay\" is over the 10s cap");
	return 0;
}

static int parse_step(json_t *o, struct scenario_step *st, size_t i, char *err, size_t errlen)
{
	json_t *status = json_object_get(o, "status");
	const char *k;
	json_t *v;

	memset(st, 0, sizeof(*st));
	if (!json_is_object(o))
		return fail(err, errlen, i, "each step must be an object");
	json_object_foreach(o, k, v)
		if (strcmp(k, "status") && strcmp(k, "retry_after") && strcmp(k, "headers") && strcmp(k, "delay")) {
			char why[96];

			snprintf(why, sizeof(why), "unknown key \"%.40s\"", k);
			return fail(err, errlen, i, why);
		}
	if (!json_is_integer(status) || json_integer_value(status) < 100 || json_integer_value(status) > 599)
		return fail(err, errlen, i, "\"status\" must be an integer 100..599");
	st->status = (int)json_integer_value(status);
	if (parse_retry_after(json_object_get(o, "retry_after"), st, i, err, errlen) < 0 ||
	    parse_headers(json_object_get(o, "headers"), st, i, err, errlen) < 0 ||
	    parse_delay(json_object_get(o, "delay"), st, i, err, errlen) < 0)
		return -1;
	return 0;
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
	return sc;
}

struct scenario *scenario_parse(const char *json, const char *name, char *err, size_t errlen)
{
	json_error_t je;
	json_t *root = json_loads(json, 0, &je);
	struct scenario *sc = NULL;

	if (!root) {
		snprintf(err, errlen, "not JSON: %s (line %d)", je.text, je.line);
		return NULL;
	}
	if (!json_is_array(root) || json_array_size(root) == 0 || json_array_size(root) > SCENARIO_MAX_STEPS) {
		snprintf(err, errlen, "a scenario is a JSON array of 1..%d steps", SCENARIO_MAX_STEPS);
		goto free_root;
	}
	if (!(sc = alloc_scenario(name))) {
		snprintf(err, errlen, "out of memory");
		goto free_root;
	}
	for (sc->nsteps = 0; sc->nsteps < json_array_size(root); sc->nsteps++)
		if (parse_step(json_array_get(root, sc->nsteps), &sc->steps[sc->nsteps], sc->nsteps, err, errlen) < 0) {
			scenario_free(sc);
			sc = NULL;
			break;
		}
free_root:
	json_decref(root);
	return sc;
}

static char *read_file(const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t n;

	if (!f) {
		snprintf(err, errlen, "'%s' is neither a built-in scenario (%s) nor a readable file", path,
		         scenario_builtin_names());
		return NULL;
	}
	buf = malloc(65537);
	if (!buf) {
		snprintf(err, errlen, "out of memory");
		goto close_f;
	}
	n = fread(buf, 1, 65536, f);
	if (n == 65536 || ferror(f)) {
		snprintf(err, errlen, "%s: unreadable or over 64 KiB", path);
		free(buf);
		buf = NULL;
		goto close_f;
	}
	buf[n] = '\0';
close_f:
	fclose(f);
	return buf;
}

struct scenario *scenario_new(const char *name_or_file, char *err, size_t errlen)
{
	struct scenario *sc;
	char why[200];
	char *text;

	for (size_t i = 0; i < NBUILTINS; i++) {
		if (strcmp(name_or_file, BUILTINS[i].name) != 0)
			continue;
		sc = scenario_parse(BUILTINS[i].json, BUILTINS[i].name, err, errlen);
		if (sc)
			snprintf(sc->expect, sizeof(sc->expect), "%s", BUILTINS[i].expect);
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

static void printable(const char *s, size_t n, char *buf, size_t len)
{
	size_t j = 0;

	for (size_t i = 0; i < n && j + 1 < len; i++)
		buf[j++] = isprint((unsigned char)s[i]) ? s[i] : '?';
	buf[j] = '\0';
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
			snprintf(buf, len, "%.40s/client-%.*s", who, (int)n, p);
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
	return &sc->clients[sc->nclients++];
}

/* Render step st's answer at wall time wall_ns. */
static void render(const struct scenario *sc, const struct scenario_step *st, unsigned pos, uint64_t wall_ns,
                   struct scenario_answer *out)
{
	char ra[HTTPDATE_LEN + 8];
	size_t used;

	memset(out, 0, sizeof(*out));
	out->status = st->status;
	out->delay_ns = st->delay_ns;
	snprintf(out->body, sizeof(out->body), "scenario %.40s step %u: %d\n", sc->name, pos + 1, st->status);
	snprintf(ra, sizeof(ra), "%s", st->retry_after);
	if (st->retry_after_date) {
		/* The first whole second at or after now + N, so the wait asked is never under N. */
		uint64_t due = wall_ns + (uint64_t)strtoull(st->retry_after, NULL, 10) * NS_PER_SEC;
		time_t t = (time_t)((due + NS_PER_SEC - 1) / NS_PER_SEC);

		httpdate_format(t, ra);
		out->has_wait = true;
		out->wait_ns = (uint64_t)t * NS_PER_SEC - wall_ns;
	} else if (ra[0] && strspn(ra, "0123456789") == strlen(ra) && strlen(ra) < 10) {
		out->has_wait = true;
		out->wait_ns = (uint64_t)strtoull(ra, NULL, 10) * NS_PER_SEC;
	}
	used = 0;
	if (ra[0])
		used = (size_t)snprintf(out->headers, sizeof(out->headers), "Retry-After: %s\n", ra);
	snprintf(out->headers + used, sizeof(out->headers) - used, "%s", st->headers);
}

static void record(struct scenario *sc, const struct scenario_request *req, const char *client, unsigned pos,
                   const struct scenario_answer *a)
{
	struct scenario_arrival *e;

	sc->total++;
	if (sc->nlog == SCENARIO_LOG_MAX)
		return;
	e = &sc->log[sc->nlog++];
	memset(e, 0, sizeof(*e));
	e->t_ns = req->now_ns;
	e->delay_ns = a->delay_ns;
	snprintf(e->method, sizeof(e->method), "%s", req->method ? req->method : "?");
	snprintf(e->path, sizeof(e->path), "%s", req->path ? req->path : "/");
	snprintf(e->client, sizeof(e->client), "%s", client);
	if (req->idempotency_key)
		printable(req->idempotency_key, strlen(req->idempotency_key), e->idempotency_key,
		          sizeof(e->idempotency_key));
	if (req->traceparent)
		printable(req->traceparent, strlen(req->traceparent), e->traceparent, sizeof(e->traceparent));
	e->step = pos;
	e->status = a->status;
	e->has_wait = a->has_wait;
	e->wait_ns = a->wait_ns;
}

int scenario_answer(struct scenario *sc, const struct scenario_request *req, struct scenario_answer *out)
{
	char client[SCENARIO_CLIENT_LEN];
	struct scenario_client *c;
	unsigned pos;

	scenario_client_name(req->key, req->keylen, req->path, client, sizeof(client));
	pthread_mutex_lock(&sc->lock);
	c = find_client(sc, client);
	pos = c->pos;
	if (c->pos + 1 < sc->nsteps)
		c->pos++;
	render(sc, &sc->steps[pos], pos, req->wall_ns, out);
	record(sc, req, client, pos, out);
	pthread_mutex_unlock(&sc->lock);
	return 0;
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

void scenario_reset(struct scenario *sc)
{
	pthread_mutex_lock(&sc->lock);
	sc->nclients = 0;
	sc->nlog = 0;
	sc->total = 0;
	pthread_mutex_unlock(&sc->lock);
}

static json_t *arrival_json(const struct scenario_arrival *e, uint64_t t0)
{
	json_t *o = json_pack("{s:f,s:s,s:s,s:s,s:i,s:i}", "t_ms", (double)(e->t_ns - t0) / 1e6, "method",
	                      e->method, "path", e->path, "client", e->client, "step", (int)e->step + 1,
	                      "status", e->status);

	if (!o)
		return NULL;
	if (e->has_wait)
		json_object_set_new(o, "wait_ms", json_real((double)e->wait_ns / 1e6));
	if (e->delay_ns)
		json_object_set_new(o, "delay_ms", json_real((double)e->delay_ns / 1e6));
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
	if (n > SCENARIO_LOG_MAX)
		n = SCENARIO_LOG_MAX;
	for (size_t i = 0; i < n; i++)
		if (json_array_append_new(arr, arrival_json(&log[i], log[0].t_ns)) < 0)
			goto free_all;
	text = json_dumps(arr, JSON_INDENT(2) | JSON_REAL_PRECISION(9));
free_all:
	json_decref(arr);
	free(log);
	return text;
}

int scenario_server_handler(struct server *srv, void *ctx, const struct server_request *req,
                            struct server_reply *out)
{
	struct scenario_request sr = {
		req->method, req->path, req->key, req->keylen,
		server_request_header(req, "Idempotency-Key"), server_request_header(req, "traceparent"),
		clock_monotonic_ns(), clock_wall_ns(),
	};
	struct scenario_answer a;

	(void)srv;
	scenario_answer(ctx, &sr, &a);
	/* Scripted slowness (bounded by SCENARIO_MAX_DELAY_NS): the server holds the
	 * answer on its timer without blocking this thread. */
	out->delay_ns = a.delay_ns;
	out->status = a.status;
	out->content_type = "text/plain";
	out->body = strdup(a.body);
	out->body_len = out->body ? strlen(out->body) : 0;
	snprintf(out->headers, sizeof(out->headers), "%s", a.headers);
	return out->body ? 0 : -1;
}

static int handle_log(struct server *srv, void *ctx, const struct server_request *req, struct server_reply *out)
{
	(void)srv;
	(void)req;
	out->status = 200;
	out->content_type = "application/json";
	out->body = scenario_arrivals_json(ctx);
	out->body_len = out->body ? strlen(out->body) : 0;
	return out->body ? 0 : -1;
}

void scenario_usage(FILE *f)
{
	fprintf(f, "\nscenario (client conformance, see 'ratelab verify --help'):\n"
	           "  --scenario NAME|FILE  answer limited paths from a script instead of the limiter;\n"
	           "                        GET /scenario lists the arrivals.  Built-ins: %s\n",
	        scenario_builtin_names());
}

/* POST /reset: every client starts the script again, and the log is empty. */
static void reset_hook(void *ctx)
{
	scenario_reset(ctx);
}

int scenario_register(struct server_config *c, struct scenario *sc)
{
	snprintf(c->limited.path, sizeof(c->limited.path), "*");
	c->limited.fn = scenario_server_handler;
	c->limited.reset = reset_hook;
	c->limited.ctx = sc;
	return server_config_add_handler(c, "/scenario", handle_log, sc);
}
