#include "server/serve.h"

#include <stdio.h>

/* Placeholder until the subcommand lands; replaced by its real entry point. */
int serve_main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "ratelab serve: not built yet\n");
	return 2;
}
