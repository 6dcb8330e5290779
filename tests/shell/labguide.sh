#!/bin/sh
# The lab guide is tested: every command block of every chapter is run against
# the server the chapter starts, and the output the chapter shows under it is
# compared line by line with the real output.  The markers are described in
# lab-guide/README.md:
#
#   <!-- labguide: serve ARGS -->     (re)start `ratelab serve --port 0 ARGS`; $URL, $PORT
#   <!-- labguide: stop -->           stop the chapter's server
#   <!-- run: OPTIONS -->             the next ```sh block is run (exit N, noreset, ports P...)
#   <!-- output: RULES -->            tolerances for the shown output that follows
#   <!-- not run: REASON -->          the next block is not run, and why
#
# Usage: RATELAB_BIN=./ratelab sh tests/shell/labguide.sh [lab-guide/05-*.md ...]
#        sh tests/shell/labguide.sh --self-test     (the runner's own test, no server)
# With no chapter named, the self-test runs first, then every chapter.
# LABGUIDE_OUT=DIR keeps every block's real output there (to refresh a chapter).
# LABGUIDE_TIMEOUT=S limits one block (default 90 s).  Every block runs once.
# Prints one line per block and closes with "N passed, N failed"; exit 1 on a failure.
set -u

ROOT=${RATELAB_ROOT:-.}
BIN=${RATELAB_BIN:-$ROOT/ratelab}
case $BIN in /*) ;; *) BIN=$(pwd)/$BIN ;; esac
ROOT_ABS=$(cd "$ROOT" && pwd)
SELF=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
LIMIT=${LABGUIDE_TIMEOUT:-90}
TAB=$(printf '\t')
TMP=$(mktemp -d)
SPID=""
BPID=""
PASSED=0
FAILED=0

stop_server() {
	if [ -n "$SPID" ]; then
		kill "$SPID" 2>/dev/null
		wait "$SPID" 2>/dev/null
		SPID=""
	fi
}

# The live processes of process group $1, one "PID ARGS" a line.
group_members() {
	ps -eo pgid=,pid=,stat=,args= 2>/dev/null |
		awk -v g="$1" '$1 == g && $3 !~ /^Z/ { $1 = ""; $3 = ""; sub(/^ +/, ""); print }'
}

# Wait at most $2 tenths of a second for process group $1 to be empty.
group_gone() {
	n=0
	while kill -0 "-$1" 2>/dev/null && [ -n "$(group_members "$1")" ]; do
		[ $n -lt "$2" ] || return 1
		sleep 0.1
		n=$((n + 1))
	done
	return 0
}

stop_group() {
	kill -TERM "-$1" 2>/dev/null
	group_gone "$1" 20 || kill -KILL "-$1" 2>/dev/null
}

cleanup() {
	[ -n "$BPID" ] && stop_group "$BPID"
	stop_server
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- the chapter server

start_server() {
	stop_server
	: >"$TMP/serve.out"
	# shellcheck disable=SC2086
	(cd "$TMP/work" && exec "$BIN" serve --port 0 $1) </dev/null >"$TMP/serve.out" 2>"$TMP/serve.err" &
	SPID=$!
	URL=""
	n=0
	while [ $n -lt 200 ] && [ -z "$URL" ]; do   # at most 10 s
		URL=$(sed -n 's/^listening on //p' "$TMP/serve.out")
		[ -n "$URL" ] || sleep 0.05
		n=$((n + 1))
	done
	PORT=${URL##*:}
	export URL PORT
	[ -n "$URL" ]
}

# POST /reset to the chapter's server, if one runs; 1 when it did not answer 2xx.
reset_server() {
	[ -z "$SPID" ] && return 0
	"$BIN" hammer "$URL/reset" --method POST --requests 1 --concurrency 1 --quiet --expect 'ok>=1' \
		</dev/null >/dev/null 2>&1
}

# ---------------------------------------------------------------- reading a chapter

# Turn chapter $1 into a plan in $TMP/plan, one step a line, fields split by tabs:
#   S LINE ARGS                          start the chapter's server
#   X LINE                               stop it
#   R LINE OPTIONS SCRIPT SHOWN RULES END  run SCRIPT; compare with SHOWN ("-": no output)
#   B LINE SHOWN RULES END               compare the server's banner with SHOWN
#   E LINE MESSAGE                       the chapter is malformed there
# SHOWN holds "LINE<TAB>text" for each shown line; RULES "LINE<TAB>TOLERANCE<TAB>PATTERN".
extract() {
	awk -v dir="$TMP" -v OFS='\t' '
	function err(m) { print "E", NR, m }
	function flush() {
		if (rline) print "R", rline, ropts, rscript, rshown, rrules, rend
		rline = 0
	}
	function rule(r, at,   tol, k, i, each) {
		sub(/^[ \t]+/, "", r); sub(/[ \t]+$/, "", r)
		if (r == "") return
		tol = r; sub(/[ \t].*$/, "", tol)
		r = substr(r, length(tol) + 1); sub(/^[ \t]+/, "", r)
		k = split(tol, each, ",")
		for (i = 1; i <= k; i++) if (each[i] !~ /^(any|optional|[0-9.]+%|(±|\+-)[0-9.]+(us|ms|s)?)$/)
			err("bad tolerance \"" each[i] "\" (want any, optional, N%, or ±N with an optional us, ms or s)")
		if (k > 1 && gsub(/#/, "#", r) != k)
			err("the rule \"" tol " " r "\" has " k " tolerances for " gsub(/#/, "#", r) " numbers")
		print at "\t" tol "\t" r > rulesf
	}
	function await_fence(what) { expect = what; expect_at = NR }
	inrules {
		if ($0 ~ /^-->/) { inrules = 0; close(rulesf); next }
		rule($0, NR); next
	}
	infence {
		if ($0 ~ /^```/) {
			infence = 0
			if (fout != "") close(fout)
			if (ftype == "run" || (ftype == "shown" && owner == "run")) rend = NR
			if (ftype == "shown" && owner == "serve") print "B", bline, bshown, brules, NR
			after = (ftype == "run") ? "run" : (ftype == "serve") ? "serve" : ""
			next
		}
		if (ftype == "shown") print NR "\t" $0 > fout
		else if (ftype == "run") print > fout
		next
	}
	expect != "" && NF && $0 !~ /^```/ {
		err("the marker on line " expect_at " is not followed by a fenced block")
		expect = ""
	}
	/^<!-- labguide: serve/ {
		flush(); a = $0; sub(/^<!-- labguide: serve */, "", a); sub(/ *-->.*$/, "", a)
		print "S", NR, a; sline = NR; await_fence("serve"); after = ""; next
	}
	/^<!-- labguide: stop/ { flush(); print "X", NR; after = ""; next }
	/^<!-- run(:| -->)/ {
		flush(); o = $0; sub(/^<!-- run:? */, "", o); sub(/ *-->.*$/, "", o)
		rline = NR; ropts = (o == "") ? "-" : o; rshown = "-"; rrules = "-"; rend = 0
		n++; rscript = dir "/block" n ".sh"; printf "" > rscript; close(rscript)
		await_fence("run"); after = ""; next
	}
	/^<!-- not run:/ {
		flush(); why = $0; sub(/^<!-- not run: */, "", why); sub(/ *-->.*$/, "", why)
		if (why == "") err("say why the block is not run: <!-- not run: REASON -->")
		await_fence("skip"); after = ""; next
	}
	/^<!-- output/ {
		if (after == "") err("output rules with no command block above them")
		n++; rulesf = dir "/rules" n; printf "" > rulesf
		r = $0; sub(/^<!-- output:? */, "", r)
		if (r ~ /-->/) {
			sub(/ *-->.*$/, "", r); k = split(r, parts, ";")
			for (i = 1; i <= k; i++) rule(parts[i], NR)
			close(rulesf)
		} else inrules = 1
		pending_rules = rulesf; await_fence("output"); next
	}
	/^<!--/ && /labguide|run|output/ { err("unknown marker: " $0); next }
	/^```/ {
		info = $0; sub(/^```/, "", info); gsub(/[ \t]/, "", info)
		infence = 1; fout = ""; ftype = "skip"
		if (expect == "run") {
			if (info != "sh") err("a run marker must be followed by a ```sh block")
			ftype = "run"; fout = rscript
		} else if (expect == "serve") {
			ftype = "serve"
		} else if (expect == "skip") {
			ftype = "skip"
		} else if (info == "" && after != "") {
			n++; f = dir "/shown" n; printf "" > f
			ftype = "shown"; fout = f; owner = after
			r = (expect == "output") ? pending_rules : "-"
			if (after == "run") { rshown = f; rrules = r }
			else { bline = sline; bshown = f; brules = r }
		} else if (info == "") {
			err("output with no command block above it (or mark it <!-- not run: REASON -->)")
		} else if (info == "sh") {
			flush()
			err("a sh block that is not run: mark it <!-- run --> or <!-- not run: REASON -->")
		}
		if (expect == "output" && ftype != "shown") err("output rules not followed by shown output")
		if (ftype != "shown" && ftype != "run") flush()
		expect = ""
		next
	}
	END {
		if (infence) err("a fenced block is not closed")
		flush()
	}
	' "$1" >"$TMP/plan"
}

