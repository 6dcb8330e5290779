#!/bin/sh
# The live dashboard in real headless Chromium (driven over the DevTools pipe,
# tests/harness/cdp.sh): load /dashboard, run a hammer against the server,
# then read the page: data-metric="rejected_total" equals the rejections in
# /stats, the clients table names the hammer's client, the chart drew the
# admitted bars, and nothing scrolls sideways at 1024x768 or 1920x1080.
# The page needs no network: it names no other resource.  The server takes one
# /events stream (--max-subscribers 1), so a second page is refused one and
# polls /stats instead, showing the same figures.  From an address that is not
# loopback (the machine's own LAN address), the room herd button is refused
# without a token, and arms the herd with the --admin-token given after the
# page's address as #token=T, which the page takes off its address bar.
set -eu

ROOT=${RATELAB_ROOT:-.}
BIN=${RATELAB_BIN:-$ROOT/ratelab}
TMP=$(mktemp -d)
SRV=
PIDS=""
. "$ROOT/tests/harness/cdp.sh"
. "$ROOT/tests/harness/serve.sh"
. "$ROOT/tests/harness/check.sh"

cleanup() {
	cdp_stop 2>/dev/null || true
	[ -n "$SRV" ] && kill "$SRV" 2>/dev/null && wait "$SRV" 2>/dev/null
	for p in $PIDS; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	rm -rf "$TMP"
}
trap cleanup EXIT


"$BIN" serve --port 0 --limit 5 --max-subscribers 1 --quiet >"$TMP/serve.out" &
SRV=$!
i=0
while ! grep -q '^listening on ' "$TMP/serve.out" && [ "$i" -lt 100 ]; do
	i=$((i + 1))
	sleep 0.05
done
URL=$(sed -n 's/^listening on \(http:[^ ]*\).*/\1/p' "$TMP/serve.out")
[ -n "$URL" ] || { echo "dashboard_browser: the server did not start"; exit 1; }

curl -s "$URL/dashboard" >"$TMP/page.html"
if grep -Eq '(src|href)=|https?://' "$TMP/page.html"; then
	check_that "the page names no other resource" "$(grep -Eo '(src|href)=[^ >]*|https?://[^ "]*' "$TMP/page.html" | head -1)"
else
	check_that "the page names no other resource" ok
fi

cdp_start "$TMP" || { echo "dashboard_browser: no browser: FAIL"; exit 1; }
cdp_page "$URL/dashboard" 1024 768
state=$(cdp_until "document.getElementById('state').textContent" live)
[ "$state" = live ] && check_that "the page is live on /events" ok || check_that "the page is live on /events" "state '$state'"

"$BIN" hammer "$URL/" --requests 40 --concurrency 2 --header 'X-Client-Name: hammer-in-the-room' \
	>"$TMP/hammer.out" 2>&1 || { echo "dashboard_browser: the hammer failed"; cat "$TMP/hammer.out"; exit 1; }
want=$(curl -s "$URL/stats" | sed -n 's/.*"rejected":\([0-9]*\),"subscribers".*/\1/p')
[ -n "$want" ] && [ "$want" -gt 0 ] || { echo "dashboard_browser: /stats has no rejections: '$want'"; exit 1; }

got=$(cdp_until "document.querySelector('[data-metric=rejected_total]').textContent" "$want")
[ "$got" = "$want" ] && check_that "rejected_total $got = /stats rejected $want" ok \
	|| check_that "rejected_total = /stats rejected" "page $got, /stats $want"

row=$(cdp_until "String(!!document.querySelector('#clients tr[data-client=hammer-in-the-room]'))" true)
[ "$row" = true ] && check_that "the clients table names hammer-in-the-room" ok \
	|| check_that "the clients table names hammer-in-the-room" "$(cdp_eval "document.getElementById('clients').textContent")"

verdict=$(cdp_eval "document.querySelector('#clients tr[data-client=hammer-in-the-room]').lastChild.textContent")
case $verdict in
*"ignores Retry-After") check_that "a hammer without retries that keeps firing is judged: $verdict" ok ;;
*) check_that "the hammer's verdict" "'$verdict'" ;;
esac

