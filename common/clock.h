#ifndef RATELAB_CLOCK_H
#define RATELAB_CLOCK_H

#include <stdint.h>

#define NS_PER_US  1000ULL
#define NS_PER_MS  1000000ULL
#define NS_PER_SEC 1000000000ULL

/* CLOCK_MONOTONIC in nanoseconds.  Thread-safe. */
uint64_t clock_monotonic_ns(void);

/* CLOCK_REALTIME in nanoseconds since the epoch.  Thread-safe. */
uint64_t clock_wall_ns(void);

#endif
