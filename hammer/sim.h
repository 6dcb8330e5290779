#ifndef RATELAB_SIM_H
#define RATELAB_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * `--sim`: a run in virtual time.  The engine, the clients and the retry
 * policy are the real ones; the clock is virtual (hammer/loopclock.h) and
 * the transport (TRANSPORT_SIM, hammer/transport.h) carries each call over
 * a stated network model to an in-process server model instead of a socket.
 * The hammer knows the server model only as this table: the lab builds it
 * from serve's own limiter and capacity code (lab/simserver.h).
 *
 * The network: every message (a request, an answer) takes its own one-way
 * delay, |N(mean, sd)|; each is lost with probability `loss` (the client
 * then sees its --timeout run out); a client's first call first pays
 * `connect_ns` to set its connection up.
 */

struct sim_net {
	uint64_t delay_ns;        /* one-way delay of each message: the mean */
	uint64_t delay_sd_ns;     /* and its standard deviation (0: fixed) */
	double loss;              /* 0..1: each message lost with this probability */
	uint64_t connect_ns;      /* a new connection's set-up, before its first request leaves */
};

/* A request as it reaches the server model. */
struct sim_request {
	uint32_t client;          /* the client's run-wide index */
	const char *method;
	const char *path;         /* the URL's path, or the workload's */
	const char *if_match;     /* the If-Match value the call sent, or NULL */
};

/* The server's answer; strings "" for a header it did not send. */
struct sim_reply {
	bool reset;               /* no answer: the connection is reset (a fault) */
	int status;
	char retry_after[24];
	char ratelimit[96];
	char etag[32];
};

/*
 * The server model.  arrive() takes a request at `now` (virtual ns) and
 * answers it, at once or later, by calling the reply function it was given
 * (with the request's token and the instant the answer leaves, >= now).
 * Everything runs on the run's one loop; nothing is thread-safe.
 */
/* Returns true when the client was still waiting for it (false: it timed out, the work was for nobody). */
typedef bool (*sim_reply_fn)(void *ctx, uint64_t token, const struct sim_reply *r, uint64_t at);

struct sim_model_ops {
	const char *name;
	/* Take requests from now on; answers go to reply(ctx, ...).  The clock starts at t0, whose
	 * wall time is wall0_ns (an HTTP-date Retry-After is written against it). */
	void (*open)(void *model, sim_reply_fn reply, void *ctx, uint64_t t0, uint64_t wall0_ns);
	void (*arrive)(void *model, uint64_t token, const struct sim_request *rq, uint64_t now);
	/* When the model next has something to do (a held answer), or UINT64_MAX. */
	uint64_t (*next_due)(void *model);
	/* Do what fell due by now. */
	void (*expire)(void *model, uint64_t now);
};

/* What a run in virtual time is against. */
struct sim_config {
	struct sim_net net;
	const struct sim_model_ops *model;
	void *model_state;
};

/* The network's defaults: 100 us one way, no loss, no set-up cost. */
void sim_net_defaults(struct sim_net *n);

/*
 * Parse a --sim-delay MEAN[±SD] (or MEAN+-SD), e.g. "10ms±2ms", into n.
 * Returns 0, or -1 with a one-line reason naming the value.  Pure.
 */
int sim_net_parse_delay(const char *s, struct sim_net *n, char *err, size_t errlen);

/* "delay 10ms±2ms one way, loss 1%, connect 1ms" into buf. */
void sim_net_describe(const struct sim_net *n, char *buf, size_t len);

#endif
