/* The OCC workload: read the record, write it back under If-Match. */
#include "lab/herd_occ.h"

#include <stdio.h>

enum occ_step { OCC_READ, OCC_WRITE };

enum { SHAPE_GET, SHAPE_PUT };

static const struct workload_shape OCC_SHAPES[] = {
	[SHAPE_GET] = { "GET", "/occ", NULL },
	[SHAPE_PUT] = { "PUT", "/occ", "{}" },
};

struct occ_state {
	enum occ_step step;
	char if_match[96];   /* "If-Match: <the ETag read>" */
};

static void occ_begin(void *state, struct workload_call *call)
{
	struct occ_state *s = state;

	s->step = OCC_READ;
	call->shape = SHAPE_GET;
	call->nextra = 0;
}

static enum workload_step occ_answered(void *state, const struct workload_answer *a, struct workload_call *call)
{
	struct occ_state *s = state;

	if (s->step != OCC_READ || a->status < 200 || a->status >= 300 || a->etag == NULL)
		return WORKLOAD_END;
	snprintf(s->if_match, sizeof(s->if_match), "If-Match: %s", a->etag);
	s->step = OCC_WRITE;
	call->shape = SHAPE_PUT;
	call->nextra = 1;
	call->extra[0] = s->if_match;
	return WORKLOAD_NEXT;
}

const struct workload_ops HERD_OCC = {
	.name = "occ",
	.shapes = OCC_SHAPES,
	.nshapes = sizeof(OCC_SHAPES) / sizeof(OCC_SHAPES[0]),
	.state_size = sizeof(struct occ_state),
	.begin = occ_begin,
	.answered = occ_answered,
};
