#!/bin/sh
# The herd report renders in a real browser: run a small herd with --report,
# open report.html in headless Chromium, and check that every SVG lane was laid
# out with a non-zero size and drew its bars.  The report's own inline script
# writes each lane's getBoundingClientRect() into <pre id="lane-sizes">, which
# --dump-dom prints after the script ran.
# Installs Debian's chromium (scripts/install-deps chromium) when it is missing.
set -eu

ROOT=${RATELAB_ROOT:-.}
BIN=${RATELAB_BIN:-$ROOT/ratelab}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
	echo "report_browser: installing chromium"
	sh "$ROOT/scripts/install-deps" chromium >&2
	CHROMIUM=$(command -v chromium)
fi

"$BIN" herd --clients 30 --policies none,exponential,full --report "$TMP/r" >"$TMP/herd.out"

timeout 90 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-background-networking \
	--disable-component-update --disable-sync --no-first-run --disable-dev-shm-usage \
	--user-data-dir="$TMP/profile" --window-size=1200,1000 --virtual-time-budget=5000 \
	--dump-dom "file://$TMP/r/report.html" >"$TMP/dom.html" 2>"$TMP/chromium.err" || {
	echo "report_browser: chromium failed:" >&2
	tail -5 "$TMP/chromium.err" >&2
	exit 1
}

passed=0
failed=0
for p in none exponential full; do
	line=$(grep -o "lane $p [0-9]*x[0-9]* bars [0-9]*" "$TMP/dom.html" || true)
	w=$(echo "$line" | sed -n 's/^lane [a-z]* \([0-9]*\)x\([0-9]*\) bars \([0-9]*\)$/\1/p')
	h=$(echo "$line" | sed -n 's/^lane [a-z]* \([0-9]*\)x\([0-9]*\) bars \([0-9]*\)$/\2/p')
	b=$(echo "$line" | sed -n 's/^lane [a-z]* \([0-9]*\)x\([0-9]*\) bars \([0-9]*\)$/\3/p')
	if [ -n "$w" ] && [ "$w" -gt 0 ] && [ "$h" -gt 0 ] && [ "$b" -gt 0 ]; then
		echo "ok   lane $p rendered ${w}x${h} with $b bars"
		passed=$((passed + 1))
	else
		echo "FAIL lane $p: '${line}'"
		failed=$((failed + 1))
	fi
done
# The table made it into the page too, one row per policy.
rows=$(grep -c "<tr><td>" "$TMP/dom.html" || true)
if [ "$rows" -eq 3 ]; then
	echo "ok   results table has 3 rows"
	passed=$((passed + 1))
else
	echo "FAIL results table has $rows rows, want 3"
	failed=$((failed + 1))
fi
echo "report_browser: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
