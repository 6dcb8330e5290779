# `ratelab serve` in the background for sh tests and benches (POSIX sh, sourced).
#
# It uses the sourcing script's BIN (the ratelab binary), TMP (its scratch folder) and
# PIDS (the pids its EXIT trap stops).  Every wait is bounded.
#
#   serve_start NAME ARGS...  start `$BIN serve --port 0 ARGS` (stdout in $TMP/NAME.out,
#                             stderr in $TMP/NAME.err), add it to PIDS and wait at most
#                             10 s for its "listening on URL" line.  Sets URL_NAME and
#                             PID_NAME and returns 0; else sets SERVE_ERROR to "serve
#                             ARGS did not start: " and its stderr, and returns 1.

# shellcheck disable=SC2034 # SERVE_ERROR is for the script that sources this file
SERVE_ERROR=""

serve_start() {
	_serve_name=$1
	shift
	"$BIN" serve --port 0 "$@" >"$TMP/$_serve_name.out" 2>"$TMP/$_serve_name.err" &
	_serve_pid=$!
	PIDS="$PIDS $_serve_pid"
	eval "PID_$_serve_name=\$_serve_pid"
	_serve_url=""
	_serve_n=0
	while [ $_serve_n -lt 100 ]; do   # at most 10 s
		# the background child creates the file when it gets to run: until then there is none
		_serve_url=$(sed -n 's/^listening on //p' "$TMP/$_serve_name.out" 2>/dev/null)
		[ -n "$_serve_url" ] && break
		kill -0 "$_serve_pid" 2>/dev/null || break   # it exited: no use waiting
		sleep 0.1
		_serve_n=$((_serve_n + 1))
	done
	eval "URL_$_serve_name=\$_serve_url"
	[ -n "$_serve_url" ] && return 0
	SERVE_ERROR="serve $* did not start: $(cat "$TMP/$_serve_name.err")"
	return 1
}
