#!/bin/sh
# The live dashboard on proxied traffic, in real headless Chromium
# (tests/harness/cdp.sh): a `ratelab serve --limiter none` stands in for the
# user's service, `ratelab serve --upstream` with --limit 5 is in front of it.
# A named hammer sends 40 requests through the proxy; the service counts
# exactly 5, and the proxy's dashboard shows admitted_total 5 and the
# rejected_total its /stats says, and names the hammer in its table.
set -eu

ROOT=${RATELAB_ROOT:-.}
BIN=${RATELAB_BIN:-$ROOT/ratelab}
TMP=$(mktemp -d)
UPS=
PRX=
. "$ROOT/tests/harness/cdp.sh"
. "$ROOT/tests/harness/check.sh"

cleanup() {
	cdp_stop 2>/dev/null || true
	[ -n "$PRX" ] && kill "$PRX" 2>/dev/null && wait "$PRX" 2>/dev/null
	[ -n "$UPS" ] && kill "$UPS" 2>/dev/null && wait "$UPS" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT


# url_of FILE: the "listening on" URL a serve printed into FILE (waits at most 5 s).
url_of() {
	_i=0
	while ! grep -q '^listening on ' "$1" && [ "$_i" -lt 100 ]; do
		_i=$((_i + 1))
		sleep 0.05
	done
	sed -n 's/^listening on \(http:[^ ]*\).*/\1/p' "$1"
}

"$BIN" serve --port 0 --limiter none --quiet >"$TMP/upstream.out" &
UPS=$!
UP_URL=$(url_of "$TMP/upstream.out")
[ -n "$UP_URL" ] || { echo "proxy_dashboard: the upstream did not start"; exit 1; }
"$BIN" serve --port 0 --upstream "$UP_URL" --limit 5 --window 1h --quiet >"$TMP/proxy.out" &
PRX=$!
URL=$(url_of "$TMP/proxy.out")
[ -n "$URL" ] || { echo "proxy_dashboard: the proxy did not start"; exit 1; }

cdp_start "$TMP"
cdp_page "$URL/dashboard" 1024 768
state=$(cdp_until "document.getElementById('state').textContent" live)
[ "$state" = live ] && check_that "the proxy's dashboard is live on /events" ok || check_that "the dashboard is live" "state '$state'"

"$BIN" hammer "$URL/api/orders" --requests 40 --concurrency 2 --no-retry --header 'X-Client-Name: checkout-app' \
	>"$TMP/hammer.out" 2>&1 || { echo "proxy_dashboard: the hammer failed"; cat "$TMP/hammer.out"; exit 1; }

hits=$(curl -s "$UP_URL/stats" | jq '.routes[0].admitted')
[ "$hits" = 5 ] && check_that "the service behind the proxy saw exactly 5 requests" ok || check_that "the service's hits" "$hits"
calls=$(curl -s "$URL/stats" | jq '.upstream.results.ok')
[ "$calls" = 5 ] && check_that "the proxy's /stats: upstream.results.ok 5" ok || check_that "upstream.results.ok" "$calls"

got=$(cdp_until "document.querySelector('[data-metric=admitted_total]').textContent" 5)
[ "$got" = 5 ] && check_that "admitted_total 5 on the page" ok || check_that "admitted_total" "page $got"
# The browser's own /favicon.ico is a limited path too: the rejections are the 35 the hammer
# got, or 36; the page must show what /stats says.
want=$(curl -s "$URL/stats" | jq '.rejected')
case $want in 35 | 36) check_that "the proxy's /stats: rejected $want" ok ;; *) check_that "the proxy's /stats rejected" "$want" ;; esac
got=$(cdp_until "document.querySelector('[data-metric=rejected_total]').textContent" "$want")
[ "$got" = "$want" ] && check_that "rejected_total $got on the page = /stats" ok || check_that "rejected_total" "page $got, /stats $want"
row=$(cdp_until "String(!!document.querySelector('#clients tr[data-client=checkout-app]'))" true)
[ "$row" = true ] && check_that "the clients table names checkout-app" ok \
	|| check_that "the clients table names checkout-app" "$(cdp_eval "document.getElementById('clients').textContent")"

check_done proxy_dashboard
