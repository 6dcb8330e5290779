#ifndef RATELAB_HAMMER_HAMMER_H
#define RATELAB_HAMMER_HAMMER_H

/* Entry point of 'ratelab hammer'.  argv[0] is "hammer".  Returns the exit code. */
int hammer_main(int argc, char **argv);

#endif
