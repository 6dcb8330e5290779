#include "hammer/loop.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/parse.h"
#include "common/prng.h"
#include "common/heap.h"
#include "hammer/wireconn.h"

#define ARRIVAL_ID UINT32_MAX
#define MAX_EVENTS 256
#define CANCEL_POLL_MS 50
#define BACKLOG_MAX (1u << 20)
/* clients per curl multi handle: libcurl 7.88 scans a host's whole connection
 * bundle for every transfer it starts, so one multi of 5,000 clients spends
 * seconds in one socket_action call; shards keep that scan short.  A
 * socket_action call also runs every expired transfer of its multi, so the
 * shard size bounds the work done between two timer checks: 16 keeps that
 * under a millisecond where 64 took several (10,000-client timer bench) */
#define SHARD_CLIENTS 16
/* epoll data of a wire client's socket: this bit, its server << 32 and the client's index */
#define WIRE_TAG (UINT64_C(1) << 63)
#define WIRE_BUF (64 * 1024)
#define NO_ID UINT32_MAX

struct loop;

/* One curl multi handle and its timeout. */
struct shard {
	CURLM *multi;
	struct loop *loop;
	uint32_t index;
	uint64_t curl_due_ns;     /* curl's timeout; UINT64_MAX = none */
};

enum client_state { CLIENT_IDLE, CLIENT_WAITING, CLIENT_ACTIVE };

/*
 * Wire clients waiting on a deadline, oldest first.  Every deadline is
 * "now + a constant" (the attempt timeout, or the connect timeout), so
 * appending keeps the order and the earliest is always at the head.
 */
struct dlist {
	uint32_t head, tail;
};

struct dlink {
	uint32_t prev, next;
	uint64_t due;
	bool in;
};

enum { DL_ATTEMPT, DL_CONNECT };

struct vclient {
	CURL *easy;
	struct shard *shard;
	uint64_t intended_ns;     /* when this request should have started */
	uint64_t first_ns;        /* when its first attempt started */
	uint64_t waited_ns;
	uint64_t prev_wait_ns;
	unsigned attempt;         /* attempts sent for this request */
	unsigned blind_waits;
	uint32_t server;          /* index into the URLs of the current request */
	uint32_t url_set;         /* index of the URL the easy handle holds */
	int last_status;          /* outcome of the last attempt, for a budget refusal */
	enum retry_error last_err;
	enum client_state state;
	struct wireconn wc;       /* own path: the connection; both paths: resp keeps the headers read */
	uint32_t wc_server;       /* the server wc talks to */
	int *parked;              /* several URLs: an idle kept-alive socket per server, or -1 */
	struct dlink dl[2];       /* in the loop's attempt and connect deadline lists */
};

struct loop {
	const struct loop_shared *sh;
	const struct hammer_config *cfg;
	struct loop_part part;
	struct hammer_result res;
	struct shard *shards;
	uint32_t nshards;
	int epfd;
	int tfd;
	uint64_t tfd_armed;       /* due time the timerfd is set to; 0 = disarmed */
	struct heap *heap;
	struct vclient *clients;
	uint32_t *free_ids;       /* idle clients (open loop) */
	uint32_t nfree;
	uint32_t active;          /* clients not idle */
	uint64_t started;         /* requests started (closed) or arrivals made (open) */
	uint64_t arrivals;        /* open loop: arrivals scheduled so far */
	uint64_t seq;             /* requests started by this loop, for the round-robin */
	uint64_t *backlog;        /* open loop: intended starts waiting for a client (ring) */
	uint32_t bl_head, bl_n, bl_cap;
	struct prng rng;
	struct dlist dl[2];       /* wire clients by attempt / connect deadline */
	uint32_t *failq;          /* wire attempts that failed as they began (ring) */
	uint32_t fq_head, fq_n;
	uint32_t nparked;         /* idle connections held in clients' parked slots */
	char *rbuf;               /* wire: scratch for reading answers */
	_Atomic uint64_t prog_requests, prog_calls;
	atomic_bool finished;
};

static uint64_t since_start(const struct loop *l, uint64_t now)
{
	return now > l->sh->start_ns ? now - l->sh->start_ns : 0;
}

/* ---- curl callbacks ---- */

static size_t on_body(char *ptr, size_t size, size_t n, void *ud)
{
	(void)ptr;
	(void)ud;
	return size * n;
}

static size_t on_header(char *buf, size_t size, size_t n, void *ud)
{
	struct vclient *c = ud;

	wire_resp_capture(&c->wc.resp, buf, size * n);
	return size * n;
}

/*
 * The socket's registered epoll mask rides in libcurl's per-socket pointer
 * (one of SOCK_MASKS' addresses), so an unchanged mask costs no epoll_ctl:
 * libcurl repeats the callback with the same mask on most transfers.
 */
static char SOCK_MASKS[4];

