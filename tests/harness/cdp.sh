# Drive Debian's headless Chromium over the DevTools protocol on a pipe, from sh.
#
# Sourced by tests/shell/*_browser.sh.  Chromium's --remote-debugging-pipe reads
# commands from its fd 3 and writes answers to its fd 4, each message one JSON
# text ended by a NUL byte.  The commands go in through a FIFO held open on fd 5;
# the answers pile up in a file, where cdp_wait finds the one with the id it
# wants.  Every wait is bounded.  No websocket client is needed.
#
#   cdp_start DIR                     start chromium with its profile and pipes under DIR
#                                     (and the extra flags in CDP_FLAGS, if set); 1, with a
#                                     message, when chromium is not installed
#                                     (scripts/install-deps installs it; this never does)
#   cdp_page URL WIDTH HEIGHT         open URL in a WIDTHxHEIGHT viewport; sets CDP_SESSION
#   cdp_viewport WIDTH HEIGHT         resize the viewport
#   cdp_eval 'EXPRESSION'             print the value of EXPRESSION (a string or a number;
#                                     use single quotes inside, no double quotes)
#   cdp_until 'EXPRESSION' WANT [S]   poll EXPRESSION every 0.1 s, at most S seconds (10),
#                                     until it is WANT; print its last value
#   (after one command goes unanswered, every later one fails at once)
#   cdp_stop                          close the browser

cdp_find_chromium() {
	CDP_CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
	[ -n "$CDP_CHROMIUM" ] && return 0
	echo "cdp: chromium is not installed: run make deps (scripts/install-deps)" >&2
	return 1
}

cdp_start() {
	CDP_DIR=$1
	cdp_find_chromium || return 1
	rm -f "$CDP_DIR/cdp.dead"
	mkfifo "$CDP_DIR/cdp.in"
	: >"$CDP_DIR/cdp.out"
	echo 0 >"$CDP_DIR/cdp.id"
	exec 5<>"$CDP_DIR/cdp.in"
	"$CDP_CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--disable-dev-shm-usage --user-data-dir="$CDP_DIR/profile" --remote-debugging-pipe \
		${CDP_FLAGS:-} about:blank 3<"$CDP_DIR/cdp.in" 4>"$CDP_DIR/cdp.out" 2>"$CDP_DIR/chromium.err" &
	CDP_PID=$!
}

# cdp_send METHOD PARAMS [SESSION]: send one command; its id is in CDP_ID.  The last id is kept in
# a file, not only in the variable: a caller in a $(...) subshell must not reuse an id.
cdp_send() {
	CDP_ID=$(($(cat "$CDP_DIR/cdp.id") + 1))
	echo "$CDP_ID" >"$CDP_DIR/cdp.id"
	if [ -n "${3:-}" ]; then
		printf '{"id":%d,"sessionId":"%s","method":"%s","params":%s}\000' "$CDP_ID" "$3" "$1" "$2" >&5
	else
		printf '{"id":%d,"method":"%s","params":%s}\000' "$CDP_ID" "$1" "$2" >&5
	fi
}

# cdp_wait ID: print the answer to command ID (waiting at most 20 s); fail without one.  Once a
# command went unanswered (the browser, or its page's renderer, is gone or stuck), every later
# wait fails at once: a test's remaining steps (cdp_until polls for seconds) must not each wait
# out 20 s more.
cdp_wait() {
	if [ -e "$CDP_DIR/cdp.dead" ]; then
		echo "cdp: no answer to command $1 (command $(cat "$CDP_DIR/cdp.dead") went unanswered)" >&2
		return 1
	fi
	_n=0
	while [ "$_n" -lt 400 ]; do
		_line=$(tr '\000' '\n' <"$CDP_DIR/cdp.out" | grep "^{\"id\":$1," | tail -1 || true)
		if [ -n "$_line" ]; then
			printf '%s\n' "$_line"
			return 0
		fi
		_n=$((_n + 1))
		sleep 0.05
	done
	echo "cdp: no answer to command $1" >&2
	echo "$1" >"$CDP_DIR/cdp.dead"
	tail -5 "$CDP_DIR/chromium.err" >&2
	return 1
}

cdp_page() {
	cdp_send Target.createTarget "{\"url\":\"about:blank\"}"
	_tid=$(cdp_wait "$CDP_ID" | sed -n 's/.*"targetId":"\([^"]*\)".*/\1/p')
	cdp_send Target.attachToTarget "{\"targetId\":\"$_tid\",\"flatten\":true}"
	CDP_SESSION=$(cdp_wait "$CDP_ID" | sed -n 's/.*"sessionId":"\([^"]*\)".*/\1/p')
	[ -n "$CDP_SESSION" ] || return 1
	cdp_viewport "$2" "$3"
	cdp_send Page.navigate "{\"url\":\"$1\"}" "$CDP_SESSION"
	cdp_wait "$CDP_ID" >/dev/null
}

cdp_viewport() {
	cdp_send Emulation.setDeviceMetricsOverride \
		"{\"width\":$1,\"height\":$2,\"deviceScaleFactor\":1,\"mobile\":false}" "$CDP_SESSION"
	cdp_wait "$CDP_ID" >/dev/null
}

cdp_eval() {
	_expr=$(printf '%s' "$1" | sed 's/\\/\\\\/g')
	cdp_send Runtime.evaluate "{\"expression\":\"$_expr\",\"returnByValue\":true}" "$CDP_SESSION"
	cdp_wait "$CDP_ID" | sed -n 's/.*"value":"\{0,1\}\([^",}]*\)"\{0,1\}[,}].*/\1/p'
}

cdp_until() {
	_until_n=$((${3:-10} * 10))
	while :; do
		_until_v=$(cdp_eval "$1")
		[ "$_until_v" = "$2" ] && break
		[ ! -e "$CDP_DIR/cdp.dead" ] || break
		_until_n=$((_until_n - 1))
		[ "$_until_n" -gt 0 ] || break
		sleep 0.1
	done
	printf '%s' "$_until_v"
}

cdp_stop() {
	if [ -n "${CDP_PID:-}" ]; then
		cdp_send Browser.close "{}"
		_n=0
		while kill -0 "$CDP_PID" 2>/dev/null && [ "$_n" -lt 100 ]; do
			_n=$((_n + 1))
			sleep 0.05
		done
		kill "$CDP_PID" 2>/dev/null || true
		wait "$CDP_PID" 2>/dev/null || true
		CDP_PID=
	fi
	exec 5>&-
}
