/* One virtual client's life: requests, attempts, calls, retry decisions. */
#include "hammer/vclient.h"

#include <stdio.h>

#include "common/clock.h"
#include "common/parse.h"
#include "common/timeline.h"

uint64_t vclient_since_start(const struct vclient_host *h, uint64_t now)
{
	return now > h->start_ns ? now - h->start_ns : 0;
}

void vclient_init(struct vclient *c, uint32_t id, uint32_t index, uint64_t seed, void *ws)
{
	prng_seed(&c->rng, prng_stream_seed(seed, index));
	c->wstate = ws;
	c->id = id;
	c->index = index;
}

/*
 * With a policy that retries, every call says which attempt of which request
 * it is (Retry-Attempt: 0 on the first, and one Retry-Request id per
 * request), so the server judges each retry against its own rejection
 * (server/clients.h).  The lines live in c: a transport reads them as the
 * call begins.
 */
static void say_attempt(const struct vclient_host *h, struct vclient *c, struct workload_call *call)
{
	if (h->cfg->policy == NULL || h->cfg->policy->max_attempts <= 1 || call->nextra + 2 > WORKLOAD_EXTRA_MAX)
		return;
	snprintf(c->said[0], sizeof(c->said[0]), "Retry-Attempt: %u", c->attempt - 1);
	snprintf(c->said[1], sizeof(c->said[1]), "Retry-Request: %llx-%x-%llx", (unsigned long long)h->start_ns,
	         c->index, (unsigned long long)c->requests);
	call->extra[call->nextra++] = c->said[0];
	call->extra[call->nextra++] = c->said[1];
}

/* Send one call of c's attempt; a call that fails as it begins is queued (see transport_ops.begin). */
static void send_call(struct vclient_host *h, struct vclient *c, const struct workload_call *given, uint64_t now)
{
	struct workload_call own = *given, *call = &own;
	struct hammer_result *r = h->res;
	const char *m = h->wl->shapes[call->shape].method;
	enum retry_error err = RETRY_ERR_OTHER;

	if (c->attempt > 1) {
		r->retries++;
		r->servers[c->server].retries++;
	}
	r->calls++;
	r->servers[c->server].calls++;
	atomic_store_explicit(&h->prog_calls, r->calls, memory_order_relaxed);
	timeline_sent(r->timeline, vclient_since_start(h, now));
	if (c->attempt > 1)
		timeline_retry(r->timeline, vclient_since_start(h, now));
	c->call_ns = now;
	c->method = m ? m : h->cfg->method;
	say_attempt(h, c, call);
	if (h->tops->begin(h->tl, c->id, c->server, call, now, &err) == 0)
		return;
	c->last_err = err;
	h->failq[(h->fq_head + h->fq_n) % h->nclients] = c->id;
	h->fq_n++;
}

/* The next attempt of c's request. */
static void start_attempt(struct vclient_host *h, struct vclient *c, uint64_t now)
{
	struct workload_call call = { 0 };

	c->attempt++;
	if (c->attempt == 1)
		c->first_ns = now;
	h->wl->begin(c->wstate, &call);
	send_call(h, c, &call, now);
}

/*
 * The throttle's say on c's next attempt.  A refusal queues c for
 * vclient_drain_failed to end its request: ending it here could start the
 * next request of a backlog on c, refused again, once per waiting arrival.
 */
static bool throttle_admits(struct vclient_host *h, struct vclient *c, uint64_t now)
{
	if (h->throttle == NULL || retry_throttle_admit(h->throttle, now, &c->rng))
		return true;
	c->throttled = true;
	h->failq[(h->fq_head + h->fq_n) % h->nclients] = c->id;
	h->fq_n++;
	return false;
}

/* --shared-wait: true when c must hold off until the run's latest Retry-After (its timer then set). */
static bool held_off(struct vclient_host *h, struct vclient *c, uint64_t now)
{
	uint64_t until = h->hold_until ? atomic_load_explicit(h->hold_until, memory_order_relaxed) : 0;

	return until > now && heap_push(h->heap, until, c->id, NULL) == 0;
}

