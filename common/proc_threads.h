#ifndef RATELAB_COMMON_PROC_THREADS_H
#define RATELAB_COMMON_PROC_THREADS_H

#include <stdio.h>
#include <sys/types.h>

/*
 * What each thread of process pid is doing, from /proc, onto f: per thread
 * " TID:NAME STATE WAIT;", where STATE is its state letter (S asleep, R
 * running, D held in the kernel, Z ended), followed by "(exiting)" once the
 * kernel tears it down, and WAIT the kernel function it sleeps in ("-" for
 * none); a D thread's kernel stack follows as " [f1 < f2 < ...]" where /proc
 * lets us read it (root).  For a process that outlived its bound: a wait of
 * its own reads apart from one the machine held it in.  Returns the number
 * of threads described (0: pid is gone).
 */
int proc_threads_describe(pid_t pid, FILE *f);

#endif
