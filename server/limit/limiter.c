/* The limiter registry and parameter checks. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "server/limit/limiters.h"

static const struct limiter_ops *const LIMITERS[] = {
	&limiter_token_bucket_ops, &limiter_leaky_bucket_ops, &limiter_fixed_window_ops,
	&limiter_sliding_log_ops,  &limiter_sliding_window_ops, &limiter_gcra_ops,
	&limiter_concurrency_ops,  &limiter_layered_ops,       &limiter_none_ops,
};
#define NLIMITERS (sizeof(LIMITERS) / sizeof(LIMITERS[0]))

/* The limiter table named `name` (static, never freed), or NULL.  Thread-safe. */
const struct limiter_ops *limiter_find(const char *name)
{
	if (name == NULL)
		return NULL;
	for (size_t i = 0; i < NLIMITERS; i++)
		if (strcmp(LIMITERS[i]->name, name) == 0)
			return LIMITERS[i];
	return NULL;
}

/* The i-th limiter of the registry, or NULL past the last.  Thread-safe. */
const struct limiter_ops *limiter_at(size_t i)
{
	return i < NLIMITERS ? LIMITERS[i] : NULL;
}

/* A static string listing every limiter name.  Thread-safe. */
const char *limiter_names(void)
{
	return "token-bucket, leaky-bucket, fixed-window, sliding-log, sliding-window, gcra, "
	       "concurrency, layered, none";
}

/* limit * window (and burst * window) must fit the scaled arithmetic of limiters.h. */
static int check_product(const char *lname, const char *what, uint64_t n, uint64_t window_ns,
                         char *err, size_t errlen)
{
	if (n > LIMITER_SCALED_MAX / window_ns) {
		snprintf(err, errlen, "%s: %s %" PRIu64 " is too large for a %" PRIu64 " ns window",
		         lname, what, n, window_ns);
		return -1;
	}
	return 0;
}

int limiter_check_rate(const struct limiter_ops *ops, struct limiter_params *p, char *err, size_t errlen)
{
	const char *lname = ops->name;

	if (p->limit == 0) {
		snprintf(err, errlen, "%s: --limit must be >= 1 (got 0)", lname);
		return -1;
	}
	if (p->burst == 0)
		p->burst = p->limit;
	if (check_product(lname, "--limit", p->limit, p->window_ns, err, errlen) != 0 ||
	    check_product(lname, "--burst", p->burst, p->window_ns, err, errlen) != 0)
		return -1;
	return 0;
}

/*
 * Validate p for ops and fill defaults (window 1 s, then the limiter's own
 * rules); 0, or -1 with a one-line reason in err.  The limiters divide by
 * limit and window, so they must only see checked params.
 */
int limiter_params_check(const struct limiter_ops *ops, struct limiter_params *p, char *err, size_t errlen)
{
	if (ops == NULL || limiter_find(ops->name) != ops) {
		snprintf(err, errlen, "unknown limiter '%s' (known: %s)", ops != NULL ? ops->name : "(null)",
		         limiter_names());
		return -1;
	}
	if (p->nlayers > 0 && !ops->layered) {
		snprintf(err, errlen, "%s takes no layers (only layered does)", ops->name);
		return -1;
	}
	if (p->window_ns == 0)
		p->window_ns = NS_PER_SEC;
	return ops->check_params(ops, p, err, errlen);
}