# ---------------------------------------------------------------- comparing output

# compare SHOWN RULES ACTUAL END: prints why the real output ACTUAL differs from
# the chapter's SHOWN lines under RULES, and exits 1; prints nothing when they agree.
compare() {
	awk -v shown="$1" -v rules="$2" -v actual="$3" -v endline="$4" '
	function norm(s) { gsub(/\r/, "", s); gsub(/[ \t]+/, " ", s); sub(/^ /, "", s); sub(/ $/, "", s); return s }
	# Cut s into text and number tokens (a number keeps its unit: 7.46s, 82us, 100ms).
	function tokens(s, tk, kd, ps, at,   n, pos, rest, st, len, tail, k) {
		n = 0; pos = 1
		for (k in at) delete at[k]
		while (pos <= length(s)) {
			rest = substr(s, pos)
			if (!match(rest, /[0-9]+(\.[0-9]+)?/)) { n++; tk[n] = rest; kd[n] = "t"; ps[n] = pos; break }
			st = RSTART; len = RLENGTH
			if (st > 1) { n++; tk[n] = substr(rest, 1, st - 1); kd[n] = "t"; ps[n] = pos }
			tail = substr(rest, st + len)
			if (match(tail, /^(us|ms|s)/) && substr(tail, RLENGTH + 1, 1) !~ /[A-Za-z0-9_]/) len += RLENGTH
			n++; tk[n] = substr(rest, st, len); kd[n] = "n"; ps[n] = pos + st - 1; at[ps[n]] = n
			pos += st - 1 + len
		}
		return n
	}
	function unit(t) { return match(t, /(us|ms|s)$/) ? substr(t, RSTART) : "" }
	function val(t,   u) {
		sub(/^(±|\+-)/, "", t); u = unit(t)
		return (t + 0) * (u == "us" ? 1e-6 : u == "ms" ? 1e-3 : 1)
	}
	function within(s, a, tol,   d, vs) {
		if (anynum || tol == "any") return 1
		if (tol == "") return s == a
		if ((unit(s) == "") != (unit(a) == "")) return 0
		vs = val(s); d = val(a) - vs; if (d < 0) d = -d; if (vs < 0) vs = -vs
		if (tol ~ /%$/) return d <= (tol + 0) / 100 * vs + 1e-9
		return d <= val(tol) + 1e-9
	}
	# Give the numbers of shown line s (tokens tk/kd/ps/at) their tolerances tl[].
	# Whether line s holds text p (at its start with first, at its end with last).
	function has(s, p, first, last) {
		if (first && last) return s == p
		if (first) return substr(s, 1, length(p)) == p
		if (last) return length(s) >= length(p) && substr(s, length(s) - length(p) + 1) == p
		return p == "" || index(s, p) > 0
	}
	# When several rules name a number, the longest pattern wins (the first of
	# equals).  Sets optional when an "optional" rule names the line.  A pattern
	# that starts with ^ or ends with $ names a line that starts or ends with it.
	function tolerances(s, n, tk, kd, ps, at, tl,   r, i, k, t, m, e, cur, caps, ok, c, nc, each, pat, first, last) {
		for (i = 1; i <= n; i++) { tl[i] = ""; tw[i] = -1 }
		optional = 0
		for (r = 1; r <= nr; r++) {
			pat = rpat[r]; first = sub(/^\^/, "", pat); last = sub(/\$$/, "", pat)
			if (index(pat, "#") == 0) {
				if (!has(s, pat, first, last)) continue
				used[r] = 1
				if (rtol[r] == "optional") { optional = 1; continue }
				for (i = 1; i <= n; i++) if (kd[i] == "n" && length(pat) > tw[i]) { tl[i] = rtol[r]; tw[i] = length(pat) }
				continue
			}
			k = split(pat, piece, "#")
			for (t = 1; t <= n; t++) {
				if (kd[t] != "n") continue
				e = ps[t] - length(piece[1])
				if (e < 1 || substr(s, e, length(piece[1])) != piece[1] || (first && e != 1)) continue
				ok = 1; cur = t; nc = 1; caps[1] = t
				for (m = 2; m <= k && ok; m++) {
					e = ps[cur] + length(tk[cur])
					if (substr(s, e, length(piece[m])) != piece[m]) ok = 0
					else if (m == k && last && e + length(piece[m]) != length(s) + 1) ok = 0
					else if (m < k) {
						cur = at[e + length(piece[m])]
						if (cur == "") ok = 0; else caps[++nc] = cur
					}
				}
				if (!ok) continue
				used[r] = 1
				if (rtol[r] == "optional") { optional = 1; break }
				m = split(rtol[r], each, ",")
				for (c = 1; c <= nc; c++) if (length(pat) > tw[caps[c]]) {
					tl[caps[c]] = each[m > 1 ? c : 1]; tw[caps[c]] = length(pat)
				}
			}
		}
	}
	# "" when real line a matches shown line s, else why not.  A shown line that
	# ends in "..." matches a real line that starts like it.
	function differs(s, a,   ns, na, i, prefix, last) {
		prefix = (s ~ / ?\.\.\.$/); if (prefix) { sub(/ ?\.\.\.$/, "", s) }
		ns = tokens(s, stk, skd, sps, sat); na = tokens(a, atk, akd, aps, aat)
		tolerances(s, ns, stk, skd, sps, sat, stl)
		for (i = 1; i <= ns && i <= na; i++) {
			last = prefix && i == ns
			if (skd[i] != akd[i]) return q(atk[i]) " where the chapter has " q(stk[i])
			if (skd[i] == "t") {
				if (last ? index(atk[i], stk[i]) != 1 : atk[i] != stk[i])
					return q(atk[i]) " where the chapter has " q(stk[i])
			} else if (!within(stk[i], atk[i], stl[i])) {
				if (stl[i] == "") return atk[i] " where the chapter has " stk[i] " (no tolerance)"
				if (val(stl[i]) == 0 && stl[i] !~ /%$/) return atk[i] " where the chapter has " stk[i] " (" stl[i] ")"
				return atk[i] " is outside " stk[i] " " (stl[i] ~ /%$/ ? "±" : "") stl[i]
			}
		}
		if (na < ns) return "the real line stops before " q(stk[na + 1])
		if (na > ns && !prefix) return "the real line goes on with " q(atk[ns + 1])
		return ""
	}
	function fail(line, m) { printf "%s\n%s\n", line, m; exit 1 }
	function q(t) { sub(/^ /, "", t); sub(/ $/, "", t); return "\"" t "\"" }
	BEGIN {
		if (rules != "-") while ((getline l < rules) > 0) {
			nr++; split(l, f, "\t"); rline[nr] = f[1]; rtol[nr] = f[2]; rpat[nr] = norm(f[3])
		}
		if (shown != "-") while ((getline l < shown) > 0) {
			t = index(l, "\t"); ns++; sl[ns] = substr(l, 1, t - 1); sx[ns] = substr(l, t + 1)
		}
		while ((getline l < actual) > 0) { na++; ax[na] = l }
		while (ns > 0 && norm(sx[ns]) == "") ns--
		while (na > 0 && norm(ax[na]) == "") na--
		j = 1
		for (i = 1; i <= ns; i++) {
			s = norm(sx[i])
			if (s == "...") {
				if (i == ns) { j = na + 1; break }
				for (; j <= na; j++) if (differs(norm(sx[i + 1]), norm(ax[j])) == "") break
				if (j > na) fail(sl[i + 1], "no real line after the ... matches it\n     want: " sx[i + 1])
				continue
			}
			why = (j > na) ? "the run printed nothing more" : differs(s, norm(ax[j]))
			if (why == "") { j++; continue }
			if (j <= na) why = "output differs: " why
			# An optional line is skipped when the real line is another line, not
			# when it is this line with a number out of tolerance.
			anynum = 1; other = (j > na) || differs(s, norm(ax[j])) != ""; anynum = 0
			differs(s, "")
			if (optional && other) continue
			fail(sl[i], why "\n     want: " sx[i] (j <= na ? "\n     got:  " ax[j] : ""))
		}
		if (j <= na) {
			if (ns == 0) fail(endline, "the run printed output that the chapter does not show\n     got:  " ax[j])
			fail(endline, "the run printed more than the chapter shows (a ... line elides)\n     got:  " ax[j])
		}
		for (r = 1; r <= nr; r++) if (!used[r])
			fail(rline[r], "the rule \"" rtol[r] " " rpat[r] "\" names no shown number")
	}
	'
}

