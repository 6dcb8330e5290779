#ifndef RATELAB_VERSION_H
#define RATELAB_VERSION_H

/* The version of ratelab, in this one place: `ratelab --version` prints it. */
#define RATELAB_VERSION "0.5.0"

#endif
