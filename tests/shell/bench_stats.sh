#!/bin/sh
# bench/lib.sh's statistics: paired_stats (the per-round summary and verdict `make bench`
# prints for ratelab against nginx), print_best (a peer's row: best req/s, medians, flagged
# runs), paired's second line without flagged rounds, and the per-run evidence (wrk's socket
# errors, /stats answers).  Exact text for fixed inputs, so a broken awk cannot hide.
set -u

ROOT=${RATELAB_ROOT:-.}
. "$ROOT/bench/lib.sh"

pass=0
fail() {
	echo "FAIL: $*"
	exit 1
}

# $1: ratios, one per line; $2: the expected line
expect() {
	got=$(printf '%s' "$1" | paired_stats)
	[ "$got" = "$2" ] || fail "paired_stats on '$(echo $1)': got '$got', want '$2'"
	pass=$((pass + 1))
}

expect '1.10
1.20
1.15
' 'median 1.15x (1.10-1.20), ahead in 3 of 3 rounds; geomean 1.15x, 95% interval 1.03-1.28: ahead'
expect '0.80
0.85
0.90
0.82
' 'median 0.83x (0.80-0.90), ahead in 0 of 4 rounds; geomean 0.84x, 95% interval 0.78-0.91: behind'
expect '0.90
1.10
1.00
1.05
0.95
' 'median 1.00x (0.90-1.10), ahead in 3 of 5 rounds; geomean 1.00x, 95% interval 0.90-1.10: at parity'
expect '0.90
' 'median 0.90x (0.90-0.90), ahead in 0 of 1 rounds'
expect '' 'n/a'
# more rounds than the t table holds: the normal quantile
expect "$(for i in $(seq 20); do echo 1.02; echo 1.04; done)" \
	'median 1.03x (1.02-1.04), ahead in 40 of 40 rounds; geomean 1.03x, 95% interval 1.03-1.03: ahead'
# a cost (CPU, lateness): lower is better, so the words say which way it went
got=$(printf '0.80\n0.85\n0.90\n0.82\n' | paired_stats cost)
[ "$got" = 'median 0.83x (0.80-0.90), higher in 0 of 4 rounds; geomean 0.84x, 95% interval 0.78-0.91: lower' ] ||
	fail "paired_stats cost: got '$got'"
pass=$((pass + 1))
# print_best and paired read $TMP/res.NAME ("rps non2xx total cpu_us") and $TMP/info.NAME.
TMP=$(mktemp -d "${TMPDIR:-/tmp}/bench_stats.XXXXXX") || fail "mktemp"
trap 'rm -rf "$TMP"' EXIT
# $1: command; $2: the expected output
expect_out() {
	got=$(eval "$1")
	[ "$got" = "$2" ] || fail "$1: got
$got
want
$2"
	pass=$((pass + 1))
}
# Section 1 of 2026-12-02 00:25 in small: run 1 of ratelab's reject-most at 1.8x the others
# and half their CPU, answering what they answer (401 x 200, the rest 429).
printf '%s\n' '366978 1100531 1100934 2.7' '204003 611608 612010 5.0' '194790 583969 584370 5.1' \
	'206867 620200 620601 4.9' >"$TMP/res.rej"
printf '%s\n' 'none|200=401 429=1100533' 'none|200=402 429=611608' \
	'connect 0, read 3, write 0, timeout 0|-' '-' >"$TMP/info.rej"
printf '%s\n' '216629 649487 649888 4.4' '220816 662047 662448 4.5' '200146 600037 600438 4.6' \
	'207215 621244 621645 4.7' >"$TMP/res.ngx"
expect_out 'print_head peer' \
	"peer                                              req/s  non-2xx  2xx/run cpu us/rq    min  (each run's req/s, * flagged)"
expect_out 'print_best "ratelab reject" rej' \
	'ratelab reject                                   366978   99.93%      402       5.0   2.7*  (366978* 204003 194790 206867)
  * run 1: 1.79x the median req/s, 403 2xx, 99.96% non-2xx, cpu 2.7 us/rq; wrk socket errors: none; answers (/stats): 200=401 429=1100533'
# no info file (a client run), nothing flagged: the lowest CPU carries no mark
expect_out 'print_best nginx ngx' \
	'nginx                                            220816   99.94%      401       4.5    4.4  (216629 220816 200146 207215)'
expect_out 'print_best missing nothing' 'missing                                             n/a'
expect_out 'flags rej | tr "\n" " "' '1 0 0 0 '
expect_out 'med_cpu rej' '4.95'
expect_out 'paired rej ngx' \
	'median 0.99x (0.92-1.69), ahead in 1 of 4 rounds; geomean 1.11x, 95% interval 0.71-1.74: at parity
               without the rounds with a flagged run (1): median 0.97x (0.92-1.00), ahead in 0 of 3 rounds; geomean 0.96x, 95% interval 0.87-1.06: at parity'
expect_out 'paired_cost rej ngx' \
	'median 1.08x (0.61-1.11), higher in 3 of 4 rounds; geomean 0.94x, 95% interval 0.60-1.49: at parity'
# no flagged run: one line
expect_out 'paired ngx ngx' 'median 1.00x (1.00-1.00), ahead in 4 of 4 rounds; geomean 1.00x, 95% interval 1.00-1.00: at parity'
# a share 1 point off the others is flagged though its req/s is not (admit all answering 503s)
printf '%s\n' '100000 0 300000 5.0' '101000 0 303000 5.0' '99000 4000 297000 5.0' >"$TMP/res.adm"
expect_out 'flags adm | tr "\n" " "' '0 0 1 '
# faster at the same CPU per request: the machine was quieter, not another regime
printf '%s\n' '100000 0 300000 5.0' '101000 0 303000 5.1' '140000 0 420000 4.6' >"$TMP/res.quiet"
expect_out 'flags quiet | tr "\n" " "' '0 0 0 '
# a client's runs carry no server CPU: req/s alone decides
printf '%s\n' '100000 0 300000 -' '101000 0 303000 -' '140000 0 420000 -' >"$TMP/res.client"
expect_out 'flags client | tr "\n" " "' '0 0 1 '
# two runs: too few for a median to flag against
printf '%s\n' '100000 0 300000 5.0' '200000 0 600000 2.5' >"$TMP/res.two"
expect_out 'flags two | tr "\n" " "' '0 0 '
printf '  Socket errors: connect 0, read 12, write 0, timeout 3\nRequests/sec: 1.0\n' >"$TMP/wrk.err"
expect_out 'socket_errors "$TMP/wrk.err"' 'connect 0, read 12, write 0, timeout 3'
printf 'Requests/sec: 1.0\n' >"$TMP/wrk.ok"
expect_out 'socket_errors "$TMP/wrk.ok"' 'none'
# stats_delta reads /stats with jq (scripts/install-deps installs it; make check runs that first)
command -v jq >/dev/null 2>&1 || fail "jq is not installed: run make deps (scripts/install-deps)"
echo '{"status":{"200":10,"429":5},"refused":{"per_ip":0,"connection_limit":1}}' >"$TMP/s0"
echo '{"status":{"200":411,"429":630005,"503":2},"refused":{"per_ip":0,"connection_limit":4}}' \
	>"$TMP/s1"
expect_out 'stats_delta "$TMP/s0" "$TMP/s1"' '200=401 429=630000 503=2 refused=3'
: >"$TMP/empty"
expect_out 'stats_delta "$TMP/empty" "$TMP/s1"' '-'
echo '<html>429</html>' >"$TMP/html"
expect_out 'stats_delta "$TMP/html" "$TMP/s1"' '-'
echo "bench_stats: $pass passed"
