#!/bin/sh
# scripts/sources (make sources): passes on this tree; in a tree with an unlisted .c or a listed
# file that is missing, fails naming it.
set -u
ROOT=${RATELAB_ROOT:-.}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. "$ROOT/tests/harness/check.sh"

has() { grep -qF -- "$1" "$TMP/out"; }

check "the tree's own sources are all listed" sh -c "cd '$ROOT' && make -s sources"
mkdir -p "$TMP/common" "$TMP/server/http" "$TMP/lab"
touch "$TMP/common/a.c" "$TMP/server/http/new.c" "$TMP/lab/l.c"
SOURCES_ROOT=$TMP sh "$ROOT/scripts/sources" common/a.c lab/l.c >"$TMP/out" 2>&1
check "an unlisted .c fails" test $? -eq 1
check "it is named, with the list to add it to" has "sources: server/http/new.c is not listed in the Makefile: add it to SERVER_SRC"
SOURCES_ROOT=$TMP sh "$ROOT/scripts/sources" common/a.c lab/l.c server/http/new.c hammer/gone.c >"$TMP/out" 2>&1
check "a listed file that is missing fails" test $? -eq 1
check "it is named" has "sources: the Makefile lists hammer/gone.c, which does not exist"
SOURCES_ROOT=$TMP sh "$ROOT/scripts/sources" common/a.c lab/l.c server/http/new.c >"$TMP/out" 2>&1
check "every .c listed passes" test $? -eq 0
check_done sources
