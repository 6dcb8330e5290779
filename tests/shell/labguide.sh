#!/bin/sh
# The lab guide's commands are tested: every block a chapter marks runnable is
# run against the server that chapter starts, and its output is checked against
# the expectations written beside it.  The marker syntax is in lab-guide/README.md:
#
#   <!-- labguide: serve ARGS -->        (re)start `ratelab serve --port 0 ARGS`; $URL, $PORT
#   <!-- labguide: stop -->              stop the chapter's server
#   <!-- run: EXPECT; EXPECT; ... -->    the next ``` block is run and checked
#
# Usage: RATELAB_BIN=./ratelab sh tests/shell/labguide.sh [lab-guide/05-*.md ...]
# LABGUIDE_OUT=DIR keeps every block's output there (to refresh a chapter's printed output).
# Prints one line per block and closes with "N passed, N failed"; exit 1 on a failure.
set -u

ROOT=${RATELAB_ROOT:-.}
BIN=${RATELAB_BIN:-$ROOT/ratelab}
case $BIN in /*) ;; *) BIN=$(pwd)/$BIN ;; esac
TMP=$(mktemp -d)
SPID=""
PASSED=0
FAILED=0

stop_server() {
	if [ -n "$SPID" ]; then
		kill "$SPID" 2>/dev/null
		wait "$SPID" 2>/dev/null
		SPID=""
	fi
}
trap 'stop_server; rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM

# The blocks run in a scratch folder where ./ratelab is the binary under test.
ROOT_ABS=$(cd "$ROOT" && pwd)
mkdir -p "$TMP/work"
ln -s "$BIN" "$TMP/work/ratelab"
ln -s "$ROOT_ABS/tests" "$TMP/work/tests"
ln -s "$ROOT_ABS/lab-guide" "$TMP/work/lab-guide"

start_server() {
	stop_server
	: >"$TMP/serve.out"
	# shellcheck disable=SC2086
	(cd "$TMP/work" && exec "$BIN" serve --port 0 $1) </dev/null >"$TMP/serve.out" 2>"$TMP/serve.err" &
	SPID=$!
	URL=""
	n=0
	while [ $n -lt 100 ] && [ -z "$URL" ]; do   # at most 10 s
		URL=$(sed -n 's/^listening on //p' "$TMP/serve.out")
		[ -n "$URL" ] || sleep 0.1
		n=$((n + 1))
	done
	PORT=${URL##*:}
	export URL PORT
	[ -n "$URL" ]
}

reset_server() {
	[ -n "$SPID" ] && "$BIN" hammer "$URL/reset" --method POST --requests 1 --concurrency 1 --quiet </dev/null >/dev/null 2>&1
	return 0
}

# Extract a chapter into a plan: "S<TAB>args", "X", or "R<TAB>line<TAB>expectations<TAB>file".
extract() {
	awk -v dir="$TMP" -v OFS='\t' '
	/^<!-- labguide: serve/ { a = $0; sub(/^<!-- labguide: serve */, "", a); sub(/ *-->.*$/, "", a); print "S", a; next }
	/^<!-- labguide: stop/ { print "X"; next }
	/^<!-- run:/ { e = $0; sub(/^<!-- run: */, "", e); sub(/ *-->.*$/, "", e); want = 1; line = NR; next }
	want == 1 && /^```/ { n++; f = dir "/block" n ".sh"; printf "" > f; want = 2; next }
	want == 2 && /^```/ { close(f); print "R", line, e, f; want = 0; next }
	want == 2 { print > f; next }
	want == 1 && NF { want = 0 }
	' "$1"
}

# The value a "LABEL in A..B" check reads: column 2 (an "x" prefix dropped) of the
# first line whose column 1 is LABEL; "LABEL#N" reads column N instead.
value_of() {
	label=${1%%#*}
	col=2
	case $1 in *'#'*) col=${1##*#} ;; esac
	awk -v l="$label" -v c="$col" '$1 == l { v = $c; sub(/^x/, "", v); sub(/s$/, "", v); print v; exit }' "$2"
}

in_range() {   # in_range VALUE A..B
	awk -v v="$1" -v r="$2" 'BEGIN { split(r, p, /\.\./); exit !(v != "" && v + 0 >= p[1] + 0 && v + 0 <= p[2] + 0) }'
}

# Check one expectation against the block's output and exit status; prints why on failure.
check_one() {
	exp=$(echo "$1" | sed 's/^ *//; s/ *$//')
	case $exp in
	'') return 0 ;;
	noreset) return 0 ;;
	"exit "*)
		[ "$3" = "${exp#exit }" ] || { echo "exit $3, want ${exp#exit }"; return 1; } ;;
	"contains "*)
		grep -qF -- "${exp#contains }" "$2" || { echo "no '${exp#contains }' in the output"; return 1; } ;;
	"match "*)
		grep -qE -- "${exp#match }" "$2" || { echo "no line matches /${exp#match }/"; return 1; } ;;
	*" in "*)
		label=${exp%% in *}
		v=$(value_of "$label" "$2")
		# The hammer prints only the statuses it saw: an absent status line is x0.
		case $label in [1-5][0-9][0-9]) [ -n "$v" ] || v=0 ;; esac
		in_range "$v" "${exp##* in }" || { echo "$label is '${v}', want ${exp##* in }"; return 1; } ;;
	*) echo "unknown expectation '$exp'"; return 1 ;;
	esac
	return 0
}

run_block() {   # run_block CHAPTER LINE EXPECTATIONS FILE
	out="$TMP/out"
	case $3 in *noreset*) ;; *) reset_server ;; esac
	(cd "$TMP/work" && timeout 90 sh -e "$4") >"$out" 2>&1 </dev/null
	st=$?
	# LABGUIDE_OUT=DIR keeps each block's output as DIR/<chapter>-<line>.txt.
	[ -n "${LABGUIDE_OUT:-}" ] && cp "$out" "$LABGUIDE_OUT/$(basename "$1" .md)-$2.txt"
	why=""
	case $3 in *exit*) ;; *) why=$(check_one "exit 0" "$out" "$st") ;; esac
	if [ -z "$why" ]; then
		why=$(echo "$3" | tr ';' '\n' | while IFS= read -r e; do check_one "$e" "$out" "$st" || break; done)
	fi
	if [ -z "$why" ]; then
		PASSED=$((PASSED + 1))
		echo "ok   $1:$2"
	else
		FAILED=$((FAILED + 1))
		echo "FAIL $1:$2: $why"
		sed 's/^/     | /' "$out" | head -30
	fi
}

run_chapter() {
	extract "$1" >"$TMP/plan"
	while IFS="$(printf '\t')" read -r kind a b c; do
		case $kind in
		S) start_server "$a" || { FAILED=$((FAILED + 1)); echo "FAIL $1: serve $a did not start"; cat "$TMP/serve.err"; } ;;
		X) stop_server ;;
		R) run_block "$1" "$a" "$b" "$c" ;;
		esac
	done <"$TMP/plan"
	stop_server
}

if [ $# -eq 0 ]; then
	set -- "$ROOT"/lab-guide/[0-9]*.md
fi
for ch in "$@"; do
	[ -f "$ch" ] || continue
	run_chapter "$ch"
done
echo "labguide: $PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ] && [ "$PASSED" -gt 0 ]
