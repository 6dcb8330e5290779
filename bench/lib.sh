# bench/lib.sh: helpers for bench/run (POSIX sh, sourced).  Every wait is bounded.
# shellcheck disable=SC2153 # SECS, ROOT, TMP and the rest are set by bench/run
# State lives in $TMP: pid.NAME, port.NAME, out.NAME/err.NAME, res.NAME (one line a run: "rps
# non2xx total cpu_us"), info.NAME (the same run's "wrk socket errors|answers by status from
# /stats", "-" when unknown) and has_stats.NAME (NAME is a ratelab serve: /stats counts its answers).

bench_setup() {
	need=""
	command -v wrk >/dev/null 2>&1 || need="$need wrk"
	command -v ab >/dev/null 2>&1 || need="$need apache2-utils"
	command -v hey >/dev/null 2>&1 || need="$need hey"
	command -v nginx >/dev/null 2>&1 || need="$need nginx-light"
	command -v jq >/dev/null 2>&1 || need="$need jq"
	command -v curl >/dev/null 2>&1 || need="$need curl"
	[ -x /usr/bin/time ] || need="$need time"
	if [ -n "$need" ]; then
		echo "bench: installing missing tools:$need" >&2
		# shellcheck disable=SC2086
		sh "$ROOT/scripts/install-deps" $need >&2 || echo "bench: install-deps failed;" \
			"sections needing$need will be skipped" >&2
	fi
	TMP=$(mktemp -d "${TMPDIR:-/tmp}/ratelab-bench.XXXXXX") || return 1
	# nginx workers drop root privileges and must read the docroot.
	chmod 755 "$TMP"
	trap 'stop_all; rm -rf "$TMP"' EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	# 10,000 virtual clients need descriptors; raise the soft limit as far as allowed.
	# shellcheck disable=SC3045 # dash and bash both have ulimit -n/-H
	ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
	return 0
}

# start_listener NAME CMD...: run CMD, wait (<= 10 s) for its "listening on http://H:PORT" line.
start_listener() {
	name=$1
	shift
	"$@" >"$TMP/out.$name" 2>"$TMP/err.$name" &
	echo $! >"$TMP/pid.$name"
	[ "${2:-}" = serve ] && : >"$TMP/has_stats.$name"
	i=0
	while [ $i -lt 200 ]; do
		port=$(sed -n 's/^listening on http:\/\/[^:]*:\([0-9][0-9]*\).*/\1/p' "$TMP/out.$name" \
			2>/dev/null)
		if [ -n "$port" ]; then
			echo "$port" >"$TMP/port.$name"
			return 0
		fi
		if ! kill -0 "$(cat "$TMP/pid.$name")" 2>/dev/null; then
			break
		fi
		sleep 0.05
		i=$((i + 1))
	done
	echo "  SKIP $name: '$*' did not start: $(head -c 200 "$TMP/err.$name" | tr '\n' ' ')"
	stop_one "$name"
	return 1
}

start_ratelab() {
	name=$1
	shift
	start_listener "$name" "$RATELAB_BIN" "$@" --port 0
}

start_hello() {
	if [ ! -x "$HELLO_BIN" ]; then
		echo "  SKIP $1: $HELLO_BIN is not built (make $HELLO_BIN)"
		return 1
	fi
	start_listener "$1" "$HELLO_BIN" --port 0
}

start_floor() {
	if [ ! -x "$FLOOR_BIN" ]; then
		echo "  SKIP $1: $FLOOR_BIN is not built (make $FLOOR_BIN)"
		return 1
	fi
	start_listener "$1" "$FLOOR_BIN" --port 0
}

