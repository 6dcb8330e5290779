/* One table-driven flag parser: getopt_long semantics, one wording per mistake. */
#include "common/cli.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/cli_help.h"
#include "common/clock.h"
#include "common/parse.h"
#include "common/suggest.h"

#define CLI_QUOTE_MAX 120

struct cli_state {
	const struct cli_command *cmd;
	const struct cli_group *groups;
	size_t ngroups;
	char *err;
	size_t errlen;
	bool dashdash;  /* "--" was seen: the rest is positional */
	bool done;      /* a CLI_REST took the rest of argv */
	const struct cli_option *given[64];  /* the flags given, each once (for `needs`) */
	size_t ngiven;
};

typedef int (*cli_setter)(struct cli_state *st, const struct cli_option *o, void *base, const char *v);

/* v with control characters escaped and cut at max bytes, so it prints on one line. */
static void escape(const char *v, size_t max, char *out, size_t len)
{
	static const char HEX[] = "0123456789abcdef";
	size_t n = 0;

	for (size_t i = 0; v[i] != '\0' && n + 5 < len; i++) {
		unsigned char c = (unsigned char)v[i];

		if (i == max) {
			memcpy(out + n, "...", 3);
			n += 3;
			break;
		}
		if (c >= 0x20 && c != 0x7f) {
			out[n++] = (char)c;
			continue;
		}
		out[n++] = '\\';
		if (c == '\r' || c == '\n' || c == '\t') {
			out[n++] = c == '\r' ? 'r' : c == '\n' ? 'n' : 't';
			continue;
		}
		out[n++] = 'x';
		out[n++] = HEX[c >> 4];
		out[n++] = HEX[c & 15];
	}
	out[n] = '\0';
}

static void quote(const char *v, char *out, size_t len)
{
	escape(v, CLI_QUOTE_MAX, out, len);
}

/* err[n..] = the formatted text with control characters escaped: whatever it quotes, one line. */
static void append_line(char *err, size_t errlen, int n, const char *fmt, va_list ap)
{
	char text[1024];

	if (n < 0 || (size_t)n >= errlen)
		return;
	vsnprintf(text, sizeof(text), fmt, ap);
	escape(text, sizeof(text), err + n, errlen - (size_t)n);
}

static int vbad(char *err, size_t errlen, const char *cmd, const char *flag, const char *value,
                const char *fmt, va_list ap)
{
	char q[4 * CLI_QUOTE_MAX + 8];

	if (err == NULL || errlen == 0)
		return -1;
	quote(value, q, sizeof(q));
	append_line(err, errlen, snprintf(err, errlen, "ratelab %s: %s: '%s' ", cmd, flag, q), fmt, ap);
	return -1;
}

int cli_bad_value(char *err, size_t errlen, const char *cmd, const char *flag, const char *value,
                  const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vbad(err, errlen, cmd, flag, value, fmt, ap);
	va_end(ap);
	return -1;
}

int cli_fail(char *err, size_t errlen, const char *cmd, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return -1;
	va_start(ap, fmt);
	append_line(err, errlen, snprintf(err, errlen, "ratelab %s: ", cmd), fmt, ap);
	va_end(ap);
	return -1;
}

bool cli_has_crlf(const char *s)
{
	return s != NULL && strpbrk(s, "\r\n") != NULL;
}

/* The bad-value message for option o; returns -1. */
static int bad(struct cli_state *st, const struct cli_option *o, const char *v, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vbad(st->err, st->errlen, st->cmd->name, o->name, v, fmt, ap);
	va_end(ap);
	return -1;
}

const char *cli_option_words(const struct cli_option *o, char *buf, size_t len)
{
	size_t n = 0;

	if (o->values != NULL)
		return o->values();
	if (o->kind != CLI_CHOICE || len == 0)
		return NULL;
	buf[0] = '\0';
	for (size_t i = 0; o->words[i] != NULL && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "", o->words[i]);
	return buf;
}