/* --shared-wait: an answer's Retry-After holds every client of the run off until it is over. */
static void hold_everyone(struct vclient_host *h, const struct workload_answer *a, uint64_t now)
{
	int64_t wall_s = (int64_t)((h->start_wall_ns + vclient_since_start(h, now)) / NS_PER_SEC);
	uint64_t wait, until, seen;

	if (h->hold_until == NULL || a->retry_after == NULL || retry_after_parse(a->retry_after, wall_s, &wait) != 0)
		return;
	until = now + wait;
	seen = atomic_load_explicit(h->hold_until, memory_order_relaxed);
	while (seen < until && !atomic_compare_exchange_weak_explicit(h->hold_until, &seen, until,
	                                                              memory_order_relaxed, memory_order_relaxed))
		;
}

void vclient_start(struct vclient_host *h, struct vclient *c, uint64_t intended, uint64_t now)
{
	if (c->held)
		intended = c->intended_ns;
	c->intended_ns = intended;
	c->attempt = 0;
	c->held = held_off(h, c, now);
	if (c->held)
		return;
	/* the run-wide round-robin; a request's retries stay on its server */
	if (h->nurls > 1) {
		c->server = (uint32_t)((h->loop_index + h->seq * h->nloops) % h->nurls);
		h->seq++;
	}
	c->requests++;
	c->waited_ns = 0;
	c->prev_wait_ns = 0;
	c->blind_waits = 0;
	c->last_status = 0;
	c->last_err = RETRY_ERR_NONE;
	if (!throttle_admits(h, c, now))
		return;
	if (h->budget != NULL)
		retry_budget_on_first(h->budget, now);
	start_attempt(h, c, now);
}

static void finish_request(struct vclient_host *h, struct vclient *c, uint64_t now, enum retry_reason why)
{
	struct hammer_result *r = h->res;
	struct hammer_server *sv = &r->servers[c->server];

	r->requests++;
	sv->requests++;
	atomic_store_explicit(&h->prog_requests, r->requests, memory_order_relaxed);
	histogram_record(r->latency, now - c->intended_ns);
	if (c->attempt == 0) {
		r->unsent++;
	} else if (c->last_status > 0) {
		r->status[c->last_status]++;
		sv->status[c->last_status]++;
	} else {
		r->final_errors[c->last_err]++;
		sv->errors++;
	}
	if (c->last_status >= 200 && c->last_status < 300) {
		r->ok++;
		sv->ok++;
		if (vclient_since_start(h, now) > r->last_ok_ns)
			r->last_ok_ns = vclient_since_start(h, now);
	} else {
		r->failed++;
		sv->failed++;
		if (why != RETRY_REASON_OK && why != RETRY_REASON_RETRY)
			r->gave_up[why]++;
	}
	h->request_done(h->done_ctx, c, now);
}

void vclient_timer(struct vclient_host *h, struct vclient *c, uint64_t due, uint64_t now)
{
	if (c->attempt == 0) {
		vclient_start(h, c, due, now);
		return;
	}
	if (held_off(h, c, now))
		return;
	if (!throttle_admits(h, c, now))
		return;
	if (h->budget != NULL && !retry_budget_spend(h->budget, now, c->last_err)) {
		h->res->budget_refused++;
		finish_request(h, c, now, RETRY_REASON_BUDGET);
		return;
	}
	start_attempt(h, c, now);
}

static const char *retry_cause(int status, enum retry_error err, char *buf, size_t len)
{
	if (status == 429)
		return "rate limited";
	if (status == 503)
		return "service unavailable";
	if (status > 0)
		snprintf(buf, len, "HTTP %d", status);
	else
		snprintf(buf, len, "%s", err == RETRY_ERR_TIMEOUT ? "timed out" :
		         err == RETRY_ERR_REFUSED ? "connection refused" :
		         err == RETRY_ERR_RESET ? "connection reset" : "transport error");
	return buf;
}

static void schedule_retry(struct vclient_host *h, struct vclient *c, uint64_t now, const struct retry_decision *d)
{
	char cause[32], wait[32];

	c->waited_ns += d->wait_ns;
	c->prev_wait_ns = d->wait_ns;
	if (d->blind)
		c->blind_waits++;
	if (h->cfg->notes != NULL) {
		parse_format_duration(d->wait_ns, wait, sizeof(wait));
		fprintf(h->cfg->notes, "client %u: %s; retrying in %s (attempt %u)\n", c->index,
		        retry_cause(c->last_status, c->last_err, cause, sizeof(cause)), wait, c->attempt + 1);
	}
	if (heap_push(h->heap, now + d->wait_ns, c->id, NULL) != 0)
		finish_request(h, c, now, RETRY_REASON_BUDGET);
}

