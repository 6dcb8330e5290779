#!/bin/sh
# Shell completion, generated from the option tables (scripts/gen-completion): bash's
# completion function completes commands, flags and the values a flag takes, as a user
# pressing Tab would see them; the zsh script parses and names the same values.
set -u
BIN=${RATELAB_BIN:-./ratelab}
ROOT=${RATELAB_ROOT:-.}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

sh "$ROOT/scripts/gen-completion" bash "$BIN" > "$TMP/ratelab.bash" || bad "gen-completion bash exit $?"
sh "$ROOT/scripts/gen-completion" zsh "$BIN" > "$TMP/_ratelab" || bad "gen-completion zsh exit $?"

# complete LINE: what bash offers for the last word of LINE (a trailing space: an empty word)
cat > "$TMP/complete.bash" <<'BASH'
. "$1"
shift
for line in "$@"; do
	read -ra COMP_WORDS <<< "$line"
	[ "${line% }" != "$line" ] && COMP_WORDS+=("")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMPREPLY=()
	_ratelab
	echo "$line => ${COMPREPLY[*]}"
done
BASH
(cd "$TMP" && touch results.json) || exit 1
(cd "$TMP" && bash complete.bash ratelab.bash "ratelab ser" "ratelab serve --lim" "ratelab serve --limiter g" \
	"ratelab serve --limiter" "ratelab serve --store-failure c" "ratelab hammer --policy na" \
	"ratelab hammer --backoff dec" "ratelab herd --policies decor" "ratelab verify --scenario post" \
	"ratelab storm --pol" "ratelab hammer --json res" "ratelab serve --port " "ratelab serve --quiet --por") \
	> "$TMP/got" 2> "$TMP/err" || bad "bash completion exit $? ($(cat "$TMP/err"))"
cat > "$TMP/want" <<'WANT'
ratelab ser => serve
ratelab serve --lim => --limiter --limit
ratelab serve --limiter g => gcra
ratelab serve --limiter => --limiter
ratelab serve --store-failure c => closed
ratelab hammer --policy na => naive
ratelab hammer --backoff dec => decorrelated
ratelab herd --policies decor => decorrelated
ratelab verify --scenario post => post-503 post-429
ratelab storm --pol => --policies
ratelab hammer --json res => results.json
ratelab serve --port  => 
ratelab serve --quiet --por => --port
WANT
if ! cmp -s "$TMP/want" "$TMP/got"; then
	bad "bash completion differs:"
	diff "$TMP/want" "$TMP/got"
fi
[ -s "$TMP/err" ] && bad "bash completion wrote to stderr: $(cat "$TMP/err")"

# zsh: a real interactive zsh in a pseudo-terminal (zsh/zpty) loads the script through
# compinit, Tab is pressed after each line, and compadd reports what it offers; the
# line after the Tab prints a marker, so the read waits for it instead of for a clock;
# nothing is typed before zle is reading (its bracketed-paste switch, 2004h, is out).
cat > "$TMP/capture.zsh" <<'ZSH'
zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "PROMPT= ; fpath=($1 \$fpath); autoload -U compinit; compinit -u -D"
zpty -w z 'compadd () { local h; builtin compadd -O __hits "$@"; for h in $__hits; do print -r -- "<<$h>>"; done; builtin compadd "$@" }'
zpty -w z 'bindkey "^I" complete-word'
zpty -w z "print __REA''DY__"
zpty -r z line '*__READY__*'
zpty -r z line '*2004h*'
zpty -w -n z "$2"$'\t'$'\C-u'"print __DO''NE__"$'\n'
zpty -r z out '*__DONE__*'
print -r -- "$out"
zpty -d z
ZSH
zcomplete() {
	timeout 20 zsh "$TMP/capture.zsh" "$TMP/zfunc" "$1" | grep -ao '<<[^>]*>>' | sed 's/^<<//; s/>>$//' |
		LC_ALL=C sort -u | tr '\n' ' ' | sed 's/ $//'
}
if command -v zsh > /dev/null 2>&1; then
	zsh -n "$TMP/_ratelab" || bad "zsh completion does not parse"
	mkdir -p "$TMP/zfunc" && cp "$TMP/_ratelab" "$TMP/zfunc/"
	for c in "ratelab ser|serve" "ratelab serve --lim|--limit --limiter" "ratelab serve --limiter g|gcra" \
		"ratelab hammer --policy na|naive" "ratelab serve --store-failure c|closed"; do
		got=$(zcomplete "${c%%|*}")
		[ "$got" = "${c#*|}" ] || bad "zsh completes '${c%%|*}' to '$got', not '${c#*|}'"
	done
else
	bad "zsh is not installed (scripts/install-deps installs it)"
fi
head -n 1 "$TMP/_ratelab" | grep -qx '#compdef ratelab' || bad "the zsh script does not start with #compdef ratelab"
grep -q "'\*--limiter=:limiter:(token-bucket .* gcra .*)'" "$TMP/_ratelab" || bad "zsh: serve --limiter lacks its limiters"
grep -q "'\*--policy=:policy:(none lab .* naive sre-adaptive)'" "$TMP/_ratelab" || bad "zsh: hammer --policy lacks its presets"
grep -q "'serve:run the rate-limited lab server'" "$TMP/_ratelab" || bad "zsh: the serve command lacks its summary"
echo "completion: $fail failures"
[ "$fail" -eq 0 ]
