/* Runs the Check suites of one folder: the list comes from tests/<kind>/check_*.c (build/<kind>/suites.h). */
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

/* pid's command line, NULs as spaces, into buf (empty when it is gone). */
static void cmdline_of(int pid, char *buf, size_t len)
{
	char path[64];
	FILE *f;
	size_t n = 0;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	if ((f = fopen(path, "r")) != NULL) {
		n = fread(buf, 1, len - 1, f);
		fclose(f);
	}
	for (size_t i = 0; i < n; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	buf[n] = '\0';
}

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
		char state;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		/* An exited orphan (Z) is only reaped below; a live one is named and killed. */
		if (fscanf(f, "%d %*s %c %d", &pid, &state, &ppid) == 3 && ppid == self && state != 'Z') {
			char cmd[200];

			cmdline_of(pid, cmd, sizeof(cmd));
			fprintf(stderr, "runner: killing leftover process %d: %s\n", pid, cmd);
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