/* c's attempt ended with answer a (c->last_status and last_err set): retry or finish. */
static void attempt_ended(struct vclient_host *h, struct vclient *c, const struct workload_answer *a, uint64_t now)
{
	struct retry_input in = { 0 };
	struct retry_decision d;

	if (h->throttle != NULL)
		retry_throttle_record(h->throttle, now, retry_throttle_accepted(c->last_status));
	hold_everyone(h, a, now);
	in.status = c->last_status;
	in.error = c->last_err;
	in.method = c->method;
	in.idempotent = -1;
	in.retry_after = a->retry_after;
	in.ratelimit = a->ratelimit;
	in.now_wall_s = (int64_t)((h->start_wall_ns + vclient_since_start(h, now)) / NS_PER_SEC);
	in.attempt = c->attempt;
	in.elapsed_ns = now - c->first_ns;
	in.waited_ns = c->waited_ns;
	in.prev_wait_ns = c->prev_wait_ns;
	in.blind_waits = c->blind_waits;
	in.budget = h->budget;
	in.now_ns = now;
	retry_decide(h->cfg->policy, &in, &c->rng, &d);
	if (d.retry)
		schedule_retry(h, c, now, &d);
	else
		finish_request(h, c, now, d.reason);
}

/*
 * Count c's ended call: an answer with status (err NONE), or err.  A status
 * out of range counts as "other".
 */
static void count_call(struct vclient_host *h, struct vclient *c, enum retry_error err, int status, uint64_t now)
{
	struct hammer_result *r = h->res;

	c->last_status = 0;
	c->last_err = err;
	if (err == RETRY_ERR_NONE && status >= 100 && status < RETRY_STATUS_MAX)
		c->last_status = status;
	else if (err == RETRY_ERR_NONE)
		c->last_err = RETRY_ERR_OTHER;
	timeline_outcome(r->timeline, vclient_since_start(h, now), c->last_status);
	if (c->last_status > 0) {
		r->answered++;
		r->attempt_status[c->last_status]++;
	} else {
		r->attempt_errors[c->last_err]++;
	}
	if (r->by_start != NULL) {
		uint64_t at = vclient_since_start(h, c->call_ns);

		timeline_sent(r->by_start, at);
		timeline_outcome(r->by_start, at, c->last_status);
		if (c->attempt > 1)
			timeline_retry(r->by_start, at);
	}
	if (h->budget != NULL)
		retry_budget_on_result(h->budget, c->last_status >= 200 && c->last_status < 400, c->attempt > 1);
}

void vclient_ended(struct vclient_host *h, struct vclient *c, const struct workload_answer *a, uint64_t now)
{
	struct workload_call call = { 0 };

	count_call(h, c, a->err, a->status, now);
	if (c->last_err == RETRY_ERR_NONE && h->wl->answered(c->wstate, a, &call) == WORKLOAD_NEXT) {
		send_call(h, c, &call, now);
		return;
	}
	attempt_ended(h, c, a, now);
}

void vclient_call_ended(void *host, uint32_t id, const struct workload_answer *a, uint64_t now)
{
	struct vclient_host *h = host;

	vclient_ended(h, &h->clients[id], a, now);
}

void vclient_drain_failed(struct vclient_host *h, uint64_t now)
{
	uint32_t n = h->fq_n;

	/* only those queued so far: the ones these start are for the next pass */
	while (n-- > 0) {
		struct vclient *c = &h->clients[h->failq[h->fq_head]];
		struct workload_answer a = { c->last_err, 0, NULL, NULL, NULL };

		h->fq_head = (h->fq_head + 1) % h->nclients;
		h->fq_n--;
		if (c->throttled) {
			c->throttled = false;
			h->res->throttled++;
			finish_request(h, c, now, RETRY_REASON_THROTTLED);
			continue;
		}
		vclient_ended(h, c, &a, now);
	}
}