/* " (did you mean W?)" in out for the first item of value v (a comma list) that is not one of words. */
static void value_hint(const char *v, const char *words, char *out, size_t len)
{
	char item[SUGGEST_WORD_MAX + 1], near[SUGGEST_WORD_MAX + 1];

	out[0] = '\0';
	if (words == NULL)
		return;
	for (const char *p = v; *p != '\0';) {
		size_t n = strcspn(p, ",");

		if (n <= SUGGEST_WORD_MAX) {
			snprintf(item, sizeof(item), "%.*s", (int)n, p);
			if (suggest_closest(item, words, near, sizeof(near))) {
				snprintf(out, len, " (did you mean %s?)", near);
				return;
			}
		}
		p += n + (p[n] == ',');
	}
}

static void store_uint(void *p, size_t size, uint64_t v)
{
	uint8_t u8 = (uint8_t)v;
	uint16_t u16 = (uint16_t)v;
	uint32_t u32 = (uint32_t)v;

	if (size == 1)
		memcpy(p, &u8, 1);
	else if (size == 2)
		memcpy(p, &u16, 2);
	else if (size == 4)
		memcpy(p, &u32, 4);
	else if (size == 8)
		memcpy(p, &v, 8);
}

static uint64_t load_uint(const void *p, size_t size)
{
	uint8_t u8 = 0;
	uint16_t u16 = 0;
	uint32_t u32 = 0;
	uint64_t u64 = 0;

	if (size == 1)
		return memcpy(&u8, p, 1), u8;
	if (size == 2)
		return memcpy(&u16, p, 2), u16;
	if (size == 4)
		return memcpy(&u32, p, 4), u32;
	return size == 8 ? (memcpy(&u64, p, 8), u64) : 0;
}

/* A positive number without a unit: "500", "1.5". */
static bool bare_number(const char *v)
{
	return v[0] != '\0' && strspn(v, "0123456789.") == strlen(v) && strtod(v, NULL) > 0;
}

static int unit_hint(struct cli_state *st, const struct cli_option *o, const char *v)
{
	return bad(st, o, v, "needs a unit, e.g. %sms or %ss (ns, us, ms, s, m, h, d)", v, v);
}

static int set_bool(struct cli_state *st, const struct cli_option *o, void *base, const char *v)
{
	(void)st;
	(void)v;
	*(bool *)((char *)base + o->at) = true;
	return 0;
}

static int set_call(struct cli_state *st, const struct cli_option *o, void *base, const char *v)
{
	char why[256] = "is not valid";

	if (o->fn(base, o, v, why, sizeof(why)) == 0)
		return 0;
	char hint[SUGGEST_WORD_MAX + 32];

	if (v == NULL)
		return cli_fail(st->err, st->errlen, st->cmd->name, "%s %s", o->name, why);
	/* a callback's duration (or delay) refused for want of a unit says so, like CLI_DURATION */
	if (bare_number(v) && (strstr(why, "duration") != NULL || strstr(why, "delay") != NULL))
		return unit_hint(st, o, v);
	value_hint(v, o->values ? o->values() : NULL, hint, sizeof(hint));
	return bad(st, o, v, "%s%s", why, hint);
}

static int set_string(struct cli_state *st, const struct cli_option *o, void *base, const char *v)
{
	(void)st;
	*(const char **)((char *)base + o->at) = v;
	return 0;
}

static int set_list(struct cli_state *st, const struct cli_option *o, void *base, const char *v)
{
	uint64_t n = load_uint((char *)base + o->count_at, o->count_size);

	if (n >= o->max)
		return bad(st, o, v, "is one too many (at most %llu)", (unsigned long long)o->max);
	((const char **)((char *)base + o->at))[n] = v;
	store_uint((char *)base + o->count_at, o->count_size, n + 1);
	return 0;
}

static int set_u64(struct cli_state *st, const struct cli_option *o, void *base, const char *v)
{
	uint64_t n;

	if (parse_u64(v, o->min, o->max, &n, NULL, 0) != 0)
		return bad(st, o, v, "is not a number from %llu to %llu", (unsigned long long)o->min,
		           (unsigned long long)o->max);
	store_uint((char *)base + o->at, o->size, n);
	return 0;
}

