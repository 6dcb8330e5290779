#!/bin/sh
# Runs independent test jobs side by side, keeps each job's output apart and prints it
# whole, in the order the jobs are listed, as soon as the jobs before it have finished.
#
# Usage: sh tests/harness/jobs.sh LIST
#   LIST    one job a line: NAME<TAB>COMMAND (COMMAND runs under sh -c, stdin /dev/null)
#   CHECK_JOBS=N       jobs at once (default 4: the tests mostly wait on servers and
#                      timers, so 2 cores keep up with more jobs than cores)
#   CHECK_TIMEOUT=S    one job's limit in seconds (default 600); then it is killed and fails
#   CHECK_ORDER=FILE   "SECONDS NAME" lines of an earlier run: jobs start longest first
#                      (a job it does not name first of all), and still print in order
#   CHECK_TIMES=FILE   write this run's "SECONDS NAME" lines there
#
# Each job's output is framed by "== NAME" and "-- NAME: ok|FAIL (exit N) in Ss".  At the
# end: the Check totals ("Checks: N, Failures: N, Errors: N" lines of the jobs added up),
# the shell checks ("N passed" lines added up) and the jobs that failed.  Exit 1 when a
# job failed.
set -u

LIST=$1
JOBS=${CHECK_JOBS:-4}
LIMIT=${CHECK_TIMEOUT:-600}
ORDER=${CHECK_ORDER:-}
TIMES=${CHECK_TIMES:-}
TAB=$(printf '\t')
TMP=$(mktemp -d)
WORKERS=""
trap 'for w in $WORKERS; do kill "$w" 2>/dev/null; done; rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM

now() { date +%s.%N | cut -c1-14; }

# The job numbers, longest first by the times of an earlier run (unknown ones first, in
# list order: a new job may be long).
start_order() {
	awk -F "$TAB" -v order="$ORDER" '
	BEGIN { if (order != "") while ((getline l < order) > 0) { split(l, f, " "); t[f[2]] = f[1] } }
	{ printf "%d %s\n", NR, ($1 in t) ? t[$1] : 1e9 }' "$LIST" | sort -k2,2gr -k1,1n | cut -d' ' -f1
}

# One worker: claim the next unclaimed job (mkdir is atomic) and run it, until none is left.
worker() {
	for i in $(cat "$TMP/order"); do
		mkdir "$TMP/claim.$i" 2>/dev/null || continue
		cmd=$(sed -n "${i}p" "$LIST" | cut -f2-)
		t0=$(now)
		/usr/bin/time -f '%U %S' -o "$TMP/cpu.$i" timeout -k 10 "$LIMIT" sh -c "$cmd" </dev/null >"$TMP/out.$i" 2>&1
		rc=$?
		[ $rc -eq 124 ] && echo "jobs: killed after ${LIMIT}s" >>"$TMP/out.$i"
		echo "$rc $(echo "$(now) - $t0" | bc)" >"$TMP/rc.tmp.$i"
		mv "$TMP/rc.tmp.$i" "$TMP/rc.$i"
	done
}

N=$(wc -l <"$LIST")
start_order >"$TMP/order"
w=0
while [ $w -lt "$JOBS" ]; do
	worker &
	WORKERS="$WORKERS $!"
	w=$((w + 1))
done

T0=$(now)
failed=""
i=1
while [ $i -le "$N" ]; do
	name=$(sed -n "${i}p" "$LIST" | cut -f1)
	n=0
	while [ ! -f "$TMP/rc.$i" ]; do   # bounded by the job's own limit
		sleep 0.2
		n=$((n + 1))
		[ $n -lt $(((LIMIT + 60) * 5)) ] || { echo "jobs: $name never finished" >"$TMP/out.$i"; echo "1 -" >"$TMP/rc.$i"; }
	done
	read -r rc secs <"$TMP/rc.$i"
	cpu=$(tail -1 "$TMP/cpu.$i" 2>/dev/null | awk '{ printf "%.1f", $1 + $2 }')
	echo "== $name"
	cat "$TMP/out.$i"
	if [ "$rc" -eq 0 ]; then
		echo "-- $name: ok in ${secs}s (CPU ${cpu}s)"
	else
		echo "-- $name: FAIL (exit $rc) in ${secs}s (CPU ${cpu}s)"
		failed="$failed $name"
	fi
	cat "$TMP/out.$i" >>"$TMP/all"
	echo "$secs $name $cpu" >>"$TMP/times"
	i=$((i + 1))
done
wait

[ -n "$TIMES" ] && cp "$TMP/times" "$TIMES"
checks=$(sed -n 's/^[0-9]*%: Checks: \([0-9]*\), Failures: \([0-9]*\), Errors: \([0-9]*\).*/\1 \2 \3/p' "$TMP/all" |
	awk '{ c += $1; f += $2; e += $3 } END { printf "%d checks, %d failures, %d errors", c, f, e }')
shell=$(grep -o '[0-9][0-9]* passed' "$TMP/all" | awk '{ p += $1 } END { printf "%d", p }')
nf=$(echo "$failed" | wc -w)
echo "== total: $N jobs ($JOBS at once) in $(echo "$(now) - $T0" | bc | cut -d. -f1)s: $((N - nf)) passed, $nf failed"
echo "   Check suites: $checks; shell and lab guide: $shell checks passed"
[ -z "$failed" ] || { echo "   failed:$failed"; exit 1; }