static int on_socket(CURL *e, curl_socket_t s, int what, void *userp, void *socketp)
{
	struct shard *sh = userp;
	struct loop *l = sh->loop;
	struct epoll_event ev = { 0 };
	char *want = &SOCK_MASKS[what & CURL_POLL_INOUT];

	(void)e;
	if (what == CURL_POLL_REMOVE) {
		epoll_ctl(l->epfd, EPOLL_CTL_DEL, s, NULL);
		return 0;
	}
	if (socketp == want)
		return 0;
	ev.events = ((what & CURL_POLL_IN) ? EPOLLIN : 0u) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0u);
	ev.data.u64 = ((uint64_t)sh->index << 32) | (uint32_t)s;
	if (socketp == NULL) {
		if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, s, &ev) != 0 && errno == EEXIST)
			epoll_ctl(l->epfd, EPOLL_CTL_MOD, s, &ev);
	} else if (epoll_ctl(l->epfd, EPOLL_CTL_MOD, s, &ev) != 0 && errno == ENOENT) {
		epoll_ctl(l->epfd, EPOLL_CTL_ADD, s, &ev);
	}
	curl_multi_assign(sh->multi, s, want);
	return 0;
}

static int on_curl_timer(CURLM *m, long timeout_ms, void *userp)
{
	struct shard *sh = userp;

	(void)m;
	sh->curl_due_ns = timeout_ms < 0 ? UINT64_MAX
	                                : clock_monotonic_ns() + (uint64_t)timeout_ms * NS_PER_MS;
	return 0;
}

/* ---- setup ---- */

#define SETOPT(e, opt, val) do { if (curl_easy_setopt((e), (opt), (val)) != CURLE_OK) goto fail; } while (0)

static int easy_method(CURL *e, const struct hammer_config *cfg)
{
	const char *m = cfg->method ? cfg->method : "GET";

	if (cfg->data != NULL) {
		SETOPT(e, CURLOPT_POSTFIELDS, cfg->data);
		SETOPT(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(cfg->data));
	} else if (strcmp(m, "POST") == 0) {
		SETOPT(e, CURLOPT_POSTFIELDS, "");
		SETOPT(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
	}
	if (strcmp(m, "HEAD") == 0)
		SETOPT(e, CURLOPT_NOBODY, 1L);
	else if (strcmp(m, "GET") != 0 && strcmp(m, "POST") != 0)
		SETOPT(e, CURLOPT_CUSTOMREQUEST, m);
	else if (strcmp(m, "GET") == 0 && cfg->data != NULL)
		SETOPT(e, CURLOPT_CUSTOMREQUEST, m);
	return 0;
fail:
	return -1;
}

/* A configured easy handle for client c, or NULL. */
static CURL *easy_new(struct loop *l, struct vclient *c)
{
	const struct hammer_config *cfg = l->cfg;
	CURL *e = curl_easy_init();

	if (e == NULL)
		return NULL;
	SETOPT(e, CURLOPT_URL, l->sh->urls[0]);
	SETOPT(e, CURLOPT_NOSIGNAL, 1L);
	/* no proxy: also spares libcurl reading six environment variables per request */
	SETOPT(e, CURLOPT_PROXY, "");
	SETOPT(e, CURLOPT_NOPROXY, "*");
	SETOPT(e, CURLOPT_PRIVATE, c);
	SETOPT(e, CURLOPT_WRITEFUNCTION, on_body);
	SETOPT(e, CURLOPT_HEADERFUNCTION, on_header);
	SETOPT(e, CURLOPT_HEADERDATA, c);
	SETOPT(e, CURLOPT_HTTPHEADER, l->sh->headers);
	SETOPT(e, CURLOPT_TIMEOUT_MS, (long)(cfg->timeout_ns / NS_PER_MS));
	if (cfg->connect_timeout_ns)
		SETOPT(e, CURLOPT_CONNECTTIMEOUT_MS, (long)(cfg->connect_timeout_ns / NS_PER_MS));
	if (cfg->concurrency > 1000)
		SETOPT(e, CURLOPT_BUFFERSIZE, 4096L);
	if (easy_method(e, cfg) == 0)
		return e;
fail:
	curl_easy_cleanup(e);
	return NULL;
}

static int shard_init(struct loop *l, struct shard *sh, uint32_t index)
{
	sh->loop = l;
	sh->index = index;
	sh->curl_due_ns = UINT64_MAX;
	sh->multi = curl_multi_init();
	if (sh->multi == NULL)
		return -1;
	if (curl_multi_setopt(sh->multi, CURLMOPT_SOCKETFUNCTION, on_socket) != CURLM_OK ||
	    curl_multi_setopt(sh->multi, CURLMOPT_SOCKETDATA, sh) != CURLM_OK ||
	    curl_multi_setopt(sh->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer) != CURLM_OK ||
	    curl_multi_setopt(sh->multi, CURLMOPT_TIMERDATA, sh) != CURLM_OK ||
	    curl_multi_setopt(sh->multi, CURLMOPT_MAXCONNECTS, (long)SHARD_CLIENTS + 4) != CURLM_OK)
		return -1;
	return 0;
}

uint64_t loop_fds_needed(uint32_t clients, uint32_t threads)
{
	uint64_t shards = (uint64_t)clients / SHARD_CLIENTS + threads;

	return (uint64_t)clients + 2 * shards + 2 * (uint64_t)threads;
}

static int multi_new(struct loop *l)
{
	if (l->sh->targets != NULL)
		return 0;
	l->nshards = (l->part.clients + SHARD_CLIENTS - 1) / SHARD_CLIENTS;
	if (l->nshards == 0)
		l->nshards = 1;
	l->shards = calloc(l->nshards, sizeof(*l->shards));
	if (l->shards == NULL)
		return -1;
	for (uint32_t i = 0; i < l->nshards; i++)
		if (shard_init(l, &l->shards[i], i) != 0)
			return -1;
	return 0;
}

static int fds_new(struct loop *l)
{
	struct epoll_event ev = { .events = EPOLLIN };

	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	l->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (l->epfd < 0 || l->tfd < 0)
		return -1;
	/* socket events carry (shard << 32 | fd); the timerfd is told apart by its own fd */
	ev.data.u64 = (uint64_t)(uint32_t)l->tfd;
	return epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->tfd, &ev);
}

