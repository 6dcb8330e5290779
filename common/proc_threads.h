#ifndef RATELAB_COMMON_PROC_THREADS_H
#define RATELAB_COMMON_PROC_THREADS_H

#include <stdbool.h>
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

/*
 * True once every thread of pid is exiting (PF_EXITING) or a zombie: it has
 * ended, and only the kernel's teardown of it is left (on a busy machine that
 * can take seconds to minutes).  A main thread that ended alone
 * (pthread_exit) while others work on is not.  With status, also pid's exit
 * status in waitpid's form (field 52 of each thread's stat), and true only
 * when the threads' codes agree.  False while a thread runs, or when pid is
 * gone.
 */
bool proc_threads_exiting(pid_t pid, int *status);

#endif
