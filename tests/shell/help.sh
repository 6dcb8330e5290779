#!/bin/sh
# Every command's --help has the one layout: the usage line first, the flag groups in
# order (what to run, what it does, output, advanced), an exit-status section, no line
# past 80 columns; and it names exactly the flags of the command's option table
# (`ratelab CMD --cli-options`), so a flag cannot be added without its help or the other way.
set -u
BIN=${RATELAB_BIN:-./ratelab}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

cmds=$("$BIN" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { exit }')
[ "$(echo "$cmds" | wc -w)" -ge 7 ] || bad "ratelab --help lists $(echo "$cmds" | wc -w) commands"
"$BIN" --help > "$TMP/top" || bad "ratelab --help exit $?"
grep -q '^exit status:$' "$TMP/top" || bad "ratelab --help has no exit status section"
for c in $cmds; do
	out=$TMP/$c.help
	"$BIN" "$c" --help > "$out" 2> "$TMP/$c.err"
	rc=$?
	[ "$rc" -eq 0 ] || bad "$c --help exit $rc"
	[ -s "$TMP/$c.err" ] && bad "$c --help wrote to stderr"
	head -n 1 "$out" | grep -q "^usage: ratelab $c" || bad "$c --help starts '$(head -n 1 "$out")'"
	width=$(LC_ALL=C.UTF-8 wc -L < "$out")
	[ "$width" -le 80 ] || bad "$c --help is $width columns wide: $(LC_ALL=C.UTF-8 grep -m 1 -E '^.{81}' "$out")"
	grep -q '^exit status:$' "$out" || bad "$c --help has no 'exit status:' section"
	grep -Eq '^  2 +a bad flag or value' "$out" || bad "$c --help does not say 2 is a bad flag or value"
	order=$(grep -E '^(what to run|what it does|output|advanced|exit status):$' "$out" | tr '\n' '/')
	case "$order" in
	*/*/*) ;;
	*) bad "$c --help has only the groups $order" ;;
	esac
	want="what to run:/what it does:/output:/advanced:/exit status:/"
	rest=$want
	for g in $(echo "$order" | tr ' /' '_ '); do
		g=$(echo "$g" | tr '_' ' ')
		case "$rest" in
		*"$g/"*) rest=${rest#*"$g/"} ;;
		*) bad "$c --help: group '$g' out of order ($order)" ;;
		esac
	done
	# the flags the table has and the flags the help shows, each once
	"$BIN" "$c" --cli-options | awk '$1 ~ /^--/ { print $1 }' | sort > "$TMP/$c.table"
	grep -Eo '^  --[a-z0-9-]+' "$out" | tr -d ' ' | sort > "$TMP/$c.shown"
	[ -s "$TMP/$c.table" ] || bad "$c --cli-options lists no flag"
	if ! cmp -s "$TMP/$c.table" "$TMP/$c.shown"; then
		bad "$c --help and its option table differ: $(diff "$TMP/$c.table" "$TMP/$c.shown" | grep '^[<>]' | tr '\n' ' ')"
	fi
done
# Results that cannot be written (a full disk: /dev/full) are a failure said in one line, exit 74, the
# same for every command: its --help, a summary on standard output, a --json file.
wfail() { # LABEL WANT-LINE COMMAND...: exit 74 and exactly WANT-LINE on stderr
	label=$1 want=$2
	shift 2
	"$@" 2> "$TMP/w.err" > /dev/full
	rc=$?
	[ "$rc" -eq 74 ] || bad "$label: exit $rc, want 74"
	[ "$(cat "$TMP/w.err")" = "$want" ] || bad "$label: stderr '$(cat "$TMP/w.err")', want '$want'"
}
full="No space left on device"
for c in $cmds; do
	wfail "$c --help >/dev/full" "ratelab $c: cannot write standard output: $full" "$BIN" "$c" --help
done
wfail "--version >/dev/full" "ratelab --version: cannot write standard output: $full" "$BIN" --version
"$BIN" hammer --sim --requests 5 --quiet --json "$TMP/h.json" || bad "hammer --sim --json exit $?"
wfail "hammer --sim >/dev/full" "ratelab hammer: cannot write standard output" "$BIN" hammer --sim --requests 5
# --json -: the summary goes to stderr, the JSON to the full standard output, and the line follows the summary
"$BIN" hammer --sim --requests 5 --json - > /dev/full 2> "$TMP/w.err"
rc=$?
[ "$rc" -eq 74 ] || bad "hammer --json - >/dev/full: exit $rc, want 74"
[ "$(tail -n 1 "$TMP/w.err")" = "ratelab hammer: cannot write standard output: $full" ] ||
	bad "hammer --json - >/dev/full: stderr ends '$(tail -n 1 "$TMP/w.err")'"
[ "$(grep -c 'cannot write' "$TMP/w.err")" -eq 1 ] || bad "hammer --json - >/dev/full: not one line: $(cat "$TMP/w.err")"
wfail "hammer --json /dev/full" "ratelab hammer: cannot write /dev/full: $full" \
	sh -c '"$0" hammer --sim --requests 5 --quiet --json /dev/full >/dev/null' "$BIN"
wfail "merge >/dev/full" "ratelab merge: cannot write standard output" "$BIN" merge "$TMP/h.json" "$TMP/h.json"
wfail "merge --json /dev/full" "ratelab merge: cannot write /dev/full: $full" \
	sh -c '"$0" merge "$1" --quiet --json /dev/full >/dev/null' "$BIN" "$TMP/h.json"
wfail "cases >/dev/full" "ratelab cases: cannot write standard output: $full" "$BIN" cases "${RATELAB_ROOT:-.}/tests/retry-cases.json"

echo "help: $(echo "$cmds" | wc -w) commands checked, $fail failures"
[ "$fail" -eq 0 ]
