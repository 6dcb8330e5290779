#!/bin/sh
# A room herd of 30 /play pages in one real headless Chromium (tests/harness/
# cdp.sh), armed from the dashboard's button: every page starts, the server
# counts 30 starts and says how far apart they arrived on its own clock (the
# figure is printed: a latency goal is a bench's business, not this test's),
# every page ends its run with a card, and /stats says of each page's client
# what its card says (requests = calls, rejections = 429s).
set -eu

ROOT=${RATELAB_ROOT:-.}
BIN=${RATELAB_BIN:-$ROOT/ratelab}
TMP=$(mktemp -d)
PIDS=""
PAGES=30
. "$ROOT/tests/harness/cdp.sh"
. "$ROOT/tests/harness/serve.sh"
. "$ROOT/tests/harness/check.sh"

cleanup() {
	cdp_stop 2>/dev/null || true
	for p in $PIDS; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	rm -rf "$TMP"
}
trap cleanup EXIT

# room KEY: a figure of GET /room
room() { curl -s "$URL/room" | jq -r ".$1"; }

# Bound to every address, so page i can use its own loopback address 127.0.0.i: a browser keeps
# at most six connections to one host, and thirty phones would not share those six.
serve_start srv --bind 0.0.0.0 --limit 20 --burst 20 --quiet || { echo "room_herd: $SERVE_ERROR"; exit 1; }
URL=$(echo "$URL_srv" | sed 's|^http://[^:]*:|http://127.0.0.1:|')
PORT=${URL##*:}

# In a room each page is in the foreground of its own device: here the 30 share one browser, whose
# background pages would have their timers held to whole seconds.
CDP_FLAGS="--disable-background-timer-throttling --disable-renderer-backgrounding --disable-backgrounding-occluded-windows"
cdp_start "$TMP"
i=1
while [ "$i" -le "$PAGES" ]; do
	cdp_page "http://127.0.0.$i:$PORT/play" 400 700
	eval "S_$i=\$CDP_SESSION"
	n=0
	while [ "$(cdp_eval "String(!!window.ratelabPlay)")" != true ] && [ "$n" -lt 100 ]; do
		n=$((n + 1))
		sleep 0.1
	done
	cdp_eval "document.getElementById('name').value = 'page-$i'; document.getElementById('requests').value = '3'; document.getElementById('conc').value = '1'; 1" >/dev/null
	i=$((i + 1))
done
# Every page has its clock's offset from a few samples before the herd is armed.
i=1
while [ "$i" -le "$PAGES" ]; do
	eval "CDP_SESSION=\$S_$i"
	n=0
	while [ "$(cdp_eval "String(window.ratelabPlay.room.samples >= 5)")" != true ] && [ "$n" -lt 100 ]; do
		n=$((n + 1))
		sleep 0.1
	done
	i=$((i + 1))
done

cdp_page "$URL/dashboard" 1024 768
DASH=$CDP_SESSION
cdp_eval "document.getElementById('herd-policy').value = 'retry-after'; document.getElementById('arm').click(); 1" >/dev/null
n=0
while [ "$(room herd.id)" != 1 ] && [ "$n" -lt 50 ]; do n=$((n + 1)); sleep 0.1; done
check "the dashboard's button armed herd #1" [ "$(room herd.id)" = 1 ]
check "the herd runs Retry-After + jitter" [ "$(room herd.policy)" = retry-after ]

n=0
while [ "$(room started)" != "$PAGES" ] && [ "$n" -lt 200 ]; do n=$((n + 1)); sleep 0.1; done
started=$(room started)
spread=$(room spread_ms)
check "all $PAGES pages started ($started)" [ "$started" = "$PAGES" ]
echo "     start spread: ${spread} ms between the first and the last page's start, on the server's clock"

# How late each page's timer fired after its own instant, and its clock's offset estimate.
late=""
i=1
while [ "$i" -le "$PAGES" ]; do
	eval "CDP_SESSION=\$S_$i"
	late="$late $(cdp_eval "String(Math.round(window.ratelabPlay.room.late)) + '/' + String(Math.round(window.ratelabPlay.room.offset))")"
	i=$((i + 1))
done
echo "     each page's timer, ms late/offset ms:$late"

total_calls=0
sum_calls=0
i=1
while [ "$i" -le "$PAGES" ]; do
	eval "CDP_SESSION=\$S_$i"
	n=0
	while [ "$(cdp_eval "String(document.querySelectorAll('.run').length)")" != 1 ] && [ "$n" -lt 300 ]; do
		n=$((n + 1))
		sleep 0.1
	done
	calls=$(cdp_eval "document.querySelector('.run').getAttribute('data-calls')")
	r429=$(cdp_eval "document.querySelector('.run').getAttribute('data-429')")
	st=$(curl -s "$URL/stats" | jq -r --arg c "page-$i" '.clients.rows[] | select(.name == $c) | "\(.requests) \(.rejected)"')
	[ "$st" = "$calls $r429" ] || echo "     page-$i: card $calls calls, $r429 429s; /stats $st"
	[ "$st" = "$calls $r429" ] && total_calls=$((total_calls + 1))
	sum_calls=$((sum_calls + calls))
	i=$((i + 1))
done
check "every page's card equals /stats for its client ($total_calls of $PAGES)" [ "$total_calls" = "$PAGES" ]

# Every page reported its run: the dashboard's row for herd #1 sums the cards.
n=0
while [ "$(room 'runs[0].pages')" != "$PAGES" ] && [ "$n" -lt 100 ]; do n=$((n + 1)); sleep 0.1; done
check "herd #1's run: $PAGES pages reported" [ "$(room 'runs[0].pages')" = "$PAGES" ]
check "herd #1's run: $((PAGES * 3)) requests" [ "$(room 'runs[0].requests')" = $((PAGES * 3)) ]
check "herd #1's run: $sum_calls calls, the cards' sum" [ "$(room 'runs[0].calls')" = "$sum_calls" ]
check "herd #1's run: a peak per 100 ms" [ "$(room 'runs[0].peak_per_100ms')" -gt 0 ]
cdp_eval "String(1)" >/dev/null
CDP_SESSION=$DASH
check "the dashboard shows the run" [ "$(cdp_eval "String(!!document.querySelector('#runs-table tr[data-run=\'1\']'))")" = true ]

check_done room_herd
