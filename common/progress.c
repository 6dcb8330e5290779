/* The progress line: drawn over itself with a carriage return and an erase. */
#include "common/progress.h"

#include <stdarg.h>
#include <unistd.h>

bool progress_wanted(FILE *f)
{
	return f != NULL && isatty(fileno(f));
}

void progress_line(FILE *f, const char *fmt, ...)
{
	va_list ap;

	fputc('\r', f);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputs("\033[K", f);
	fflush(f);
}

void progress_done(FILE *f)
{
	fputs("\r\033[K", f);
	fflush(f);
}
