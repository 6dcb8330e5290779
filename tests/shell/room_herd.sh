#!/bin/sh
# A room herd of 30 /play pages in one real headless Chromium (tests/harness/
# cdp.sh), armed from the dashboard's button: every page hears of it over its
# /events stream (not by polling), every page starts, the server counts 30
# starts and says how far apart they arrived on its own clock (the figure is
# printed: a latency goal is a bench's business, not this test's; bench/run
# section 14 asserts it), every page ends its run with a card, and /stats says
# of each page's client what its card says (requests = calls, rejections =
# 429s).  Then a second herd, "retry at once": each run's row carries the
# server's own tally (early retries, who was polite), each equal to what
# /stats counted for that client during that run.
set -eu

ROOT=${RATELAB_ROOT:-.}
BIN=${RATELAB_BIN:-$ROOT/ratelab}
TMP=$(mktemp -d)
PIDS=""
# ROOM_PAGES: another number of pages (bench/run's section 14 shows how the spread grows with it).
PAGES=${ROOM_PAGES:-30}
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
# at most six connections to one host, and thirty phones would not share those six.  The kernel still
# sends from 127.0.0.1, so to the server the 31 /events streams come from one address, whose
# share is a quarter of --max-subscribers: 128 lets each page have its own (a room's phones each
# have their own address).
serve_start srv --bind 0.0.0.0 --limit 20 --burst 20 --max-subscribers 128 --quiet || { echo "room_herd: $SERVE_ERROR"; exit 1; }
URL=$(echo "$URL_srv" | sed 's|^http://[^:]*:|http://127.0.0.1:|')
PORT=${URL##*:}

# In a room each page is in the foreground of its own device: here the 30 share one browser, whose
# background pages would have their timers held to whole seconds.
CDP_FLAGS="--disable-background-timer-throttling --disable-renderer-backgrounding --disable-backgrounding-occluded-windows ${ROOM_CDP_FLAGS:-}"
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
# Every page has its clock's offset from a few samples, and its stream open, before the herd is armed.
ready=0
i=1
while [ "$i" -le "$PAGES" ]; do
	eval "CDP_SESSION=\$S_$i"
	[ "$(cdp_until "String(window.ratelabPlay.room.samples >= 5 && window.ratelabPlay.room.stream)" true 10)" = true ] &&
		ready=$((ready + 1))
	i=$((i + 1))
done
# What follows waits on every page: when the setup did not hold, stop here, not 30 waits later.
check "all $PAGES pages have their clock's offset and their stream ($ready)" [ "$ready" = "$PAGES" ]
[ "$ready" = "$PAGES" ] || { check_done room_herd; exit 1; }

cdp_page "$URL/dashboard" 1024 768
DASH=$CDP_SESSION
# The button exists once the page has loaded (on a busy machine, a click before that armed nothing).
cdp_until "String(!!document.getElementById('arm') && !!document.getElementById('herd-policy'))" true 20 >/dev/null
cdp_eval "document.getElementById('herd-policy').value = 'retry-after'; document.getElementById('arm').click(); 1" >/dev/null
n=0
while [ "$(room herd.id)" != 1 ] && [ "$n" -lt 50 ]; do n=$((n + 1)); sleep 0.1; done
check "the dashboard's button armed herd #1" [ "$(room herd.id)" = 1 ]
[ "$(room herd.id)" = 1 ] || { check_done room_herd; exit 1; }
check "the herd runs Retry-After + jitter" [ "$(room herd.policy)" = retry-after ]

n=0
while [ "$(room started)" != "$PAGES" ] && [ "$n" -lt 200 ]; do n=$((n + 1)); sleep 0.1; done
started=$(room started)
spread=$(room spread_ms)
check "all $PAGES pages started ($started)" [ "$started" = "$PAGES" ]
[ "$started" = "$PAGES" ] || { check_done room_herd; exit 1; }
echo "     start spread: ${spread} ms between the first and the last page's start, on the server's clock"
[ -z "${ROOM_HERD_SPREAD:-}" ] || echo "$spread" >>"$ROOM_HERD_SPREAD"

# How late each page's timer fired after its own instant, and its clock's offset estimate; and how far apart
# the pages sent their starts (each page's send time on the server's clock, by its offset): the rest of the
# spread is between the page's send and the server's read (the browser's network process, the kernel, the server).
late=""
fired=""
i=1
while [ "$i" -le "$PAGES" ]; do
	eval "CDP_SESSION=\$S_$i"
	late="$late $(cdp_eval "String(Math.round(window.ratelabPlay.room.late)) + '/' + String(Math.round(window.ratelabPlay.room.offset))")"
	fired="$fired $(cdp_eval "String(Math.round(window.ratelabPlay.room.fired))")"
	i=$((i + 1))
done
echo "     each page's timer, ms late/offset ms:$late"
echo "     the pages sent their starts within $(echo "$fired" | tr ' ' '\n' | sort -n | sed '/^$/d' | sed -n '1p;$p' | paste -sd' ' | awk '{ print $2 - $1 }') ms (their own clocks, by their offsets); load average $(cut -d' ' -f1 /proc/loadavg)"

# Every page heard of the herd over its stream: none needed GET /room for it.  (A page's periodic GET /room
# sample, in flight as the herd was armed, may arm it a moment before the stream's event comes: room.via says
# which came first, room.heard that the stream's came too.)
heard=0
first=0
i=1
while [ "$i" -le "$PAGES" ]; do
	eval "CDP_SESSION=\$S_$i"
	[ "$(cdp_eval "String(window.ratelabPlay.room.heard)")" = 1 ] && heard=$((heard + 1))
	[ "$(cdp_eval "window.ratelabPlay.room.via")" = stream ] && first=$((first + 1))
	i=$((i + 1))
done
echo "     $first of $PAGES pages armed herd #1 from the stream first, the rest from a GET /room sample in flight"
check "all $PAGES pages heard of herd #1 over /events ($heard)" [ "$heard" = "$PAGES" ]

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

# The server's own tally of a run: for each page, what /stats counted for its client.  $1: the run's index in /room's runs.
# Prints the pages whose tally differs from /stats minus $2 (a file of "name requests retries early" before the run).
stats_now() { curl -s "$URL/stats" | jq -r '.clients.rows[] | select(.name | startswith("page-")) | "\(.name) \(.requests) \(.retries) \(.early_retries)"' | sort; }
tally_of() { curl -s "$URL/room" | jq -r --argjson k "$1" '.runs[$k].server.tally[] | "\(.name) \(.requests) \(.retries) \(.early)"' | sort; }
stats_now >"$TMP/before1"
tally_of 0 >"$TMP/tally1"
check "herd #1's tally: one row per page, each as /stats counts it" cmp -s "$TMP/before1" "$TMP/tally1"
cmp -s "$TMP/before1" "$TMP/tally1" || diff "$TMP/before1" "$TMP/tally1" | head -6
early1=$(awk '{ e += $4 } END { print e + 0 }' "$TMP/before1")
check "herd #1's early retries ($early1) are /stats's" [ "$(room 'runs[0].server.early')" = "$early1" ]
polite1=$(awk '$4 == 0' "$TMP/before1" | wc -l)
echo "     herd #1 (Retry-After + jitter): $early1 early retries, $polite1 of $PAGES pages polite"
check "herd #1: every page that waits for Retry-After is polite ($polite1)" [ "$(room 'runs[0].server.polite')" = "$PAGES" ]

# Herd #2, everyone retrying at once: its row counts from its own arming; herd #1's row is closed as it was.
CDP_SESSION=$DASH
cdp_eval "document.getElementById('herd-policy').value = 'at-once'; document.getElementById('arm').click(); 1" >/dev/null
n=0
while [ "$(room herd.id)" != 2 ] && [ "$n" -lt 50 ]; do n=$((n + 1)); sleep 0.1; done
check "the dashboard's button armed herd #2" [ "$(room herd.id)" = 2 ]
n=0
while [ "$(room started)" != "$PAGES" ] && [ "$n" -lt 200 ]; do n=$((n + 1)); sleep 0.1; done
check "all $PAGES pages started herd #2 ($(room started))" [ "$(room started)" = "$PAGES" ]
spread2=$(room spread_ms)
echo "     herd #2 start spread: $spread2 ms"
[ -z "${ROOM_HERD_SPREAD:-}" ] || echo "$spread2" >>"$ROOM_HERD_SPREAD"
n=0
while [ "$(room 'runs[0] | "\(.id) \(.pages)"')" != "2 $PAGES" ] && [ "$n" -lt 300 ]; do n=$((n + 1)); sleep 0.1; done
check "herd #2's run: $PAGES pages reported" [ "$(room 'runs[0] | "\(.id) \(.pages)"')" = "2 $PAGES" ]
# Every call the pages made is counted once /stats has their sum (a call is counted as its answer ends).
calls2=$(room 'runs[0].calls')
before_sum=$(awk '{ r += $2 } END { print r + 0 }' "$TMP/before1")
n=0
while [ "$(stats_now | awk '{ r += $2 } END { print r + 0 }')" != $((before_sum + calls2)) ] && [ "$n" -lt 50 ]; do n=$((n + 1)); sleep 0.1; done
check "/stats counted herd #2's $calls2 calls" [ "$n" -lt 50 ]
stats_now >"$TMP/after2"
join "$TMP/after2" "$TMP/before1" | awk '{ print $1, $2 - $5, $3 - $6, $4 - $7 }' | awk '$2 > 0' | sort >"$TMP/want2"
tally_of 0 >"$TMP/tally2"
check "herd #2's tally: what /stats counted for each page since herd #1" cmp -s "$TMP/want2" "$TMP/tally2"
cmp -s "$TMP/want2" "$TMP/tally2" || diff "$TMP/want2" "$TMP/tally2" | head -6
early2=$(awk '{ e += $4 } END { print e + 0 }' "$TMP/want2")
polite2=$(awk '$4 == 0' "$TMP/want2" | wc -l)
echo "     herd #2 (retry at once): $early2 early retries, $polite2 of $PAGES pages polite"
check "herd #2's early retries ($early2) are /stats's" [ "$(room 'runs[0].server.early')" = "$early2" ]
check "herd #2: retrying at once has early retries" [ "$early2" -gt 0 ]
check "herd #2: its polite pages ($polite2) are those with no early retry" [ "$(room 'runs[0].server.polite')" = "$polite2" ]
check "herd #1's row is closed and kept" [ "$(room 'runs[1].server.closed') $(room 'runs[1].server.early')" = "true $early1" ]
CDP_SESSION=$DASH
n=0
while [ "$(cdp_eval "String((document.querySelector('#runs-table tr[data-run=\'2\']') || {}).getAttribute && document.querySelector('#runs-table tr[data-run=\'2\']').getAttribute('data-early'))")" != "$early2" ] && [ "$n" -lt 50 ]; do n=$((n + 1)); sleep 0.1; done
check "the dashboard's row for herd #2 says $early2 early retries" [ "$n" -lt 50 ]
check "the dashboard's row for herd #1 says $PAGES of $PAGES polite" [ "$(cdp_eval "document.querySelector('#runs-table tr[data-run=\'1\']').getAttribute('data-polite')")" = "$PAGES/$PAGES" ]

check_done room_herd
