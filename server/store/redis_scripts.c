/*
 * The prelude of the Redis store's scripts (see redis_scripts.h); integer
 * division goes through fdiv/cdiv, which are exact for integers below 2^53
 * even though Lua 5.1 has only doubles.
 */
#include "server/store/redis_scripts.h"

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
	"local BIG = 4611686018427387904\n"
	"local function fdiv(a, b)\n"
	"  if not (a >= -BIG and a <= BIG and b > 0 and b <= BIG) then error('corrupt state') end\n"
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

/*
 * Before the body: is the key's state something no script wrote?  Another
 * type than a hash or a sorted set, more fields or members than any script
 * keeps, or a number that is not a whole number from 0 to `now` plus the
 * longest span a script stores ahead (the bursts of the longest window,
 * the lease, the caller clock's slack).
 */
static const char STATE_CHECK[] =
	"local function corrupt_state()\n"
	"  local maxwin, nl = win, tonumber(ARGV[9]) or 0\n"
	"  for i = 1, nl do local w = tonumber(ARGV[9 + 2 * i]) or 0; if w > maxwin then maxwin = w end end\n"
	"  local top = now + (burst + 2) * maxwin + lease + 10000000000\n"
	"  local function bad(v)\n"
	"    local x = tonumber(v)\n"
	"    return x == nil or not (x >= 0 and x <= top) or x ~= math.floor(x)\n"
	"  end\n"
	"  local t = redis.call('TYPE', key)['ok']\n"
	"  if t == 'none' then return false end\n"
	"  if t == 'hash' then\n"
	"    if redis.call('HLEN', key) > 2 * nl + 8 then return true end\n"
	"    local all = redis.call('HGETALL', key)\n"
	"    for i = 2, #all, 2 do if bad(all[i]) then return true end end\n"
	"    return false\n"
	"  end\n"
	"  if t ~= 'zset' or redis.call('ZCARD', key) > limit + 64 then return true end\n"
	"  local lo = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')\n"
	"  local hi = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')\n"
	"  return bad(lo[2]) or bad(hi[2])\n"
	"end\n"
	"local function body()\n";

/*
 * After the body: its answer is used only when it is 7 whole numbers from
 * 0 to 2^62; otherwise (or when the state was corrupt, or the body failed
 * on it) the key is deleted and the body runs again on a fresh state, and
 * the answer carries an 8th element, 1: the store counts and logs it.
 */
static const char STATE_RESET[] =
	"\nend\n"
	"local function sane(r)\n"
	"  if type(r) ~= 'table' or #r ~= 7 then return false end\n"
	"  for i = 1, 7 do\n"
	"    local x = r[i]\n"
	"    if type(x) ~= 'number' or not (x >= 0 and x <= BIG) or x ~= math.floor(x) then return false end\n"
	"  end\n"
	"  return true\n"
	"end\n"
	"local now0, ok, r = now, false, nil\n"
	"if not corrupt_state() then ok, r = pcall(body) end\n"
	"if ok and sane(r) then return r end\n"
	"now = now0\n"
	"redis.call('DEL', key)\n"
	"r = body()\n"
	"r[8] = 1\n"
	"return r\n";

char *redis_scripts_source(const struct limiter_ops *ops)
{
	size_t n;
	char *src;

	if (ops->redis_script == NULL)
		return NULL;
	n = sizeof(PRELUDE) - 1 + sizeof(STATE_CHECK) - 1 + strlen(ops->redis_script) + sizeof(STATE_RESET);
	if ((src = malloc(n)) != NULL)
		snprintf(src, n, "%s%s%s%s", PRELUDE, STATE_CHECK, ops->redis_script, STATE_RESET);
	return src;
}
