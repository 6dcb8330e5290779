# A private redis-server for sh tests and benches (POSIX sh, sourced).
#
# Sourced by the sh tests and benches that need a Redis, after they set ROOT to the top
# of the tree.  It runs redis-server with no persistence on a loopback port no other
# process holds; every wait is bounded.
#
#   redis_start [FIRST_PORT]  start redis-server on the first port from FIRST_PORT (default:
#                             a pseudo-random one from $$) where it comes up, at most 20
#                             ports, each given 5 s to answer (scripts/install-deps
#                             installs redis-server; this never does).  Sets REDIS_PID,
#                             REDIS_PORT and REDIS_URL (redis://127.0.0.1:PORT) and
#                             returns 0; else sets REDIS_ERROR to one line and returns 1.
#   redis_stop                stop the redis-server redis_start started and wait for it
#                             (nothing when none runs); call it from the EXIT trap

# shellcheck disable=SC2034 # the REDIS_* variables are for the script that sources this file
REDIS_PID=""
REDIS_PORT=""
REDIS_URL=""
REDIS_ERROR=""

# redis_answers PORT PID: the redis-server answering on PORT is process PID (not another
# test's, whose port this one failed to take).
redis_answers() {
	redis-cli -p "$1" info server 2>/dev/null | tr -d '\r' | grep -qx "process_id:$2"
}

redis_start() {
	command -v redis-server >/dev/null 2>&1 || {
		REDIS_ERROR="redis-server is not installed: run make deps (scripts/install-deps)"
		return 1
	}
	_redis_first=${1:-$((20000 + ($$ * 7) % 30000))}
	_redis_port=$_redis_first
	while [ "$_redis_port" -lt $((_redis_first + 20)) ]; do
		redis-server --port "$_redis_port" --bind 127.0.0.1 --save "" --appendonly no --logfile "" \
			>/dev/null 2>&1 &
		_redis_pid=$!
		_redis_n=0
		while [ $_redis_n -lt 50 ]; do   # at most 5 s
			if redis_answers "$_redis_port" "$_redis_pid"; then
				REDIS_PID=$_redis_pid
				REDIS_PORT=$_redis_port
				REDIS_URL="redis://127.0.0.1:$_redis_port"
				return 0
			fi
			kill -0 "$_redis_pid" 2>/dev/null || break   # port taken: try the next one
			sleep 0.1
			_redis_n=$((_redis_n + 1))
		done
		kill "$_redis_pid" 2>/dev/null
		wait "$_redis_pid" 2>/dev/null
		_redis_port=$((_redis_port + 1))
	done
	REDIS_ERROR="redis-server did not start on ports $_redis_first-$((_redis_port - 1))"
	return 1
}

redis_stop() {
	[ -n "$REDIS_PID" ] || return 0
	kill "$REDIS_PID" 2>/dev/null
	wait "$REDIS_PID" 2>/dev/null
	REDIS_PID=""
	REDIS_PORT=""
	REDIS_URL=""
}
