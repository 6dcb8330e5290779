#include "lab/herd_run.h"

#include <curl/curl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/clock.h"
#include "common/prng.h"
#include "hammer/engine.h"
#include "common/heap.h"

enum phase { PHASE_GET, PHASE_PUT };

struct client {
	CURL *easy;
	struct prng rng;
	struct curl_slist *hdrs;
	enum phase phase;
	bool done;
	bool retrying;           /* the attempt under way is a retry */
	unsigned attempt;        /* operations finished without success */
	enum retry_error last_err;  /* of the last failed attempt, for the budget */
	unsigned blind_waits;
	uint64_t first_ns;       /* start of its first attempt */
	uint64_t started_ns;     /* start of the request under way */
	uint64_t waited_ns;
	uint64_t prev_wait_ns;
	char etag[64];
	char retry_after[64];
	char ratelimit[128];
};

struct run {
	const struct herd_run_config *cfg;
	struct herd_result *res;
	struct client *cl;
	struct heap *heap;
	CURLM *multi;
	char url[512];
	uint64_t t0;
	uint32_t active;
	uint32_t finished;
	uint32_t cap_bins;
	struct retry_budget *budget;   /* the policy's, or NULL */
};

static enum retry_error hammer_curl_error(CURLcode rc)
{
	switch (rc) {
	case CURLE_OK:
		return RETRY_ERR_NONE;
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
		return RETRY_ERR_REFUSED;
	case CURLE_OPERATION_TIMEDOUT:
		return RETRY_ERR_TIMEOUT;
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
		return RETRY_ERR_RESET;
	default:
		return RETRY_ERR_OTHER;
	}
}

static size_t discard(char *p, size_t sz, size_t n, void *ud)
{
	(void)p;
	(void)ud;
	return sz * n;
}

/* Copy header `name` of line h into dst, trimmed; false when the line is another header. */
static bool header_value(const char *h, size_t len, const char *name, char *dst, size_t dlen)
{
	size_t nl = strlen(name), i, j = 0;

	if (len <= nl || strncasecmp(h, name, nl) != 0 || h[nl] != ':')
		return false;
	for (i = nl + 1; i < len && (h[i] == ' ' || h[i] == '\t'); i++)
		;
	while (i < len && h[i] != '\r' && h[i] != '\n' && j + 1 < dlen)
		dst[j++] = h[i++];
	dst[j] = '\0';
	return true;
}

static size_t on_header(char *h, size_t sz, size_t n, void *ud)
{
	struct client *c = ud;
	size_t len = sz * n;

	if (!header_value(h, len, "ETag", c->etag, sizeof(c->etag)) &&
	    !header_value(h, len, "Retry-After", c->retry_after, sizeof(c->retry_after)))
		header_value(h, len, "RateLimit", c->ratelimit, sizeof(c->ratelimit));
	return len;
}

static int bins_grow(struct run *r, uint32_t need)
{
	struct herd_bin *nb;
	uint32_t cap = r->cap_bins ? r->cap_bins : 256;

	while (cap < need)
		cap *= 2;
	nb = realloc(r->res->bins, cap * sizeof(*nb));
	if (!nb)
		return -1;
	memset(nb + r->cap_bins, 0, (cap - r->cap_bins) * sizeof(*nb));
	r->res->bins = nb;
	r->cap_bins = cap;
	return 0;
}

/* Count one finished request in the bin of its start time. */
static void bin_count(struct run *r, const struct client *c, int status)
{
	uint64_t off = c->started_ns - r->t0;
	uint32_t i = (uint32_t)(off / HERD_BIN_NS);
	struct herd_bin *b;

	if (i >= r->cap_bins && bins_grow(r, i + 1) != 0)
		return;
	b = &r->res->bins[i];
	if (status >= 200 && status < 300)
		b->ok++;
	else if (status == 429 || status == 503)
		b->rejected++;
	else if (status == 409)
		b->conflict++;
	else
		b->other++;
	if (c->retrying) {
		b->retries++;
		r->res->retries++;
	}
	if (i + 1 > r->res->nbins)
		r->res->nbins = i + 1;
}

static int start_request(struct run *r, struct client *c, uint64_t now)
{
	bool put = c->phase == PHASE_PUT;
	char h[96];

	curl_slist_free_all(c->hdrs);
	c->hdrs = NULL;
	if (put) {
		snprintf(h, sizeof(h), "If-Match: %s", c->etag);
		c->hdrs = curl_slist_append(NULL, h);
	}
	c->retry_after[0] = c->ratelimit[0] = '\0';
	if (!put)
		c->etag[0] = '\0';
	if (curl_easy_setopt(c->easy, CURLOPT_URL, r->url) != CURLE_OK ||
	    curl_easy_setopt(c->easy, CURLOPT_CUSTOMREQUEST, put ? "PUT" : NULL) != CURLE_OK ||
	    curl_easy_setopt(c->easy, CURLOPT_POSTFIELDS, put ? "{}" : NULL) != CURLE_OK ||
	    curl_easy_setopt(c->easy, CURLOPT_HTTPGET, put ? 0L : 1L) != CURLE_OK ||
	    curl_easy_setopt(c->easy, CURLOPT_HTTPHEADER, c->hdrs) != CURLE_OK)
		return -1;
	c->started_ns = now;
	if (c->first_ns == 0)
		c->first_ns = now;
	if (curl_multi_add_handle(r->multi, c->easy) != CURLM_OK)
		return -1;
	r->active++;
	r->res->calls++;
	return 0;
}