# ---------------------------------------------------------------- running a block

# The free loopback ports the kernel gives $1 probe servers, one a line.
free_ports() {
	probes=""
	i=0
	while [ $i -lt "$1" ]; do
		: >"$TMP/probe$i"
		"$BIN" serve --port 0 --quiet </dev/null >"$TMP/probe$i" 2>/dev/null &
		probes="$probes $!"
		i=$((i + 1))
	done
	i=0
	while [ $i -lt "$1" ]; do
		n=0
		while [ $n -lt 200 ] && ! grep -q '^listening on' "$TMP/probe$i"; do sleep 0.05; n=$((n + 1)); done
		sed -n 's/^listening on .*://p' "$TMP/probe$i"
		i=$((i + 1))
	done
	for p in $probes; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
}

# Rewrite whole numbers of file $1 by the "FROM TO" pairs of file $2.
swap_numbers() {
	awk -v map="$2" '
	BEGIN { while ((getline l < map) > 0) { split(l, f, " "); to[f[1]] = f[2] } }
	{
		out = ""; s = $0
		while (match(s, /[0-9]+/)) {
			d = substr(s, RSTART, RLENGTH)
			out = out substr(s, 1, RSTART - 1) ((d in to) ? to[d] : d)
			s = substr(s, RSTART + RLENGTH)
		}
		print out s
	}' "$1"
}

