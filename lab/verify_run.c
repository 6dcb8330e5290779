/* One verify run: scenario server, client command, settled-early check, verdicts. */
#include "lab/verify_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "common/clock.h"
#include "lab/verify_child.h"
#include "server/handlers/scenario_server.h"
#include "server/server.h"

#define POLL_NS (2ULL * 1000000ULL)
#define SETTLE_EVERY 10            /* polls between two looks at the verdicts */
#define PROGRESS_EVERY 100         /* polls between two progress calls: 200 ms */
#define EXIT_GRACE_NS (30ULL * 1000000000ULL)  /* past the timeout, for a command that ended but is not yet released */
#define TAKE_EXITING_NS (2ULL * 1000000000ULL) /* in exit this long: its exit status is read from /proc */

/* Per run: what the loop needs. */
struct run {
	struct scenario *sc;
	const struct verify_grade_expect *ex;
	size_t nex;
	const struct verify_run_opts *o;
	struct verify_children *kids;
	struct scenario_arrival *log;
	struct scenario_count *counts;
	uint64_t t0;
};

/* The scenario server on bind:port (bind NULL: the default); upstream NULL, or where 2xx steps pass. */
static struct server *start_server(struct scenario *sc, unsigned clients, const char *bind, unsigned port,
                                   const char *upstream, char *err, size_t errlen)
{
	struct server_config *cfg = malloc(sizeof(*cfg));
	struct server *srv = NULL;

	if (!cfg) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	server_config_defaults(cfg);
	cfg->port = (int)port;
	if (bind)
		snprintf(cfg->bind, sizeof(cfg->bind), "%s", bind);
	cfg->quiet = true;
	if (upstream)
		snprintf(cfg->upstream, sizeof(cfg->upstream), "%s", upstream);
	cfg->threads = clients < 4 ? 4 : clients;  /* scripted delays hold no thread, but clients come at once */
	if (scenario_server_register(cfg, sc) < 0)
		snprintf(err, errlen, "cannot add the scenario");
	else
		srv = server_start(cfg, err, errlen);
	free(cfg);
	return srv;
}

/*
 * A loopback address of the run's own, 127.A.B.C, in buf.  Whatever else on
 * the machine aims at a port once free on 127.0.0.1 (a load test still firing
 * at a server that is gone) cannot reach the scenario server there, so the
 * arrivals it grades are the command's.  The address is drawn anew per run.
 */
static void own_loopback(char *buf, size_t len)
{
	unsigned char b[3] = { 0 };

	if (getrandom(b, sizeof(b), GRND_NONBLOCK) != (ssize_t)sizeof(b)) {
		uint64_t t = clock_monotonic_ns();

		b[0] = (unsigned char)(t >> 8), b[1] = (unsigned char)(t >> 16), b[2] = (unsigned char)(t >> 24);
	}
	/* never 127.0.0.x or 127.x.x.0/255: the first is everyone's, the others read like network and broadcast */
	snprintf(buf, len, "127.%u.%u.%u", 1 + b[0] % 254u, b[1], 1 + b[2] % 254u);
}

/*
 * True when the verdict is settled while the command runs (an expectation
 * failed for good), so the run may end; wall_ns is how long it has run.
 */
static bool settled(struct run *rn, uint64_t wall_ns)
{
	struct verify_grade_run so_far = { .wall_ns = wall_ns, .timeout_ns = rn->o->timeout_ns };
	size_t n = scenario_arrivals(rn->sc, rn->log, SCENARIO_LOG_MAX, NULL);

	so_far.ncounts = scenario_counts(rn->sc, rn->counts, SCENARIO_MAX_CLIENTS);
	so_far.counts = rn->counts;

	for (size_t i = 0; i < rn->nex; i++)
		if (verify_grade_failed(&rn->ex[i], rn->log, n, &so_far))
			return true;
	return false;
}

