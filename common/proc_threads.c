/* What a process's threads are doing, read from /proc (proc_threads.h). */
#include "common/proc_threads.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#define PF_EXITING_FLAG 0x4u   /* the kernel's PF_EXITING in a stat's flags: the thread is in exit */

/* The first line of TASK/NAME into buf (len bytes), without its newline; "" when unreadable. */
static void task_line(const char *task, const char *name, char *buf, size_t len)
{
	char path[352];
	FILE *f;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "%s/%s", task, name);
	if (!(f = fopen(path, "re")))
		return;
	if (!fgets(buf, (int)len, f))
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
}

/* A thread's kernel stack (TASK/stack, root only) on one line: " [f1 < f2 < ...]", at most 12 frames. */
static void task_stack(const char *task, FILE *out)
{
	char path[352], line[256];
	FILE *f;
	int n = 0;

	snprintf(path, sizeof(path), "%s/stack", task);
	if (!(f = fopen(path, "re")))
		return;
	fputs(" [", out);
	while (n < 12 && fgets(line, sizeof(line), f)) {
		char *fn = strchr(line, ']');

		fn = fn ? fn + 1 + (fn[1] == ' ') : line;
		fn[strcspn(fn, "+\n")] = '\0';
		fprintf(out, "%s%s", n++ ? " < " : "", fn);
	}
	fputc(']', out);
	fclose(f);
}

int proc_threads_describe(pid_t pid, FILE *f)
{
	char dir[48], task[320], comm[32], wchan[64], stat[512];
	struct dirent *e;
	int n = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	if (!(d = opendir(dir)))
		return 0;
	while ((e = readdir(d))) {
		unsigned flags = 0;
		char state = '?';
		const char *rp;

		if (e->d_name[0] == '.')
			continue;
		snprintf(task, sizeof(task), "%s/%s", dir, e->d_name);
		task_line(task, "stat", stat, sizeof(stat));
		/* The command name may hold spaces and parentheses: the fields start after the last ')'. */
		if ((rp = strrchr(stat, ')')))
			sscanf(rp + 1, " %c %*d %*d %*d %*d %*d %u", &state, &flags);
		task_line(task, "comm", comm, sizeof(comm));
		task_line(task, "wchan", wchan, sizeof(wchan));
		fprintf(f, " %s:%s %c%s %s", e->d_name, comm, state, flags & PF_EXITING_FLAG ? "(exiting)" : "",
		        wchan[0] && strcmp(wchan, "0") != 0 ? wchan : "-");
		if (state == 'D')
			task_stack(task, f);
		fputc(';', f);
		n++;
	}
	closedir(d);
	return n;
}

bool proc_threads_exiting(pid_t pid, int *status)
{
	char dir[48], task[320], stat[1024];
	struct dirent *e;
	bool any = false, all = true;
	int code = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	if (!(d = opendir(dir)))
		return false;
	while (all && (e = readdir(d))) {
		char *rp, *tok, *save = NULL, state = '?';
		unsigned long flags = 0;
		int field = 3, c = -1;

		if (e->d_name[0] == '.')
			continue;
		snprintf(task, sizeof(task), "%s/%s", dir, e->d_name);
		task_line(task, "stat", stat, sizeof(stat));
		/* A thread gone meanwhile has ended.  The fields start after the last ')', with field 3, the state. */
		if (!(rp = strrchr(stat, ')')))
			continue;
		for (tok = strtok_r(rp + 1, " ", &save); tok; tok = strtok_r(NULL, " ", &save), field++) {
			if (field == 3)
				state = tok[0];
			else if (field == 9)
				flags = strtoul(tok, NULL, 10);
			else if (field == 52)
				c = atoi(tok);
		}
		if (state != 'Z' && state != 'X' && !(flags & PF_EXITING_FLAG))
			all = false;
		else if (status && (c < 0 || (any && c != code)))
			all = false;
		code = c;
		any = true;
	}
	closedir(d);
	if (!any || !all)
		return false;
	if (status)
		*status = code;
	return true;
}
