/* JUnit XML reports, built in memory. */
#include "common/junit.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growing string. */
struct buf {
	char *s;
	size_t len, cap;
	int failed;                  /* an allocation failed: the text is incomplete */
};

struct suite {
	char *name;
	double time_s;
	unsigned tests, failures, skipped, errors;
	struct buf cases;            /* the <testcase> elements */
};

struct junit {
	char *name;
	struct suite *s;
	size_t n, cap;
};

static void put(struct buf *b, const char *text, size_t n)
{
	if (b->failed)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = (b->len + n + 1) * 2;
		char *ns = realloc(b->s, cap);

		if (!ns) {
			b->failed = 1;
			return;
		}
		b->s = ns;
		b->cap = cap;
	}
	memcpy(b->s + b->len, text, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void put_str(struct buf *b, const char *text)
{
	put(b, text, strlen(text));
}

static void putf(struct buf *b, const char *fmt, ...)
{
	char tmp[128];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		put(b, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* text escaped for an XML attribute or element; control bytes other than \t \n are dropped. */
static void put_escaped(struct buf *b, const char *text)
{
	for (const unsigned char *p = (const unsigned char *)(text ? text : ""); *p; p++) {
		switch (*p) {
		case '&': put_str(b, "&amp;"); break;
		case '<': put_str(b, "&lt;"); break;
		case '>': put_str(b, "&gt;"); break;
		case '"': put_str(b, "&quot;"); break;
		case '\'': put_str(b, "&apos;"); break;
		default:
			if (*p >= 0x20 || *p == '\t' || *p == '\n')
				put(b, (const char *)p, 1);
		}
	}
}

struct junit *junit_new(const char *name)
{
	struct junit *j = calloc(1, sizeof(*j));

	if (j && !(j->name = strdup(name))) {
		free(j);
		return NULL;
	}
	return j;
}

void junit_free(struct junit *j)
{
	if (!j)
		return;
	for (size_t i = 0; i < j->n; i++) {
		free(j->s[i].name);
		free(j->s[i].cases.s);
	}
	free(j->s);
	free(j->name);
	free(j);
}

int junit_suite(struct junit *j, const char *name, double time_s)
{
	if (j->n == j->cap) {
		size_t cap = j->cap ? j->cap * 2 : 8;
		struct suite *ns = realloc(j->s, cap * sizeof(*ns));

		if (!ns)
			return -1;
		j->s = ns;
		j->cap = cap;
	}
	memset(&j->s[j->n], 0, sizeof(j->s[j->n]));
	if (!(j->s[j->n].name = strdup(name)))
		return -1;
	j->s[j->n++].time_s = time_s;
	return 0;
}

static const char *const ELEMENT[] = { NULL, "failure", "skipped", "error" };

int junit_case(struct junit *j, const char *classname, const char *name, double time_s, enum junit_result r,
               const char *message, const char *detail)
{
	struct suite *s = j->n ? &j->s[j->n - 1] : NULL;

	if (!s)
		return -1;
	s->tests++;
	s->failures += r == JUNIT_FAILURE;
	s->skipped += r == JUNIT_SKIPPED;
	s->errors += r == JUNIT_ERROR;
	put_str(&s->cases, "    <testcase classname=\"");
	put_escaped(&s->cases, classname);
	put_str(&s->cases, "\" name=\"");
	put_escaped(&s->cases, name);
	putf(&s->cases, "\" time=\"%.3f\"", time_s);
	if (r == JUNIT_PASS) {
		put_str(&s->cases, "/>\n");
		return s->cases.failed ? -1 : 0;
	}
	putf(&s->cases, ">\n      <%s message=\"", ELEMENT[r]);
	put_escaped(&s->cases, message);
	put_str(&s->cases, "\">");
	put_escaped(&s->cases, detail);
	putf(&s->cases, "</%s>\n    </testcase>\n", ELEMENT[r]);
	return s->cases.failed ? -1 : 0;
}

/* The whole document. */
static int render(const struct junit *j, struct buf *b)
{
	unsigned tests = 0, failures = 0, skipped = 0, errors = 0;

	for (size_t i = 0; i < j->n; i++) {
		tests += j->s[i].tests;
		failures += j->s[i].failures;
		skipped += j->s[i].skipped;
		errors += j->s[i].errors;
	}
	put_str(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"");
	put_escaped(b, j->name);
	putf(b, "\" tests=\"%u\" failures=\"%u\" skipped=\"%u\" errors=\"%u\">\n", tests, failures, skipped, errors);
	for (size_t i = 0; i < j->n; i++) {
		const struct suite *s = &j->s[i];

		put_str(b, "  <testsuite name=\"");
		put_escaped(b, s->name);
		putf(b, "\" tests=\"%u\" failures=\"%u\" skipped=\"%u\" errors=\"%u\"", s->tests, s->failures, s->skipped,
		     s->errors);
		putf(b, " time=\"%.3f\">\n", s->time_s);
		if (s->cases.s)
			put(b, s->cases.s, s->cases.len);
		put_str(b, "  </testsuite>\n");
	}
	put_str(b, "</testsuites>\n");
	return b->failed ? -1 : 0;
}

int junit_write(const struct junit *j, const char *path)
{
	struct buf b = { NULL, 0, 0, 0 };
	FILE *f = NULL;
	int rc = -1;

	if (render(j, &b) < 0) {
		errno = ENOMEM;
		goto free_buf;
	}
	f = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
	if (!f)
		goto free_buf;
	rc = fwrite(b.s, 1, b.len, f) == b.len ? 0 : -1;
	if (f == stdout)
		rc = fflush(f) == 0 ? rc : -1;
	else if (fclose(f) != 0)
		rc = -1;
free_buf:
	free(b.s);
	return rc;
}
