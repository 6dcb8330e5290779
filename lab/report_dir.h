/* A report directory of an experiment (herd, storm): made once, its files opened by name. */
#ifndef RATELAB_REPORT_DIR_H
#define RATELAB_REPORT_DIR_H

#include <stddef.h>
#include <stdio.h>

/* Create dir (an existing one is fine).  0, or -1 with "cannot create DIR: why" in err. */
int report_dir_make(const char *dir, char *err, size_t errlen);

/* Open DIR/NAME for writing (report_open_out); NULL with err filled. */
FILE *report_dir_open(const char *dir, const char *name, char *err, size_t errlen);

#endif