/* The progress hook while the copies run. */
static void tick(struct run *rn, unsigned running)
{
	struct verify_progress p = { scenario_name(rn->sc), rn->o->index, rn->o->total, false, rn->o->clients, running,
	                             0, clock_monotonic_ns() - rn->t0 };

	if (rn->o->progress)
		rn->o->progress(rn->o->progress_ctx, &p);
}

/*
 * Wait for the copies to end, at most until the timeout; fills how the run
 * ended.  A command is done when it is seen in exit (verify_children_exiting,
 * looked at every few polls), not only once it is reaped: on a busy machine
 * the kernel's teardown of an exiting process can take seconds (a minute was
 * seen, beside hundreds of processes exiting), and that is no part of how
 * long the client took.  Two seconds into such a teardown its exit status is
 * read from /proc (verify_children_take_exiting) and the run ends.
 */
static void wait_run(struct run *rn, struct verify_grade_run *run)
{
	struct timespec ts = { 0, (long)POLL_NS };
	uint64_t deadline = rn->t0 + rn->o->timeout_ns, ended = 0;
	unsigned polls = 0, ticks = 0;
	bool extended = false;
	bool stops = scenario_stops_when_settled(rn->sc);
	size_t seen = 0;

	for (unsigned running; (running = verify_children_reap(rn->kids)) > 0;) {
		size_t now_seen = stops ? scenario_arrivals(rn->sc, NULL, 0, NULL) : 0;
		uint64_t now = clock_monotonic_ns();

		if (ended == 0 && ticks % SETTLE_EVERY == 0 && verify_children_exiting(rn->kids))
			ended = now;
		/* In exit a while (the kernel slow to release it): its status is read from /proc, not waited for. */
		if (ended && now - ended >= TAKE_EXITING_NS && verify_children_take_exiting(rn->kids) == 0)
			break;
		if (now >= deadline) {
			/* Ended by then, the kernel still tearing it down: its exit status is waited for, not killed. */
			if (!extended && (ended || verify_children_exiting(rn->kids))) {
				extended = true;
				deadline += EXIT_GRACE_NS;
				continue;
			}
			run->killed = true;
			verify_children_describe(rn->kids, stderr);
			break;
		}
		if (*rn->o->interrupted)
			break;
		/* A new arrival can settle a verdict at once; time alone (gives-up-within) every few polls. */
		if (stops && (now_seen != seen || ++polls % SETTLE_EVERY == 0) && settled(rn, (ended ? ended : now) - rn->t0)) {
			run->stopped = true;
			break;
		}
		seen = now_seen;
		if (++ticks % PROGRESS_EVERY == 0)
			tick(rn, running);
		nanosleep(&ts, NULL);
	}
	run->wall_ns = (ended ? ended : clock_monotonic_ns()) - rn->t0;
	verify_children_kill(rn->kids);
	run->exit_status = verify_children_status(rn->kids);
}

static void progress(const struct verify_run_opts *o, const struct verify_result *r, bool done)
{
	struct verify_progress p = { r->scenario, o->index, o->total, done, o->clients, done ? 0 : o->clients, r->n,
	                             r->run.wall_ns };

	if (o->progress)
		o->progress(o->progress_ctx, &p);
}

/* Start the copies against srv and wait for them; -1 with r->state/error when they cannot start. */
static int run_command(struct run *rn, const char *host, struct server *srv, struct verify_result *r)
{
	char url[64];
	struct verify_child_opts co = { rn->o->cmd, url, scenario_method(rn->sc), rn->o->clients, rn->o->quiet_command };
	bool cannot_run;

	snprintf(url, sizeof(url), "http://%s:%d", host, server_port(srv));
	rn->t0 = clock_monotonic_ns();
	if (!(rn->kids = verify_children_start(&co, &cannot_run, r->error, sizeof(r->error)))) {
		r->state = VERIFY_CANNOT_RUN;
		return -1;
	}
	wait_run(rn, &r->run);
	verify_children_free(rn->kids);
	return 0;
}

