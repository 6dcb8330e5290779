/*
 * The Lua scripts of the Redis store.  Each body mirrors its C limiter line
 * by line (see redis_scripts.h); integer division goes through fdiv/cdiv,
 * which are exact for integers below 2^53 even though Lua 5.1 has only doubles.
 */
#include "server/store/redis_scripts.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STR_(x) #x
#define STR(x)  STR_(x)

static const char PRELUDE[] =
	"local key = KEYS[1]\n"
	"local cost, op, token = tonumber(ARGV[2]), ARGV[3], ARGV[4]\n"
	"local limit, win = tonumber(ARGV[5]), tonumber(ARGV[6])\n"
	"local burst, lease = tonumber(ARGV[7]), tonumber(ARGV[8])\n"
	"local given = ARGV[1] ~= ''\n"
	"local now\n"
	"if given then now = tonumber(ARGV[1]) else\n"
	"  local t = redis.call('TIME')\n"
	"  now = (tonumber(t[1]) - " STR(REDIS_SCRIPTS_TIME_BASE) ") * 1000000000 + tonumber(t[2]) * 1000\n"
	"end\n"
	"local function fdiv(a, b)\n"
	"  local q = math.floor(a / b)\n"
	"  local r = a - q * b\n"
	"  while r < 0 do q = q - 1; r = r + b end\n"
	"  while r >= b do q = q + 1; r = r - b end\n"
	"  return q\n"
	"end\n"
	"local function cdiv(a, b)\n"
	"  local q = fdiv(a, b)\n"
	"  if q * b < a then q = q + 1 end\n"
	"  return q\n"
	"end\n"
	"local function wstart(t, w) return fdiv(t, w) * w end\n"
	"local function num(x) return string.format('%.0f', x) end\n"
	"local function expire(ns)\n"
	"  if ns <= 0 then redis.call('DEL', key) return end\n"
	"  local ms = cdiv(ns, 1000000)\n"
	"  if given then ms = ms + 10000 end\n"
	"  redis.call('PEXPIRE', key, ms)\n"
	"end\n"
	"local function keep(ns, ...)\n"
	"  if ns > 0 then redis.call('HSET', key, ...) end\n"
	"  expire(ns)\n"
	"end\n";

static const char TOKEN_BUCKET[] =
	"local cap = burst * win\n"
	"local st = redis.call('HMGET', key, 'c', 'l')\n"
	"local credit, last = cap, now\n"
	"if st[1] then credit, last = tonumber(st[1]), tonumber(st[2]) end\n"
	"local el = now > last and now - last or 0\n"
	"if el >= cdiv(cap - credit, limit) then credit = cap else credit = credit + el * limit end\n"
	"if now > last then last = now end\n"
	"local adm, wait, need = 0, 0, cost * win\n"
	"if cost > burst then wait = win\n"
	"elseif credit >= need then credit = credit - need; adm = 1\n"
	"else wait = cdiv(need - credit, limit) end\n"
	"local reset = cdiv(cap - credit, limit)\n"
	"keep(reset, 'c', num(credit), 'l', num(last))\n"
	"return {adm, wait, fdiv(credit, win), limit, win, reset, 0}\n";

static const char LEAKY_BUCKET[] =
	"local max = (burst + 1) * win\n"
	"local st = redis.call('HMGET', key, 'v', 'l')\n"
	"local level, last = 0, now\n"
	"if st[1] then level, last = tonumber(st[1]), tonumber(st[2]) end\n"
	"local el = now > last and now - last or 0\n"
	"if el >= cdiv(level, limit) then level = 0 else level = level - el * limit end\n"
	"if now > last then last = now end\n"
	"local adm, wait = 0, 0\n"
	"if cost > burst + 1 then wait = win\n"
	"elseif level + cost * win <= max then adm = 1; level = level + cost * win\n"
	"else wait = cdiv(level + cost * win - max, limit) end\n"
	"local reset = cdiv(level, limit)\n"
	"keep(reset, 'v', num(level), 'l', num(last))\n"
	"return {adm, wait, fdiv(max - level, win), limit, win, reset, 0}\n";

static const char FIXED_WINDOW[] =
	"local st = redis.call('HMGET', key, 's', 'n')\n"
	"local start, count = wstart(now, win), 0\n"
	"if st[1] and not (start > tonumber(st[1])) then start, count = tonumber(st[1]), tonumber(st[2]) end\n"
	"if now < start then now = start end\n"
	"local adm, wait = 0, 0\n"
	"if cost <= limit - count then adm = 1; count = count + cost else wait = start + win - now end\n"
	"local reset = 0\n"
	"if count > 0 then reset = start + win - now end\n"
	"keep(reset, 's', num(start), 'n', num(count))\n"
	"return {adm, wait, limit - count, limit, win, reset, 0}\n";

