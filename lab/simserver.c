/* The server model of a run in virtual time: serve's limiter, capacity model and /occ without HTTP. */
#include "lab/simserver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/heap.h"
#include "common/prng.h"
#include "hammer/hammer.h"
#include "server/capacity.h"
#include "server/http/headers.h"
#include "server/limit/limiter.h"
#include "server/server_args.h"

#define EVENTS 32
#define FLAG_WORDS 64
#define JOBS_PER_BLOCK 256

/* A request the capacity model holds: its token, and its service time once started. */
struct job {
	uint64_t token;
	uint64_t service_ns;
	struct job *next_free;
};

/* Jobs come in blocks the model owns: one still queued when a run ends is freed with the model. */
struct job_block {
	struct job_block *next;
	struct job jobs[JOBS_PER_BLOCK];
};

struct simserver {
	struct config_route route;
	const struct limiter_ops *ops;
	void *state;                   /* the one key's limiter state */
	int reject_status;
	enum headers_retry_after ra_mode;
	enum headers_mode headers;
	struct occ *occ;
	struct occ_delay delay;
	struct prng rng;               /* /occ's delay */
	struct faults faults;          /* --faults on the route */
	struct prng fault_rng;
	uint64_t seed;
	struct capacity *cap;          /* NULL: admitted requests are answered at once */
	struct heap *held;             /* services and rejection work under way, by end (ptr: job or NULL) */
	struct job *free_jobs;
	struct job_block *blocks;
	sim_reply_fn reply;
	void *reply_ctx;
	uint64_t wall0_ns, t0;
	uint64_t last;                 /* the latest instant the model has acted at */
};

static int check_config(const struct server_config *cfg, char *err, size_t errlen)
{
	if (cfg->nroutes != 1)
		return snprintf(err, errlen, "--sim models one route (\"/\"), not a --config of several"), -1;
	if (cfg->limited.fn != NULL)
		return snprintf(err, errlen, "--sim does not model a --scenario"), -1;
	if (cfg->key == CONFIG_KEY_HEADER)
		return snprintf(err, errlen, "--sim models one client address: --key global or ip"), -1;
	if (cfg->query_faults)
		return snprintf(err, errlen, "--sim does not model --query-faults (give the faults to --faults)"), -1;
	if (cfg->upstream[0] != '\0')
		return snprintf(err, errlen, "--sim does not model an --upstream (its answers are the model's)"), -1;
	if (!faults_empty(&cfg->faults) && cfg->routes[0].capacity.workers > 0)
		return snprintf(err, errlen, "--sim does not model --faults in front of a --capacity backend"), -1;
	return 0;
}

struct simserver *simserver_new(const struct server_config *cfg, const struct occ_delay *delay, uint64_t seed,
                                char *err, size_t errlen)
{
	struct simserver *m;

	if (check_config(cfg, err, errlen) != 0)
		return NULL;
	if ((m = calloc(1, sizeof(*m))) == NULL)
		goto oom;
	m->route = cfg->routes[0];
	m->ops = limiter_find(m->route.limiter);
	m->reject_status = cfg->reject_status;
	m->faults = cfg->faults;
	m->ra_mode = cfg->retry_after;
	m->headers = cfg->headers;
	m->seed = seed;
	if (delay != NULL)
		m->delay = *delay;
	if (m->ops == NULL) {
		snprintf(err, errlen, "unknown limiter '%s'", m->route.limiter);
		simserver_free(m);
		return NULL;
	}
	m->state = calloc(1, m->ops->state_size(&m->route.params) + 1);
	m->occ = occ_new();
	m->held = heap_new(64, false);
	if (m->state == NULL || m->occ == NULL || m->held == NULL)
		goto oom;
	return m;
oom:
	simserver_free(m);
	snprintf(err, errlen, "out of memory");
	return NULL;
}

