/* Result files a command is asked to write: checked before a run, and which of them takes standard output. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cli.h"

int cli_check_output(char *err, size_t errlen, const char *cmd, const char *flag, const char *path)
{
	char dir[4096];
	const char *slash;
	struct stat st;

	if (path == NULL || strcmp(path, "-") == 0)
		return 0;
	if (stat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return cli_bad_value(err, errlen, cmd, flag, path, "cannot be written (a directory)");
		if (access(path, W_OK) == 0)
			return 0;
	} else if (errno == ENOENT && path[0] != '\0') {
		slash = strrchr(path, '/');
		if (slash == NULL)
			snprintf(dir, sizeof(dir), ".");
		else
			snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
		if (access(dir, W_OK | X_OK) == 0)
			return 0;
	}
	return cli_bad_value(err, errlen, cmd, flag, path, "cannot be written (%s)",
	                     path[0] == '\0' ? "an empty path" : strerror(errno));
}

int cli_check_outputs(char *err, size_t errlen, const char *cmd, const struct cli_output *outs, size_t n)
{
	const char *first = NULL;

	for (size_t i = 0; i < n; i++) {
		if (cli_check_output(err, errlen, cmd, outs[i].flag, outs[i].path) != 0)
			return -1;
		if (outs[i].path == NULL || strcmp(outs[i].path, "-") != 0)
			continue;
		if (first != NULL)
			return cli_fail(err, errlen, cmd, "%s and %s both write to standard output ('-')", first,
			                outs[i].flag);
		first = outs[i].flag;
	}
	return 0;
}

bool cli_outputs_take_stdout(const struct cli_output *outs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (outs[i].path != NULL && strcmp(outs[i].path, "-") == 0)
			return true;
	return false;
}