/* The log is a sorted set of admitted requests scored by time, trimmed to `limit` entries. */
static const char SLIDING_LOG[] =
	"local top = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')\n"
	"if top[2] and now < tonumber(top[2]) then now = tonumber(top[2]) end\n"
	"redis.call('ZREMRANGEBYSCORE', key, '-inf', num(now - win))\n"
	"local n = redis.call('ZCARD', key)\n"
	"local adm, wait = 0, 0\n"
	"if cost <= limit - n then\n"
	"  adm = 1\n"
	"  for i = 1, cost do redis.call('ZADD', key, num(now), token .. ':' .. i) end\n"
	"  n = n + cost\n"
	"elseif cost > limit then wait = win\n"
	"else\n"
	"  local e = redis.call('ZRANGE', key, n + cost - limit - 1, n + cost - limit - 1, 'WITHSCORES')\n"
	"  wait = tonumber(e[2]) + win - now\n"
	"end\n"
	"redis.call('ZREMRANGEBYRANK', key, 0, -(limit + 1))\n"
	"local reset = 0\n"
	"if n > 0 then reset = tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]) + win - now end\n"
	"expire(reset)\n"
	"return {adm, wait, limit - n, limit, win, reset, 0}\n";

static const char SLIDING_WINDOW[] =
	"local st = redis.call('HMGET', key, 's', 'c', 'p')\n"
	"local start, cur, prev = wstart(now, win), 0, 0\n"
	"if st[1] then\n"
	"  local s0, c0 = tonumber(st[1]), tonumber(st[2])\n"
	"  if start <= s0 then start, cur, prev = s0, c0, tonumber(st[3])\n"
	"  elseif start == s0 + win then prev = c0 end\n"
	"end\n"
	"local e = now > start and now - start or 0\n"
	"local function fit(pv, cu, c)\n"
	"  if cu + c > limit then return win end\n"
	"  local room = (limit - cu - c) * win\n"
	"  if pv == 0 or fdiv(room, pv) >= win then return 0 end\n"
	"  return win - fdiv(room, pv)\n"
	"end\n"
	"local f = fit(prev, cur, cost)\n"
	"local adm, wait = 0, 0\n"
	"if cost <= limit and e >= f then adm = 1; cur = cur + cost\n"
	"elseif cost > limit then wait = win\n"
	"elseif f < win then wait = f - e\n"
	"else wait = (win - e) + fit(cur, 0, cost) end\n"
	"local used = prev * (win - e) + cur * win\n"
	"local rem = 0\n"
	"if used < limit * win then rem = fdiv(limit * win - used, win) end\n"
	"local reset = 0\n"
	"if cur > 0 then reset = 2 * win - e elseif prev > 0 then reset = win - e end\n"
	"keep(reset, 's', num(start), 'c', num(cur), 'p', num(prev))\n"
	"return {adm, wait, rem, limit, win, reset, 0}\n";

static const char GCRA[] =
	"local st = redis.call('HMGET', key, 't', 'f')\n"
	"local tn, tf = now, 0\n"
	"if st[1] then tn, tf = tonumber(st[1]), tonumber(st[2]) end\n"
	"local tol, inc, ttl = burst * win, cost * win, 0\n"
	"if tn >= now then ttl = (tn - now) * limit + tf end\n"
	"local adm, wait = 0, 0\n"
	"if cost <= burst and ttl + inc <= tol then\n"
	"  adm = 1; ttl = ttl + inc\n"
	"  tn = now + fdiv(ttl, limit); tf = ttl - fdiv(ttl, limit) * limit\n"
	"elseif cost > burst then wait = win\n"
	"else wait = cdiv(ttl + inc - tol, limit) end\n"
	"local reset = cdiv(ttl, limit)\n"
	"keep(reset, 't', num(tn), 'f', num(tf))\n"
	"return {adm, wait, fdiv(tol - ttl, win), burst, win, reset, 0}\n";

/*
 * Slots are leases in a sorted set scored by expiry (now + lease), so the
 * slots of a replica that died without releasing come back after the lease.
 * A release drops the oldest lease of the releasing replica (OWNER of the token).
 */
