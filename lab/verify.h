#ifndef RATELAB_VERIFY_H
#define RATELAB_VERIFY_H

/* Entry point of 'ratelab verify'.  argv[0] is "verify".  Returns the exit code. */
int verify_main(int argc, char **argv);

#endif