static void client_finish(struct run *r, struct client *c, bool ok, uint64_t now)
{
	c->done = true;
	r->finished++;
	if (ok) {
		r->res->successes++;
		if (now - r->t0 > r->res->completion_ns)
			r->res->completion_ns = now - r->t0;
	} else {
		r->res->failures++;
	}
}

/* The operation failed: ask the policy engine whether and when to go again. */
static void client_failed(struct run *r, struct client *c, int status, CURLcode rc, uint64_t now)
{
	struct retry_input in = { 0 };
	struct retry_decision d;

	c->attempt++;
	in.status = rc == CURLE_OK ? status : 0;
	in.error = hammer_curl_error(rc);
	c->last_err = in.error;
	in.budget = r->budget;
	in.method = c->phase == PHASE_PUT ? "PUT" : "GET";
	in.idempotent = -1;
	in.retry_after = c->retry_after[0] ? c->retry_after : NULL;
	in.ratelimit = c->ratelimit[0] ? c->ratelimit : NULL;
	in.now_wall_s = (int64_t)(clock_wall_ns() / NS_PER_SEC);
	in.attempt = c->attempt;
	in.elapsed_ns = now - c->first_ns;
	in.waited_ns = c->waited_ns;
	in.prev_wait_ns = c->prev_wait_ns;
	in.blind_waits = c->blind_waits;
	in.now_ns = now;
	retry_decide(r->cfg->policy, &in, &c->rng, &d);
	if (!d.retry) {
		client_finish(r, c, false, now);
		return;
	}
	c->waited_ns += d.wait_ns;
	c->prev_wait_ns = d.wait_ns;
	c->blind_waits += d.blind ? 1 : 0;
	c->phase = PHASE_GET;
	c->retrying = true;
	if (heap_push(r->heap, now + d.wait_ns, (uint32_t)(c - r->cl), NULL) != 0)
		client_finish(r, c, false, now);
}

/* One request ended: success, the next step of the operation, or a retry decision. */
static void on_done(struct run *r, struct client *c, CURLcode rc, uint64_t now)
{
	long status = 0;

	curl_multi_remove_handle(r->multi, c->easy);
	r->active--;
	if (rc == CURLE_OK)
		curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &status);
	bin_count(r, c, rc == CURLE_OK ? (int)status : 0);
	if (r->budget != NULL)
		retry_budget_on_result(r->budget, rc == CURLE_OK && status >= 200 && status < 400, c->retrying);
	if (rc == CURLE_OK && status >= 200 && status < 300) {
		if (r->cfg->workload == HERD_WORKLOAD_OCC && c->phase == PHASE_GET && c->etag[0]) {
			c->phase = PHASE_PUT;
			if (start_request(r, c, now) != 0)
				client_finish(r, c, false, now);
			return;
		}
		client_finish(r, c, true, now);
		return;
	}
	client_failed(r, c, (int)status, rc, now);
}

static void drain(struct run *r)
{
	CURLMsg *m;
	int left;
	uint64_t now = clock_monotonic_ns();

	while ((m = curl_multi_info_read(r->multi, &left)) != NULL) {
		struct client *c = NULL;

		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&c);
		if (c)
			on_done(r, c, m->data.result, now);
	}
}

/* The budget's word on c's next attempt: a first one is counted, a retry is spent for or refused. */
static bool budget_allows(struct run *r, const struct client *c, uint64_t now)
{
	if (r->budget == NULL)
		return true;
	if (!c->retrying) {
		retry_budget_on_first(r->budget, now);
		return true;
	}
	return retry_budget_spend(r->budget, now, c->last_err);
}

/* Start every client whose timer is due; returns ms until the next one (capped at 50). */
static int start_due(struct run *r)
{
	struct heap_entry e;
	uint64_t now = clock_monotonic_ns();

	while (heap_peek(r->heap, &e) && e.due_ns <= now) {
		struct client *c = &r->cl[e.id];

		heap_pop(r->heap, &e);
		if (!budget_allows(r, c, now) || start_request(r, c, now) != 0)
			client_finish(r, c, false, now);
	}
	if (!heap_peek(r->heap, &e))
		return 50;
	return e.due_ns - now > 50 * NS_PER_MS ? 50 : (int)((e.due_ns - now) / NS_PER_MS);
}

