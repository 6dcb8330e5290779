#!/bin/sh
# ratelab verify: on a terminal a progress line shows while the command runs
# (copies done and the time so far; with --all, scenarios done) and is erased
# before the verdicts; on a file, or with --quiet, there is none.
set -u

BIN=${RATELAB_BIN:-./ratelab}
case $BIN in /*) ;; *) BIN=$(pwd)/$BIN ;; esac
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
passed=0

fail() {
	echo "FAIL: $*"
	exit 1
}

ok() {
	echo "ok   $*"
	passed=$((passed + 1))
}

# Each copy asks once (a 400 is not retried) and then stays 0.5 s: a few 200 ms ticks.
CLIENT='curl -s -o /dev/null "$RATELAB_URL"; sleep 0.5'
"$BIN" verify --scenario bad-request-400 --clients 2 -- sh -c "$CLIENT" >"$TMP/out" 2>"$TMP/err"
RC=$?
[ "$RC" = 0 ] || fail "exit $RC on a file: $(cat "$TMP/out" "$TMP/err")"
grep -q '^PASS  no-retry' "$TMP/out" || fail "no verdict: $(cat "$TMP/out")"
! grep -q 'clients done' "$TMP/out" "$TMP/err" || fail "a progress line went to a file: $(cat "$TMP/err")"
ok "no progress line on a file"

# Ctrl-C during several scenarios: exit 130 and one line saying how far it got (it printed nothing).  The
# signal goes once both commands run (their sleeps are there), not after a pause.
"$BIN" verify --scenario post-503,retry-after-seconds --jobs 2 -- sleep 29.75 >"$TMP/out" 2>"$TMP/err" &
VPID=$!
n=0
sleeps() { for f in /proc/[0-9]*/cmdline; do { tr '\0' ' ' <"$f"; } 2>/dev/null; echo; done | grep -c '^sleep 29.75 $'; }
while [ "$(sleeps)" -lt 2 ] && [ "$n" -lt 100 ]; do n=$((n + 1)); sleep 0.1; done
kill -INT "$VPID"
wait "$VPID"
RC=$?
[ "$RC" = 130 ] || fail "interrupted: exit $RC: $(cat "$TMP/out" "$TMP/err")"
[ "$(cat "$TMP/err")" = "ratelab verify: interrupted: 0 of 2 scenarios had run to their end" ] ||
	fail "interrupted: stderr '$(cat "$TMP/err")'"
ok "Ctrl-C during two scenarios: exit 130 and one line"

if ! command -v script >/dev/null 2>&1; then
	echo "skip progress on a terminal: no script(1)"
	echo "verify_progress: $passed passed"
	exit 0
fi
printf '%s\n' "$CLIENT" >"$TMP/client.sh"
script -qc "'$BIN' verify --scenario bad-request-400 --clients 2 -- sh '$TMP/client.sh'" /dev/null \
	>"$TMP/tty" 2>&1 </dev/null
# a tick after the first (0.0s): every 200 ms while the copies run, later when the machine stalls the
# command (a soak beside busy loops: no tick from 0.0 s to 1.1 s)
grep -Eq 'scenario bad-request-400: 0 of 2 clients done, ([1-9][0-9]*\.[0-9]|0\.[1-9])s' "$TMP/tty" ||
	fail "no progress tick on a terminal: $(cat -v "$TMP/tty" | head -5)"
ok "a progress line on a terminal: scenario bad-request-400: 0 of 2 clients done, 0.2s"
# erased (carriage return, erase to the end of the line) right before the verdicts' header
ESC=$(printf '\033')
grep -q "^.*${ESC}\[K.*${ESC}\[Kscenario bad-request-400: 2 arrivals" "$TMP/tty" ||
	fail "the progress line is not erased before the header: $(cat -v "$TMP/tty" | head -5)"
grep -q '^PASS  no-retry' "$TMP/tty" || fail "no verdict on a terminal: $(cat -v "$TMP/tty")"
ok "erased before the verdicts"

script -qc "'$BIN' verify --quiet --scenario bad-request-400 -- sh '$TMP/client.sh'" /dev/null >"$TMP/quiet" 2>&1 </dev/null
grep -q '^PASS  no-retry' "$TMP/quiet" && ! grep -q 'clients done' "$TMP/quiet" ||
	fail "--quiet on a terminal: $(cat -v "$TMP/quiet" | head -5)"
ok "--quiet: no progress line"

# --all: the count of scenarios done (true never reaches the server: every run ends at once, exit 4)
script -qc "'$BIN' verify --all -- true; echo \"rc=\$?\"" /dev/null >"$TMP/all" 2>&1 </dev/null
N=$("$BIN" verify --list | grep -c '^[a-z0-9-]* (')
grep -q "verify --all: $N of $N scenarios done, [0-9.]*s" "$TMP/all" ||
	fail "no --all progress line ($N scenarios): $(cat -v "$TMP/all" | head -5)"
grep -q '^rc=4' "$TMP/all" || fail "--all -- true: $(tail -3 "$TMP/all")"
ok "--all: verify --all: $N of $N scenarios done"
echo "verify_progress: $passed passed"
