#!/bin/sh
# The attendee page /play in real headless Chromium (driven over the DevTools
# pipe, tests/harness/cdp.sh), at a phone's width: it names no other resource;
# a run of "wait for Retry-After" against `serve --limit 5` ends in a card whose
# figures equal what /stats says of the page's client (requests, rejections,
# retries, each retry paired, polite); a second run sits beside the first; a
# run that shares the wait sends no new request while told to wait; a
# wait function that throws, one that returns nonsense or nothing, one that
# never returns, code that does not compile and code with no function named
# wait each end the run with a clear message within the page's bounds (my own
# function is tried before its run, so this holds for a run that meets no 429
# too, and then no request goes out), and
# the page still answers afterwards; a name with letters beyond Latin-1 (an
# emoji) reaches the server as that name; nothing scrolls sideways.
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

# field CLIENT KEY: one figure of CLIENT's row in /stats
field() {
	curl -s "$URL/stats" | jq -r --arg c "$1" --arg k "$2" '.clients.rows[] | select(.name == $c) | .[$k]'
}

serve_start srv --limit 5 --quiet || { echo "play_browser: $SERVE_ERROR"; exit 1; }
URL=$URL_srv

curl -s "$URL/play" >"$TMP/page.html"
check "GET /play is the page" grep -q '<title>ratelab play</title>' "$TMP/page.html"
# The one URL the page holds is SVG's namespace name, which is never fetched.
others() { grep -Eo '(src|href)=|https?://[^ "'"'"']*' "$TMP/page.html" | grep -v '^http://www.w3.org/2000/svg$' || true; }
check "the page names no other resource" [ -z "$(others)" ]

cdp_start "$TMP"
cdp_page "$URL/play" 390 844
check "the page is up" [ "$(cdp_until "String(!!window.ratelabPlay)" true 20)" = true ]

# 0. my own function is tried before its run: one that throws is told of even when the run would meet no 429 (a
# full bucket of 5, one request), and no request goes out
cdp_eval "document.getElementById('name').value = 'tryout'; document.getElementById('policy').value = 'own'; document.getElementById('code').value = 'function wait(attempt, retryAfter, status) { return null.x; }'; document.getElementById('requests').value = '1'; document.getElementById('conc').value = '1'; window.ratelabPlay.run(); 1" >/dev/null
check "a throwing wait in a run without a 429: told before the run" \
	[ "$(cdp_until "String(document.getElementById('msg').textContent.indexOf('tried before the run as wait(1, 1, 429): your wait function threw TypeError') >= 0)" true 20)" = true ]
check "a throwing wait in a run without a 429: no card" [ "$(cdp_eval "String(document.querySelectorAll('.run').length)")" = 0 ]
check "a throwing wait in a run without a 429: the button is back" [ "$(cdp_eval "String(document.getElementById('run').disabled)")" = false ]
check "a throwing wait in a run without a 429: no request went out" \
	[ "$(curl -s "$URL/stats" | jq '[.clients.rows[] | select(.name == "tryout")] | length')" = 0 ]

# 1. wait for Retry-After, 12 requests, 3 at once: the card's figures are the server's
cdp_eval "document.getElementById('name').value = 'pat'; document.getElementById('policy').value = 'retry-after'; document.getElementById('requests').value = '12'; document.getElementById('conc').value = '3'; window.ratelabPlay.run(); 1" >/dev/null
check "run 1 ends in a card" [ "$(cdp_until "String(document.querySelectorAll('.run').length)" 1 20)" = 1 ]
card() { cdp_eval "document.querySelector('.run').getAttribute('data-$1')"; }
ok=$(card ok); calls=$(card calls); retries=$(card retries); r429=$(card 429)
check "run 1: all 12 requests ok ($ok)" [ "$ok" = 12 ]
check "run 1 met the limit: $r429 answers were 429" [ "$r429" -gt 0 ]
check "pat: /stats requests = the card's $calls calls" [ "$(field pat requests)" = "$calls" ]
check "pat: /stats rejected = the card's $r429 429s" [ "$(field pat rejected)" = "$r429" ]
check "pat: /stats retries = the card's $retries" [ "$(field pat retries)" = "$retries" ]
check "pat: every retry paired with its own rejection" [ "$(field pat paired_retries)" = "$retries" ]
check "pat: no early retry" [ "$(field pat early_retries)" = 0 ]
check "pat: polite" [ "$(field pat verdict)" = polite ]

# 2. a second run sits beside the first
cdp_eval "document.getElementById('policy').value = 'give-up'; document.getElementById('requests').value = '3'; window.ratelabPlay.run(); 1" >/dev/null
check "run 2 is kept beside run 1" [ "$(cdp_until "String(document.querySelectorAll('.run').length)" 2 20)" = 2 ]
check "the newest run comes first" [ "$(cdp_eval "document.querySelector('.run').getAttribute('data-run')")" = 2 ]

