#!/bin/sh
# The server's verdicts on three real clients of one `serve --limit 5`, in
# turn: ratelab's own waiting policy on four connections (`hammer --retry
# --concurrency 4`, which says Retry-Attempt and Retry-Request on each
# call), a python3 client that sleeps the Retry-After it is given and says
# nothing, and a curl that re-fires at once.  /stats must call the first two
# polite and the third `ignores Retry-After`, with exact counts: the
# hammer's retries are its own count, each paired with its own rejection;
# the silent clients' retries are the requests that followed a 429 (they
# send one request at a time).  Then an open-loop hammer with --shared-wait
# sends no new request while it was told to wait.
set -eu

ROOT=${RATELAB_ROOT:-.}
BIN=${RATELAB_BIN:-$ROOT/ratelab}
TMP=$(mktemp -d)
PIDS=""
. "$ROOT/tests/harness/serve.sh"
. "$ROOT/tests/harness/check.sh"

cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	rm -rf "$TMP"
}
trap cleanup EXIT

serve_start srv --limit 5 --quiet || { echo "politeness: $SERVE_ERROR"; exit 1; }
URL=$URL_srv

# field CLIENT KEY: one figure of CLIENT's row in /stats ("" when absent)
field() {
	curl -s "$URL/stats" | jq -r --arg c "$1" --arg k "$2" '.clients.rows[] | select(.name == $c) | .[$k]'
}

# after_429 FILE: how many statuses in FILE (one a line) follow a 429: a one-at-a-time client's retries
after_429() {
	awk 'prev == 429 { n++ } { prev = $1 } END { print n + 0 }' "$1"
}

# 1. hammer --retry on four connections
"$BIN" hammer "$URL/" --retry --concurrency 4 --requests 24 --header 'X-Client-Name: hammer4' \
	--json "$TMP/h.json" --quiet || { echo "politeness: the hammer failed"; exit 1; }
h_calls=$(jq .calls "$TMP/h.json")
h_retries=$(jq .retries "$TMP/h.json")
check "the hammer retried (it met the limit): $h_retries retries" [ "$h_retries" -gt 0 ]
check "hammer4: requests = its calls ($h_calls)" [ "$(field hammer4 requests)" = "$h_calls" ]
check "hammer4: retries = its own count ($h_retries)" [ "$(field hammer4 retries)" = "$h_retries" ]
check "hammer4: every retry paired with its own rejection" [ "$(field hammer4 paired_retries)" = "$h_retries" ]
check "hammer4: no early retry" [ "$(field hammer4 early_retries)" = 0 ]
check "hammer4: polite" [ "$(field hammer4 verdict)" = polite ]
case $(field hammer4 says) in
"every retry waited its own Retry-After"*) check "hammer4: says so in words" true ;;
*) check "hammer4: says so in words ('$(field hammer4 says)')" false ;;
esac

# 2. a python3 client that waits for Retry-After and sends no pairing header
python3 - "$URL/" >"$TMP/py.codes" <<'EOF'
import sys, time, urllib.error, urllib.request
url = sys.argv[1]
for _ in range(12):
    for attempt in range(5):
        req = urllib.request.Request(url, headers={"X-Client-Name": "waiter"})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                print(r.status, flush=True)
                break
        except urllib.error.HTTPError as e:
            print(e.code, flush=True)
            if e.code != 429:
                break
            time.sleep(min(float(e.headers.get("Retry-After", "1")), 5.0))
EOF
py_retries=$(after_429 "$TMP/py.codes")
check "waiter: requests = its $(wc -l <"$TMP/py.codes") calls" [ "$(field waiter requests)" = "$(wc -l <"$TMP/py.codes")" ]
check "waiter: retries = the $py_retries requests after a 429" [ "$(field waiter retries)" = "$py_retries" ]
check "waiter: no early retry" [ "$(field waiter early_retries)" = 0 ]
check "waiter: nothing paired (it sent no header)" [ "$(field waiter paired_retries)" = 0 ]
check "waiter: polite" [ "$(field waiter verdict)" = polite ]

# 3. curl re-firing at once, one request after the other
i=0
while [ "$i" -lt 15 ]; do
	curl -s -o /dev/null -w '%{http_code}\n' -H 'X-Client-Name: refire' "$URL/" >>"$TMP/curl.codes"
	i=$((i + 1))
done
c_retries=$(after_429 "$TMP/curl.codes")
check "refire met the limit: $c_retries retries" [ "$c_retries" -gt 0 ]
check "refire: requests = 15" [ "$(field refire requests)" = 15 ]
check "refire: retries = the $c_retries requests after a 429" [ "$(field refire retries)" = "$c_retries" ]
check "refire: every retry early" [ "$(field refire early_retries)" = "$c_retries" ]
check "refire: ignores Retry-After" [ "$(field refire verdict)" = "ignores Retry-After" ]

# 4. --shared-wait: new requests arrive on a schedule, and none goes out while told to wait
"$BIN" hammer "$URL/" --retry --shared-wait --rate 10 --requests 20 --concurrency 8 \
	--header 'X-Client-Name: shared' --quiet || { echo "politeness: the shared-wait hammer failed"; exit 1; }
check "shared: polite" [ "$(field shared verdict)" = polite ]
check "shared: no new request while told to wait" [ "$(field shared new_while_waiting)" = 0 ]
check "shared: met the limit" [ "$(field shared rejected)" -gt 0 ]

check_done politeness
