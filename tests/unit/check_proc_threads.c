/* common/proc_threads: what a process's threads are doing, read from this process's own /proc. */
#include <check.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/proc_threads.h"

/* proc_threads_describe of pid into a malloc'd string; *n the threads it counted. */
static char *describe(pid_t pid, int *n)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	ck_assert_ptr_nonnull(f);
	*n = proc_threads_describe(pid, f);
	fclose(f);
	return text;
}

/*
 * This process: the thread that reads is running, " TID:NAME R WAIT;" (a
 * sanitizer may have a thread of its own beside it: TSan does).
 */
START_TEST(the_reading_thread_runs)
{
	char want[64], *text, *at;
	int n;

	text = describe(getpid(), &n);
	ck_assert_int_ge(n, 1);
	snprintf(want, sizeof(want), " %ld:", (long)syscall(SYS_gettid));
	ck_assert_msg((at = strstr(text, want)) != NULL, "no %s in '%s'", want, text);
	ck_assert_msg(strncmp(strchr(at + 1, ' '), " R ", 3) == 0, "'%s'", text);
	ck_assert_int_eq(text[0], ' ');
	ck_assert_int_eq(text[strlen(text) - 1], ';');
	free(text);
}
END_TEST

START_TEST(a_zombie_and_a_reaped_child)
{
	pid_t pid = fork();
	siginfo_t info;
	char *text;
	int n;

	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(0);
	ck_assert_int_eq(waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT), 0);
	text = describe(pid, &n);
	ck_assert_int_eq(n, 1);
	ck_assert_msg(strstr(text, " Z") != NULL, "'%s'", text);
	free(text);
	ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
	text = describe(pid, &n);
	ck_assert_int_eq(n, 0);
	ck_assert_str_eq(text, "");
	free(text);
}
END_TEST

/* A child that runs on until killed, or ends with code; waited for (not reaped) when it ends. */
static pid_t child(int code, bool ends)
{
	siginfo_t info;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (!ends)
			pause();
		_exit(code);
	}
	if (ends)
		ck_assert_int_eq(waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT), 0);
	return pid;
}

/*
 * An ended child's exit status, read from /proc before it is reaped (what the
 * harness and verify count a process as ended by): the code it exited with,
 * a signal's number, and nothing while it still runs or once it is gone.
 */
START_TEST(exit_status_before_the_reap)
{
	pid_t three = child(3, true), runs = child(0, false), killed;
	siginfo_t info;
	int st = -1;

	ck_assert(proc_threads_exiting(three, &st));
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 3, "status %#x", (unsigned)st);
	ck_assert(proc_threads_exiting(three, NULL));
	ck_assert(!proc_threads_exiting(getpid(), NULL));
	ck_assert(!proc_threads_exiting(runs, &st));
	kill(runs, SIGKILL);
	ck_assert_int_eq(waitid(P_PID, (id_t)runs, &info, WEXITED | WNOWAIT), 0);
	killed = runs;
	ck_assert(proc_threads_exiting(killed, &st));
	ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %#x", (unsigned)st);
	/* reaped, it is gone from /proc: nothing to read */
	ck_assert_int_eq(waitpid(three, NULL, 0), three);
	ck_assert_int_eq(waitpid(killed, NULL, 0), killed);
	ck_assert(!proc_threads_exiting(three, &st));
}
END_TEST

Suite *proc_threads_suite(void)
{
	Suite *s = suite_create("proc_threads");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, the_reading_thread_runs);
	tcase_add_test(tc, a_zombie_and_a_reaped_child);
	tcase_add_test(tc, exit_status_before_the_reap);
	suite_add_tcase(s, tc);
	return s;
}