/*
 * Grade what the server saw (after it stopped: every held answer has left or
 * failed by then).  A command that ended, or was killed at the timeout, with
 * no arrival never reached the server; one that verify stopped early (a
 * verdict settled: gives-up-within passed by) is graded as it stood, since
 * it may only have been slow to start.
 */
static void grade(struct scenario *sc, struct verify_result *r)
{
	r->n = scenario_arrivals(sc, r->log, SCENARIO_LOG_MAX, &r->run.dropped);
	r->run.ncounts = scenario_counts(sc, r->counts, SCENARIO_MAX_CLIENTS);
	r->run.counts = r->counts;
	r->state = r->n == 0 && !r->run.stopped ? VERIFY_NO_ARRIVALS : VERIFY_GRADED;
	for (size_t i = 0; i < r->nex; i++) {
		verify_grade_one(&r->ex[i], r->log, r->n, &r->run, &r->v[i]);
		if (r->state == VERIFY_NO_ARRIVALS) {
			r->v[i].outcome = VERIFY_FAIL;
			snprintf(r->v[i].evidence, sizeof(r->v[i].evidence), "%s",
			         r->listened ? "no request reached the server" : "the command never reached the server");
		}
	}
	r->arrivals_json = scenario_arrivals_json(sc);
}

/* An empty result for sc: its name, method and expectations, and the buffers grading fills; -1 out of memory. */
static int result_init(struct verify_result *r, struct scenario *sc, const struct verify_grade_expect *ex, size_t nex,
                       uint64_t timeout_ns)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->scenario, sizeof(r->scenario), "%s", scenario_name(sc));
	r->method = scenario_method(sc);
	r->clients = 1;
	r->nex = nex;
	memcpy(r->ex, ex, nex * sizeof(*ex));
	r->run.timeout_ns = timeout_ns;
	r->state = VERIFY_SETUP_FAILED;
	r->log = malloc(SCENARIO_LOG_MAX * sizeof(*r->log));
	r->counts = malloc(SCENARIO_MAX_CLIENTS * sizeof(*r->counts));
	if (!r->log || !r->counts) {
		snprintf(r->error, sizeof(r->error), "out of memory");
		return -1;
	}
	return 0;
}

int verify_run(struct scenario *sc, const struct verify_grade_expect *ex, size_t nex,
               const struct verify_run_opts *o, struct verify_result *r)
{
	struct run rn = { sc, ex, nex, o, NULL, NULL, NULL, 0 };
	struct verify_noise *noise;
	struct server *srv;
	char own[16];
	int rc = -1;

	if (result_init(r, sc, ex, nex, o->timeout_ns) < 0)
		return -1;
	r->clients = o->clients;
	rn.log = malloc(SCENARIO_LOG_MAX * sizeof(*rn.log));
	rn.counts = malloc(SCENARIO_MAX_CLIENTS * sizeof(*rn.counts));
	if (!rn.log || !rn.counts)
		goto free_log;
	own_loopback(own, sizeof(own));
	/* where 127.0.0.0/8 is not all loopback (not Linux), the usual 127.0.0.1 */
	if (!(srv = start_server(sc, o->clients, own, 0, NULL, r->error, sizeof(r->error)))) {
		snprintf(own, sizeof(own), "127.0.0.1");
		if (!(srv = start_server(sc, o->clients, own, 0, NULL, r->error, sizeof(r->error))))
			goto free_log;
		r->error[0] = '\0';
	}
	progress(o, r, false);
	noise = verify_noise_start();
	rc = run_command(&rn, own, srv, r);
	server_stop(srv);
	verify_noise_stop(noise, &r->noise);
	r->run.noise_ns = r->noise.p90_ns;
	r->run.stalls = r->noise.stalls;
	r->run.nstalls = r->noise.nstalls;
	if (rc == 0 && *o->interrupted) {
		r->state = VERIFY_INTERRUPTED;
		rc = -1;
	} else if (rc == 0) {
		grade(sc, r);
	}
	progress(o, r, true);
free_log:
	free(rn.log);
	free(rn.counts);
	return rc;
}

/* ---- verify --listen ---- */

