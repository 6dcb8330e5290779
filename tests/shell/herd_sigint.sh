#!/bin/sh
# ratelab herd: Ctrl-C (SIGINT) during `herd --report DIR` writes the policies
# that finished (table, results.json, their CSVs, report.html), says the run
# was interrupted, and exits 130.  On a terminal a progress line names the
# policy running; on a file there is none.
set -u

BIN=${RATELAB_BIN:-./ratelab}
case $BIN in /*) ;; *) BIN=$(pwd)/$BIN ;; esac
TMP=$(mktemp -d)
HP=""
trap '[ -n "$HP" ] && kill "$HP" 2>/dev/null; rm -rf "$TMP"' EXIT
passed=0

fail() {
	echo "FAIL: $*"
	exit 1
}

ok() {
	echo "ok   $*"
	passed=$((passed + 1))
}

# none finishes at once; exponential then takes seconds: the SIGINT lands in it.
"$BIN" herd --clients 50 --report "$TMP/r" >"$TMP/out" 2>"$TMP/err" &
HP=$!
i=0
while ! grep -q '^none ' "$TMP/out"; do
	i=$((i + 1))
	[ $i -le 200 ] || fail "no 'none' row after 10 s: $(cat "$TMP/out" "$TMP/err")"
	sleep 0.05
done
kill -INT "$HP"
i=0
while kill -0 "$HP" 2>/dev/null; do
	i=$((i + 1))
	[ $i -le 200 ] || { kill -KILL "$HP"; fail "herd still running 10 s after SIGINT"; }
	sleep 0.05
done
wait "$HP"
RC=$?
HP=""
[ "$RC" = 130 ] || fail "exit $RC after SIGINT, want 130 ($(cat "$TMP/err"))"
ok "exit 130"
grep -q '^ratelab herd: interrupted: 1 of 5 policies finished$' "$TMP/err" || fail "no interrupted line: $(cat "$TMP/err")"
ok "says: interrupted: 1 of 5 policies finished"
grep -q "^report: $TMP/r/report.html" "$TMP/out" || fail "no report line: $(cat "$TMP/out")"
[ -f "$TMP/r/none.csv" ] && [ ! -e "$TMP/r/exponential.csv" ] || fail "CSVs: $(ls "$TMP/r")"
ok "none.csv written, no CSV for the interrupted policy"
grep -q '"interrupted": true' "$TMP/r/results.json" && grep -q '"policies_planned": 5' "$TMP/r/results.json" &&
	[ "$(grep -c '"policy": ' "$TMP/r/results.json")" = 1 ] || fail "results.json: $(cat "$TMP/r/results.json")"
ok "results.json: interrupted, 1 of 5 policies"
grep -q 'data-policy="none"' "$TMP/r/report.html" && ! grep -q 'data-policy="exponential"' "$TMP/r/report.html" &&
	grep -q 'Interrupted (Ctrl-C) after 1 of 5 policies' "$TMP/r/report.html" ||
	fail "report.html lacks the none lane or the interrupted note"
ok "report.html: the finished lane and the interrupted note"
! grep -q 'clients done' "$TMP/err" || fail "a progress line went to a file: $(cat "$TMP/err")"
ok "no progress line on a file"

# A terminal: script(1) gives herd one.
if command -v script >/dev/null 2>&1; then
	script -qc "'$BIN' herd --clients 20 --policies none,full" /dev/null >"$TMP/tty" 2>&1 </dev/null
	grep -q 'policy 2 of 2 (full): [0-9]*/20 clients done, [0-9]* calls, [0-9.]*s' "$TMP/tty" ||
		fail "no progress line on a terminal: $(cat -v "$TMP/tty" | head -5)"
	ok "a progress line on a terminal: policy 2 of 2 (full): .../20 clients done"
else
	echo "skip progress on a terminal: no script(1)"
fi
echo "herd_sigint: $passed passed"