static const char CONCURRENCY[] =
	"local owner = string.match(token, '^[^:]*') .. ':'\n"
	"redis.call('ZREMRANGEBYSCORE', key, '-inf', num(now))\n"
	"local adm, wait = 0, 0\n"
	"if op == 'r' then\n"
	"  local all = redis.call('ZRANGE', key, 0, -1)\n"
	"  for i = 1, #all do\n"
	"    if string.sub(all[i], 1, #owner) == owner then redis.call('ZREM', key, all[i]); break end\n"
	"  end\n"
	"  adm = 1\n"
	"end\n"
	"local n = redis.call('ZCARD', key)\n"
	"if op ~= 'r' then\n"
	"  if cost <= limit - n then\n"
	"    adm = 1\n"
	"    for i = 1, cost do redis.call('ZADD', key, num(now + lease), token .. ':' .. i) end\n"
	"    n = n + cost\n"
	"  else wait = 1000000000 end\n"
	"end\n"
	"local last = 0\n"
	"if n > 0 then last = tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]) - now end\n"
	"expire(last)\n"
	"local reset = 0\n"
	"if n > 0 then reset = 1000000000 end\n"
	"return {adm, wait, limit - n, limit, win, reset, 0}\n";

static const char LAYERED[] =
	"local nl = tonumber(ARGV[9])\n"
	"local L, W, S, C, left, fields, out = {}, {}, {}, {}, {}, {}, {}\n"
	"for i = 1, nl do fields[2 * i - 1] = 's' .. i; fields[2 * i] = 'c' .. i end\n"
	"local st = redis.call('HMGET', key, unpack(fields))\n"
	"local wait, bind, tight, ttl = 0, 1, 1, 0\n"
	"for i = 1, nl do\n"
	"  L[i], W[i] = tonumber(ARGV[8 + 2 * i]), tonumber(ARGV[9 + 2 * i])\n"
	"  S[i], C[i] = wstart(now, W[i]), 0\n"
	"  if st[2 * i - 1] and not (S[i] > tonumber(st[2 * i - 1])) then\n"
	"    S[i], C[i] = tonumber(st[2 * i - 1]), tonumber(st[2 * i])\n"
	"  end\n"
	"  left[i] = W[i]\n"
	"  if now > S[i] then left[i] = S[i] + W[i] - now end\n"
	"  if cost > L[i] - C[i] and left[i] > wait then wait = left[i]; bind = i end\n"
	"end\n"
	"local adm = 0\n"
	"if wait == 0 then adm = 1 end\n"
	"for i = 1, nl do\n"
	"  if adm == 1 then C[i] = C[i] + cost end\n"
	"  if L[i] - C[i] < L[tight] - C[tight] then tight = i end\n"
	"  if C[i] > 0 and S[i] + W[i] - now > ttl then ttl = S[i] + W[i] - now end\n"
	"  out[#out + 1] = 's' .. i; out[#out + 1] = num(S[i])\n"
	"  out[#out + 1] = 'c' .. i; out[#out + 1] = num(C[i])\n"
	"end\n"
	"if adm == 1 then bind = tight end\n"
	"local reset = 0\n"
	"if C[bind] > 0 then reset = left[bind] end\n"
	"keep(ttl, unpack(out))\n"
	"return {adm, wait, L[tight] - C[tight], L[bind], W[bind], reset, bind - 1}\n";

static const char NONE[] = "return {1, 0, 0, 0, win, 0, 0}\n";

static const struct {
	const char *name;
	const char *body;
} BODIES[] = {
	{ "token-bucket", TOKEN_BUCKET }, { "leaky-bucket", LEAKY_BUCKET },
	{ "fixed-window", FIXED_WINDOW }, { "sliding-log", SLIDING_LOG },
	{ "sliding-window", SLIDING_WINDOW }, { "gcra", GCRA },
	{ "concurrency", CONCURRENCY }, { "layered", LAYERED }, { "none", NONE },
};

#define NBODIES (sizeof(BODIES) / sizeof(BODIES[0]))

static char *sources[NBODIES];
static pthread_once_t sources_once = PTHREAD_ONCE_INIT;

static void sources_build(void)
{
	for (size_t i = 0; i < NBODIES; i++) {
		size_t n = sizeof(PRELUDE) - 1 + strlen(BODIES[i].body) + 1;

		sources[i] = malloc(n);
		if (sources[i] != NULL)
			snprintf(sources[i], n, "%s%s", PRELUDE, BODIES[i].body);
	}
}

const char *redis_scripts_source(const char *name)
{
	pthread_once(&sources_once, sources_build);
	for (size_t i = 0; name != NULL && i < NBODIES; i++)
		if (strcmp(BODIES[i].name, name) == 0)
			return sources[i];
	return NULL;
}
