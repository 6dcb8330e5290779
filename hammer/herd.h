#ifndef RATELAB_HAMMER_HERD_H
#define RATELAB_HAMMER_HERD_H

/* Entry point of 'ratelab herd'.  argv[0] is "herd".  Returns the exit code. */
int herd_main(int argc, char **argv);

#endif