static int wire_new(struct loop *l)
{
	uint32_t n = l->part.clients;

	l->dl[DL_ATTEMPT].head = l->dl[DL_ATTEMPT].tail = NO_ID;
	l->dl[DL_CONNECT].head = l->dl[DL_CONNECT].tail = NO_ID;
	l->failq = calloc(n ? n : 1, sizeof(*l->failq));
	l->rbuf = malloc(WIRE_BUF);
	if (l->failq == NULL || l->rbuf == NULL)
		return -1;
	for (uint32_t i = 0; l->sh->nurls > 1 && i < n; i++) {
		l->clients[i].parked = malloc(sizeof(int) * l->sh->nurls);
		if (l->clients[i].parked == NULL)
			return -1;
		for (uint32_t k = 0; k < l->sh->nurls; k++)
			l->clients[i].parked[k] = -1;
	}
	return 0;
}

static int clients_new(struct loop *l)
{
	uint32_t n = l->part.clients;

	l->clients = calloc(n ? n : 1, sizeof(*l->clients));
	l->free_ids = calloc(n ? n : 1, sizeof(*l->free_ids));
	l->heap = heap_new(n + 16, false);
	if (l->clients == NULL || l->free_ids == NULL || l->heap == NULL)
		return -1;
	for (uint32_t i = 0; i < n; i++)
		wireconn_init(&l->clients[i].wc);
	if (l->sh->targets != NULL && wire_new(l) != 0)
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		struct vclient *c = &l->clients[i];

		l->free_ids[l->nfree++] = n - 1 - i;
		if (l->sh->targets != NULL)
			continue;
		c->shard = &l->shards[i / SHARD_CLIENTS];
		c->easy = easy_new(l, c);
		if (c->easy == NULL)
			return -1;
	}
	return 0;
}

struct loop *loop_new(const struct loop_shared *sh, const struct loop_part *part, char *err, size_t errlen)
{
	struct loop *l = calloc(1, sizeof(*l));

