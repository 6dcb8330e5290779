/*
 * The transport of a run in virtual time: each call crosses the stated
 * network (hammer/sim.h) to the server model and its answer crosses back.
 * Events wait in one heap by due time (ties in push order); a heap entry
 * names the client and carries the call's number, so an event of a call
 * that already ended (timed out) is dropped.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/clock.h"
#include "common/heap.h"
#include "common/prng.h"
#include "hammer/loopclock.h"
#include "hammer/sim.h"
#include "hammer/transport.h"

/* the network draws from a stream past every client's and every arrival stream's */
#define NET_STREAM (UINT64_C(3) << 32)
/* a lost message ends its call after the run's --timeout; without one, after this */
#define LOST_TIMEOUT_NS (30 * NS_PER_SEC)

enum sim_phase { PHASE_IDLE, PHASE_TO_SERVER, PHASE_AT_SERVER, PHASE_TO_CLIENT };
enum sim_event { EV_ARRIVE, EV_DELIVER, EV_TIMEOUT };

struct sim_slot {
	uint32_t seq;                /* calls begun by this client: tags its events */
	uint32_t shape;
	enum sim_phase phase;
	bool connected;
	bool timeout_set;            /* a timeout event of this call is in the heap */
	uint64_t deadline_ns;
	char if_match[32];
	struct sim_reply reply;
};

struct transport_run {
	const struct hammer_config *cfg;
	const struct workload_ops *wl;
	char path[256];              /* the URL's path and query */
};

struct transport_loop {
	const struct transport_run *r;
	struct transport_env env;
	const struct sim_config *sim;
	struct heap *events;
	struct sim_slot *slots;
	struct prng rng;
};

static bool sim_supports(const char *url)
{
	return url != NULL;
}

static uint64_t sim_fds_needed(uint32_t clients, uint32_t loops)
{
	(void)clients;
	(void)loops;
	return 0;
}

static uint64_t sim_fds_wanted(const struct hammer_config *cfg)
{
	(void)cfg;
	return 0;
}

static int sim_process_init(char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	return 0;
}

static struct transport_run *sim_run_new(const struct hammer_config *cfg, const struct workload_ops *wl,
                                         char *err, size_t errlen)
{
	struct transport_run *r = calloc(1, sizeof(*r));
	const char *u = cfg->nurls > 0 ? cfg->urls[0] : cfg->url, *p = strstr(u, "://");

	if (r == NULL || cfg->sim == NULL) {
		snprintf(err, errlen, cfg->sim == NULL ? "the sim transport needs a model" : "out of memory");
		free(r);
		return NULL;
	}
	r->cfg = cfg;
	r->wl = wl;
	p = p ? strchr(p + 3, '/') : NULL;
	snprintf(r->path, sizeof(r->path), "%s", p ? p : "/");
	return r;
}

static void sim_run_free(struct transport_run *r)
{
	free(r);
}

/* One message's one-way delay: |N(mean, sd)|, at most mean + 4 sd. */
static uint64_t net_delay(struct transport_loop *t)
{
	const struct sim_net *n = &t->sim->net;
	double u1, u2, z;

	if (n->delay_sd_ns == 0)
		return n->delay_ns;
	u1 = 1.0 - prng_double(&t->rng);
	u2 = prng_double(&t->rng);
	z = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
	if (z > 4.0)
		z = 4.0;
	return (uint64_t)fabs((double)n->delay_ns + z * (double)n->delay_sd_ns);
}

static bool net_lost(struct transport_loop *t)
{
	return t->sim->net.loss > 0 && prng_double(&t->rng) < t->sim->net.loss;
}

static void push(struct transport_loop *t, uint64_t due, uint32_t id, enum sim_event kind)
{
	uintptr_t tag = ((uintptr_t)t->slots[id].seq << 2) | (uintptr_t)kind;

	/* the heap grows: a failed push is out of memory, and the call then ends at its deadline or never */
	heap_push(t->events, due, id, (void *)tag);
}

/* The call's timeout, once: a lost message or a late answer ends the call there. */
static void set_timeout(struct transport_loop *t, uint32_t id)
{
	struct sim_slot *s = &t->slots[id];

	if (!s->timeout_set) {
		s->timeout_set = true;
		push(t, s->deadline_ns, id, EV_TIMEOUT);
	}
}

/* The server's answer to token leaves it at `at`. */
static bool on_reply(void *ctx, uint64_t token, const struct sim_reply *rep, uint64_t at)
{
	struct transport_loop *t = ctx;
	uint32_t id = (uint32_t)token;
	struct sim_slot *s = &t->slots[id];
	uint64_t back;

	if (s->seq != (uint32_t)(token >> 32) || s->phase != PHASE_AT_SERVER)
		return false;
	s->reply = *rep;
	s->phase = PHASE_TO_CLIENT;
	back = at + net_delay(t);
	if (net_lost(t) || back > s->deadline_ns)
		set_timeout(t, id);
	else
		push(t, back, id, EV_DELIVER);
	return true;
}

static struct transport_loop *sim_loop_new(const struct transport_run *r, const struct transport_env *env)
{
	struct transport_loop *t = calloc(1, sizeof(*t));

	if (t == NULL)
		return NULL;
	t->r = r;
	t->env = *env;
	t->sim = r->cfg->sim;
	t->events = heap_new(env->clients + 16, false);
	t->slots = calloc(env->clients ? env->clients : 1, sizeof(*t->slots));
	if (t->events == NULL || t->slots == NULL) {
		heap_free(t->events);
		free(t->slots);
		free(t);
		return NULL;
	}
	prng_seed(&t->rng, prng_stream_seed(r->cfg->seed, NET_STREAM + env->index0));
	t->sim->model->open(t->sim->model_state, on_reply, t, LOOPCLOCK_VIRTUAL_T0,
	                         LOOPCLOCK_VIRTUAL_WALL0);
	return t;
}

