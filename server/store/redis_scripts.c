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

char *redis_scripts_source(const struct limiter_ops *ops)
{
	size_t n;
	char *src;

	if (ops->redis_script == NULL)
		return NULL;
	n = sizeof(PRELUDE) - 1 + strlen(ops->redis_script) + 1;
	if ((src = malloc(n)) != NULL)
		snprintf(src, n, "%s%s", PRELUDE, ops->redis_script);
	return src;
}
