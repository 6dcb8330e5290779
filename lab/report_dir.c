/* A report directory of an experiment: made once, its files opened by name. */
#include "lab/report_dir.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "hammer/report.h"

int report_dir_make(const char *dir, char *err, size_t errlen)
{
	if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
		return -1;
	}
	return 0;
}

FILE *report_dir_open(const char *dir, const char *name, char *err, size_t errlen)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return report_open_out(path, err, errlen);
}
