#!/bin/sh
# One herd from many machines (`herd --join`, `hammer --join`, `ratelab merge`) from the shell.
#
#   sh tests/shell/join.sh                  self-test (run by `make check`): two joined hammers,
#                                           ratelab merge of their run, the usage errors
#   sh tests/shell/join.sh room N [CLIENTS] the experiment of lab-guide chapter 14: the instructor's
#                                           redis-server and `serve --limiter token-bucket --limit
#                                           50 --key global`, and N attendees, each running the
#                                           same `herd --join ... --nodes N --clients CLIENTS`
#                                           line (default 200) at once; prints what node 0, the
#                                           first to join, printed, and what the server counted
#
# It starts its own redis-server (no persistence) and server on free loopback ports and
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
	echo "join.sh: $*" >&2
	exit 1
}

# "N requests, 200 xA, 429 xB" from the server's GET /stats.
server_counts() {
	curl -s "$URL_srv/stats" | tr -d ' \n' |
		sed -n 's/.*"status":{\([^}]*\)},"requests":\([0-9]*\).*/\2 \1/p' |
		awk '{ n = split($2, kv, ","); printf "%s requests", $1;
			for (i = 1; i <= n; i++) { split(kv[i], p, ":"); gsub(/"/, "", p[1]); printf ", %s x%s", p[1], p[2] }
			print "" }'
}

# The experiment of chapter 14: N attendees' herds joined into one.
room() {
	nodes=$1
	clients=${2:-200}
	redis_start || die "$REDIS_ERROR"
	serve_start srv --limiter token-bucket --limit 50 --burst 20 --key global --max-connections $((clients + 1000)) ||
		die "$SERVE_ERROR"
	run="$REDIS_URL/room$$"
	i=0
	hpids=""
	while [ $i -lt "$nodes" ]; do
		"$BIN" herd --url "$URL_srv" --join "$run" --nodes "$nodes" --clients "$clients" --policies none,full \
			>"$TMP/node$i.txt" 2>&1 &
		hpids="$hpids $!"
		i=$((i + 1))
	done
	for p in $hpids; do wait "$p" || die "an attendee's herd failed: $(cat "$TMP"/node*.txt)"; done
	counted=$(server_counts)
	i=0
	while [ $i -lt "$nodes" ]; do
		if grep -q "^full: " "$TMP/node$i.txt"; then
			echo "node 0, the first attendee to join, printed:"
			cat "$TMP/node$i.txt"
		fi
		i=$((i + 1))
	done
	echo "the server counted, since node 0's POST /reset before full (the reset included): $counted"
}

usage_error() {   # usage_error CODE NEEDLE ARGS...: exit CODE and one stderr line holding NEEDLE
	code=$1
	needle=$2
	shift 2
	"$BIN" "$@" >"$TMP/u.out" 2>"$TMP/u.err"
	st=$?
	[ "$st" -eq "$code" ] && [ "$(wc -l <"$TMP/u.err")" -eq 1 ] && grep -qF -- "$needle" "$TMP/u.err"
}

# Two hammers joined into one run of 60 requests; node 0 prints the merged summary.
two_hammers() {
	redis_start || die "$REDIS_ERROR"
	serve_start srv --limiter none || die "$SERVE_ERROR"
	run="$REDIS_URL/pair$$"
	for i in 0 1; do
		"$BIN" hammer "$URL_srv/" --requests 60 --concurrency 6 --join "$run" --nodes 2 >"$TMP/pair$i.txt" 2>&1 &
		eval "p$i=\$!"
	done
	# shellcheck disable=SC2154 # p0 and p1 are set by the eval above
	wait "$p0" && wait "$p1" || return 1
	cat "$TMP/pair0.txt" "$TMP/pair1.txt" >"$TMP/pair.txt"
	grep -q '^200  x60$' "$TMP/pair.txt" && grep -q '^2 nodes, start spread ' "$TMP/pair.txt" &&
		grep -q '^200  x30$' "$TMP/pair.txt"
}

merged_again() {
	"$BIN" merge "$REDIS_URL/pair$$" --expect 'ok=60' >"$TMP/m.txt" 2>&1 &&
		grep -q '^60 requests in ' "$TMP/m.txt" && grep -q '^2 nodes, start spread ' "$TMP/m.txt"
}

selftest() {
	check "hammer --help has --join" sh -c "'$BIN' hammer --help | grep -q -- '--join redis://'"
	check "herd --help has --join" sh -c "'$BIN' herd --help | grep -q -- '--join redis://'"
	check "merge --help" sh -c "'$BIN' merge --help | grep -q -- '--max-skew'"
	check "--join without --nodes" usage_error 2 "--join needs --nodes" hammer --join redis://h/r
	check "--join with a bad RUNID" usage_error 2 "RUNID" hammer --join redis://h/a:b --nodes 2
	check "merge with nothing" usage_error 2 "merge" merge
	echo "{}" >"$TMP/empty.json"
	check "merge of a file that is not JSON" usage_error 2 "cannot read /dev/null" merge /dev/null
	check "merge of a file that is not a result" usage_error 2 "is not a result written by --json" merge "$TMP/empty.json"
	check "two joined hammers, one summary" two_hammers
	check "ratelab merge redis://... says the same" merged_again
	check_done join.sh
}

case ${1:-selftest} in
selftest) selftest ;;
room) shift; room "$@" ;;
*) die "usage: sh tests/shell/join.sh [selftest | room N [CLIENTS]]" ;;
esac
