/* Runs every Check suite; the list comes from tests/check_*.c (build/suites.h). */
#include <check.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define SUITE(name) Suite *name##_suite(void);
#include "suites.h"
#undef SUITE

/*
 * Servers a failed or timed-out test left running are re-parented to this
 * runner (a child subreaper) and killed here, so they never outlive the run
 * and never hold the caller's pipes open.
 */
static void reap_orphans(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	pid_t self = getpid();

	if (!d)
		return;
	while ((e = readdir(d)) != NULL) {
		char path[300];
		FILE *f;
		int pid, ppid;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		if (fscanf(f, "%d %*s %*c %d", &pid, &ppid) == 2 && ppid == self) {
			fprintf(stderr, "runner: killing leftover process %d\n", pid);
			kill(pid, SIGKILL);
		}
		fclose(f);
	}
	closedir(d);
	while (waitpid(-1, NULL, 0) > 0)
		;
}

int main(void)
{
	SRunner *sr = srunner_create(NULL);
	int failed;

	prctl(PR_SET_CHILD_SUBREAPER, 1);
#define SUITE(name) srunner_add_suite(sr, name##_suite());
#include "suites.h"
#undef SUITE
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	reap_orphans();
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