# Parse the options of a run marker into WANT_EXIT, RESET and PORTS; OPT_ERR says
# what is wrong with them.
run_options() {
	WANT_EXIT=0
	RESET=1
	PORTS=""
	OPT_ERR=""
	next=""
	for o in $(echo "$1" | tr ';' ' '); do
		case $o in
		[0-9]*)
			case $next in
			exit) WANT_EXIT=$o; next="" ;;
			ports) PORTS="$PORTS $o" ;;
			*) OPT_ERR="a number with no option before it: '$o'" ;;
			esac
			continue ;;
		esac
		next=""
		case $o in
		-) ;;
		exit | ports) next=$o ;;
		noreset) RESET=0 ;;
		*) OPT_ERR="unknown run option '$o' (want exit N, noreset, ports P...)" ;;
		esac
	done
}

# Run script $1 in the work folder, in its own process group under the time limit;
# its output (stdout and stderr) goes to $2, with the ports of $3 (a map) swapped back.
# Sets STATUS, and LEFT to the processes it left running (which are then stopped).
exec_block() {
	(cd "$TMP/work" && exec timeout "$LIMIT" sh -e "$1") >"$TMP/raw" 2>&1 </dev/null &
	BPID=$!
	wait "$BPID"
	STATUS=$?
	LEFT=""
	group_gone "$BPID" 20 || LEFT=$(group_members "$BPID")
	if [ -s "$3" ]; then
		awk '{ print $2, $1 }' "$3" >"$TMP/unmap"
		swap_numbers "$TMP/raw" "$TMP/unmap" >"$2"
	else
		cp "$TMP/raw" "$2"
	fi
	[ -n "$LEFT" ] && stop_group "$BPID"
	BPID=""
}