static void sim_loop_free(struct transport_loop *t)
{
	if (t == NULL)
		return;
	heap_free(t->events);
	free(t->slots);
	free(t);
}

/* The If-Match value among a call's own header lines, copied into s. */
static void keep_if_match(struct sim_slot *s, const struct workload_call *call)
{
	static const char NAME[] = "If-Match:";

	s->if_match[0] = '\0';
	for (uint32_t i = 0; i < call->nextra; i++) {
		const char *v = call->extra[i];

		if (strncasecmp(v, NAME, sizeof(NAME) - 1) != 0)
			continue;
		v += sizeof(NAME) - 1;
		while (*v == ' ')
			v++;
		snprintf(s->if_match, sizeof(s->if_match), "%s", v);
	}
}

static int sim_begin(struct transport_loop *t, uint32_t id, uint32_t server, const struct workload_call *call,
                     uint64_t now, enum retry_error *err)
{
	struct sim_slot *s = &t->slots[id];
	uint64_t timeout = t->r->cfg->timeout_ns ? t->r->cfg->timeout_ns : LOST_TIMEOUT_NS, at = now;

	(void)server;
	(void)err;
	s->seq++;
	s->shape = call->shape;
	s->phase = PHASE_TO_SERVER;
	s->timeout_set = false;
	s->deadline_ns = now + timeout;
	keep_if_match(s, call);
	if (!s->connected) {
		at += t->sim->net.connect_ns;
		s->connected = true;
	}
	at += net_delay(t);
	if (net_lost(t) || at > s->deadline_ns)
		set_timeout(t, id);
	else
		push(t, at, id, EV_ARRIVE);
	return 0;
}

static void sim_event(struct transport_loop *t, uint64_t tag, uint32_t events, uint64_t now)
{
	(void)t;
	(void)tag;
	(void)events;
	(void)now;
}

/* The request of client id reaches the server at now. */
static void arrive(struct transport_loop *t, uint32_t id, uint64_t now)
{
	struct sim_slot *s = &t->slots[id];
	const struct workload_shape *sh = &t->r->wl->shapes[s->shape];
	struct sim_request rq = {
		.client = t->env.index0 + id * t->env.stride,
		.method = sh->method ? sh->method : t->r->cfg->method,
		.path = sh->path ? sh->path : t->r->path,
		.if_match = s->if_match[0] ? s->if_match : NULL,
	};

	s->phase = PHASE_AT_SERVER;
	t->sim->model->arrive(t->sim->model_state, ((uint64_t)s->seq << 32) | id, &rq, now);
	/* held by the server: the client waits no longer than its timeout */
	if (s->phase == PHASE_AT_SERVER)
		set_timeout(t, id);
}

/* The call of client id ends at now: its answer (or the reset the server sent), or a timeout. */
static void end_call(struct transport_loop *t, uint32_t id, bool answered, uint64_t now)
{
	struct sim_slot *s = &t->slots[id];
	struct workload_answer a = { RETRY_ERR_TIMEOUT, 0, NULL, NULL, NULL };

	s->phase = PHASE_IDLE;
	if (answered && s->reply.reset) {
		a.err = RETRY_ERR_RESET;
		s->connected = false;
	} else if (answered) {
		a.err = RETRY_ERR_NONE;
		a.status = s->reply.status;
		a.retry_after = s->reply.retry_after[0] ? s->reply.retry_after : NULL;
		a.ratelimit = s->reply.ratelimit[0] ? s->reply.ratelimit : NULL;
		a.etag = s->reply.etag[0] ? s->reply.etag : NULL;
	} else {
		/* a timed-out connection is closed, as the real transports do */
		s->connected = false;
	}
	t->env.ended(t->env.ctx, id, &a, now);
}

static void sim_expire(struct transport_loop *t, uint64_t now)
{
	struct heap_entry e;

	t->sim->model->expire(t->sim->model_state, now);
	while (heap_peek(t->events, &e) && e.due_ns <= now) {
		uintptr_t tag = (uintptr_t)e.ptr;
		struct sim_slot *s = &t->slots[e.id];

		heap_pop(t->events, &e);
		if ((uint32_t)(tag >> 2) != s->seq || s->phase == PHASE_IDLE)
			continue;
		if ((tag & 3) == EV_ARRIVE && s->phase == PHASE_TO_SERVER)
			arrive(t, e.id, e.due_ns);
		else if ((tag & 3) == EV_DELIVER && s->phase == PHASE_TO_CLIENT)
			end_call(t, e.id, true, e.due_ns);
		else if ((tag & 3) == EV_TIMEOUT)
			end_call(t, e.id, false, e.due_ns);
	}
}

static uint64_t sim_next_due(const struct transport_loop *t)
{
	struct heap_entry e;
	uint64_t m = t->sim->model->next_due(t->sim->model_state);

	return heap_peek(t->events, &e) && e.due_ns < m ? e.due_ns : m;
}

const struct transport_ops TRANSPORT_SIM = {
	.name = "sim",
	.supports = sim_supports,
	.fds_needed = sim_fds_needed,
	.fds_wanted = sim_fds_wanted,
	.process_init = sim_process_init,
	.run_new = sim_run_new,
	.run_free = sim_run_free,
	.loop_new = sim_loop_new,
	.loop_free = sim_loop_free,
	.begin = sim_begin,
	.event = sim_event,
	.expire = sim_expire,
	.next_due = sim_next_due,
};
