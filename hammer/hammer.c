#include "hammer/hammer.h"

#include <stdio.h>

/* Placeholder until the subcommand lands; replaced by its real entry point. */
int hammer_main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "ratelab hammer: not built yet\n");
	return 2;
}
