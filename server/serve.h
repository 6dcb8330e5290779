#ifndef RATELAB_SERVER_SERVE_H
#define RATELAB_SERVER_SERVE_H

/* Entry point of 'ratelab serve'.  argv[0] is "serve".  Returns the exit code. */
int serve_main(int argc, char **argv);

#endif
