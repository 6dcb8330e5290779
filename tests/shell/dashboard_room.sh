#!/bin/sh
# The dashboard on a projector with a room of 40 attendees (chapter 14's
# largest room), in real headless Chromium (tests/harness/cdp.sh): ten who
# re-fire (three quick requests each, `ignores Retry-After`) and thirty who sent
# one request (polite, and the least active, so the last rows).  At 1024x768 and
# at 1920x1080 every one of the 40 rows is on the screen, the page does not
# scroll, no verdict is cut or runs under the next table, and the columns are
# the ones chapter 14 names.
set -eu

ROOT=${RATELAB_ROOT:-.}
BIN=${RATELAB_BIN:-$ROOT/ratelab}
TMP=$(mktemp -d)
PIDS=""
. "$ROOT/tests/harness/cdp.sh"
. "$ROOT/tests/harness/serve.sh"
. "$ROOT/tests/harness/check.sh"

cleanup() {
	cdp_stop 2>/dev/null || true
	for p in $PIDS; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	rm -rf "$TMP"
}
trap cleanup EXIT

serve_start srv --key header:X-Client-Name --limit 1 --burst 1 --quiet || { echo "dashboard_room: $SERVE_ERROR"; exit 1; }
URL=$URL_srv
i=1
while [ "$i" -le 40 ]; do
	n=1
	[ "$i" -le 10 ] && n=3
	k=0
	while [ "$k" -lt "$n" ]; do
		curl -s -o /dev/null -H "X-Client-Name: attendee-$i-with-a-long-name" "$URL/"
		k=$((k + 1))
	done
	i=$((i + 1))
done
check "/stats: 10 ignore Retry-After" [ "$(curl -s "$URL/stats" | jq '[.clients.rows[] | select(.verdict == "ignores Retry-After")] | length')" = 10 ]
check "/stats: 30 polite" [ "$(curl -s "$URL/stats" | jq '[.clients.rows[] | select(.verdict == "polite")] | length')" = 30 ]

# The rows wholly on screen, the polite ones among them, verdicts cut or running under the next
# column, and whether the page scrolls.
IN_VIEW="String([].filter.call(document.querySelectorAll('#clients tr[data-client]'), function (r) { var b = r.getBoundingClientRect(); return b.height > 0 && b.top >= 0 && b.bottom <= innerHeight && b.left >= 0 && b.right <= innerWidth; }).length)"
POLITE="String([].filter.call(document.querySelectorAll('#clients tr[data-client]'), function (r) { var b = r.getBoundingClientRect(); return r.lastChild.className === 'polite' && b.bottom <= innerHeight && b.right <= innerWidth; }).length)"
CUT="String([].filter.call(document.querySelectorAll('#clients td:last-child'), function (d) { var t = d.closest('table'), n = t.nextElementSibling, right = n ? n.getBoundingClientRect().left : innerWidth; return d.scrollWidth > d.clientWidth + 1 || d.getBoundingClientRect().right > right + 1; }).length)"
SCROLLS="String(document.documentElement.scrollHeight > innerHeight || document.documentElement.scrollWidth > innerWidth)"

cdp_start "$TMP"
for size in 1024x768 1920x1080; do
	w=${size%x*}
	h=${size#*x}
	cdp_page "$URL/dashboard" "$w" "$h"
	n=$(cdp_until "$IN_VIEW" 40)
	check "$size: all 40 attendees on screen ($n; $(cdp_eval "[].map.call(document.querySelectorAll('#clients tr[data-client]'), function (r) { return r.getAttribute('data-client'); }).join(';')"))" [ "$n" = 40 ]
	p=$(cdp_eval "$POLITE")
	check "$size: the 30 polite ones among them ($p)" [ "$p" = 30 ]
	check "$size: no verdict cut" [ "$(cdp_eval "$CUT")" = 0 ]
	check "$size: the page does not scroll" [ "$(cdp_eval "$SCROLLS")" = false ]
	check "$size: the columns chapter 14 names" \
		[ "$(cdp_eval "[].map.call(document.querySelectorAll('#clients table:first-child th'), function (h) { return h.textContent; }).join('/')")" = "client/requests/429s/retries/early/new in wait/verdict" ]
	check "$size: the verdicts read in full" \
		[ "$(cdp_eval "String(document.querySelector('#clients tr[data-client=attendee-1-with-a-long-name]').lastChild.textContent.indexOf('ignores Retry-After') > 0)")" = true ]
done

# A room past what one screen holds (70 attendees): the table may scroll, but no layout puts one table over the next
# or cuts a verdict.
while [ "$i" -le 70 ]; do
	curl -s -o /dev/null -H "X-Client-Name: attendee-$i-with-a-long-name" "$URL/"
	i=$((i + 1))
done
for size in 1024x768 1920x1080; do
	cdp_viewport "${size%x*}" "${size#*x}"
	check "$size, 70 attendees: 51 rows (the 50 most active, the rest in one)" \
		[ "$(cdp_until "String(document.querySelectorAll('#clients tr').length - document.querySelectorAll('#clients thead tr').length)" 51)" = 51 ]
	check "$size, 70 attendees: no verdict cut, none under the next table" [ "$(cdp_until "$CUT" 0)" = 0 ]
done

check_done dashboard_room