pass() { PASSED=$((PASSED + 1)); echo "ok   $1"; }

fail() {   # fail WHERE WHY [OUTPUT]
	FAILED=$((FAILED + 1))
	echo "FAIL $1: $2"
	[ $# -gt 2 ] && [ -s "$3" ] && { echo "     the run printed:"; sed 's/^/     | /' "$3" | head -40; }
	return 0
}

# Map the ports of the run options to free ones in script $1; sets SCRIPT (the
# script to run) and fills $TMP/portmap; returns 1 when there are no free ports.
map_ports() {
	SCRIPT=$1
	: >"$TMP/portmap"
	[ -n "$PORTS" ] || return 0
	free_ports "$(echo $PORTS | wc -w)" >"$TMP/free"
	[ "$(grep -c . "$TMP/free")" = "$(echo $PORTS | wc -w)" ] || return 1
	echo $PORTS | tr ' ' '\n' | paste -d ' ' - "$TMP/free" >"$TMP/portmap"
	swap_numbers "$1" "$TMP/portmap" >"$TMP/mapped.sh"
	SCRIPT=$TMP/mapped.sh
}

# One run of a block: WHERE is empty when it passed, else the chapter line at fault,
# and WHY says what went wrong.
run_once() {   # run_once CHAPTER LINE SCRIPT SHOWN RULES END
	WHERE=$2
	map_ports "$3" || { WHY="no free ports for$PORTS"; return; }
	if [ "$RESET" = 1 ] && ! reset_server; then
		WHY="POST $URL/reset before the block failed (is the chapter's server still up?)"
		return
	fi
	exec_block "$SCRIPT" "$TMP/out" "$TMP/portmap"
	[ -n "${LABGUIDE_OUT:-}" ] && cp "$TMP/out" "$LABGUIDE_OUT/$(basename "$1" .md)-$2.txt"
	if [ "$STATUS" = 124 ]; then
		WHY="the block did not finish within ${LIMIT}s"
	elif [ -n "$LEFT" ]; then
		WHY="the block left processes running (stop what it starts): $(echo "$LEFT" | head -3 | tr '\n' ';')"
	elif [ "$STATUS" != "$WANT_EXIT" ]; then
		WHY="exit $STATUS, want $WANT_EXIT"
	elif why=$(compare "$4" "$5" "$TMP/out" "$6"); then
		WHERE=""
	else
		WHERE=$(echo "$why" | head -1)
		WHY=$(echo "$why" | sed 1d)
	fi
}

# Run a block once and compare its output.
run_block() {   # run_block CHAPTER LINE OPTIONS SCRIPT SHOWN RULES END
	run_options "$3"
	[ -z "$OPT_ERR" ] || { fail "$1:$2" "$OPT_ERR"; return; }
	run_once "$1" "$2" "$4" "$5" "$6" "$7"
	if [ -n "$WHERE" ]; then
		fail "$1:$WHERE" "$WHY" "$TMP/out"
	else
		pass "$1:$2"
	fi
}

check_banner() {   # check_banner CHAPTER LINE SHOWN RULES END
	if [ -z "$SPID" ]; then
		fail "$1:$2" "no server to compare the banner with"
	elif why=$(compare "$3" "$4" "$TMP/serve.out" "$5"); then
		pass "$1:$2 (banner)"
	else
		fail "$1:$(echo "$why" | head -1)" "$(echo "$why" | sed 1d)" "$TMP/serve.out"
	fi
}

# A fresh work folder: ./ratelab is the binary under test, tests/ and lab-guide/
# point into the source tree.
fresh_work() {
	rm -rf "$TMP/work"
	mkdir -p "$TMP/work"
	ln -s "$BIN" "$TMP/work/ratelab"
	ln -s "$ROOT_ABS/tests" "$TMP/work/tests"
	ln -s "$ROOT_ABS/lab-guide" "$TMP/work/lab-guide"
	ln -s "$ROOT_ABS/scripts" "$TMP/work/scripts"
}

run_chapter() {
	fresh_work
	extract "$1"
	while IFS="$TAB" read -r kind line a b c d e; do
		case $kind in
		S) start_server "$a" || fail "$1:$line" "serve $a did not start: $(head -3 "$TMP/serve.err")" ;;
		X) stop_server ;;
		R) run_block "$1" "$line" "$a" "$b" "$c" "$d" "$e" ;;
		B) check_banner "$1" "$line" "$a" "$b" "$c" ;;
		E) fail "$1:$line" "$a" ;;
		esac
	done <"$TMP/plan"
	stop_server
}

