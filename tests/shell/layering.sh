#!/bin/sh
# scripts/layering: passes on this tree, and names each include that points up in a tree that breaks a rule.
set -u
ROOT=${RATELAB_ROOT:-.}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
passes=0
failures=0

check() {
	if [ "$1" = ok ]; then passes=$((passes + 1)); else failures=$((failures + 1)); echo "FAIL: $2"; fi
}

out=$(sh "$ROOT/scripts/layering" "$ROOT" 2>&1); rc=$?
[ $rc -eq 0 ] && check ok || check bad "the tree itself: exit $rc: $out"

# One violation per rule: common -> server, server -> hammer, hammer -> server, hammer -> lab, common -> a library.
mkdir -p "$TMP/common" "$TMP/server" "$TMP/hammer" "$TMP/lab"
printf '#include "common/a.h"\n#include "server/s.h"\n' > "$TMP/common/a.c"
printf '#include "common/a.h"\n#include "hammer/h.h"\n' > "$TMP/server/s.c"
printf '#include "server/s.h"\n#include "lab/l.h"\n' > "$TMP/hammer/h.c"
printf '#include "server/s.h"\n#include "hammer/h.h"\n#include "common/a.h"\n' > "$TMP/lab/l.c"
printf '#include <curl/curl.h>\n' > "$TMP/common/b.c"
out=$(sh "$ROOT/scripts/layering" "$TMP" 2>&1); rc=$?
[ $rc -eq 1 ] && check ok || check bad "a broken tree exits $rc"
for want in "common/a.c:2: common/ must not include server/s.h" \
            "server/s.c:2: server/ must not include hammer/h.h" \
            "hammer/h.c:1: hammer/ must not include server/s.h" \
            "hammer/h.c:2: hammer/ must not include lab/l.h" \
            "common/b.c:1:#include <curl/curl.h>"; do
	case $out in
	*"$want"*) check ok ;;
	*) check bad "no line '$want' in: $out" ;;
	esac
done
# lab/ may use every layer below it.
case $out in
*lab/l.c*) check bad "lab/l.c was flagged: $out" ;;
*) check ok ;;
esac

# Inside server/: limit <- store <- http <- handlers, each kind of violation named; a cycle named.
T2=$TMP/inner
mkdir -p "$T2/server/limit" "$T2/server/store" "$T2/server/http" "$T2/server/handlers" "$T2/common"
printf '#include "server/limit/l.h"\n#include "server/store/s.h"\n' > "$T2/server/limit/l.c"
printf '#include "server/limit/l.h"\n#include "server/http/h.h"\n' > "$T2/server/store/s.c"
printf '#include "server/store/s.h"\n#include "server/handlers/x.h"\n' > "$T2/server/http/h.c"
printf '#include "server/http/h.h"\n#include "server/store/s.h"\n#include "server/limit/l.h"\n' > "$T2/server/handlers/x.c"
printf '#include "common/b.h"\n' > "$T2/common/a.h"
printf '#include "common/c.h"\n' > "$T2/common/b.h"
printf '#include "common/a.h"\n' > "$T2/common/c.h"
out=$(sh "$ROOT/scripts/layering" "$T2" 2>&1); rc=$?
[ $rc -eq 1 ] && check ok || check bad "a tree with inner violations exits $rc"
for want in "server/limit/l.c:2: server/limit/ must not include server/store/s.h" \
            "server/store/s.c:2: server/store/ must not include server/http/h.h" \
            "server/http/h.c:2: server/http/ must not include server/handlers/x.h" \
            "include cycle between: "; do
	case $out in
	*"$want"*) check ok ;;
	*) check bad "no line '$want' in: $out" ;;
	esac
done
# the cycle names its three files, and handlers/ may use every layer below it
for f in common/a.h common/b.h common/c.h; do
	case $out in
	*"include cycle between: "*"$f"*) check ok ;;
	*) check bad "the cycle does not name $f: $out" ;;
	esac
done
case $out in
*handlers/x.c*) check bad "handlers/x.c was flagged: $out" ;;
*) check ok ;;
esac
# no cycle, no violation: passes
rm "$T2/common/c.h" "$T2/server/limit/l.c" "$T2/server/store/s.c" "$T2/server/http/h.c"
out=$(sh "$ROOT/scripts/layering" "$T2" 2>&1); rc=$?
[ $rc -eq 0 ] && check ok || check bad "a clean inner tree exits $rc: $out"
echo "layering: $passes passed, $failures failed"
[ $failures -eq 0 ]
