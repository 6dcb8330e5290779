#include "hammer/verify.h"

#include <stdio.h>

/* Placeholder until the subcommand lands; replaced by its real entry point. */
int verify_main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "ratelab verify: not built yet\n");
	return 2;
}