# ---------------------------------------------------------------- the runner's own test

# self_case NAME WANT CHAPTER-TEXT: run the runner on a one-chapter guide and check
# that its report holds the line WANT (a fixed string).
self_case() {
	mkdir -p "$TMP/self"
	printf '%s\n' "$3" >"$TMP/self/ch.md"
	(cd "$TMP/self" && RATELAB_BIN=$BIN LABGUIDE_TIMEOUT=${SELF_LIMIT:-90} \
		sh "$SELF" ch.md) >"$TMP/self/report" 2>&1
	if grep -qF -- "$2" "$TMP/self/report"; then
		pass "self-test: $1"
	else
		fail "self-test: $1" "no line '$2' in the report" "$TMP/self/report"
	fi
}

F='```'
self_test() {
	self_case "a matching block passes" "ok   ch.md:1" "<!-- run -->
${F}sh
printf '200  x5\n10 requests in 0.01s\n'
$F

$F
200  x5
10 requests in 0.01s
$F"
	self_case "a renamed line fails, naming the line, the expected and the real text" \
		'ch.md:8: output differs: "requets in" where the chapter has "requests in"' "<!-- run -->
${F}sh
printf '200  x5\n10 requets in 0.01s\n'
$F

$F
200  x5
10 requests in 0.01s
$F"
	self_case "the real line is quoted" "     got:  10 requets in 0.01s" "<!-- run -->
${F}sh
printf '10 requets in 0.01s\n'
$F

$F
10 requests in 0.01s
$F"
	self_case "a vanished line fails" "ch.md:8: the run printed nothing more" "<!-- run -->
${F}sh
printf '200  x5\n'
$F

$F
200  x5
429  x5
$F"
	self_case "a reordered line fails" 'ch.md:7: output differs: 429 where the chapter has 200 (no tolerance)' "<!-- run -->
${F}sh
printf '429  x5\n200  x5\n'
$F

$F
200  x5
429  x5
$F"
	self_case "an unshown extra line fails" "ch.md:8: the run printed more than the chapter shows" "<!-- run -->
${F}sh
printf '200  x5\nlatency p50 1ms\n'
$F

$F
200  x5
$F"
	self_case "a changed number fails without a tolerance" "8 where the chapter has 5 (no tolerance)" "<!-- run -->
${F}sh
echo '200  x8'
$F

$F
200  x5
$F"
	self_case "a number within its tolerance passes" "ok   ch.md:1" "<!-- run -->
${F}sh
printf '200  x6\n40 requests in 7.90s\nlatency p50 3ms\n'
$F

<!-- output
±1     200 x#
±0.5s  requests in #
any    latency
-->
$F
200  x5
40 requests in 7.46s
latency p50 82us
$F"
	self_case "a number outside its tolerance fails" "8.10s is outside 7.46s ±0.5s" "<!-- run -->
${F}sh
echo '40 requests in 8.10s'
$F

<!-- output: ±0.5s requests in # -->
$F
40 requests in 7.46s
$F"
	self_case "a percentage tolerance" "12.0 is outside 10.0 ±10%" "<!-- run -->
${F}sh
echo '12.0 calls/s'
$F

<!-- output: 10% # calls/s -->
$F
10.0 calls/s
$F"
	self_case "a tolerance covers only the numbers it names" "40 where the chapter has 41 (no tolerance)" "<!-- run -->
${F}sh
echo '40 requests in 7.90s'
$F

<!-- output: ±0.5s requests in # -->
$F
41 requests in 7.46s
$F"
	self_case "a tolerance per number of a table row" "ok   ch.md:1" "<!-- run -->
${F}sh
echo 'full  50  0  95  1.90  1.02s'
$F

<!-- output: ±0,±0,±5,±0.1,30% full # # # # # -->
$F
full  50  0  92  1.84  1.45s
$F"
	self_case "... and each number keeps its own" "53 where the chapter has 50 (±0)" "<!-- run -->
${F}sh
echo 'full  53  0  92  1.84  1.45s'
$F

<!-- output: ±0,±0,±5,±0.1,30% full # # # # # -->
$F
full  50  0  92  1.84  1.45s
$F"
	self_case "an optional line may be missing" "ok   ch.md:1" "<!-- run -->
${F}sh
printf '200  x40\n40 requests in 7.46s\n'
$F

<!-- output: ±1 200 x#; optional 429 x#; ±2 429 x# -->
$F
200  x39
429  x1
40 requests in 7.46s
$F"
	self_case "... but is checked when it is there" "4 is outside 1 ±2" "<!-- run -->
${F}sh
printf '200  x36\n429  x4\n40 requests in 7.46s\n'
$F

<!-- output: ±4 200 x#; optional 429 x#; ±2 429 x# -->
$F
200  x39
429  x1
40 requests in 7.46s
$F"
	self_case "^ and \$ anchor a pattern" "ok   ch.md:1" "<!-- run -->
${F}sh
printf 'c\n7310000\npeak 9 attempts per 100ms\n'
$F

<!-- output: any ^#\$ -->
$F
c
33310000
peak 9 attempts per 100ms
$F"
	self_case "... and a number that is not the whole line stays exact" "200ms where the chapter has 100ms" "<!-- run -->
${F}sh
printf '880\npeak 9 attempts per 200ms\n'
$F

<!-- output: any ^#\$ -->
$F
861
peak 9 attempts per 100ms
$F"
	self_case "the longest pattern wins" "2 is outside 5 ±1" "<!-- run -->
${F}sh
printf '200  x40\n  one/  200 x2\n'
$F

<!-- output: ±10 200 x#; ±1 one/ 200 x# -->
$F
200  x39
  one/  200 x5
$F"
	self_case "... elides lines, and a line ending in ... its tail" "ok   ch.md:1" "<!-- run -->
${F}sh
printf 'HTTP/1.1 429 Too Many Requests\r\nDate: Sun, 29 Nov 2026\r\nA: 1\r\nB: 2\r\nRetry-After: 1\r\n'
$F

$F
HTTP/1.1 429 Too Many Requests
Date: ...
...
Retry-After: 1
$F"
	self_case "a stale rule fails" 'ch.md:6: the rule "any latency" names no shown number' "<!-- run -->
${F}sh
echo '200  x5'
$F

<!-- output: any latency -->
$F
200  x5
$F"
	self_case "output not shown fails" "ch.md:4: the run printed output that the chapter does not show" "<!-- run -->
${F}sh
echo surprise
$F"
	self_case "the exit status is checked" "ch.md:1: exit 3, want 0" "<!-- run -->
${F}sh
exit 3
$F"
	self_case "exit N expects N" "ok   ch.md:1" "<!-- run: exit 3 -->
${F}sh
exit 3
$F"
	self_case "an unmarked sh block fails" "ch.md:1: a sh block that is not run" "${F}sh
echo hi
$F"
	self_case "a not-run block is skipped" "ok   ch.md:5" "<!-- not run: it builds the binary -->
${F}sh
make
$F
<!-- run -->
${F}sh
true
$F"
	self_case "ports are swapped for free ones, and back in the output" "ok   ch.md:1" "<!-- run: ports 8081 -->
${F}sh
./ratelab serve --port 8081 > /dev/null & s=\$!
until curl -sf -o /dev/null http://127.0.0.1:8081/healthz; do sleep 0.1; done
p=8081; q=808; [ \$p != \${q}1 ] && echo \"listened on 8081, really another port\"
kill \$s; wait \$s
$F

$F
listened on 8081, really another port
$F"
	SELF_LIMIT=1 self_case "a block has a time limit" "ch.md:1: the block did not finish within 1s" "<!-- run -->
${F}sh
sleep 30
$F"
	self_case "a process left running fails, and is stopped" "ch.md:1: the block left processes running" "<!-- run -->
${F}sh
sleep 60 &
$F"
}

# ---------------------------------------------------------------- main

if [ "${1:-}" = --self-test ]; then
	self_test
	set --
elif [ $# -eq 0 ]; then
	self_test
	set -- "$ROOT"/lab-guide/[0-9]*.md
fi
start=$(date +%s)
for ch in "$@"; do
	[ -f "$ch" ] || { fail "$ch" "no such chapter"; continue; }
	run_chapter "$ch"
done
echo "labguide: $PASSED passed, $FAILED failed in $(($(date +%s) - start))s"
[ "$FAILED" -eq 0 ] && [ "$PASSED" -gt 0 ]
