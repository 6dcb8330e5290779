#ifndef RATELAB_HAMMER_CASES_H
#define RATELAB_HAMMER_CASES_H

/* Entry point of 'ratelab cases'.  argv[0] is "cases".  Returns the exit code. */
int cases_main(int argc, char **argv);

#endif
