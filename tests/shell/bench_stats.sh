#!/bin/sh
# bench/lib.sh's paired_stats: the per-round summary and verdict `make bench` prints for
# ratelab against nginx.  Exact text for fixed ratios, so a broken awk cannot hide.
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
echo "bench_stats: $pass passed"
