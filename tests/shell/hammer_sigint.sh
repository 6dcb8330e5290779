#!/bin/sh
# ratelab hammer: Ctrl-C (SIGINT) stops a run, prints the partial summary and exits 130;
# the same happens in --json mode, whose JSON says "interrupted": true.
set -u

BIN=${RATELAB_BIN:-./ratelab}
case $BIN in /*) ;; *) BIN=$(pwd)/$BIN ;; esac
TMP=$(mktemp -d)
SPID=""
trap '[ -n "$SPID" ] && kill "$SPID" 2>/dev/null; rm -rf "$TMP"' EXIT

fail() {
	echo "FAIL: $*"
	exit 1
}

"$BIN" serve --port 0 --limiter none >"$TMP/srv" 2>&1 &
SPID=$!
i=0
while ! grep -q '^listening on ' "$TMP/srv"; do
	i=$((i + 1))
	[ $i -le 100 ] || fail "server did not start: $(cat "$TMP/srv")"
	sleep 0.05
done
URL=$(sed -n 's/^listening on //p' "$TMP/srv" | head -n 1)/

# The server's request count so far (0 before /stats answers).
served() {
	n=$(curl -s "${URL}stats" | jq -r '.requests // 0' 2>/dev/null)
	echo "${n:-0}"
}

# $1: extra flags; runs a 30 s hammer and interrupts it once the server has answered
# 100 more requests (at most 10 s of 50 ms looks).
interrupt() {
	base=$(served)
	# shellcheck disable=SC2086
	"$BIN" hammer "$URL" --duration 30s --concurrency 4 $1 >"$TMP/out" 2>"$TMP/err" &
	hp=$!
	i=0
	while [ "$(served)" -lt $(( ${base:-0} + 100 )) ]; do
		i=$((i + 1))
		[ $i -le 200 ] || { kill -KILL "$hp"; fail "the server saw no requests in 10 s"; }
		sleep 0.05
	done
	kill -INT "$hp"
	i=0
	while kill -0 "$hp" 2>/dev/null; do
		i=$((i + 1))
		[ $i -le 100 ] || { kill -KILL "$hp"; fail "hammer still running 5 s after SIGINT"; }
		sleep 0.05
	done
	wait "$hp"
	RC=$?
}

interrupt ""
[ "$RC" = 130 ] || fail "exit $RC after SIGINT, want 130"
grep -Eq '^200  x[0-9]+$' "$TMP/out" || fail "no status line: $(cat "$TMP/out")"
# cut short: a partial summary, well before the 30 s the run asked for
secs=$(sed -n 's/^[0-9][0-9]* requests in \([0-9.]*\)s$/\1/p' "$TMP/out")
[ -n "$secs" ] && [ "${secs%%.*}" -lt 25 ] || fail "no partial summary: $(cat "$TMP/out")"
grep -q '^interrupted: ' "$TMP/out" || fail "no 'interrupted' line: $(cat "$TMP/out")"

interrupt "--json - --quiet"
[ "$RC" = 130 ] || fail "exit $RC after SIGINT (--json), want 130"
grep -q '"interrupted": true' "$TMP/out" || fail "JSON lacks interrupted: $(head -c 300 "$TMP/out")"
echo "hammer_sigint: 2 passed"