static int set_duration(struct cli_state *st, const struct cli_option *o, void *base, const char *v)
{
	char lo[32], hi[32], why[96];
	uint64_t ns;
	int parsed = parse_duration(v, &ns, why, sizeof(why));

	if (parsed == 0 && ns >= o->min && ns <= o->max) {
		*(uint64_t *)((char *)base + o->at) = ns;
		return 0;
	}
	if (bare_number(v))
		return unit_hint(st, o, v);
	parse_format_exact_duration(o->min, lo, sizeof(lo));
	parse_format_exact_duration(o->max, hi, sizeof(hi));
	/* what is wrong: not a duration at all, one past what any duration can be, or one out of this flag's bounds */
	if (parsed != 0)
		return strstr(why, "out of range") ? bad(st, o, v, "is longer than any duration (over 100,000 days)")
		                                   : bad(st, o, v, "is not a duration such as 250ms, 2s or 1m");
	if (o->min == 0 && o->max == UINT64_MAX)
		return bad(st, o, v, "is not a duration such as 250ms, 2s or 1m");
	if (o->max == UINT64_MAX)
		return o->min == 1 ? bad(st, o, v, "is not a duration above 0")
		                   : bad(st, o, v, "is not a duration of at least %s", lo);
	return bad(st, o, v, "is not a duration from %s to %s", lo, hi);
}

static int set_rate(struct cli_state *st, const struct cli_option *o, void *base, const char *v)
{
	uint64_t count, period;
	double r = -1;

	if (strchr(v, '/') != NULL) {
		if (parse_rate(v, &count, &period, NULL, 0) == 0)
			r = (double)count * 1e9 / (double)period;
	} else if (parse_double(v, 0, 1e300, &r, NULL, 0) != 0) {
		r = -1;
	}
	if (!(r >= o->dmin && r <= o->dmax))
		return bad(st, o, v, "is not a rate such as 50, 2.5 or 30/1m (%g to %g per second)", o->dmin, o->dmax);
	*(double *)((char *)base + o->at) = r;
	return 0;
}

static int set_double(struct cli_state *st, const struct cli_option *o, void *base, const char *v)
{
	double d;

	if (parse_double(v, o->dmin, o->dmax, &d, NULL, 0) != 0)
		return bad(st, o, v, "is not a number from %g to %g", o->dmin, o->dmax);
	*(double *)((char *)base + o->at) = d;
	return 0;
}

static int set_bytes(struct cli_state *st, const struct cli_option *o, void *base, const char *v)
{
	char lo[32], hi[32];
	uint64_t n;

	if (parse_bytes(v, o->min, o->max, &n, NULL, 0) == 0) {
		store_uint((char *)base + o->at, o->size, n);
		return 0;
	}
	parse_format_bytes(o->min, lo, sizeof(lo));
	parse_format_bytes(o->max, hi, sizeof(hi));
	return bad(st, o, v, "is not a size such as 64K, 1M or 1MiB (%s to %s; K = 1024)", lo, hi);
}

static int set_choice(struct cli_state *st, const struct cli_option *o, void *base, const char *v)
{
	char list[256] = "", hint[SUGGEST_WORD_MAX + 32];

	for (size_t i = 0; o->words[i] != NULL; i++)
		if (strcmp(v, o->words[i]) == 0) {
			store_uint((char *)base + o->at, o->size, i);
			return 0;
		}
	cli_option_words(o, list, sizeof(list));
	value_hint(v, list, hint, sizeof(hint));
	return bad(st, o, v, "is not one of %s%s", list, hint);
}

static int set_rest(struct cli_state *st, const struct cli_option *o, void *base, const char *v)
{
	(void)st;
	(void)o;
	(void)base;
	(void)v;
	return 0;  /* cli_parse hands over the tail of argv itself */
}

static const cli_setter SETTERS[] = {
	[CLI_BOOL] = set_bool,         [CLI_ACTION] = set_call,     [CLI_STRING] = set_string,
	[CLI_LIST] = set_list,         [CLI_U64] = set_u64,         [CLI_DURATION] = set_duration,
	[CLI_RATE] = set_rate,         [CLI_DOUBLE] = set_double,   [CLI_CHOICE] = set_choice,
	[CLI_CUSTOM] = set_call,       [CLI_REST] = set_rest,       [CLI_BYTES] = set_bytes,
};

