/* A command's --help in the layout every command shares, and its option table for completion. */
#include "common/cli_help.h"

#include <stdbool.h>
#include <string.h>

#define CLI_WIDTH 80
#define CLI_COLUMN 24

static const char *kind_word(const struct cli_option *o)
{
	if (cli_option_is_positional(o))
		return "positional";
	if (o->kind == CLI_STRING && o->values == NULL)
		return "file";
	return cli_option_takes_value(o) ? "value" : "flag";
}

int cli_help_write_options(FILE *out, const struct cli_option *const *tables)
{
	char buf[512];

	for (size_t t = 0; tables != NULL && tables[t] != NULL; t++)
		for (const struct cli_option *o = tables[t]; o->name != NULL; o++) {
			const char *w = cli_option_words(o, buf, sizeof(buf));

			fprintf(out, "%s %s", o->name, kind_word(o));
			for (const char *p = w ? w : ""; *p != '\0';) {
				size_t n;

				p += strspn(p, ", ");
				n = strcspn(p, ", ");
				if (n > 0)
					fprintf(out, " %.*s", (int)n, p);
				p += n;
			}
			fputc('\n', out);
		}
	return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}

/* The columns s[0..n) takes on a terminal: UTF-8 continuation bytes take none. */
static size_t columns(const char *s, size_t n)
{
	size_t c = 0;

	for (size_t i = 0; i < n && s[i] != '\0'; i++)
		c += ((unsigned char)s[i] & 0xc0) != 0x80;
	return c;
}

/* Pad out to col, starting at column at (a new line first when at is past col - 2). */
static void pad_to(FILE *out, size_t at, size_t col)
{
	if (at + 2 > col && at > 0) {
		fputc('\n', out);
		at = 0;
	}
	fprintf(out, "%*s", (int)(col - at), "");
}

void cli_help_write_wrapped(FILE *out, const char *lead, size_t col, const char *text)
{
	size_t at = columns(lead, strlen(lead)), width = CLI_WIDTH > col + 20 ? CLI_WIDTH : col + 20;
	bool first = true;

	fputs(lead, out);
	pad_to(out, at, col);
	at = col;
	for (const char *p = text; *p != '\0';) {
		size_t n = strcspn(p, " \n"), w = columns(p, n);

		if (n > 0 && !first && at + 1 + w > width) {
			fprintf(out, "\n%*s", (int)col, "");
			at = col;
			first = true;
		}
		if (n > 0) {
			fprintf(out, "%s%.*s", first ? "" : " ", (int)n, p);
			at += w + !first;
			first = false;
		}
		p += n;
		if (*p == '\n' && p[1] != '\0') {
			fprintf(out, "\n%*s", (int)col, "");
			at = col;
			first = true;
		}
		p += *p != '\0';
	}
	fputc('\n', out);
}

/* One flag's lines: "  --name ARG" and its help, with the words it takes unless shown already. */
static void write_option(FILE *out, const struct cli_option *o)
{
	char lead[96], text[2048], buf[512];
	const char *w = cli_option_words(o, buf, sizeof(buf));
	bool show = w != NULL && (o->arg == NULL || strchr(o->arg, '|') == NULL) && strstr(o->help, "--list") == NULL;

	snprintf(lead, sizeof(lead), "  %s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
	snprintf(text, sizeof(text), "%s%s%s%s", o->help, show ? " One of: " : "", show ? w : "", show ? "." : "");
	cli_help_write_wrapped(out, lead, CLI_COLUMN, text);
}

void cli_help_write(FILE *out, const struct cli_help *h)
{
	static const char *const HEADINGS[CLI_SEC_COUNT] = { "what to run", "what it does", "output", "advanced" };

	for (const char *u = h->usage, *prefix = "usage: "; *u != '\0'; prefix = "       ") {
		size_t n = strcspn(u, "\n");

		fprintf(out, "%s%.*s\n", prefix, (int)n, u);
		u += n + (u[n] == '\n');
	}
	fputc('\n', out);
	cli_help_write_wrapped(out, "", 0, h->about);
	for (int s = 0; s < CLI_SEC_COUNT; s++) {
		bool heading = false;

		for (size_t t = 0; h->tables[t] != NULL; t++)
			for (const struct cli_option *o = h->tables[t]; o->name != NULL; o++) {
				if (o->help == NULL || (int)o->section != s || cli_option_is_positional(o))
					continue;
				if (!heading)
					fprintf(out, "\n%s:\n", HEADINGS[s]);
				heading = true;
				write_option(out, o);
			}
	}
	if (h->notes != NULL)
		fprintf(out, "\n%s", h->notes);
	if (h->more != NULL)
		h->more(out);
	fprintf(out, "\nexit status:\n");
	for (const char *e = h->exits; *e != '\0';) {
		size_t n = strcspn(e, "\t"), m;
		char lead[16], text[512];

		snprintf(lead, sizeof(lead), "  %.*s", (int)(n < 8 ? n : 8), e);
		e += n + (e[n] == '\t');
		m = strcspn(e, "\n");
		snprintf(text, sizeof(text), "%.*s", (int)m, e);
		cli_help_write_wrapped(out, lead, 8, text);
		e += m + (e[m] == '\n');
	}
}

/* Whether the comma list `list` (as cli_words_join writes it) has the word w of n bytes. */
static bool words_have(const char *list, const char *w, size_t n)
{
	for (const char *p = list; *p != '\0';) {
		size_t k = strcspn(p, ",");

		if (k == n && strncmp(p, w, n) == 0)
			return true;
		p += k;
		p += strspn(p, ", ");
	}
	return false;
}

void cli_words_join(char *out, size_t len, const char *a, const char *b)
{
	const char *lists[] = { a, b };
	size_t used = 0;

	if (len == 0)
		return;
	out[0] = '\0';
	for (size_t i = 0; i < 2; i++)
		for (const char *p = lists[i] + strspn(lists[i], ", "); *p != '\0'; p += strspn(p, ", ")) {
			size_t n = strcspn(p, ", ");

			if (!words_have(out, p, n) && used + n + 3 < len)
				used += (size_t)snprintf(out + used, len - used, "%s%.*s", used ? ", " : "", (int)n, p);
			p += n;
		}
}
