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

# $1: extra flags; runs a 30 s hammer, interrupts it after 1 s
interrupt() {
	# shellcheck disable=SC2086
	"$BIN" hammer "$URL" --duration 30s --concurrency 4 $1 >"$TMP/out" 2>"$TMP/err" &
	hp=$!
	sleep 1
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
grep -Eq '^[0-9]+ requests in (0\.9|1\.|2\.)[0-9]*s$' "$TMP/out" || fail "no partial summary: $(cat "$TMP/out")"
grep -q '^interrupted: ' "$TMP/out" || fail "no 'interrupted' line: $(cat "$TMP/out")"

interrupt "--json - --quiet"
[ "$RC" = 130 ] || fail "exit $RC after SIGINT (--json), want 130"
grep -q '"interrupted": true' "$TMP/out" || fail "JSON lacks interrupted: $(head -c 300 "$TMP/out")"
echo "hammer_sigint: 2 passed"
