#!/bin/sh
# The man pages (man/*.scd, scdoc) match the binary: ratelab(1) names every command,
# each command has its page, the page's flags are exactly the command's option table
# (so `--help`, which tests/shell/help.sh ties to the same table), its exit statuses
# are those --help lists, it has examples and files, and scdoc builds it.
set -u
BIN=${RATELAB_BIN:-./ratelab}
ROOT=${RATELAB_ROOT:-.}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

command -v scdoc > /dev/null 2>&1 || { echo "FAIL: scdoc is not installed (scripts/install-deps installs it)"; exit 1; }
cmds=$("$BIN" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { exit }')
[ -n "$cmds" ] || bad "no commands in '$BIN --help'"
scdoc < "$ROOT/man/ratelab.1.scd" > "$TMP/ratelab.1" || bad "scdoc refuses man/ratelab.1.scd"
for c in $cmds; do
	grep -q "^\*$c\*$" "$ROOT/man/ratelab.1.scd" || bad "ratelab(1) does not list the command $c"
	grep -q "ratelab-$c\*(1)" "$ROOT/man/ratelab.1.scd" || bad "ratelab(1) does not point to ratelab-$c(1)"
	page=$ROOT/man/ratelab-$c.1.scd
	[ -f "$page" ] || { bad "no man page $page"; continue; }
	scdoc < "$page" > "$TMP/$c.1" || bad "scdoc refuses $page"
	for s in NAME SYNOPSIS DESCRIPTION OPTIONS 'EXIT STATUS' EXAMPLES FILES 'SEE ALSO'; do
		grep -q "^# $s\$" "$page" || bad "$page has no $s section"
	done
	# flags: the table's (and --help) against the page's option entries
	{ "$BIN" "$c" --cli-options | awk '$1 ~ /^--/ { print $1 }'; echo --help; } | sort > "$TMP/$c.table"
	sed -n '/^# OPTIONS$/,/^# [A-Z]/p' "$page" | grep -Eo '^\*--[a-z0-9-]+\*' | tr -d '*' | sort > "$TMP/$c.page"
	if ! cmp -s "$TMP/$c.table" "$TMP/$c.page"; then
		bad "$c: the option table (<) and $page (>) differ: $(diff "$TMP/$c.table" "$TMP/$c.page" | grep '^[<>]' | tr '\n' ' ')"
	fi
	# exit statuses: --help's against the page's
	"$BIN" "$c" --help | awk '/^exit status:$/ { on = 1; next } on && /^  [0-9]/ { print $1 }' > "$TMP/$c.exits"
	sed -n '/^# EXIT STATUS$/,/^# /p' "$page" | grep -Eo '^\*[0-9]+\*$' | tr -d '*' > "$TMP/$c.pexits"
	[ -s "$TMP/$c.exits" ] || bad "$c --help lists no exit status"
	cmp -s "$TMP/$c.exits" "$TMP/$c.pexits" ||
		bad "$c: exit statuses in --help ($(tr '\n' ' ' < "$TMP/$c.exits")) and $page ($(tr '\n' ' ' < "$TMP/$c.pexits")) differ"
	grep -q "^ratelab $c" "$TMP/$c.1" || sed -n '/^```$/,/^```$/p' "$page" | grep -q "ratelab $c" ||
		bad "$page has no example running ratelab $c"
done
echo "manpages: $(echo "$cmds" | wc -w) commands checked, $fail failures"
[ "$fail" -eq 0 ]
