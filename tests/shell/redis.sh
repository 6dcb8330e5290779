#!/bin/sh
# `ratelab serve --store redis://...` from the shell.
#
#   sh tests/shell/redis.sh                         self-test (run by `make check`): the --store
#                                             flags, fail open/closed with Redis absent, and
#                                             concurrency slots released on a real Redis
#   sh tests/shell/redis.sh replicas memory|redis [SECONDS] [RATE]
#                                             the experiment of lab-guide chapter 12: three
#                                             replicas of `serve --limiter token-bucket
#                                             --limit 10 --key global`, each hammered at RATE
#                                             req/s (default 20) for SECONDS (default 5), on
#                                             their own memory stores or on one Redis
#
# It starts its own redis-server (no persistence) on a free loopback port and
# stops everything it started on exit.
set -u

BIN=${RATELAB_BIN:-./ratelab}
ROOT=${RATELAB_ROOT:-.}
TMP=$(mktemp -d)
PIDS=""
. "$ROOT/tests/harness/redis.sh"
. "$ROOT/tests/harness/serve.sh"
. "$ROOT/tests/harness/check.sh"

cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	for p in $PIDS; do wait "$p" 2>/dev/null; done
	redis_stop
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

die() {
	echo "redis.sh: $*" >&2
	exit 1
}

# The count of status $2 in a hammer summary file $1 (0 when absent).
count_of() {
	awk -v s="$2" '$1 == s { v = $2; sub(/^x/, "", v); print v; f = 1 } END { if (!f) print 0 }' "$1"
}

replicas() {
	store=$1
	secs=${2:-5}
	rate=${3:-20}
	case $store in
	memory) url=memory ;;
	redis) redis_start || die "$REDIS_ERROR"; url=$REDIS_URL ;;
	*) die "replicas: want memory or redis, not '$store'" ;;
	esac
	for i in 1 2 3; do
		serve_start "r$i" --limiter token-bucket --limit 10 --key global --store "$url" || die "$SERVE_ERROR"
	done
	hpids=""
	for i in 1 2 3; do
		eval "u=\$URL_r$i"
		"$BIN" hammer "$u/" --rate "$rate" --duration "${secs}s" --no-retry --threads 1 \
			>"$TMP/h$i.txt" 2>&1 &
		hpids="$hpids $!"
	done
	for p in $hpids; do wait "$p" || die "hammer failed: $(cat "$TMP"/h*.txt)"; done
	ok=0
	no=0
	for i in 1 2 3; do
		eval "u=\$URL_r$i"
		a=$(count_of "$TMP/h$i.txt" 200)
		r=$(count_of "$TMP/h$i.txt" 429)
		printf 'replica %d  %s  200 x%s  429 x%s\n' "$i" "$u" "$a" "$r"
		ok=$((ok + a))
		no=$((no + r))
	done
	printf '200  x%d\n429  x%d\n' "$ok" "$no"
	awk -v a="$ok" -v s="$secs" 'BEGIN { printf "admitted %.1f per second over %ss (store: %s)\n", a / s, s, "'"$store"'" }'
}

usage_error() {   # usage_error NEEDLE ARGS...: exit 2 and one stderr line holding NEEDLE
	needle=$1
	shift
	"$BIN" serve "$@" >"$TMP/u.out" 2>"$TMP/u.err"
	st=$?
	[ "$st" -eq 2 ] && [ "$(wc -l <"$TMP/u.err")" -eq 1 ] && grep -qF -- "$needle" "$TMP/u.err"
}

hammer_says() {   # hammer_says URL STATUS: three requests all answered STATUS
	"$BIN" hammer "$1/" --requests 3 --concurrency 1 --no-retry >"$TMP/h.txt" 2>&1
	[ "$(count_of "$TMP/h.txt" "$2")" = 3 ]
}

# The keys under prefix $1 in the Redis redis_start started, one a line.
redis_keys() {
	redis-cli -p "$REDIS_PORT" --scan --pattern "$1*"
}

# --limiter concurrency --limit 1 on Redis, 30 requests one after the other on
# one kept-alive connection: each release is queued before the next acquire, so
# all 30 are admitted, and once the last release is through no slot is held.
concurrency_releases() {
	redis_start || die "$REDIS_ERROR"
	serve_start conc --limiter concurrency --limit 1 --key global --store "$REDIS_URL" \
		--store-failure closed --store-prefix "rs$$:" || die "$SERVE_ERROR"
	"$BIN" hammer "$URL_conc/" --requests 30 --concurrency 1 --no-retry >"$TMP/c.txt" 2>&1
	[ "$(count_of "$TMP/c.txt" 200)" = 30 ] || { cat "$TMP/c.txt" >&2; return 1; }
	n=0
	while [ $n -lt 40 ] && [ -n "$(redis_keys "rs$$:")" ]; do   # at most 2 s
		sleep 0.05
		n=$((n + 1))
	done
	[ -z "$(redis_keys "rs$$:")" ]
}

selftest() {
	check "--help lists --store" sh -c "'$BIN' serve --help | grep -q -- '--store-failure'"
	check "bad --store URL" usage_error "'http://x'" --store http://x
	check "bad --store port" usage_error "'redis://h:0'" --store redis://h:0
	check "bad --store-failure" usage_error "'maybe'" --store-failure maybe
	check "--store without a value" usage_error "--store" --store
	# Nothing listens on port 1: open admits, closed answers 503, and the server stays up.
	serve_start open --store redis://127.0.0.1:1 --store-failure open || die "$SERVE_ERROR"
	serve_start closed --store redis://127.0.0.1:1 --store-failure closed || die "$SERVE_ERROR"
	check "Redis down, fail open: 200" hammer_says "$URL_open" 200
	check "Redis down, fail closed: 503" hammer_says "$URL_closed" 503
	check "one log line per outage" sh -c "[ \$(grep -c 'unreachable' '$TMP/closed.err') -eq 1 ]"
	if command -v curl >/dev/null 2>&1; then
		check "/metrics counts store errors" sh -c \
			"curl -s '$URL_closed/metrics' | grep -q 'ratelab_store_errors_total{route=\"/\"} 3'"
	fi
	check "concurrency on Redis: 30 of 30 admitted at --limit 1, no slot left" concurrency_releases
	check_done redis.sh
}

case ${1:-selftest} in
selftest) selftest ;;
replicas) shift; replicas "$@" ;;
*) die "usage: sh tests/shell/redis.sh [selftest | replicas memory|redis [SECONDS] [RATE]]" ;;
esac
