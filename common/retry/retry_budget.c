/* Client-wide retry limiters: the seed-001 ratio budget, the AWS retry quota, gRPC throttling. */
#include "common/retry/retry.h"

#include <pthread.h>
#include <stdlib.h>

#define TENTHS 10

struct retry_budget {
	pthread_mutex_t lock;
	struct retry_budget_params p;
	/* RATIO: first attempts and retries per tenth of the window. */
	uint64_t slot_len_ns;
	uint64_t slot_epoch[TENTHS];  /* which tenth (now / slot_len) each slot holds */
	uint64_t firsts[TENTHS];
	uint64_t retries[TENTHS];
	/* AWS and GRPC. */
	double tokens;
	uint64_t refused;
};

struct retry_budget *retry_budget_new(const struct retry_budget_params *bp, uint64_t now_ns)
{
	struct retry_budget *b;

	if (bp == NULL || bp->kind == BUDGET_NONE)
		return NULL;
	b = calloc(1, sizeof(*b));
	if (b == NULL)
		return NULL;
	if (pthread_mutex_init(&b->lock, NULL) != 0)
		goto free_b;
	b->p = *bp;
	b->slot_len_ns = bp->window_ns >= TENTHS ? bp->window_ns / TENTHS : 1;
	for (int i = 0; i < TENTHS; i++)
		b->slot_epoch[i] = now_ns / b->slot_len_ns;
	b->tokens = bp->max_tokens;
	return b;
free_b:
	free(b);
	return NULL;
}

void retry_budget_free(struct retry_budget *b)
{
	if (b == NULL)
		return;
	pthread_mutex_destroy(&b->lock);
	free(b);
}

/* The slot for now, emptied first when it last held an older tenth.  Lock held. */
static unsigned slot_now(struct retry_budget *b, uint64_t now_ns)
{
	uint64_t epoch = now_ns / b->slot_len_ns;
	unsigned i = (unsigned)(epoch % TENTHS);

	if (b->slot_epoch[i] != epoch) {
		b->slot_epoch[i] = epoch;
		b->firsts[i] = 0;
		b->retries[i] = 0;
	}
	return i;
}

/* RATIO: retries still allowed now: ratio * firsts + min/s * window - retries.  Lock held. */
static double ratio_allowance(struct retry_budget *b, uint64_t now_ns)
{
	uint64_t epoch = now_ns / b->slot_len_ns;
	double firsts = 0, retries = 0;

	slot_now(b, now_ns);
	for (unsigned i = 0; i < TENTHS; i++) {
		/* Only the last TENTHS tenths count; older slots are stale. */
		if (b->slot_epoch[i] + TENTHS <= epoch || b->slot_epoch[i] > epoch)
			continue;
		firsts += (double)b->firsts[i];
		retries += (double)b->retries[i];
	}
	return b->p.ratio * firsts + b->p.min_per_sec * ((double)b->p.window_ns / 1e9) - retries;
}

/* Allowed now, lock held.  The 1e-9 absorbs rounding in ratio * firsts. */
static bool allowed_locked(struct retry_budget *b, uint64_t now_ns, enum retry_error err)
{
	switch (b->p.kind) {
	case BUDGET_RATIO:
		return ratio_allowance(b, now_ns) >= 1.0 - 1e-9;
	case BUDGET_AWS_QUOTA:
		return b->tokens >= (err == RETRY_ERR_TIMEOUT ? b->p.timeout_cost : b->p.retry_cost);
	case BUDGET_GRPC:
		return b->tokens > b->p.max_tokens / 2;
	case BUDGET_NONE:
		break;
	}
	return true;
}

void retry_budget_on_first(struct retry_budget *b, uint64_t now_ns)
{
	if (b == NULL || b->p.kind != BUDGET_RATIO)
		return;
	pthread_mutex_lock(&b->lock);
	b->firsts[slot_now(b, now_ns)]++;
	pthread_mutex_unlock(&b->lock);
}

bool retry_budget_check(struct retry_budget *b, uint64_t now_ns, enum retry_error err)
{
	bool ok;

	if (b == NULL)
		return true;
	pthread_mutex_lock(&b->lock);
	ok = allowed_locked(b, now_ns, err);
	pthread_mutex_unlock(&b->lock);
	return ok;
}

bool retry_budget_spend(struct retry_budget *b, uint64_t now_ns, enum retry_error err)
{
	bool ok;

	if (b == NULL)
		return true;
	pthread_mutex_lock(&b->lock);
	ok = allowed_locked(b, now_ns, err);
	if (!ok)
		b->refused++;
	else if (b->p.kind == BUDGET_RATIO)
		b->retries[slot_now(b, now_ns)]++;
	else if (b->p.kind == BUDGET_AWS_QUOTA)
		b->tokens -= err == RETRY_ERR_TIMEOUT ? b->p.timeout_cost : b->p.retry_cost;
	pthread_mutex_unlock(&b->lock);
	return ok;
}

/*
 * AWS: a success gives back retry_cost when it was a retry, 1 token when it
 * was a first attempt (the SDKs' NO_RETRY_INCREMENT).  gRPC: a success adds
 * token_ratio, a failure takes 1.  Both are clamped to 0..max_tokens.
 */
void retry_budget_on_result(struct retry_budget *b, bool success, bool was_retry)
{
	if (b == NULL)
		return;
	pthread_mutex_lock(&b->lock);
	if (b->p.kind == BUDGET_AWS_QUOTA && success)
		b->tokens += was_retry ? b->p.retry_cost : 1.0;
	else if (b->p.kind == BUDGET_GRPC)
		b->tokens += success ? b->p.token_ratio : -1.0;
	if (b->tokens > b->p.max_tokens)
		b->tokens = b->p.max_tokens;
	if (b->tokens < 0)
		b->tokens = 0;
	pthread_mutex_unlock(&b->lock);
}

void retry_budget_note_refused(struct retry_budget *b)
{
	if (b == NULL)
		return;
	pthread_mutex_lock(&b->lock);
	b->refused++;
	pthread_mutex_unlock(&b->lock);
}

uint64_t retry_budget_refused(struct retry_budget *b)
{
	uint64_t n;

	if (b == NULL)
		return 0;
	pthread_mutex_lock(&b->lock);
	n = b->refused;
	pthread_mutex_unlock(&b->lock);
	return n;
}

double retry_budget_tokens(struct retry_budget *b, uint64_t now_ns)
{
	double t;

	if (b == NULL)
		return 0;
	pthread_mutex_lock(&b->lock);
	t = b->p.kind == BUDGET_RATIO ? ratio_allowance(b, now_ns) : b->tokens;
	pthread_mutex_unlock(&b->lock);
	return t;
}

void retry_budget_set_tokens(struct retry_budget *b, double tokens)
{
	if (b == NULL || b->p.kind == BUDGET_RATIO)
		return;
	pthread_mutex_lock(&b->lock);
	b->tokens = tokens < 0 ? 0 : tokens > b->p.max_tokens ? b->p.max_tokens : tokens;
	pthread_mutex_unlock(&b->lock);
}