static int client_init(struct run *r, struct client *c, uint32_t id)
{
	memset(c, 0, sizeof(*c));
	prng_seed(&c->rng, prng_stream_seed(r->cfg->seed, id));
	c->easy = curl_easy_init();
	if (!c->easy)
		return -1;
	curl_easy_setopt(c->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->easy, CURLOPT_PRIVATE, (char *)c);
	curl_easy_setopt(c->easy, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(c->easy, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c->easy, CURLOPT_HEADERDATA, c);
	curl_easy_setopt(c->easy, CURLOPT_TIMEOUT_MS, 10000L);
	curl_easy_setopt(c->easy, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
	return heap_push(r->heap, r->t0, id, NULL);
}

static void run_destroy(struct run *r)
{
	for (uint32_t i = 0; r->cl && i < r->cfg->clients; i++) {
		if (r->cl[i].easy) {
			curl_multi_remove_handle(r->multi, r->cl[i].easy);
			curl_easy_cleanup(r->cl[i].easy);
		}
		curl_slist_free_all(r->cl[i].hdrs);
	}
	free(r->cl);
	heap_free(r->heap);
	retry_budget_free(r->budget);
	if (r->multi)
		curl_multi_cleanup(r->multi);
}

static int run_setup(struct run *r, char *err, size_t errlen)
{
	const struct herd_run_config *c = r->cfg;

	snprintf(r->url, sizeof(r->url), "%s%s", c->url,
	         c->workload == HERD_WORKLOAD_OCC ? "/occ" : c->path);
	r->cl = calloc(c->clients, sizeof(*r->cl));
	r->heap = heap_new(c->clients, false);
	r->multi = curl_multi_init();
	if (!r->cl || !r->heap || !r->multi || bins_grow(r, 256) != 0) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	r->t0 = clock_monotonic_ns();
	if (c->policy->budget.kind != BUDGET_NONE &&
	    (r->budget = retry_budget_new(&c->policy->budget, r->t0)) == NULL) {
		snprintf(err, errlen, "cannot create the retry budget");
		return -1;
	}
	for (uint32_t i = 0; i < c->clients; i++) {
		if (client_init(r, &r->cl[i], i) != 0) {
			snprintf(err, errlen, "cannot set up client %u", i);
			return -1;
		}
	}
	return 0;
}

/* Clients still waiting or in flight when the run hits max_ns give up. */
static void give_up_rest(struct run *r)
{
	uint64_t now = clock_monotonic_ns();

	for (uint32_t i = 0; i < r->cfg->clients; i++)
		if (!r->cl[i].done)
			client_finish(r, &r->cl[i], false, now);
}

int herd_run(const struct herd_run_config *c, struct herd_result *out, char *err, size_t errlen)
{
	struct run r = { .cfg = c, .res = out };
	int rc = -1, running;
	uint64_t deadline;

	memset(out, 0, sizeof(*out));
	snprintf(out->policy, sizeof(out->policy), "%s", c->policy->name);
	out->clients = c->clients;
	if (run_setup(&r, err, errlen) != 0)
		goto destroy;
	deadline = r.t0 + c->max_ns;
	/* Bounded: the deadline ends it whatever the server does. */
	while (r.finished < c->clients && clock_monotonic_ns() < deadline) {
		int wait_ms = start_due(&r);

		if (curl_multi_perform(r.multi, &running) != CURLM_OK ||
		    curl_multi_poll(r.multi, NULL, 0, r.active ? wait_ms : wait_ms + 1, NULL) != CURLM_OK) {
			snprintf(err, errlen, "curl multi failed");
			goto destroy;
		}
		curl_multi_perform(r.multi, &running);
		drain(&r);
	}
	give_up_rest(&r);
	out->wall_ns = clock_monotonic_ns() - r.t0;
	herd_result_peaks(out);
	rc = 0;
destroy:
	run_destroy(&r);
	if (rc != 0)
		herd_result_destroy(out);
	return rc;
}

void herd_result_destroy(struct herd_result *r)
{
	free(r->bins);
	r->bins = NULL;
	r->nbins = 0;
}

uint32_t herd_bin_attempts(const struct herd_bin *b)
{
	return b->ok + b->rejected + b->conflict + b->other;
}

void herd_result_peaks(struct herd_result *r)
{
	const uint32_t w = (uint32_t)(HERD_PEAK_NS / HERD_BIN_NS);
	uint64_t att = 0, ret = 0;

	r->peak_attempts = r->peak_retries = 0;
	for (uint32_t i = 0; i < r->nbins; i++) {
		att += herd_bin_attempts(&r->bins[i]);
		ret += r->bins[i].retries;
		if (i >= w) {
			att -= herd_bin_attempts(&r->bins[i - w]);
			ret -= r->bins[i - w].retries;
		}
		if (att > r->peak_attempts)
			r->peak_attempts = att;
		if (ret > r->peak_retries)
			r->peak_retries = ret;
	}
}
