#include "hammer/cases.h"

#include <stdio.h>

/* Placeholder until the subcommand lands; replaced by its real entry point. */
int cases_main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "ratelab cases: not built yet\n");
	return 2;
}