void simserver_free(struct simserver *m)
{
	if (m == NULL)
		return;
	while (m->blocks != NULL) {
		struct job_block *b = m->blocks;

		m->blocks = b->next;
		free(b);
	}
	heap_free(m->held);
	capacity_free(m->cap);
	occ_free(m->occ);
	free(m->state);
	free(m);
}

/* Every job free again, and nothing held: a run starts from nothing. */
static void jobs_reset(struct simserver *m)
{
	struct heap_entry e;

	while (heap_pop(m->held, &e))
		;
	m->free_jobs = NULL;
	for (struct job_block *b = m->blocks; b != NULL; b = b->next)
		for (size_t i = 0; i < JOBS_PER_BLOCK; i++) {
			b->jobs[i].next_free = m->free_jobs;
			m->free_jobs = &b->jobs[i];
		}
}

static void sim_open(void *model, sim_reply_fn reply, void *ctx, uint64_t t0, uint64_t wall0_ns)
{
	struct simserver *m = model;

	jobs_reset(m);
	m->reply = reply;
	m->reply_ctx = ctx;
	m->t0 = t0;
	m->wall0_ns = wall0_ns;
	m->last = t0;
	m->ops->init(&m->route.params, m->state, t0);
	prng_seed(&m->rng, prng_stream_seed(m->seed, 0));
	prng_seed(&m->fault_rng, prng_stream_seed(m->seed, 1));
	occ_reset(m->occ);
	capacity_free(m->cap);
	/* the server's capacity model draws from the stream the real server's route 0 does */
	m->cap = m->route.capacity.workers > 0 ? capacity_new(&m->route.capacity, t0, prng_stream_seed(m->seed, 1000))
	                                       : NULL;
}

/* A rejection as serve words it: the status, Retry-After (unless a fault drops it), RateLimit. */
static void rejection(struct simserver *m, const struct limiter_decision *d, const struct fault_pick *fp, uint64_t now,
                      struct sim_reply *r)
{
	uint64_t wall_ns = m->wall0_ns + (now - m->t0);

	r->status = m->reject_status ? m->reject_status : 429;
	if (fp->no_retry_after ||
	    !headers_retry_after(m->ra_mode, d->wait_ns, wall_ns, r->retry_after, sizeof(r->retry_after)))
		r->retry_after[0] = '\0';
	if ((m->headers & HEADERS_IETF) &&
	    headers_ratelimit(&m->route.params, m->ops->layered, d, r->ratelimit, sizeof(r->ratelimit)) != 0)
		r->ratelimit[0] = '\0';
}

/* /occ: read or write the record; the answer leaves after the route's delay. */
static void occ_answer(struct simserver *m, uint64_t token, const struct sim_request *rq, uint64_t now)
{
	struct sim_reply r = { 0 };
	struct occ_reply rep;
	uint64_t delay = m->delay.mean_ns || m->delay.sd_ns ? occ_delay_sample(&m->delay, &m->rng) : 0;

	occ_handle(m->occ, rq->method, rq->if_match, &rep);
	r.status = rep.status;
	snprintf(r.etag, sizeof(r.etag), "%s", rep.etag);
	m->reply(m->reply_ctx, token, &r, now + delay);
}

static struct job *job_new(struct simserver *m, uint64_t token)
{
	struct job *j;

	if (m->free_jobs == NULL) {
		struct job_block *b = malloc(sizeof(*b));

		if (b == NULL)
			return NULL;
		b->next = m->blocks;
		m->blocks = b;
		for (size_t i = 0; i < JOBS_PER_BLOCK; i++) {
			b->jobs[i].next_free = m->free_jobs;
			m->free_jobs = &b->jobs[i];
		}
	}
	j = m->free_jobs;
	m->free_jobs = j->next_free;
	j->token = token;
	j->service_ns = 0;
	return j;
}

static void job_free(struct simserver *m, struct job *j)
{
	j->next_free = m->free_jobs;
	m->free_jobs = j;
}

