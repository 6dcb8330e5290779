#ifndef RATELAB_HAMMER_HAMMER_H
#define RATELAB_HAMMER_HAMMER_H

#include <stdint.h>
#include <stddef.h>

#include "hammer/sim.h"

/*
 * Where `hammer --sim` gets its server model: the hammer knows none itself
 * (lab/simserver.h builds one from serve's own flags).
 */
struct hammer_sim_models {
	const struct sim_model_ops *ops;
	/* A model from --serve's flags (NULL: serve's defaults) drawing from seed; NULL with a reason in err. */
	void *(*create)(const char *serve_flags, uint64_t seed, char *err, size_t errlen);
	void (*destroy)(void *model);
};

/*
 * Entry point of 'ratelab hammer'.  argv[0] is "hammer".  Returns the exit
 * code.  models: what --sim runs against; NULL: --sim is refused.
 */
int hammer_main(int argc, char **argv, const struct hammer_sim_models *models);

#endif
