#include "hammer/herd.h"

#include <stdio.h>

/* Placeholder until the subcommand lands; replaced by its real entry point. */
int herd_main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "ratelab herd: not built yet\n");
	return 2;
}
