#!/bin/sh
# The README's tour says what a real run says: the count of retry rules that
# `ratelab cases` replays, and the herd table's `none` row (the figures that do
# not depend on the machine's speed: ok, failed, calls, peak), from a real
# `herd --clients 100` with the tour's defaults.
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
check "README's none row ($want) = a real run's ($got)" [ "${got:-no row}" = "$want" ]

check_done readme_tour
