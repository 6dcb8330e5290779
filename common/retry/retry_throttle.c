/* Client-side adaptive throttling (SRE book): counts over a bucketed sliding window. */
#include "common/retry/retry_throttle.h"

#include <pthread.h>
#include <stdlib.h>

struct retry_throttle {
	pthread_mutex_t lock;
	struct retry_throttle_params p;
	uint64_t slot_len_ns;
	uint64_t epoch[RETRY_THROTTLE_SLOTS];     /* which slot_len-long interval each bucket holds */
	uint64_t requests[RETRY_THROTTLE_SLOTS];
	uint64_t accepts[RETRY_THROTTLE_SLOTS];
	uint64_t rejected;                        /* local rejections, all time */
};

struct retry_throttle *retry_throttle_new(const struct retry_throttle_params *tp, uint64_t now_ns)
{
	struct retry_throttle *t;

	if (tp == NULL || tp->kind == RETRY_THROTTLE_NONE)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return NULL;
	if (pthread_mutex_init(&t->lock, NULL) != 0)
		goto free_t;
	t->p = *tp;
	t->slot_len_ns = tp->window_ns >= RETRY_THROTTLE_SLOTS ? tp->window_ns / RETRY_THROTTLE_SLOTS : 1;
	for (unsigned i = 0; i < RETRY_THROTTLE_SLOTS; i++)
		t->epoch[i] = now_ns / t->slot_len_ns;
	return t;
free_t:
	free(t);
	return NULL;
}

void retry_throttle_free(struct retry_throttle *t)
{
	if (t == NULL)
		return;
	pthread_mutex_destroy(&t->lock);
	free(t);
}

/* The bucket for now, emptied first when it held an older interval; -1 when
 * now is older than what the bucket holds (it has left the window).  Lock held. */
static int slot_now(struct retry_throttle *t, uint64_t now_ns)
{
	uint64_t epoch = now_ns / t->slot_len_ns;
	unsigned i = (unsigned)(epoch % RETRY_THROTTLE_SLOTS);

	if (t->epoch[i] > epoch)
		return -1;
	if (t->epoch[i] != epoch) {
		t->epoch[i] = epoch;
		t->requests[i] = 0;
		t->accepts[i] = 0;
	}
	return (int)i;
}

/* Sums over the buckets of the last RETRY_THROTTLE_SLOTS intervals.  Lock held. */
static void window_sums(const struct retry_throttle *t, uint64_t now_ns, uint64_t *req, uint64_t *acc)
{
	uint64_t epoch = now_ns / t->slot_len_ns;

	*req = *acc = 0;
	for (unsigned i = 0; i < RETRY_THROTTLE_SLOTS; i++) {
		if (t->epoch[i] > epoch || t->epoch[i] + RETRY_THROTTLE_SLOTS <= epoch)
			continue;
		*req += t->requests[i];
		*acc += t->accepts[i];
	}
}

/* max(0, (requests - K * accepts) / (requests + 1)).  Lock held. */
static double probability_locked(const struct retry_throttle *t, uint64_t now_ns)
{
	uint64_t req, acc;
	double p;

	window_sums(t, now_ns, &req, &acc);
	p = ((double)req - t->p.k * (double)acc) / ((double)req + 1.0);
	return p > 0 ? p : 0;
}

void retry_throttle_record(struct retry_throttle *t, uint64_t now_ns, bool accepted)
{
	int i;

	if (t == NULL)
		return;
	pthread_mutex_lock(&t->lock);
	i = slot_now(t, now_ns);
	if (i >= 0) {
		t->requests[i]++;
		t->accepts[i] += accepted ? 1 : 0;
	}
	pthread_mutex_unlock(&t->lock);
}

double retry_throttle_probability(struct retry_throttle *t, uint64_t now_ns)
{
	double p;

	if (t == NULL)
		return 0;
	pthread_mutex_lock(&t->lock);
	p = probability_locked(t, now_ns);
	pthread_mutex_unlock(&t->lock);
	return p;
}

bool retry_throttle_admit(struct retry_throttle *t, uint64_t now_ns, struct prng *rng)
{
	double u;
	bool admit;
	int i;

	if (t == NULL)
		return true;
	u = prng_double(rng);
	pthread_mutex_lock(&t->lock);
	admit = !(u < probability_locked(t, now_ns));
	if (!admit) {
		t->rejected++;
		i = slot_now(t, now_ns);
		if (i >= 0)
			t->requests[i]++;
	}
	pthread_mutex_unlock(&t->lock);
	return admit;
}

void retry_throttle_counts(struct retry_throttle *t, uint64_t now_ns, uint64_t *requests, uint64_t *accepts)
{
	if (t == NULL) {
		*requests = *accepts = 0;
		return;
	}
	pthread_mutex_lock(&t->lock);
	window_sums(t, now_ns, requests, accepts);
	pthread_mutex_unlock(&t->lock);
}

uint64_t retry_throttle_rejected(struct retry_throttle *t)
{
	uint64_t n;

	if (t == NULL)
		return 0;
	pthread_mutex_lock(&t->lock);
	n = t->rejected;
	pthread_mutex_unlock(&t->lock);
	return n;
}

bool retry_throttle_accepted(int status)
{
	switch (status) {
	case 0:
	case 429:
	case 502:
	case 503:
	case 504:
		return false;
	default:
		return status >= 100 && status < 600;
	}
}