	if (l == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	l->sh = sh;
	l->cfg = sh->cfg;
	l->part = *part;
	l->epfd = l->tfd = -1;
	prng_seed(&l->rng, prng_stream_seed(sh->cfg->seed, part->index));
	if (hammer_result_init(&l->res, sh->cfg->interval_ns) != 0 || multi_new(l) != 0) {
		snprintf(err, errlen, "cannot set up libcurl (out of memory?)");
		goto fail;
	}
	l->res.nservers = sh->nurls;
	for (uint32_t i = 0; i < sh->nurls; i++)
		l->res.servers[i].url = sh->urls[i];
	if (fds_new(l) != 0) {
		snprintf(err, errlen, "cannot set up epoll/timerfd: %s", strerror(errno));
		goto fail;
	}
	if (clients_new(l) != 0) {
		snprintf(err, errlen, "cannot set up %u clients (out of memory?)", part->clients);
		goto fail;
	}
	return l;
fail:
	loop_free(l);
	return NULL;
}

void loop_free(struct loop *l)
{
	if (l == NULL)
		return;
	for (uint32_t i = 0; l->clients != NULL && i < l->part.clients; i++) {
		wireconn_close(&l->clients[i].wc, l->epfd);
		for (uint32_t k = 0; l->clients[i].parked != NULL && k < l->sh->nurls; k++)
			if (l->clients[i].parked[k] >= 0)
				close(l->clients[i].parked[k]);
		free(l->clients[i].parked);
		if (l->clients[i].easy == NULL)
			continue;
		if (l->clients[i].shard->multi != NULL)
			curl_multi_remove_handle(l->clients[i].shard->multi, l->clients[i].easy);
		curl_easy_cleanup(l->clients[i].easy);
	}
	for (uint32_t i = 0; l->shards != NULL && i < l->nshards; i++)
		if (l->shards[i].multi != NULL)
			curl_multi_cleanup(l->shards[i].multi);
	free(l->shards);
	if (l->epfd >= 0)
		close(l->epfd);
	if (l->tfd >= 0)
		close(l->tfd);
	heap_free(l->heap);
	free(l->clients);
	free(l->free_ids);
	free(l->backlog);
	free(l->failq);
	free(l->rbuf);
	hammer_result_destroy(&l->res);
	free(l);
}

struct hammer_result *loop_result(struct loop *l)
{
	return &l->res;
}

void loop_progress(struct loop *l, uint64_t *requests, uint64_t *calls, bool *finished)
{
	*requests = atomic_load_explicit(&l->prog_requests, memory_order_relaxed);
	*calls = atomic_load_explicit(&l->prog_calls, memory_order_relaxed);
	*finished = atomic_load(&l->finished);
}

/* ---- requests ---- */

static void finish_request(struct loop *l, struct vclient *c, uint64_t now, enum retry_reason why);
static void next_request(struct loop *l, struct vclient *c, uint64_t now);
static void wire_begin(struct loop *l, struct vclient *c, uint64_t now);

/* Send the next attempt of c's request. */
static void start_attempt(struct loop *l, struct vclient *c, uint64_t now)
{
	CURLMcode mc;

	c->attempt++;
	c->state = CLIENT_ACTIVE;
	if (c->attempt == 1) {
		c->first_ns = now;
	} else {
		l->res.retries++;
		l->res.servers[c->server].retries++;
	}
	l->res.calls++;
	l->res.servers[c->server].calls++;
	atomic_store_explicit(&l->prog_calls, l->res.calls, memory_order_relaxed);
	timeline_sent(l->res.timeline, since_start(l, now));
	if (l->sh->targets != NULL) {
		wire_begin(l, c, now);
		return;
	}
	wire_resp_init(&c->wc.resp, false);
	mc = curl_multi_add_handle(c->shard->multi, c->easy);
	if (mc != CURLM_OK) {
		/* cannot even queue it: count it as a transport failure of this attempt */
		c->last_status = 0;
		c->last_err = RETRY_ERR_OTHER;
		l->res.attempt_errors[RETRY_ERR_OTHER]++;
		finish_request(l, c, now, RETRY_REASON_NOT_RETRYABLE);
	}
}

/* Point c at the next server in the run-wide round-robin; its retries stay there. */
static void pick_server(struct loop *l, struct vclient *c)
{
	const struct loop_shared *sh = l->sh;

	c->server = (uint32_t)((l->part.index + l->seq * sh->nloops) % sh->nurls);
	l->seq++;
	if (c->easy != NULL && c->server != c->url_set &&
	    curl_easy_setopt(c->easy, CURLOPT_URL, sh->urls[c->server]) == CURLE_OK)
		c->url_set = c->server;
}

static void start_request(struct loop *l, struct vclient *c, uint64_t intended, uint64_t now)
{
	if (l->sh->nurls > 1)
		pick_server(l, c);
	c->intended_ns = intended;
	c->attempt = 0;
	c->waited_ns = 0;
	c->prev_wait_ns = 0;
	c->blind_waits = 0;
	if (l->sh->budget != NULL)
		retry_budget_on_first(l->sh->budget, now);
	start_attempt(l, c, now);
}

static void finish_request(struct loop *l, struct vclient *c, uint64_t now, enum retry_reason why)
{
	struct hammer_result *r = &l->res;
	struct hammer_server *sv = &r->servers[c->server];

	r->requests++;
	sv->requests++;
	atomic_store_explicit(&l->prog_requests, r->requests, memory_order_relaxed);
	histogram_record(r->latency, now - c->intended_ns);
	if (c->last_status > 0) {
		r->status[c->last_status]++;
		sv->status[c->last_status]++;
	} else {
		r->final_errors[c->last_err]++;
		sv->errors++;
	}
	if (c->last_status >= 200 && c->last_status < 300) {
		r->ok++;
		sv->ok++;
	} else {
		r->failed++;
		sv->failed++;
		if (why != RETRY_REASON_OK && why != RETRY_REASON_RETRY)
			r->gave_up[why]++;
	}
	next_request(l, c, now);
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

static void schedule_retry(struct loop *l, struct vclient *c, uint64_t now, const struct retry_decision *d)
{
	uint32_t id = (uint32_t)(c - l->clients);
	char cause[32], wait[32];

	c->waited_ns += d->wait_ns;
	c->prev_wait_ns = d->wait_ns;
	if (d->blind)
		c->blind_waits++;
	c->state = CLIENT_WAITING;
	if (l->cfg->notes != NULL) {
		parse_format_duration(d->wait_ns, wait, sizeof(wait));
		fprintf(l->cfg->notes, "%s; retrying in %s (attempt %u)\n",
		        retry_cause(c->last_status, c->last_err, cause, sizeof(cause)), wait, c->attempt + 1);
	}
	if (heap_push(l->heap, now + d->wait_ns, id, NULL) != 0)
		finish_request(l, c, now, RETRY_REASON_BUDGET);
}

/*
 * The outcome of c's attempt: an answer with status (err NONE), or err.  A
 * status libcurl or the parser reports out of range counts as "other".
 */
static void set_outcome(struct vclient *c, enum retry_error err, long status)
{
	c->last_status = 0;
	c->last_err = err;
	if (err == RETRY_ERR_NONE && status >= 100 && status < RETRY_STATUS_MAX)
		c->last_status = (int)status;
	else if (err == RETRY_ERR_NONE)
		c->last_err = RETRY_ERR_OTHER;
}

/* One attempt of c ended (set_outcome done; c->wc.resp holds the headers read). */
static void attempt_ended(struct loop *l, struct vclient *c, uint64_t now)
{
	struct retry_input in = { 0 };
	struct retry_decision d;
	const char *retry_after = c->wc.resp.retry_after, *ratelimit = c->wc.resp.ratelimit;

	timeline_outcome(l->res.timeline, since_start(l, now), c->last_status);
	if (c->last_status > 0) {
		l->res.answered++;
		l->res.attempt_status[c->last_status]++;
	} else {
		l->res.attempt_errors[c->last_err]++;
	}
	if (l->sh->budget != NULL)
		retry_budget_on_result(l->sh->budget, c->last_status >= 200 && c->last_status < 400,
		                       c->attempt > 1);
	in.status = c->last_status;
	in.error = c->last_err;
	in.method = l->cfg->method;
	in.idempotent = -1;
	in.retry_after = retry_after[0] ? retry_after : NULL;
	in.ratelimit = ratelimit[0] ? ratelimit : NULL;
	in.now_wall_s = (int64_t)(clock_wall_ns() / NS_PER_SEC);
	in.attempt = c->attempt;
	in.elapsed_ns = now - c->first_ns;
	in.waited_ns = c->waited_ns;
	in.prev_wait_ns = c->prev_wait_ns;
	in.blind_waits = c->blind_waits;
	in.budget = l->sh->budget;
	in.now_ns = now;
	retry_decide(l->cfg->policy, &in, &l->rng, &d);
	if (d.retry)
		schedule_retry(l, c, now, &d);
	else
		finish_request(l, c, now, d.reason);
}

/* One curl attempt of c ended with rc. */
static void on_attempt_done(struct loop *l, struct vclient *c, CURLcode rc, uint64_t now)
{
	long code = 0;

	if (rc == CURLE_OK && curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &code) != CURLE_OK)
		code = 0;
	set_outcome(c, rc == CURLE_OK ? RETRY_ERR_NONE : hammer_curl_error(rc), code);
	attempt_ended(l, c, now);
}

/* ---- the own HTTP/1.1 path ---- */

static void dl_push(struct loop *l, int which, uint32_t id, uint64_t due)
{
	struct dlist *d = &l->dl[which];
	struct dlink *k = &l->clients[id].dl[which];

	k->due = due;
	k->prev = d->tail;
	k->next = NO_ID;
	k->in = true;
	if (d->tail != NO_ID)
		l->clients[d->tail].dl[which].next = id;
	else
		d->head = id;
	d->tail = id;
}

static void dl_remove(struct loop *l, int which, uint32_t id)
{
	struct dlist *d = &l->dl[which];
	struct dlink *k = &l->clients[id].dl[which];

	if (!k->in)
		return;
	if (k->prev != NO_ID)
		l->clients[k->prev].dl[which].next = k->next;
	else
		d->head = k->next;
	if (k->next != NO_ID)
		l->clients[k->next].dl[which].prev = k->prev;
	else
		d->tail = k->prev;
	k->in = false;
}

/* Earliest deadline of a list, or UINT64_MAX. */
static uint64_t dl_due(const struct loop *l, int which)
{
	uint32_t h = l->dl[which].head;

	return h == NO_ID ? UINT64_MAX : l->clients[h].dl[which].due;
}

static uint64_t wire_tag(uint32_t server, uint32_t id)
{
	return WIRE_TAG | (uint64_t)server << 32 | id;
}

static uint32_t client_id(const struct loop *l, const struct vclient *c)
{
	return (uint32_t)(c - l->clients);
}

/* Keep c in the connect-deadline list exactly while it is connecting. */
static void sync_connect(struct loop *l, struct vclient *c, uint64_t now)
{
	uint32_t id = client_id(l, c);
	bool connecting = wireconn_connecting(&c->wc);

	if (connecting && !c->dl[DL_CONNECT].in && l->cfg->connect_timeout_ns)
		dl_push(l, DL_CONNECT, id, now + l->cfg->connect_timeout_ns);
	else if (!connecting)
		dl_remove(l, DL_CONNECT, id);
}

/* A wire attempt of c ended: an answer (err NONE) or err. */
static void wire_end(struct loop *l, struct vclient *c, enum retry_error err, uint64_t now)
{
	struct wire_resp *r = &c->wc.resp;
	uint32_t id = client_id(l, c);

	dl_remove(l, DL_ATTEMPT, id);
	dl_remove(l, DL_CONNECT, id);
	if (err != RETRY_ERR_NONE) {
		/* headers of an answer that broke off are not the server's word */
		r->retry_after[0] = '\0';
		r->ratelimit[0] = '\0';
	}
	set_outcome(c, err, r->status);
	attempt_ended(l, c, now);
}

/*
 * c's next request goes to another server: keep the idle connection to the
 * old one for later (while descriptors allow) and take the new one's.
 */
static void switch_server(struct loop *l, struct vclient *c)
{
	int fd = wireconn_park(&c->wc);

	if (fd >= 0 && l->nparked >= l->sh->park_max) {
		epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
		close(fd);
		fd = -1;
	}
	l->nparked += fd >= 0;
	c->parked[c->wc_server] = fd;
	fd = c->parked[c->server];
	l->nparked -= fd >= 0;
	wireconn_adopt(&c->wc, fd);
	c->parked[c->server] = -1;
	c->wc_server = c->server;
}

/*
 * Send c's attempt.  An attempt that fails as it begins is queued, not
 * ended here: ending it may begin the next one, and against a dead server
 * that would recurse once per request.
 */
static void wire_begin(struct loop *l, struct vclient *c, uint64_t now)
{
	uint32_t id = client_id(l, c);
	enum retry_error err = RETRY_ERR_OTHER;
	enum wireconn_result r;

	dl_push(l, DL_ATTEMPT, id, now + l->cfg->timeout_ns);
	if (c->wc_server != c->server)
		switch_server(l, c);
	r = wireconn_begin(&c->wc, &l->sh->targets[c->server], l->epfd, wire_tag(c->server, id), &err);
	if (r == WIRECONN_FAILED) {
		c->last_err = err;
		l->failq[(l->fq_head + l->fq_n) % l->part.clients] = id;
		l->fq_n++;
		return;
	}
	sync_connect(l, c, now);
}

/* End the attempts that failed as they began. */
static void wire_failed_drain(struct loop *l, uint64_t now)
{
	uint32_t n = l->fq_n;

	/* only those queued so far: the ones these start are for the next pass */
	while (n-- > 0) {
		uint32_t id = l->failq[l->fq_head];

		l->fq_head = (l->fq_head + 1) % l->part.clients;
		l->fq_n--;
		wire_end(l, &l->clients[id], l->clients[id].last_err, now);
	}
}

static void wire_event(struct loop *l, uint64_t tag, uint64_t now)
{
	uint32_t id = (uint32_t)tag, server = (uint32_t)(tag >> 32) & 0xffff;
	struct vclient *c = &l->clients[id];
	enum retry_error err = RETRY_ERR_OTHER;
	enum wireconn_result r;

	if (server != c->wc_server) {
		/* a parked connection to another server: the server closed it */
		epoll_ctl(l->epfd, EPOLL_CTL_DEL, c->parked[server], NULL);
		close(c->parked[server]);
		c->parked[server] = -1;
		l->nparked--;
		return;
	}
	if (c->state != CLIENT_ACTIVE) {
		/* a kept-alive connection between requests: the server closed it */
		wireconn_close(&c->wc, l->epfd);
		return;
	}
	r = wireconn_event(&c->wc, &l->sh->targets[c->server], l->epfd, wire_tag(server, id), l->rbuf,
	                   WIRE_BUF, &err);
	if (r == WIRECONN_DONE)
		wire_end(l, c, RETRY_ERR_NONE, now);
	else if (r == WIRECONN_FAILED)
		wire_end(l, c, err, now);
	else
		sync_connect(l, c, now);
}

/* Time out the attempts (and connects) whose deadline passed. */
static void wire_expire(struct loop *l, uint64_t now)
{
	for (int which = DL_ATTEMPT; which <= DL_CONNECT; which++) {
		while (dl_due(l, which) <= now) {
			struct vclient *c = &l->clients[l->dl[which].head];

			wireconn_close(&c->wc, l->epfd);
			wire_end(l, c, RETRY_ERR_TIMEOUT, now);
		}
	}
}

static void backlog_push(struct loop *l, uint64_t intended)
{
	if (l->bl_n == l->bl_cap) {
		uint32_t ncap = l->bl_cap ? l->bl_cap * 2 : 256;
		uint64_t *nb;

		if (ncap > BACKLOG_MAX || (nb = malloc(sizeof(*nb) * ncap)) == NULL) {
			l->res.dropped++;
			return;
		}
		for (uint32_t i = 0; i < l->bl_n; i++)
			nb[i] = l->backlog[(l->bl_head + i) % l->bl_cap];
		free(l->backlog);
		l->backlog = nb;
		l->bl_head = 0;
		l->bl_cap = ncap;
	}
	l->backlog[(l->bl_head + l->bl_n) % l->bl_cap] = intended;
	l->bl_n++;
}

static void next_request(struct loop *l, struct vclient *c, uint64_t now)
{
	if (l->part.rate > 0) {
		if (l->bl_n > 0) {
			uint64_t intended = l->backlog[l->bl_head];

			l->bl_head = (l->bl_head + 1) % l->bl_cap;
			l->bl_n--;
			start_request(l, c, intended, now);
			return;
		}
	} else if (l->started < l->part.requests && (l->sh->end_ns == 0 || now < l->sh->end_ns)) {
		l->started++;
		start_request(l, c, now, now);
		return;
	}
	c->state = CLIENT_IDLE;
	l->free_ids[l->nfree++] = (uint32_t)(c - l->clients);
	l->active--;
}

/* ---- timers ---- */

static uint64_t next_arrival_gap(struct loop *l)
{
	double mean = 1e9 / l->part.rate;

	if (l->cfg->poisson)
		return (uint64_t)(-log(1.0 - prng_double(&l->rng)) * mean);
	return 0;
}

/* An open-loop arrival is due: give it a client or queue it, and plan the next. */
static void on_arrival(struct loop *l, uint64_t due, uint64_t now)
{
	uint64_t next;

	if (l->nfree > 0) {
		struct vclient *c = &l->clients[l->free_ids[--l->nfree]];

		l->active++;
		start_request(l, c, due, now);
	} else {
		backlog_push(l, due);
	}
	l->arrivals++;
	if (l->arrivals >= l->part.requests)
		return;
	if (l->cfg->poisson)
		next = due + next_arrival_gap(l);
	else
		next = l->sh->start_ns + l->part.phase_ns +
		       (uint64_t)((double)l->arrivals * 1e9 / l->part.rate);
	if (l->sh->end_ns == 0 || next < l->sh->end_ns)
		heap_push(l->heap, next, ARRIVAL_ID, NULL);
}

static void on_client_timer(struct loop *l, struct vclient *c, uint64_t due, uint64_t now)
{
	if (c->attempt == 0) {
		start_request(l, c, due, now);
		return;
	}
	if (l->sh->budget != NULL && !retry_budget_spend(l->sh->budget, now, c->last_err)) {
		l->res.budget_refused++;
		finish_request(l, c, now, RETRY_REASON_BUDGET);
		return;
	}
	start_attempt(l, c, now);
}

static void fire_timers(struct loop *l)
{
	struct heap_entry t;
	uint64_t now = clock_monotonic_ns();

	while (heap_peek(l->heap, &t) && t.due_ns <= now) {
		heap_pop(l->heap, &t);
		/* the start instant fires every client at once by design: only waits are timed */
		if (t.id == ARRIVAL_ID || l->clients[t.id].attempt > 0)
			histogram_record(l->res.lateness, now - t.due_ns);
		if (t.id == ARRIVAL_ID)
			on_arrival(l, t.due_ns, now);
		else
			on_client_timer(l, &l->clients[t.id], t.due_ns, now);
		now = clock_monotonic_ns();
	}
}

static bool timer_due(const struct loop *l)
{
	struct heap_entry t;

	return heap_peek(l->heap, &t) && t.due_ns <= clock_monotonic_ns();
}

/* Point the timerfd at the heap's earliest due time. */
static void arm_timerfd(struct loop *l)
{
	struct heap_entry t;
	struct itimerspec its = { 0 };
	uint64_t due = heap_peek(l->heap, &t) ? t.due_ns : 0;

	if (due == l->tfd_armed)
		return;
	if (due != 0) {
		its.it_value.tv_sec = (time_t)(due / NS_PER_SEC);
		its.it_value.tv_nsec = (long)(due % NS_PER_SEC);
	}
	timerfd_settime(l->tfd, TFD_TIMER_ABSTIME, &its, NULL);
	l->tfd_armed = due;
}

/* ---- the loop ---- */

static void drain_shard(struct loop *l, struct shard *sh)
{
	CURLMsg *msg;
	int left;

	while ((msg = curl_multi_info_read(sh->multi, &left)) != NULL) {
		struct vclient *c = NULL;
		CURL *e = msg->easy_handle;
		CURLcode rc = msg->data.result;

		if (msg->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&c);
		curl_multi_remove_handle(sh->multi, e);
		on_attempt_done(l, c, rc, clock_monotonic_ns());
	}
}

static void curl_timeout_if_due(struct loop *l)
{
	uint64_t now = clock_monotonic_ns();
	int running;

	for (uint32_t i = 0; i < l->nshards; i++) {
		struct shard *sh = &l->shards[i];

		if (sh->curl_due_ns > now)
			continue;
		sh->curl_due_ns = UINT64_MAX;
		curl_multi_socket_action(sh->multi, CURL_SOCKET_TIMEOUT, 0, &running);
		drain_shard(l, sh);
		if (timer_due(l))
			fire_timers(l);
		now = clock_monotonic_ns();
	}
}

static int wait_ms(const struct loop *l)
{
	uint64_t now = clock_monotonic_ns(), until = now + CANCEL_POLL_MS * NS_PER_MS;

	for (uint32_t i = 0; i < l->nshards; i++)
		if (l->shards[i].curl_due_ns < until)
			until = l->shards[i].curl_due_ns;
	if (l->sh->end_ns != 0 && l->sh->end_ns < until)
		until = l->sh->end_ns;
	if (l->sh->targets != NULL) {
		if (l->fq_n > 0)
			return 0;
		for (int which = DL_ATTEMPT; which <= DL_CONNECT; which++)
			if (dl_due(l, which) < until)
				until = dl_due(l, which);
	}
	if (until <= now)
		return 0;
	return (int)((until - now + NS_PER_MS - 1) / NS_PER_MS);
}

static void poll_once(struct loop *l)
{
	struct epoll_event ev[MAX_EVENTS];
	int n = epoll_wait(l->epfd, ev, MAX_EVENTS, wait_ms(l)), running;

	for (int i = 0; i < n; i++) {
		int mask = 0;

		struct shard *sh;
		int fd = (int)(uint32_t)ev[i].data.u64;

		if (ev[i].data.u64 == (uint64_t)(uint32_t)l->tfd) {
			uint64_t ticks;

			if (read(l->tfd, &ticks, sizeof(ticks)) < 0)
				ticks = 0;
			l->tfd_armed = 0;
			continue;
		}
		if (ev[i].data.u64 & WIRE_TAG) {
			wire_event(l, ev[i].data.u64, clock_monotonic_ns());
			if (timer_due(l))
				fire_timers(l);
			continue;
		}
		mask |= (ev[i].events & EPOLLIN) ? CURL_CSELECT_IN : 0;
		mask |= (ev[i].events & EPOLLOUT) ? CURL_CSELECT_OUT : 0;
		mask |= (ev[i].events & (EPOLLERR | EPOLLHUP)) ? CURL_CSELECT_ERR : 0;
		sh = &l->shards[ev[i].data.u64 >> 32];
		curl_multi_socket_action(sh->multi, fd, mask, &running);
		drain_shard(l, sh);
		/* a big batch of socket work must not hold back a due timer */
		if (timer_due(l))
			fire_timers(l);
	}
}

static bool should_stop(struct loop *l)
{
	if (l->cfg->cancel != NULL && atomic_load(l->cfg->cancel) != 0) {
		l->res.interrupted = true;
		return true;
	}
	if (l->sh->end_ns != 0 && clock_monotonic_ns() >= l->sh->end_ns)
		return true;
	return l->active == 0 && heap_size(l->heap) == 0 && l->bl_n == 0;
}

static void schedule_first(struct loop *l)
{
	if (l->part.rate > 0) {
		if (l->part.requests > 0)
			heap_push(l->heap, l->sh->start_ns + l->part.phase_ns, ARRIVAL_ID, NULL);
		return;
	}
	while (l->nfree > 0 && l->started < l->part.requests) {
		uint32_t id = l->free_ids[--l->nfree];

		l->clients[id].state = CLIENT_WAITING;
		l->active++;
		l->started++;
		heap_push(l->heap, l->sh->start_ns, id, NULL);
	}
}

void loop_run(struct loop *l)
{
	schedule_first(l);
	while (!should_stop(l)) {
		fire_timers(l);
		if (l->sh->targets != NULL) {
			wire_failed_drain(l, clock_monotonic_ns());
			wire_expire(l, clock_monotonic_ns());
		} else {
			/* transfers finish only inside socket_action, and each call drains its shard */
			curl_timeout_if_due(l);
		}
		if (should_stop(l))
			break;
		arm_timerfd(l);
		poll_once(l);
	}
	l->res.unfinished = l->active + l->bl_n;
	l->res.wall_ns = since_start(l, clock_monotonic_ns());
	atomic_store(&l->finished, true);
}