/* True when no scenario saw a request, or held an answer, for idle_ns (answers held past their longest delay do
 * not count). */
static bool all_idle(struct scenario **sc, size_t n, uint64_t t0, uint64_t idle_ns, uint64_t now)
{
	for (size_t i = 0; i < n; i++) {
		size_t pending;
		uint64_t last = scenario_last_activity(sc[i], &pending);
		uint64_t since = last > t0 ? last : t0;

		if (now < since + idle_ns || (pending && now < since + idle_ns + SCENARIO_MAX_DELAY_NS))
			return false;
	}
	return true;
}

/* Serve until idle, a signal or the timeout; returns how it ended. */
static enum verify_listen_end serve_until(struct scenario **sc, size_t n, const struct verify_listen_opts *o,
                                          uint64_t t0)
{
	struct timespec ts = { 0, (long)(10 * POLL_NS) };

	for (;;) {
		uint64_t now = clock_monotonic_ns();

		if (*o->interrupted)
			return VERIFY_LISTEN_SIGNAL;
		if (o->idle_ns && all_idle(sc, n, t0, o->idle_ns, now))
			return VERIFY_LISTEN_IDLE;
		if (now >= t0 + o->timeout_ns)
			return VERIFY_LISTEN_TIMEOUT;
		nanosleep(&ts, NULL);
	}
}

/* Start scenario i's server into srv[i] and announce it; -1 with rs[i] saying why. */
static int listen_one(struct scenario *sc, const struct verify_listen_opts *o, size_t i, struct server **srv,
                      struct verify_result *r)
{
	char host[72];

	srv[i] = start_server(sc, 4, o->bind, o->port ? o->port + (unsigned)i : 0, o->upstream, r->error,
	                      sizeof(r->error));
	if (!srv[i])
		return -1;
	snprintf(host, sizeof(host), strchr(o->bind, ':') ? "[%s]" : "%s", o->bind);
	fprintf(o->announce, "ratelab verify: scenario %s listening on http://%s:%d", scenario_name(sc), host,
	        server_port(srv[i]));
	if (o->upstream)
		fprintf(o->announce, ", passing its 2xx steps to %s", o->upstream);
	fputc('\n', o->announce);
	fflush(o->announce);
	return 0;
}

int verify_listen(struct scenario **sc, const struct verify_grade_expect (*ex)[VERIFY_GRADE_MAX_EXPECT],
                  const size_t *nex, size_t n, const struct verify_listen_opts *o, struct verify_result *rs)
{
	struct server **srv = calloc(n, sizeof(*srv));
	enum verify_listen_end end;
	uint64_t t0 = clock_monotonic_ns();
	int rc = srv ? 0 : -1;

	for (size_t i = 0; i < n; i++)
		if (result_init(&rs[i], sc[i], ex[i], nex[i], o->timeout_ns) < 0 ||
		    (rc == 0 && listen_one(sc[i], o, i, srv, &rs[i]) < 0))
			rc = -1;
	end = rc == 0 ? serve_until(sc, n, o, t0) : VERIFY_LISTEN_SIGNAL;
	for (size_t i = 0; rc < 0 && i < n; i++)
		if (!rs[i].error[0])
			snprintf(rs[i].error, sizeof(rs[i].error), "scenario %.200s not served: another could not listen",
			         rs[i].scenario);
	for (size_t i = 0; srv && i < n; i++)
		server_stop(srv[i]);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		rs[i].listened = rs[i].run.listened = true;
		rs[i].listen_end = end;
		rs[i].idle_ns = o->idle_ns;
		rs[i].run.killed = end == VERIFY_LISTEN_TIMEOUT;
		rs[i].run.wall_ns = clock_monotonic_ns() - t0;
		grade(sc[i], &rs[i]);
	}
	free(srv);
	return rc;
}

void verify_result_free(struct verify_result *r)
{
	free(r->log);
	free(r->counts);
	free(r->arrivals_json);
	r->log = NULL;
	r->counts = NULL;
	r->arrivals_json = NULL;
}