# free_port SALT: a loopback TCP port below the ephemeral range that no socket uses (nginx
# cannot report a port-0 pick, and a port that a client connection holds fails to bind).
free_port() {
	lo=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
	span=$((lo - 10000))
	p=$((10000 + ($$ * 31 + ${1:-0} * 997) % span))
	n=0
	while [ $n -lt 200 ]; do
		if [ -z "$(ss -Htan "sport = :$p" 2>/dev/null)" ]; then
			echo "$p"
			return 0
		fi
		p=$((10000 + (p - 10000 + 7) % span))
		n=$((n + 1))
	done
	return 1
}

# start_nginx NAME RATE BURST: nginx-light with limit_req from bench/nginx.conf.in (or
# $NGINX_CONF_IN, with $NGINX_UPSTREAM for its @UPSTREAM@), private prefix; a port lost to a
# race is retried on another (5 tries).
start_nginx() {
	if ! command -v nginx >/dev/null 2>&1; then
		echo "  SKIP $1: nginx is not installed"
		return 1
	fi
	try=0
	while [ $try -lt 5 ]; do
		salt=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')
		nginx_try "$@" "$(free_port $((try * 7919 + ${salt:-0})))" && return 0
		try=$((try + 1))
	done
	echo "  SKIP $1: nginx did not start:" \
		"$(tail -c 200 "$TMP/nginx.$1/error.log" "$TMP/err.$1" 2>/dev/null | tr '\n' ' ')"
	return 1
}

# nginx_try NAME RATE BURST PORT: one start; 0 once it answers (<= 10 s).
nginx_try() {
	name=$1
	pre=$TMP/nginx.$name
	[ -n "$4" ] || return 1
	mkdir -p "$pre/html"
	chmod 755 "$pre" "$pre/html"
	echo hello >"$pre/html/hello.txt"
	chmod 644 "$pre/html/hello.txt"
	sed -e "s#@PREFIX@#$pre#g" -e "s#@PORT@#$4#g" -e "s#@RATE@#$2#g" \
		-e "s#@BURST@#$3#g" -e "s#@WORKERS@#$(nproc)#g" -e "s#@UPSTREAM@#${NGINX_UPSTREAM:-}#g" \
		"${NGINX_CONF_IN:-$ROOT/bench/nginx.conf.in}" >"$pre/nginx.conf"
	nginx -p "$pre" -c "$pre/nginx.conf" -e "$pre/error.log" \
		>"$TMP/out.$name" 2>"$TMP/err.$name" &
	echo $! >"$TMP/pid.$name"
	echo "$4" >"$TMP/port.$name"
	i=0
	while [ $i -lt 200 ]; do
		curl -s -o /dev/null -m 1 "http://127.0.0.1:$4/healthz-probe" && return 0
		kill -0 "$(cat "$TMP/pid.$name")" 2>/dev/null || break
		sleep 0.05
		i=$((i + 1))
	done
	stop_one "$name"
	return 1
}

url_of() { echo "http://127.0.0.1:$(cat "$TMP/port.$1" 2>/dev/null)"; }
pid_of() { cat "$TMP/pid.$1" 2>/dev/null; }
up() { [ -f "$TMP/port.$1" ]; }

stop_one() {
	pid=$(pid_of "$1")
	rm -f "$TMP/pid.$1" "$TMP/port.$1" "$TMP/has_stats.$1"
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	i=0
	while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	return 0
}

stop_all() {
	for f in "$TMP"/pid.*; do
		[ -f "$f" ] && stop_one "${f##*/pid.}"
	done
	return 0
}

# record NAME RPS NON2XX TOTAL [CPU_US [INFO]]: one run of NAME (res.NAME and info.NAME).
record() {
	echo "$2 $3 $4 ${5:--}" >>"$TMP/res.$1"
	echo "${6:--}" >>"$TMP/info.$1"
}

# stats_snap NAME FILE: NAME's /stats into FILE when NAME is a ratelab serve, else FILE empty.
stats_snap() {
	: >"$2"
	[ -n "$1" ] && [ -f "$TMP/has_stats.$1" ] || return 0
	curl -s -m 2 "$(url_of "$1")/stats" >"$2" 2>/dev/null || : >"$2"
}