blue=$(cdp_eval "(function(){var c=document.getElementById('chart'),d=c.getContext('2d').getImageData(0,0,c.width,c.height).data,n=0;for(var i=0;i<d.length;i+=4)if(d[i]<40&&d[i+1]>90&&d[i+1]<140&&d[i+2]>150)n++;return n})()")
[ "${blue:-0}" -gt 0 ] && check_that "the chart drew admitted bars ($blue px)" ok || check_that "the chart drew admitted bars" "${blue:-none}"

w=$(cdp_eval "document.documentElement.scrollWidth")
[ "${w:-9999}" -le 1024 ] && check_that "scrollWidth $w <= 1024 at 1024x768" ok || check_that "scrollWidth at 1024x768" "$w"
cdp_viewport 1920 1080
w=$(cdp_until "String(document.documentElement.scrollWidth <= 1920 && innerWidth == 1920)" true)
[ "$w" = true ] && check_that "no horizontal scroll at 1920x1080" ok \
	|| check_that "no horizontal scroll at 1920x1080" "scrollWidth $(cdp_eval "document.documentElement.scrollWidth")"

cdp_page "$URL/dashboard" 1024 768
state=$(cdp_until "document.getElementById('state').textContent.indexOf('polling') == 0 ? 'polling' : 'no'" polling)
got=$(cdp_until "document.querySelector('[data-metric=rejected_total]').textContent" "$want")
[ "$state" = polling ] && [ "$got" = "$want" ] && check_that "a second page, refused a stream, polls /stats: rejected_total $got" ok \
	|| check_that "a second page polls /stats" "state $state, rejected_total $got (want $want)"

# The herd button off loopback: the server on every address, the page at its LAN address (a browser there is not on
# loopback), so arming takes the --admin-token, given after the address as #token=T.
# (The banner's lines come out together, in one write: the attendees' are in once 'listening on' is.)
serve_start lan --bind 0.0.0.0 --admin-token s3cret --quiet || { check_that "serve --bind 0.0.0.0 starts" "$SERVE_ERROR"; check_done dashboard_browser; exit 1; }
LANURL=$(sed -n 's/^attendees: *\(http:[^ ]*\)\/play$/\1/p' "$TMP/lan.out" | head -1)
# arm: click the button of the page just opened; the herd line it shows then (its commas as semicolons: cdp_eval's
# value ends at a comma)
arm() {
	cdp_until "String(!!document.getElementById('arm'))" true >/dev/null
	cdp_eval "document.getElementById('arm').click(); 1" >/dev/null
	cdp_until "String(document.getElementById('herd').textContent.indexOf('not armed') == 0 || document.getElementById('herd').textContent.indexOf('herd #') == 0)" true >/dev/null
	cdp_eval "document.getElementById('herd').textContent.split(',').join(';')"
}
if [ -z "$LANURL" ]; then
	echo "     no LAN address on this machine: the herd button's token is not checked"
else
	cdp_page "$LANURL/dashboard" 1024 768
	got=$(arm)
	[ "$got" = "not armed: 403 (an admin action: open this page on loopback; or add #token=T to its address for --admin-token T)" ] \
		&& check_that "at $LANURL without a token: refused, and told how" ok || check_that "without a token" "'$got'"
	cdp_page "$LANURL/dashboard#token=wrong" 1024 768
	got=$(arm)
	[ "$got" = "not armed: 403 (is #token= the server's --admin-token?)" ] \
		&& check_that "with a wrong #token: refused, and told so" ok || check_that "with a wrong #token" "'$got'"
	cdp_page "$LANURL/dashboard#token=s3cret" 1024 768
	hash=$(cdp_until "String(!!document.getElementById('arm') && location.hash === '')" true)
	[ "$hash" = true ] && check_that "the token is taken off the address bar" ok || check_that "the token off the address bar" "$(cdp_eval "location.href")"
	got=$(arm)
	id=$(curl -s "$LANURL/room" | jq -r '.herd.id')
	case $got in
	"herd #1 in "*) [ "$id" = 1 ] && check_that "with #token=s3cret: armed ($got; /room herd.id $id)" ok || check_that "/room herd.id" "$id" ;;
	*) check_that "with #token=s3cret: armed" "'$got'" ;;
	esac
fi

check_done dashboard_browser