/* Carry out the capacity model's events at now: services and rejection work to wait out, sheds to answer. */
static void act(struct simserver *m, const struct capacity_event *ev, size_t n, uint64_t now)
{
	static const struct sim_reply SHED = { .status = 503 };

	for (size_t i = 0; i < n; i++) {
		struct job *j = ev[i].job;

		if (ev[i].kind == CAPACITY_SHED) {
			m->reply(m->reply_ctx, j->token, &SHED, now);
			job_free(m, j);
			continue;
		}
		if (j != NULL)
			j->service_ns = ev[i].service_ns;
		heap_push(m->held, ev[i].done_ns, 0, j);
	}
}

/* An admitted request meets the capacity model. */
static void enter_backend(struct simserver *m, uint64_t token, uint64_t now)
{
	static const struct sim_reply FULL = { .status = 503 };
	struct capacity_event ev[EVENTS];
	struct job *j = job_new(m, token);
	size_t n;

	if (j == NULL) {
		m->reply(m->reply_ctx, token, &FULL, now);
		return;
	}
	n = capacity_arrive(m->cap, now, j, ev, EVENTS);
	act(m, ev, n, now);
	while (n == EVENTS && (n = capacity_poll(m->cap, now, ev, EVENTS)) > 0)
		act(m, ev, n, now);
}

/*
 * A limited path, as serve's request phases take it: the faults' pick (a
 * reset ends it there), the limiter, the fault's delay, then a rejection,
 * the fault's status, or the backend (the answer at once without one).
 */
static void sim_arrive(void *model, uint64_t token, const struct sim_request *rq, uint64_t now)
{
	struct simserver *m = model;
	struct fault_pick fp = { 0 };
	struct limiter_decision d;
	struct sim_reply r = { 0 };

	m->last = now;
	if (strcmp(rq->path, "/occ") == 0) {
		occ_answer(m, token, rq, now);
		return;
	}
	if (!faults_empty(&m->faults))
		faults_pick(&m->faults, &m->fault_rng, &fp);
	r.reset = fp.reset;
	if (!fp.reset)
		m->ops->decide(&m->route.params, m->state, now, 1, &d);
	if (fp.reset || !d.admitted) {
		if (!fp.reset)
			rejection(m, &d, &fp, now, &r);
		m->reply(m->reply_ctx, token, &r, fp.reset ? now : now + fp.delay_ns);
		return;
	}
	if (m->cap != NULL) {
		enter_backend(m, token, now);
		return;
	}
	if (m->ops->release != NULL)
		m->ops->release(&m->route.params, m->state);
	r.status = fp.status ? fp.status : 200;
	m->reply(m->reply_ctx, token, &r, now + fp.delay_ns);
}

static uint64_t sim_next_due(void *model)
{
	struct simserver *m = model;
	struct heap_entry e;
	uint64_t next = m->cap != NULL ? capacity_next_change(m->cap, m->last) : UINT64_MAX;

	if (heap_peek(m->held, &e) && e.due_ns < next)
		next = e.due_ns;
	return next;
}

/* A service (job) or rejection work (NULL) ended at `at`: answer it, and its worker takes the next. */
static void service_done(struct simserver *m, struct job *j, uint64_t at)
{
	static const struct sim_reply OK = { .status = 200 };
	struct capacity_event ev[EVENTS];
	enum capacity_client who = CAPACITY_NOBODY;
	uint64_t service = 0;
	size_t n;

	if (j != NULL) {
		who = m->reply(m->reply_ctx, j->token, &OK, at) ? CAPACITY_PRESENT : CAPACITY_GONE;
		service = j->service_ns;
		job_free(m, j);
		if (m->ops->release != NULL)
			m->ops->release(&m->route.params, m->state);
	}
	n = capacity_done(m->cap, at, service, who, ev, EVENTS);
	act(m, ev, n, at);
	while (n == EVENTS && (n = capacity_poll(m->cap, at, ev, EVENTS)) > 0)
		act(m, ev, n, at);
}

