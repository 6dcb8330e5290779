/* The plain workload: one call per attempt, always the run's own request. */
#include "hammer/workload.h"

static const struct workload_shape PLAIN_SHAPES[] = { { 0 } };

static void plain_begin(void *state, struct workload_call *call)
{
	(void)state;
	call->shape = 0;
	call->nextra = 0;
}

static enum workload_step plain_answered(void *state, const struct workload_answer *a, struct workload_call *call)
{
	(void)state;
	(void)a;
	(void)call;
	return WORKLOAD_END;
}

const struct workload_ops WORKLOAD_PLAIN = {
	.name = "request",
	.shapes = PLAIN_SHAPES,
	.nshapes = 1,
	.state_size = 0,
	.begin = plain_begin,
	.answered = plain_answered,
};