# stats_delta BEFORE AFTER: the answers between two /stats snapshots by status ("200=401
# 429=630012", then "refused=N" when connections were refused), or "-" without both.
stats_delta() {
	jq -r -n --slurpfile a "$1" --slurpfile b "$2" '
		if ($a[0] | type) != "object" or ($b[0] | type) != "object" then "-" else
		($a[0].status // {}) as $o | ($b[0].status // {}) as $n
		| [$n | to_entries[] | (.value - ($o[.key] // 0)) as $d | select($d > 0)
		   | "\(.key)=\($d)"]
		+ ([([$b[0].refused // {} | .[]] | add // 0) - ([$a[0].refused // {} | .[]] | add // 0)]
		   | map(select(. > 0) | "refused=\(.)"))
		| if length == 0 then "-" else join(" ") end end' 2>/dev/null | grep . || echo "-"
}

# socket_errors WRK_OUTPUT: wrk's "connect A, read B, write C, timeout D", or "none".
socket_errors() {
	sed -n 's/^ *Socket errors: *//p' "$1" | grep . || echo "none"
}

# timed CMD...: run CMD under /usr/bin/time, its CPU seconds (user+sys) go to $TMP/time.last.
timed() {
	rm -f "$TMP/time.last"
	if [ -x /usr/bin/time ]; then
		/usr/bin/time -f '%U %S' -o "$TMP/time.last" "$@"
	else
		"$@"
	fi
}

# client_us TOTAL: the last timed command's CPU microseconds per request, or "-".
client_us() {
	awk -v n="${1:-0}" '{ if (n > 0) printf "%.1f", ($1 + $2) * 1e6 / n; else print "-"; ok = 1 }
		END { if (!ok) print "-" }' "$TMP/time.last" 2>/dev/null || echo "-"
}

# cpu_ticks NAME: utime+stime clock ticks of NAME's process and its children (nginx workers).
cpu_ticks() {
	pid=$(pid_of "$1")
	[ -n "$pid" ] || { echo 0; return 0; }
	t=0
	for p in $pid $(ps -o pid= --ppid "$pid" 2>/dev/null); do
		t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0)))
	done
	echo "$t"
}

# wrk_run NAME URL [SERVER]: one wrk -t2 -c64 run; records req/s, non-2xx, total and, when
# SERVER names a started process, its CPU microseconds per request.  WRK_SCRIPT, when set,
# is passed as -s, with WRK_SCRIPT_ARG after the URL.
wrk_run() {
	case $2 in *127.0.0.1:/*) return 0 ;; esac
	stats_snap "${3:-}" "$TMP/stats.before"
	t0=$(cpu_ticks "${3:-}")
	timed timeout $((SECS + 30)) wrk -t2 -c64 -d"${SECS}s" --timeout 5s ${WRK_SCRIPT:+-s "$WRK_SCRIPT"} \
		"$2" ${WRK_SCRIPT_ARG:+"$WRK_SCRIPT_ARG"} >"$TMP/wrk.last" 2>&1
	t1=$(cpu_ticks "${3:-}")
	stats_snap "${3:-}" "$TMP/stats.after"
	rps=$(sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' "$TMP/wrk.last")
	tot=$(sed -n 's/^ *\([0-9][0-9]*\) requests in.*/\1/p' "$TMP/wrk.last")
	bad=$(sed -n 's/^ *Non-2xx or 3xx responses: *\([0-9]*\).*/\1/p' "$TMP/wrk.last")
	if [ -n "${3:-}" ]; then
		us=$(awk -v t=$((t1 - t0)) -v n="${tot:-0}" -v hz="$(getconf CLK_TCK)" \
			'BEGIN { if (n > 0 && t > 0) printf "%.1f", t * 1e6 / hz / n; else print "-" }')
		# wrk's own CPU too: on shared cores the load generator's cost per answer counts
		echo "$(client_us "${tot:-0}")" >>"$TMP/wrkcpu.$1"
	else
		us=$(client_us "${tot:-0}")
	fi
	record "$1" "${rps:-0}" "${bad:-0}" "${tot:-0}" "$us" \
		"$(socket_errors "$TMP/wrk.last")|$(stats_delta "$TMP/stats.before" "$TMP/stats.after")"
}

# wrk_cpu NAME: the median wrk CPU microseconds per request over NAME's server runs ("-" when none).
wrk_cpu() {
	[ -f "$TMP/wrkcpu.$1" ] || { echo "-"; return 0; }
	grep -v '^-$' "$TMP/wrkcpu.$1" | awk "$AWK_MEDIAN"'
		{ v[++n] = $1 } END { if (n) printf "%.1f\n", median(v, n) }' | grep . || echo "-"
}

ab_run() {
	command -v ab >/dev/null 2>&1 || return 0
	# -n after -t: -t alone caps the run at 50,000 requests.
	timed timeout $((SECS + 30)) ab -q -k -c64 -t "$SECS" -n 100000000 "$2" >"$TMP/ab.last" 2>&1
	rps=$(sed -n 's/^Requests per second: *\([0-9.]*\).*/\1/p' "$TMP/ab.last")
	tot=$(sed -n 's/^Complete requests: *\([0-9]*\).*/\1/p' "$TMP/ab.last")
	bad=$(sed -n 's/^Non-2xx responses: *\([0-9]*\).*/\1/p' "$TMP/ab.last")
	record "$1" "${rps:-0}" "${bad:-0}" "${tot:-0}" "$(client_us "${tot:-0}")"
}

hey_run() {
	command -v hey >/dev/null 2>&1 || return 0
	timed timeout $((SECS + 30)) hey -c 64 -z "${SECS}s" "$2" >"$TMP/hey.last" 2>&1
	rps=$(sed -n 's/^[[:space:]]*Requests\/sec:[[:space:]]*\([0-9.]*\).*/\1/p' "$TMP/hey.last")
	ok=$(sed -n 's/^[[:space:]]*\[200\][[:space:]]*\([0-9]*\) responses.*/\1/p' "$TMP/hey.last")
	tot=$(awk '/^[ \t]*\[[0-9]+\][ \t]+[0-9]+ responses/ { s += $2 } END { print s + 0 }' \
		"$TMP/hey.last")
	record "$1" "${rps:-0}" "$(( ${tot:-0} - ${ok:-0} ))" "${tot:-0}" "$(client_us "${tot:-0}")"
}

# hammer_rps NAME URL [ARGS...]: ratelab hammer --concurrency 64 --duration SECS ARGS; req/s from its summary line.
# hammer_rps NAME URL [ARGS]: one hammer run of SECS against URL, recorded under NAME.
# hammer_rps_with is the same with the binary in $HAMMER_BIN (a baseline build).
hammer_rps() {
	HAMMER_BIN=$RATELAB_BIN
	hammer_rps_with "$@"
}

hammer_rps_with() {
	_n=$1
	_u=$2
	shift 2
	timed timeout $((SECS + 30)) "$HAMMER_BIN" hammer --concurrency 64 --duration "${SECS}s" "$_u" "$@" \
		>"$TMP/hammer.last" 2>"$TMP/hammer.err"
	line=$(grep -m1 -E '^[0-9]+ requests in [0-9.]+s' "$TMP/hammer.last")
	if [ -z "$line" ]; then
		echo "  hammer gave no summary: $(head -c 200 "$TMP/hammer.err" | tr '\n' ' ')"
		return 0
	fi
	tot=${line%% *}
	secs=$(echo "$line" | sed 's/.* in \([0-9.]*\)s.*/\1/')
	ok=$(awk '/^2[0-9][0-9] +x[0-9]+/ { sub("x", "", $2); s += $2 } END { print s + 0 }' \
		"$TMP/hammer.last")
	record "$_n" "$(awk -v n="$tot" -v s="$secs" 'BEGIN { printf "%.2f", (s > 0 ? n / s : 0) }')" \
		"$((tot - ok))" "$tot" "$(client_us "$tot")"
}

# med_cpu NAME: the median server CPU microseconds per request over NAME's runs (empty when none).
med_cpu() {
	[ -f "$TMP/res.$1" ] || return 0
	awk "$AWK_MEDIAN"'$4 != "-" { v[++n] = $4 } END { if (n) print median(v, n) }' "$TMP/res.$1"
}

# best NAME: highest req/s recorded for NAME (empty when none).
best() {
	[ -f "$TMP/res.$1" ] || return 0
	sort -g -r -k1,1 "$TMP/res.$1" | head -n1 | cut -d' ' -f1
}

# AWK_MEDIAN: an awk function, median(a, n) of a[1..n] (a is left as it was).
AWK_MEDIAN='
function median(a, n,   b, i, j, x) {
	for (i = 1; i <= n; i++) {
		x = a[i] + 0
		for (j = i - 1; j >= 1 && b[j] > x; j--)
			b[j + 1] = b[j]
		b[j + 1] = x
	}
	return n % 2 ? b[(n + 1) / 2] : (b[n / 2] + b[n / 2 + 1]) / 2
}
'

# AWK_RUNS: reads res.NAME lines into rps/bad/tot/cpu/share[1..nr]; after prep(), flagged(i)
# says whether run i stands apart from the peer's other runs (3 runs or more): req/s over
# 1.25x their median at under 0.8x their median CPU per request (any CPU when it is not
# known), or a non-2xx share more than 1 point from their median share.  A run that is only
# faster came when the machine was quieter; one that is faster and cheaper ran in another
# regime or did other work, and a best-of figure or a lowest CPU would be decided by it.
AWK_RUNS=$AWK_MEDIAN'
$1 != "" {
	nr++; rps[nr] = $1; bad[nr] = $2; tot[nr] = $3; cpu[nr] = $4
	share[nr] = $3 > 0 ? 100 * $2 / $3 : 0
}
function prep(   i, v) {
	for (i = 1; i <= nr; i++) v[i] = rps[i]
	mrps = median(v, nr)
	for (i = 1; i <= nr; i++) v[i] = share[i]
	mshare = median(v, nr)
	for (i = 1; i <= nr; i++) if (cpu[i] != "-") c[++nc] = cpu[i]
	mcpu = nc ? median(c, nc) : ""
}
function flagged(i,   cheap) {
	cheap = cpu[i] == "-" || mcpu == "" || cpu[i] < 0.8 * mcpu
	return nr >= 3 && (rps[i] > 1.25 * mrps && cheap || share[i] > mshare + 1 || share[i] < mshare - 1)
}
'

# flags NAME: one line a run of NAME, 1 when flagged (AWK_RUNS), else 0.
flags() {
	awk "$AWK_RUNS"'END { prep(); for (i = 1; i <= nr; i++) print flagged(i) ? 1 : 0 }' \
		"$TMP/res.$1"
}

# print_head FIRST: the header of print_best's table, FIRST naming its first column.
print_head() {
	printf '%-44s %10s %8s %8s %9s %6s  %s\n' "$1" "req/s" "non-2xx" "2xx/run" "cpu us/rq" \
		"min" "(each run's req/s, * flagged)"
}

# print_best LABEL NAME: the best run's req/s; the median non-2xx share, 2xx answers per run
# and CPU microseconds per request over the runs, and the lowest CPU (* when a flagged run
# has it); every run's req/s.  Then one line for each flagged run: how far it stood off, its
# 2xx count, its CPU, and from info.NAME wrk's socket errors and the answers /stats counted.
print_best() {
	f=$TMP/res.$2
	if [ ! -s "$f" ]; then
		printf '%-44s %10s\n' "$1" "n/a"
		return 0
	fi
	awk -v label="$1" -v infofile="$TMP/info.$2" "$AWK_RUNS"'
	END {
		prep()
		while ((getline line < infofile) > 0) info[++ni] = line
		for (i = 1; i <= nr; i++) {
			v[i] = tot[i] - bad[i]
			if (rps[i] > rps[b] || b == "") b = i
			if (cpu[i] != "-" && (lo == "" || cpu[i] + 0 < cpu[lo] + 0)) lo = i
			runs = runs (i > 1 ? " " : "") sprintf("%.0f", rps[i]) (flagged(i) ? "*" : "")
		}
		mc = mcpu == "" ? "-" : sprintf("%.1f", mcpu)
		low = lo == "" ? "-" : cpu[lo]
		if (lo != "" && flagged(lo)) low = low "*"
		printf "%-44s %10.0f %7.2f%% %8.0f %9s %6s  (%s)\n", label, rps[b], mshare, median(v, nr),
			mc, low, runs
		for (i = 1; i <= nr; i++) {
			if (!flagged(i)) continue
			x = mrps > 0 ? rps[i] / mrps : 0
			printf "  * run %d: %.2fx the median req/s, %d 2xx, %.2f%% non-2xx, cpu %s us/rq", i, x,
				tot[i] - bad[i], share[i], cpu[i]
			if (split(info[i], part, "|") == 2)
				printf "; wrk socket errors: %s; answers (/stats): %s", part[1], part[2]
			printf "\n"
		}
	}' "$f"
}

ratio() {
	if [ -z "$1" ] || [ -z "$2" ]; then
		echo "n/a"
		return 0
	fi
	awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "n/a" }'
}

# paired A B: the per-round ratios A/B of two peers run back to back in each round, as
# "median Rx (min-max), ahead in K of N rounds; geomean Gx, 95% interval L-H: VERDICT", and
# when a round holds a flagged run (AWK_RUNS) of either peer, a second line: the same
# without those rounds (one regime-changed run moves a geomean of 8 ratios by several %).
# On shared cores a noisy minute hits both runs of a round, so these are steadier than a
# ratio of two bests.  The interval is Student's t over the log ratios; the verdict is
# "ahead" when it lies wholly above 1, "behind" when wholly below, else "at parity".
paired() {
	fa=$TMP/res.$1
	fb=$TMP/res.$2
	if [ ! -s "$fa" ] || [ ! -s "$fb" ]; then
		echo "n/a"
		return 0
	fi
	paste -d' ' "$fa" "$fb" | awk '$5 > 0 { print $1 / $5 }' | paired_stats
	flags "$1" >"$TMP/flags.a"
	flags "$2" >"$TMP/flags.b"
	paste -d' ' "$fa" "$fb" "$TMP/flags.a" "$TMP/flags.b" >"$TMP/flags.ab"
	out=$(awk '$9 == 1 || $10 == 1 { printf "%s%d", (n++ ? ", " : ""), NR }' "$TMP/flags.ab")
	[ -n "$out" ] || return 0
	printf '               without the rounds with a flagged run (%s): ' "$out"
	awk '$9 == 0 && $10 == 0 && $5 > 0 { print $1 / $5 }' "$TMP/flags.ab" | paired_stats
}

# paired_cost A B: the per-round ratios A/B of CPU microseconds per request (res column 4)
# of two peers run back to back, summarised as paired_stats does for a cost: "higher in K
# of N rounds", verdict "higher" or "lower" when the interval lies wholly above or below 1.
paired_cost() {
	fa=$TMP/res.$1
	fb=$TMP/res.$2
	if [ ! -s "$fa" ] || [ ! -s "$fb" ]; then
		echo "n/a"
		return 0
	fi
	paste -d' ' "$fa" "$fb" | awk '$4 != "-" && $8 != "-" && $8 > 0 { print $4 / $8 }' |
		paired_stats cost
}

# paired_stats [cost]: reads one ratio per line, prints the summary paired() describes; with
# "cost" (lower is better: CPU, lateness) the words are "higher in K of N rounds" and the
# verdicts "higher", "lower" and "at parity".
paired_stats() {
	sort -g | awk -v cost="${1:-}" '
		BEGIN { split("12.71 4.30 3.18 2.78 2.57 2.45 2.36 2.31 2.26 2.23 2.20 2.18 2.16 2.14 " \
		              "2.13 2.12 2.11 2.10 2.09 2.09 2.08 2.07 2.07 2.06 2.06 2.06 2.05 2.05 2.05", t) }
		$1 > 0 { r[++n] = $1; l = log($1); s += l; ss += l * l; if ($1 >= 1) ahead++ }
		END {
			if (n == 0) { print "n/a"; exit }
			m = n % 2 ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2
			printf "median %.2fx (%.2f-%.2f), %s in %d of %d rounds", m, r[1], r[n],
				cost ? "higher" : "ahead", ahead, n
			if (n < 2) { print ""; exit }
			mean = s / n
			var = (ss - n * mean * mean) / (n - 1)
			half = (n - 1 <= 29 ? t[n - 1] : 1.96) * sqrt(var > 0 ? var : 0) / sqrt(n)
			lo = exp(mean - half); hi = exp(mean + half)
			v = lo > 1 ? (cost ? "higher" : "ahead") : hi < 1 ? (cost ? "lower" : "behind") : "at parity"
			printf "; geomean %.2fx, 95%% interval %.2f-%.2f: %s\n", exp(mean), lo, hi, v
		}'
}

fmax() { awk -v a="${1:-0}" -v b="${2:-0}" 'BEGIN { if (a + 0 >= b + 0) print a; else print b }'; }

proc_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status" 2>/dev/null; }

mb() {
	[ -n "${1:-}" ] || { echo "?"; return 0; }
	awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'
}

# json_num FILE KEY: top-level number KEY in FILE, else the sum of every KEY below it, else "?".
json_num() {
	jq -r --arg k "$2" '(if type == "object" then .[$k] else null end)
		// ([paths(numbers) as $p | select($p[-1] == $k) | getpath($p)] | add) // "?"' \
		"$1" 2>/dev/null || echo "?"
}

# wait_files F1 F2 PID MAXSECS: until both files exist, PID exits, or MAXSECS pass.
wait_files() {
	i=0
	while [ $i -lt $(($4 * 20)) ] && kill -0 "$3" 2>/dev/null; do
		[ -e "$1" ] && [ -e "$2" ] && return 0
		sleep 0.05
		i=$((i + 1))
	done
	return 1
}

# sample_rss PID MAXSECS: "seconds rss_kb" every 0.2 s while PID lives (bounded).
sample_rss() {
	t0=$(date +%s.%N)
	i=0
	while [ $i -lt $(($2 * 5)) ] && kill -0 "$1" 2>/dev/null; do
		k=$(proc_kb "$1" VmRSS)
		[ -n "$k" ] && echo "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') $k"
		sleep 0.2
		i=$((i + 1))
	done
}

summarize_rss() {
	if [ ! -s "$1" ]; then
		echo "no RSS samples"
		return 0
	fi
	awk '{ t[NR] = $1; k[NR] = $2; if ($2 > pk) pk = $2 }
	END {
		a = int(NR * 0.1) + 1
		printf "hammer RSS MB: first sample %.1f, at 10%% (%.1fs) %.1f, peak %.1f, last (%.1fs) %.1f;",
			k[1] / 1024, t[a], k[a] / 1024, pk / 1024, t[NR], k[NR] / 1024
		printf " growth 10%%->end %+.1f MB over %d samples (goal: flat)\n", (k[NR] - k[a]) / 1024, NR
	}' "$1"
}