/* A trigger starts or ends at `at`: free workers take waiting requests, expired ones are dropped. */
static void trigger_edge(struct simserver *m, uint64_t at)
{
	struct capacity_event ev[EVENTS];
	size_t n;

	while ((n = capacity_poll(m->cap, at, ev, EVENTS)) > 0) {
		act(m, ev, n, at);
		if (n < EVENTS)
			break;
	}
}

static void sim_expire(void *model, uint64_t now)
{
	struct simserver *m = model;

	for (;;) {
		struct heap_entry e;
		bool held = heap_peek(m->held, &e);
		uint64_t edge = m->cap != NULL ? capacity_next_change(m->cap, m->last) : UINT64_MAX;

		if (edge <= now && (!held || edge <= e.due_ns)) {
			m->last = edge;
			trigger_edge(m, edge);
			continue;
		}
		if (!held || e.due_ns > now)
			break;
		heap_pop(m->held, &e);
		m->last = e.due_ns;
		service_done(m, e.ptr, e.due_ns);
	}
}

const struct sim_model_ops SIMSERVER_OPS = {
	.name = "serve",
	.open = sim_open,
	.arrive = sim_arrive,
	.next_due = sim_next_due,
	.expire = sim_expire,
};

void simserver_capacity_stats(struct simserver *m, struct capacity_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (m->cap != NULL)
		capacity_stats(m->cap, m->last, out);
}

size_t simserver_capacity_series(struct simserver *m, struct capacity_bucket *out, size_t max)
{
	return m->cap != NULL ? capacity_series(m->cap, out, max) : 0;
}

struct simserver *simserver_from_flags(const char *flags, uint64_t seed, char *err, size_t errlen)
{
	static const struct cli_command SERVE = { "serve", NULL, NULL };
	struct server_args *a = malloc(sizeof(*a));
	struct occ_route oc = { 0 };
	struct cli_group g[2] = { { server_args_options, NULL }, { occ_route_options, &oc } };
	char *copy = strdup(flags ? flags : ""), *words[FLAG_WORDS + 1], *save = NULL;
	struct simserver *m = NULL;
	int argc = 1;

	words[0] = "serve";
	for (char *w = copy ? strtok_r(copy, " \t", &save) : NULL; w && argc < FLAG_WORDS; w = strtok_r(NULL, " \t", &save))
		words[argc++] = w;
	words[argc] = NULL;
	if (a == NULL || copy == NULL) {
		snprintf(err, errlen, "out of memory");
		goto free_all;
	}
	server_args_init(a);
	g[0].base = a;
	if (cli_parse(&SERVE, g, 2, argc, words, err, errlen) != 0 || server_args_finish(a, err, errlen) != 0) {
		if (err[0] == '\0')
			snprintf(err, errlen, "--serve: --help is serve's own: ratelab serve --help");
		goto free_all;
	}
	m = simserver_new(&a->cfg, &oc.delay, seed, err, errlen);
free_all:
	/* the caller names --serve: serve's own prefix would say it twice */
	if (m == NULL && errlen > 15 && strncmp(err, "ratelab serve: ", 15) == 0) {
		char tail[512];

		snprintf(tail, sizeof(tail), "%s", err + 15);
		snprintf(err, errlen, "%s", tail);
	}
	free(copy);
	free(a);
	return m;
}

static void *create_model(const char *serve_flags, uint64_t seed, char *err, size_t errlen)
{
	return simserver_from_flags(serve_flags, seed, err, errlen);
}

static void destroy_model(void *model)
{
	simserver_free(model);
}

int simserver_hammer_main(int argc, char **argv)
{
	static const struct hammer_sim_models MODELS = { &SIMSERVER_OPS, create_model, destroy_model };

	return hammer_main(argc, argv, &MODELS);
}