bool cli_option_takes_value(const struct cli_option *o)
{
	return o->kind != CLI_BOOL && o->kind != CLI_ACTION;
}

bool cli_option_is_positional(const struct cli_option *o)
{
	return o->name[0] != '-';
}

/* The option named name[0..len) (or the positional entry, for name NULL), and its group. */
static const struct cli_option *find(const struct cli_state *st, const char *name, size_t len, size_t *group)
{
	for (size_t g = 0; g < st->ngroups; g++)
		for (const struct cli_option *o = st->groups[g].options; o->name != NULL; o++) {
			bool hit = name == NULL ? cli_option_is_positional(o)
			                        : !cli_option_is_positional(o) && strlen(o->name) == len && memcmp(o->name, name, len) == 0;

			if (hit) {
				*group = g;
				return o;
			}
		}
	return NULL;
}

/* The flag of the command closest to name (for "did you mean"), in out. */
static bool nearest_flag(const struct cli_state *st, const char *name, char *out, size_t outlen)
{
	struct suggest s;

	suggest_init(&s, name, out, outlen);
	for (size_t g = 0; g < st->ngroups; g++)
		for (const struct cli_option *o = st->groups[g].options; o->name != NULL; o++)
			if (!cli_option_is_positional(o))
				suggest_consider(&s, o->name, strlen(o->name));
	return suggest_found(&s);
}

static int apply(struct cli_state *st, const struct cli_option *o, size_t g, const char *v)
{
	void *base = st->groups[g].base;
	size_t k = 0;

	if (SETTERS[o->kind](st, o, base, v) != 0)
		return -1;
	if (o->given_at != 0)
		*(bool *)((char *)base + o->given_at - 1) = true;
	while (k < st->ngiven && st->given[k] != o)
		k++;
	if (k == st->ngiven && k < sizeof(st->given) / sizeof(st->given[0]))
		st->given[st->ngiven++] = o;
	return 0;
}

/* The name of the command's flag a is ("--port", "--port=1"), or NULL: a value. */
static const char *flag_name(const struct cli_state *st, const char *a)
{
	const struct cli_option *o;
	size_t g;

	if (strncmp(a, "--", 2) != 0 || a[2] == '\0')
		return NULL;
	o = find(st, a, strcspn(a, "="), &g);
	return o != NULL ? o->name : NULL;
}

/* argv[*i] is "--name" or "--name=value"; may consume argv[*i + 1]. */
static int take_flag(struct cli_state *st, int argc, char **argv, int *i)
{
	const char *a = argv[*i], *eq = strchr(a, '='), *v = eq ? eq + 1 : NULL;
	const struct cli_option *o;
	size_t g, len = eq ? (size_t)(eq - a) : strlen(a);
	char q[4 * CLI_QUOTE_MAX + 8];

	o = a[1] == '-' ? find(st, a, len, &g) : NULL;
	if (o == NULL) {
		char name[4 * CLI_QUOTE_MAX + 8], near[SUGGEST_WORD_MAX + 1];

		snprintf(name, sizeof(name), "%.*s", (int)(len < CLI_QUOTE_MAX ? len : CLI_QUOTE_MAX + 1), a);
		quote(name, q, sizeof(q));
		if (nearest_flag(st, name, near, sizeof(near)))
			return cli_fail(st->err, st->errlen, st->cmd->name, "unknown option '%s' (did you mean %s?)", q, near);
		return cli_fail(st->err, st->errlen, st->cmd->name, "unknown option '%s'", q);
	}
	if (!cli_option_takes_value(o) && eq != NULL)
		return cli_fail(st->err, st->errlen, st->cmd->name, "%s takes no value", o->name);
	if (cli_option_takes_value(o) && v == NULL) {
		const char *next = *i + 1 < argc ? flag_name(st, argv[*i + 1]) : NULL;

		if (*i + 1 >= argc)
			return cli_fail(st->err, st->errlen, st->cmd->name, "%s needs a value", o->name);
		if (next != NULL)
			return cli_fail(st->err, st->errlen, st->cmd->name, "%s needs a value before %s", o->name, next);
		v = argv[++*i];
	}
	return apply(st, o, g, v);
}

