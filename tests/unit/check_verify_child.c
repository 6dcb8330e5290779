/* lab/verify_child: a copy in exit counts as ended, with its exit status read from /proc. */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/wait.h>

#include "lab/verify_child.h"

/* Start `sh -c SCRIPT` as one quiet copy. */
static struct verify_children *start(const char *script)
{
	static char *cmd[] = { "sh", "-c", NULL, NULL };
	struct verify_child_opts o = { cmd, "http://127.0.0.1:9", "GET", 1, true };
	struct verify_children *c;
	char err[256];
	bool cannot_run = false;

	cmd[2] = (char *)script;
	c = verify_children_start(&o, &cannot_run, err, sizeof(err));
	ck_assert_msg(c != NULL, "%s", err);
	return c;
}

/* Block until a child of this process has ended, without reaping it (it stays in exit: a zombie). */
static void wait_ended_unreaped(void)
{
	siginfo_t info;

	ck_assert_int_eq(waitid(P_ALL, 0, &info, WEXITED | WNOWAIT), 0);
}

/*
 * A copy that ended and is not yet reaped (as one the kernel is slow to tear
 * down) is taken as done with the code it exited with; stopping the set then
 * waits on nothing.
 */
START_TEST(a_copy_in_exit_is_done)
{
	struct verify_children *c = start("exit 3");

	wait_ended_unreaped();
	ck_assert(verify_children_exiting(c));
	ck_assert_uint_eq(verify_children_take_exiting(c), 0);
	ck_assert_int_eq(verify_children_status(c), 3);
	verify_children_kill(c);
	ck_assert_int_eq(verify_children_status(c), 3);
	verify_children_free(c);
	/* still ours to reap: taking its status from /proc did not reap it */
	ck_assert_int_gt(waitpid(-1, NULL, WNOHANG), 0);
}
END_TEST

/* A copy killed by a signal reads as 128 + the signal, from /proc as from waitpid. */
START_TEST(a_killed_copy_in_exit)
{
	struct verify_children *c = start("kill -9 $$");

	wait_ended_unreaped();
	ck_assert_uint_eq(verify_children_take_exiting(c), 0);
	ck_assert_int_eq(verify_children_status(c), 128 + SIGKILL);
	verify_children_kill(c);
	verify_children_free(c);
	ck_assert_int_gt(waitpid(-1, NULL, WNOHANG), 0);
}
END_TEST

/* One that runs is not taken; stopping it reaps it, and it ends by SIGTERM. */
START_TEST(a_running_copy_is_not_taken)
{
	struct verify_children *c = start("exec tail -f /dev/null");

	ck_assert(!verify_children_exiting(c));
	ck_assert_uint_eq(verify_children_take_exiting(c), 1);
	verify_children_kill(c);
	ck_assert_int_eq(verify_children_status(c), 128 + SIGTERM);
	verify_children_free(c);
	errno = 0;
	ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1);
	ck_assert_int_eq(errno, ECHILD);
}
END_TEST

Suite *verify_child_suite(void)
{
	Suite *s = suite_create("verify_child");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, a_copy_in_exit_is_done);
	tcase_add_test(tc, a_killed_copy_in_exit);
	tcase_add_test(tc, a_running_copy_is_not_taken);
	suite_add_tcase(s, tc);
	return s;
}