# 3. "share the wait", 3 at once: polite, and no new request while told to wait
cdp_eval "document.getElementById('name').value = 'pat-shared'; document.getElementById('policy').value = 'retry-after'; document.getElementById('requests').value = '12'; document.getElementById('conc').value = '3'; document.getElementById('shared').checked = true; window.ratelabPlay.run(); 1" >/dev/null
check "run 3 (shared wait) ends in a card" [ "$(cdp_until "String(document.querySelectorAll('.run').length)" 3 20)" = 3 ]
check "pat-shared: met the limit" [ "$(field pat-shared rejected)" -gt 0 ]
check "pat-shared: polite" [ "$(field pat-shared verdict)" = polite ]
check "pat-shared: no new request while told to wait" [ "$(field pat-shared new_while_waiting)" = 0 ]
cdp_eval "document.getElementById('shared').checked = false; 1" >/dev/null

# own_run 'BODY': run 20 requests at once through `function wait() { BODY }` (the limit rejects some)
own_run() {
	cdp_eval "document.getElementById('policy').value = 'own'; document.getElementById('code').value = 'function wait(attempt, retryAfter, status) { $1 }'; document.getElementById('requests').value = '20'; document.getElementById('conc').value = '10'; window.ratelabPlay.run(); 1" >/dev/null
	cdp_until "String(document.getElementById('run').disabled)" false 20 >/dev/null
}
msg_has() { [ "$(cdp_eval "String(document.getElementById('msg').textContent.indexOf('$1') >= 0)")" = true ]; }

own_run "return null.x;"
check "a throwing wait: the message names the error" msg_has "your wait function threw TypeError"
check "a throwing wait: no card" [ "$(cdp_eval "String(document.querySelectorAll('.run').length)")" = 3 ]
own_run "return 0 / 0;"
check "a nonsense wait: the message says what to return" msg_has "returned NaN: return milliseconds"
start=$(date +%s)
own_run "for (;;) {}"
check "an endless wait: stopped with a message" msg_has "did not answer within 500 ms"
check "an endless wait: the page answers afterwards" [ "$(cdp_eval "String(1 + 1)")" = 2 ]
check "an endless wait: over within 20 s" [ $(($(date +%s) - start)) -lt 20 ]

# code_run 'CODE': the same run with CODE as it stands in the box
code_run() {
	cdp_eval "document.getElementById('policy').value = 'own'; document.getElementById('code').value = '$1'; document.getElementById('requests').value = '20'; document.getElementById('conc').value = '10'; window.ratelabPlay.run(); 1" >/dev/null
	cdp_until "String(document.getElementById('run').disabled)" false 20 >/dev/null
}
code_run "function wait(attempt) { return attempt * }"
check "a syntax error: told as one, not as an endless loop" msg_has "your code does not compile: SyntaxError"
code_run "var delay = 1000;"
check "no function named wait: told so" msg_has "your code has no function named wait"
own_run "var x = 1;"
check "a wait that returns nothing: told so" msg_has "your wait function returned nothing (undefined): return milliseconds"
check "a phone's keyboard neither capitalises nor corrects the code" \
	[ "$(cdp_eval "document.getElementById('code').getAttribute('autocapitalize') + '/' + document.getElementById('code').getAttribute('autocorrect')")" = off/off ]

# 4. a name beyond Latin-1 (an e with diaeresis, a rocket): its requests reach the server under that name
zoe=$(printf 'Zo\303\253 \360\237\232\200')
cdp_eval "document.getElementById('name').value = 'Zo\\u00eb \\ud83d\\ude80'; document.getElementById('policy').value = 'give-up'; document.getElementById('requests').value = '3'; document.getElementById('conc').value = '1'; window.ratelabPlay.run(); 1" >/dev/null
check "run 4 (a name with an emoji) ends in a card" [ "$(cdp_until "String(document.querySelectorAll('.run').length)" 4 20)" = 4 ]
check "run 4: 3 calls, every one answered 200 or 429 (no 'errors')" \
	[ "$(cdp_eval "String(+document.querySelector('.run').getAttribute('data-200') + +document.querySelector('.run').getAttribute('data-429'))")" = 3 ]
check "/stats has the page's 3 requests under its name" [ "$(field "$zoe" requests)" = 3 ]

w=$(cdp_eval "document.documentElement.scrollWidth")
check "no sideways scroll at 390 px ($w)" [ "${w:-9999}" -le 390 ]

# The room herd runs any policy the page offers, and no other (a name the page lacks is a 400, not a herd in which
# every page runs its own policy under that name).  Last: an armed herd sets the page's policy.
policies=$(cdp_eval "[].map.call(document.querySelectorAll('#policy option'), function (o) { return o.value; }).join(' ')")
check "the page offers 9 policies ($policies)" [ "$(echo "$policies" | wc -w)" = 9 ]
for p in $policies; do
	check "a room herd may run the page's $p" [ "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$URL/room?in=60000&policy=$p")" = 200 ]
done
check "a room herd may not run full-jitter, which the page lacks" \
	[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$URL/room?in=60000&policy=full-jitter")" = 400 ]

check_done play_browser
