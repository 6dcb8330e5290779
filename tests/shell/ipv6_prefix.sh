#!/bin/sh
# serve keys an IPv6 client by its prefix (/64 unless --ipv6-prefix says otherwise):
# --key ip and --max-connections-per-ip treat every address of one /64 as one client.
# The test runs in a network namespace of its own (unshare -n) with fd00:1::a,
# fd00:1::b (one /64) and fd00:2::a (another) on its loopback, and talks to [::1]
# from those sources.  It skips, saying why, only where the machine forbids that.
set -u

BIN=${RATELAB_BIN:-./ratelab}
case $BIN in /*) ;; *) BIN=$(pwd)/$BIN ;; esac

if [ -z "${RATELAB_IN_NETNS:-}" ]; then
	for p in unshare ip curl python3; do
		command -v "$p" >/dev/null 2>&1 || { echo "FAIL: $p is missing (scripts/install-deps)"; exit 1; }
	done
	if ! why=$(unshare -n ip link set lo up 2>&1); then
		echo "ipv6_prefix: SKIP: this machine forbids a network namespace of our own (unshare -n: $why)"
		exit 0
	fi
	RATELAB_IN_NETNS=1 RATELAB_BIN=$BIN exec unshare -n sh "$0" "$@"
fi

TMP=$(mktemp -d)
SPID=""
trap '[ -n "$SPID" ] && kill "$SPID" 2>/dev/null; rm -rf "$TMP"' EXIT

fail() {
	echo "FAIL: $*"
	exit 1
}

ip link set lo up || fail "cannot bring lo up in the namespace"
for a in fd00:1::a fd00:1::b fd00:2::a; do
	ip -6 addr add "$a/64" dev lo nodad || fail "cannot add $a to lo in the namespace"
done

# serve FLAGS...: start a server on [::1], its URL in $URL
serve() {
	[ -n "$SPID" ] && { kill "$SPID"; wait "$SPID" 2>/dev/null; }
	# The background child truncates the file when it gets to run: remove the previous
	# server's file first, or its "listening on" line could be read as the new one's.
	rm -f "$TMP/srv"
	"$BIN" serve --bind ::1 --port 0 --quiet "$@" >"$TMP/srv" 2>&1 &
	SPID=$!
	i=0
	while ! grep -q '^listening on ' "$TMP/srv" 2>/dev/null; do
		i=$((i + 1))
		[ $i -le 100 ] || fail "server did not start: $(cat "$TMP/srv")"
		sleep 0.05
	done
	URL=$(sed -n 's/^listening on //p' "$TMP/srv" | head -n 1)
}

# get SOURCE: the status of GET / from that source address
get() {
	curl -s -o /dev/null -w '%{http_code}' --max-time 5 --interface "$1" "$URL/"
}

# One /64, one limit: a's two requests use it up, b (same /64) is refused, c (another /64) is not.
serve --key ip --limit 2 --window 1h
got="$(get fd00:1::a) $(get fd00:1::a) $(get fd00:1::b) $(get fd00:2::a)"
[ "$got" = "200 200 429 200" ] || fail "--key ip, default prefix: got $got, want 200 200 429 200"
curl -s --max-time 5 "$URL/metrics" >"$TMP/metrics"
grep -q '^ratelab_client_requests_total{client="fd00:1::/64"} 3$' "$TMP/metrics" ||
	fail "no client fd00:1::/64 with 3 requests in /metrics: $(grep client_requests "$TMP/metrics")"

# --ipv6-prefix 128: every address its own client again.
serve --key ip --limit 2 --window 1h --ipv6-prefix 128
got="$(get fd00:1::a) $(get fd00:1::a) $(get fd00:1::b)"
[ "$got" = "200 200 200" ] || fail "--ipv6-prefix 128: got $got, want 200 200 200"

# --ipv6-prefix 16: fd00:1:: and fd00:2:: are one client.
serve --key ip --limit 2 --window 1h --ipv6-prefix 16
got="$(get fd00:1::a) $(get fd00:2::a) $(get fd00:1::b)"
[ "$got" = "200 200 429" ] || fail "--ipv6-prefix 16: got $got, want 200 200 429"

# The connection cap: two held from a, then one from b (same /64) is closed unanswered; c is served.
serve --limiter none --max-connections-per-ip 2
port=${URL##*:}
python3 - "$port" >"$TMP/cap" 2>&1 <<'EOF' || fail "connection cap: $(cat "$TMP/cap")"
import socket, sys
port = int(sys.argv[1])
def conn(src):
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.settimeout(5)
    s.bind((src, 0))
    s.connect(("::1", port))
    return s
def ask(s):
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    try:
        return s.recv(4096).split(b"\r\n")[0].decode()
    except (ConnectionResetError, socket.timeout):
        return ""
held = [conn("fd00:1::a"), conn("fd00:1::a")]
first = [ask(s) for s in held]
b = ask(conn("fd00:1::b"))
c = ask(conn("fd00:2::a"))
got = (first, b, c)
want = (["HTTP/1.1 200 OK", "HTTP/1.1 200 OK"], "", "HTTP/1.1 200 OK")
if got != want:
    sys.exit("got %r, want %r" % (got, want))
EOF
echo "ipv6_prefix: 5 passed"
