#include "hammer/expect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"

#define EXPECT_MAX 32

enum expect_key { KEY_STATUS, KEY_OK, KEY_FAILED, KEY_REQUESTS, KEY_CALLS, KEY_RETRIES, KEY_ERRORS, KEY_WALL };
enum expect_op { OP_GE, OP_LE, OP_GT, OP_LT, OP_EQ, OP_NE };

struct expect_check_item {
	enum expect_key key;
	int status;
	enum expect_op op;
	uint64_t value;
	char text[48];
};

struct expect {
	unsigned n;
	struct expect_check_item c[EXPECT_MAX];
};

static const struct { const char *name; enum expect_key key; } KEYS[] = {
	{ "ok", KEY_OK }, { "failed", KEY_FAILED }, { "requests", KEY_REQUESTS },
	{ "calls", KEY_CALLS }, { "retries", KEY_RETRIES }, { "errors", KEY_ERRORS },
	{ "wall", KEY_WALL },
};

static const struct { const char *text; enum expect_op op; } OPS[] = {
	{ ">=", OP_GE }, { "<=", OP_LE }, { "==", OP_EQ }, { "!=", OP_NE },
	{ ">", OP_GT }, { "<", OP_LT }, { "=", OP_EQ },
};

static int parse_key(const char *s, size_t len, struct expect_check_item *c)
{
	char buf[16];
	uint64_t code;

	if (len == 0 || len >= sizeof(buf))
		return -1;
	memcpy(buf, s, len);
	buf[len] = '\0';
	for (size_t i = 0; i < sizeof(KEYS) / sizeof(KEYS[0]); i++)
		if (strcmp(buf, KEYS[i].name) == 0) {
			c->key = KEYS[i].key;
			return 0;
		}
	if (len != 3 || parse_u64(buf, 100, 599, &code, NULL, 0) != 0)
		return -1;
	c->key = KEY_STATUS;
	c->status = (int)code;
	return 0;
}

/* Parse one "key OP value" item (item is NUL-terminated). */
static int parse_item(const char *item, struct expect_check_item *c, char *err, size_t errlen)
{
	size_t klen = strcspn(item, "<>=!");
	const char *rest = item + klen;
	size_t i;

	if (strlen(item) >= sizeof(c->text) || parse_key(item, klen, c) != 0)
		goto bad;
	for (i = 0; i < sizeof(OPS) / sizeof(OPS[0]); i++)
		if (strncmp(rest, OPS[i].text, strlen(OPS[i].text)) == 0)
			break;
	if (i == sizeof(OPS) / sizeof(OPS[0]))
		goto bad;
	c->op = OPS[i].op;
	rest += strlen(OPS[i].text);
	if (c->key == KEY_WALL ? parse_duration(rest, &c->value, NULL, 0) != 0
	                       : parse_u64(rest, 0, UINT64_MAX, &c->value, NULL, 0) != 0)
		goto bad;
	snprintf(c->text, sizeof(c->text), "%s", item);
	return 0;
bad:
	snprintf(err, errlen, "--expect: bad check '%s' (want KEY>=N with KEY a status, ok, failed, "
	         "requests, calls, retries, errors or wall)", item);
	return -1;
}

struct expect *expect_parse(const char *spec, char *err, size_t errlen)
{
	struct expect *e = calloc(1, sizeof(*e));
	char *copy = strdup(spec), *save = NULL, *tok;

	if (e == NULL || copy == NULL) {
		snprintf(err, errlen, "--expect: out of memory");
		goto fail;
	}
	for (tok = strtok_r(copy, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		if (e->n == EXPECT_MAX) {
			snprintf(err, errlen, "--expect: more than %d checks in '%s'", EXPECT_MAX, spec);
			goto fail;
		}
		if (parse_item(tok, &e->c[e->n], err, errlen) != 0)
			goto fail;
		e->n++;
	}
	if (e->n == 0) {
		snprintf(err, errlen, "--expect: no checks in '%s'", spec);
		goto fail;
	}
	free(copy);
	return e;
fail:
	free(copy);
	free(e);
	return NULL;
}

void expect_free(struct expect *e)
{
	free(e);
}

static uint64_t actual(const struct expect_check_item *c, const struct expect_facts *f)
{
	switch (c->key) {
	case KEY_STATUS: return (size_t)c->status < f->nstatus ? f->status[c->status] : 0;
	case KEY_OK: return f->ok;
	case KEY_FAILED: return f->failed;
	case KEY_REQUESTS: return f->requests;
	case KEY_CALLS: return f->calls;
	case KEY_RETRIES: return f->retries;
	case KEY_ERRORS: return f->errors;
	case KEY_WALL: return f->wall_ns;
	}
	return 0;
}

static bool holds(enum expect_op op, uint64_t a, uint64_t v)
{
	switch (op) {
	case OP_GE: return a >= v;
	case OP_LE: return a <= v;
	case OP_GT: return a > v;
	case OP_LT: return a < v;
	case OP_EQ: return a == v;
	case OP_NE: return a != v;
	}
	return false;
}

static void format_actual(const struct expect_check_item *c, uint64_t a, char *got, size_t len)
{
	if (c->key == KEY_WALL)
		parse_format_duration(a, got, len);
	else
		snprintf(got, len, "%llu", (unsigned long long)a);
}

size_t expect_count(const struct expect *e)
{
	return e->n;
}

bool expect_item(const struct expect *e, size_t i, const struct expect_facts *f, char *text, size_t tlen, char *got,
                 size_t glen)
{
	const struct expect_check_item *c = &e->c[i];
	uint64_t a = actual(c, f);

	snprintf(text, tlen, "%s", c->text);
	format_actual(c, a, got, glen);
	return holds(c->op, a, c->value);
}

bool expect_check(const struct expect *e, const struct expect_facts *f, char *why, size_t len)
{
	bool ok = true;
	size_t used = 0;
	char got[32], text[48];

	if (len > 0)
		why[0] = '\0';
	for (unsigned i = 0; i < e->n; i++) {
		if (expect_item(e, i, f, text, sizeof(text), got, sizeof(got)))
			continue;
		ok = false;
		if (used < len)
			used += (size_t)snprintf(why + used, len - used, "%s%s (got %s)", used ? ", " : "", text, got);
	}
	return ok;
}
