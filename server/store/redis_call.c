/* One call of the Redis store's script (redis_call.h). */
#include "server/store/redis_call.h"

#include <stdatomic.h>
#include <string.h>

#include "common/parse.h"
#include "server/store/redis_conn.h"

/*
 * Append `key` to out at *n, with bytes outside printable ASCII (and '%') as
 * %XX, so that binary keys (client addresses) read well in redis-cli.
 */
static int key_escape(char *out, size_t cap, size_t *n, const char *key, size_t keylen)
{
	static const char hex[] = "0123456789ABCDEF";

	for (size_t i = 0; i < keylen; i++) {
		unsigned char b = (unsigned char)key[i];

		if (*n + 3 > cap)
			return -1;
		if (b > 0x20 && b < 0x7f && b != '%') {
			out[(*n)++] = (char)b;
			continue;
		}
		out[(*n)++] = '%';
		out[(*n)++] = hex[b >> 4];
		out[(*n)++] = hex[b & 15];
	}
	return 0;
}

int redis_call_build(struct store_redis *s, struct redis_call *k, const char *key, size_t keylen,
                     uint64_t now, uint64_t cost, const char *op)
{
	size_t n = s->key_prefix_len, own = strlen(s->owner);

	memcpy(k->key, s->key_prefix, n);
	if (key_escape(k->key, sizeof(k->key), &n, key, keylen) < 0 || n >= sizeof(k->key))
		return -1;
	k->key[n] = '\0';
	if (s->o.caller_clock)
		parse_format_u64(k->now, now);
	else
		k->now[0] = '\0';
	parse_format_u64(k->cost, cost);
	memcpy(k->token, s->owner, own);
	k->token[own] = ':';
	parse_format_u64(k->token + own + 1, (uint64_t)atomic_fetch_add(&s->seq, 1));
	k->argc = 0;
#define ARG(p, l) (k->argv[k->argc] = (p), k->argl[k->argc++] = (l))
	ARG("EVALSHA", 7);
	ARG("", 0);  /* the sha or the script: redis_call_run decides */
	ARG("1", 1);
	ARG(k->key, n);
	ARG(k->now, strlen(k->now));
	ARG(k->cost, strlen(k->cost));
	ARG(op, strlen(op));
	ARG(k->token, strlen(k->token));
	for (size_t i = 0; i < s->nparams; i++)
		ARG(s->params[i], strlen(s->params[i]));
#undef ARG
	return 0;
}

/* Run the call on c: EVALSHA, or EVAL when the sha is unknown or Redis forgot it. */
redisReply *redis_call_run(struct store_redis *s, struct redis_conn *c, struct redis_call *k)
{
	redisReply *r = NULL;

	if (atomic_load(&s->have_sha)) {
		k->argv[1] = s->sha;
		k->argl[1] = strlen(s->sha);
		r = redisCommandArgv(c->c, k->argc, k->argv, k->argl);
		if (r == NULL || r->type != REDIS_REPLY_ERROR || strncmp(r->str, "NOSCRIPT", 8) != 0)
			return r;
		freeReplyObject(r);
	}
	k->argv[0] = "EVAL";
	k->argl[0] = 4;
	k->argv[1] = s->script;
	k->argl[1] = strlen(s->script);
	return redisCommandArgv(c->c, k->argc, k->argv, k->argl);
}

int redis_call_decision(const redisReply *r, struct limiter_decision *d, bool *was_corrupt)
{
	long long v[8] = { 0 };

	if (r == NULL || r->type != REDIS_REPLY_ARRAY || (r->elements != 7 && r->elements != 8))
		return -1;
	for (size_t i = 0; i < r->elements; i++) {
		if (r->element[i] == NULL || r->element[i]->type != REDIS_REPLY_INTEGER || r->element[i]->integer < 0 ||
		    (i == 6 && r->element[i]->integer >= LIMITER_MAX_LAYERS))
			return -1;
		v[i] = r->element[i]->integer;
	}
	*was_corrupt = v[7] != 0;
	d->admitted = v[0] != 0;
	d->wait_ns = (uint64_t)v[1];
	d->remaining = (uint64_t)v[2];
	d->limit = (uint64_t)v[3];
	d->window_ns = (uint64_t)v[4];
	d->reset_ns = (uint64_t)v[5];
	d->layer = (int)v[6];
	return 0;
}

/* One script call; 0 with *d filled (when d is not NULL), or -1 after counting the failure. */
int redis_call_script(struct store_redis *s, const char *key, size_t keylen, uint64_t now,
                      uint64_t cost, const char *op, struct limiter_decision *d)
{
	struct redis_conn *c = redis_conn_get(s);
	struct redis_call k;
	struct limiter_decision got;
	redisReply *r;
	const char *why = "out of memory";
	bool corrupt = false;
	int rc = -1;

	if (c == NULL || redis_conn_ready(s, c, &why) < 0)
		goto fail;
	if (redis_call_build(s, &k, key, keylen, now, cost, op) < 0) {
		why = "key too long";
		goto fail;
	}
	r = redis_call_run(s, c, &k);
	if (r == NULL) {
		redis_conn_note_failure(s, c->c->errstr[0] ? c->c->errstr : "connection lost");
		redis_conn_drop(c);
		return -1;
	}
	if (redis_call_decision(r, d != NULL ? d : &got, &corrupt) == 0)
		rc = 0;
	else
		why = r->type == REDIS_REPLY_ERROR ? r->str : "unexpected script reply";
	if (rc == 0)
		redis_conn_note_success(s);
	else
		redis_conn_note_failure(s, why);
	if (rc == 0 && corrupt)
		redis_conn_note_corrupt(s, k.key);
	freeReplyObject(r);
	return rc;
fail:
	if (why != NULL)
		redis_conn_note_failure(s, why);
	return -1;
}

void redis_call_fail_open(const struct store_redis *s, struct limiter_decision *d)
{
	memset(d, 0, sizeof(*d));
	d->admitted = true;
	d->limit = s->p.nlayers > 0 ? s->p.layers[0].limit : s->p.limit;
	d->remaining = d->limit;
	d->window_ns = s->p.nlayers > 0 ? s->p.layers[0].window_ns : s->p.window_ns;
}
