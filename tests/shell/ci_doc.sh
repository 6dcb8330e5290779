#!/bin/sh
# docs/ci.md's plain shell job, extracted from the doc and run as it stands in a fresh
# directory: ratelab is not on the PATH, so the job installs it from this tree
# (RATELAB_SRC, PREFIX in the temp dir), runs verify --all against curl, and exits with
# verify's status (1: curl breaks expectations), having written the JUnit file and said why.
set -u
ROOT=${RATELAB_ROOT:-.}
ROOT=$(cd "$ROOT" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

awk '/^<!-- ci-job -->$/ { take = 1; next } take && /^```sh$/ { on = 1; next } on && /^```$/ { exit } on { print }' \
	"$ROOT/docs/ci.md" > "$TMP/ci-retries.sh"
[ "$(wc -l < "$TMP/ci-retries.sh")" -gt 10 ] || { echo "FAIL: no ci-job block in docs/ci.md"; exit 1; }
command -v curl > /dev/null 2>&1 || { echo "FAIL: curl is not installed (scripts/install-deps installs it)"; exit 1; }
PATH_NO_RATELAB=$(echo "$PATH" | tr ':' '\n' | while read -r d; do [ -x "$d/ratelab" ] || printf '%s:' "$d"; done)
(cd "$TMP" && env PATH="${PATH_NO_RATELAB%:}" HOME="$TMP/home" RATELAB_SRC="$ROOT" sh ci-retries.sh) \
	> "$TMP/out" 2> "$TMP/err"
rc=$?
[ "$rc" -eq 1 ] || bad "the job exit $rc, not 1 (curl breaks expectations): $(tail -n 5 "$TMP/out") $(tail -n 5 "$TMP/err")"
[ -x "$TMP/home/.local/bin/ratelab" ] || bad "the job did not install ratelab into PREFIX=\$HOME/.local"
head -n 1 "$TMP/out" | grep -q '^ratelab [0-9]' || bad "the job's first line is '$(head -n 1 "$TMP/out")', not the version"
grep -q '^retries: the client broke an expectation' "$TMP/out" || bad "the job did not explain exit 1: $(cat "$TMP/out")"
grep -q '^FAIL  post-503 no-retry-non-idempotent' "$TMP/out" || bad "the job did not list curl's blind POST retry"
x=$TMP/ratelab-junit.xml
[ -s "$x" ] || bad "no ratelab-junit.xml"
grep -q '<testsuite' "$x" || bad "ratelab-junit.xml has no testsuite"
n=$(grep -c '<testcase' "$x")
[ "$n" -ge 28 ] || bad "ratelab-junit.xml has $n testcases, fewer than the 28 scenarios"
grep -q '<failure' "$x" || bad "ratelab-junit.xml records no failure"
echo "ci_doc: job exit $rc, $n testcases; $fail failures"
[ "$fail" -eq 0 ]
