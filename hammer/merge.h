#ifndef RATELAB_MERGE_H
#define RATELAB_MERGE_H

/*
 * `ratelab merge redis://HOST:PORT/RUNID` (a joined run's results, as node 0
 * merges them) or `ratelab merge FILE.json...` (--json results of separate
 * runs, laid on their absolute start times; refused when the starts differ
 * by more than --max-skew).  argv[0] is "merge".  Returns the exit code:
 * 0 merged, 2 usage or results that cannot be merged, 3 --expect failed
 * (an incomplete result fails it), 4 Redis unreachable or no such run.
 */
int merge_main(int argc, char **argv);

#endif