/* A positional argument, or (CLI_REST after "--") the whole tail argv + i. */
static int take_positional(struct cli_state *st, char **argv, int i, size_t *nargs)
{
	char q[4 * CLI_QUOTE_MAX + 8];
	size_t g;
	const struct cli_option *o = find(st, NULL, 0, &g);
	bool rest = o != NULL && o->kind == CLI_REST;

	if (o == NULL || (o->kind == CLI_STRING && *nargs == 1) || (rest && !st->dashdash)) {
		quote(argv[i], q, sizeof(q));
		return cli_fail(st->err, st->errlen, st->cmd->name, "unexpected argument '%s'%s%s%s", q,
		                rest ? " (" : "", rest ? o->name : "", rest ? " goes after --)" : "");
	}
	(*nargs)++;
	if (rest) {
		*(char ***)((char *)st->groups[g].base + o->at) = argv + i;
		st->done = true;
		return 0;
	}
	return apply(st, o, g, argv[i]);
}

/* Whether flag o was given: its CLI_GIVEN bool, or for a CLI_STRING without one, a value set. */
static bool was_given(const struct cli_option *o, const void *base)
{
	if (o->given_at != 0)
		return *(const bool *)((const char *)base + o->given_at - 1);
	return o->kind == CLI_STRING && *(const char *const *)((const char *)base + o->at) != NULL;
}

/* Whether list ("--sim" or "--sim or --compare") names the flag name. */
static bool names_flag(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; (p = strstr(p, name)) != NULL; p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == '\0' || p[n] == ' '))
			return true;
	return false;
}

/* Every flag given with a flag it goes with (cli_option.needs). */
static int check_needs(struct cli_state *st)
{
	for (size_t i = 0; i < st->ngiven; i++) {
		const char *needs = st->given[i]->needs;
		bool found = needs == NULL;

		for (size_t k = 0; !found && k < st->ngiven; k++)
			found = names_flag(needs, st->given[k]->name);
		if (!found)
			return cli_fail(st->err, st->errlen, st->cmd->name, "%s goes with %s", st->given[i]->name, needs);
	}
	return 0;
}

/* Required flags given, and at least one positional argument when the command needs one. */
static int check_required(struct cli_state *st, size_t nargs)
{
	for (size_t g = 0; g < st->ngroups; g++)
		for (const struct cli_option *o = st->groups[g].options; o->name != NULL; o++) {
			if (!o->required)
				continue;
			if (cli_option_is_positional(o) && nargs == 0)
				return cli_fail(st->err, st->errlen, st->cmd->name, "missing %s%s", o->name,
				                o->kind == CLI_REST ? " after --" : "");
			if (!cli_option_is_positional(o) && !was_given(o, st->groups[g].base))
				return cli_fail(st->err, st->errlen, st->cmd->name, "%s is required", o->name);
		}
	return 0;
}

int cli_parse(const struct cli_command *cmd, const struct cli_group *groups, size_t ngroups,
              int argc, char **argv, char *err, size_t errlen)
{
	struct cli_state st = { .cmd = cmd, .groups = groups, .ngroups = ngroups, .err = err, .errlen = errlen };
	size_t nargs = 0;

	if (argc == 2 && strcmp(argv[1], "--cli-options") == 0)
		return 2;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int rc;

		if (!st.dashdash && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0))
			return 1;
		if (!st.dashdash && strcmp(a, "--") == 0) {
			st.dashdash = true;
			continue;
		}
		if (!st.dashdash && a[0] == '-' && a[1] != '\0')
			rc = take_flag(&st, argc, argv, &i);
		else
			rc = take_positional(&st, argv, i, &nargs);
		if (rc != 0)
			return -1;
		if (st.done)
			break;
	}
	return check_required(&st, nargs) != 0 ? -1 : check_needs(&st);
}

int cli_exit(const struct cli_command *cmd, int rc, const char *err)
{
	if (rc == 2)
		return cmd->help != NULL && cli_help_write_options(stdout, cmd->help->tables) == 0 ? 0 : 1;
	if (rc == 1) {
		if (cmd->help != NULL)
			cli_help_write(stdout, cmd->help);
		else
			cmd->usage(stdout);
		return 0;
	}
	fprintf(stderr, "%s\n", err);
	return 2;
}
