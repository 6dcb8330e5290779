#!/bin/sh
# The README's tour says what a real run says: the count of retry rules that
# `ratelab cases` replays, and the herd table's `none` row (ok, failed, calls,
# peak), from a real `herd --clients 100` with the tour's defaults.  Those
# figures move a little with the machine's speed: the herd's bucket refills one
# token each 20 ms, so a run slowed down (a sanitizer, a loaded machine) admits
# a few more of the volley.  Each may differ from the README's by 3 % (at least 1).
set -eu

ROOT=${RATELAB_ROOT:-.}
BIN=${RATELAB_BIN:-$ROOT/ratelab}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. "$ROOT/tests/harness/check.sh"

rules=$("$BIN" cases "$ROOT/tests/retry-cases.json" | sed -n 's/^\([0-9]*\) passed, 0 failed$/\1/p')
check "README: $rules retry rules" grep -q "# $rules retry rules from four seeds" "$ROOT/README.md"

"$BIN" herd --clients 100 --policies none >"$TMP/herd.out"
got=$(awk '$1 == "none" { print $2, $3, $4, $7 }' "$TMP/herd.out")
want=$(awk '$1 == "none" && NF == 8 { print $2, $3, $4, $7 }' "$ROOT/README.md")
near() {
	[ -n "$1" ] && printf '%s\n%s\n' "$1" "$2" | awk 'NR == 1 { n = split($0, g) } NR == 2 {
		if (NF != n) exit 1
		for (i = 1; i <= n; i++) { d = g[i] - $i; if (d < 0) d = -d; t = $i * 0.03; if (t < 1) t = 1; if (d > t) exit 1 }
	}'
}
check "README's none row ($want) = a real run's ($got), within 3 %" near "$got" "$want"

check_done readme_tour
