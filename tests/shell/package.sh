#!/bin/sh
# Shipping, as a packager and a CI job meet it:
#  - `make install` honours PREFIX and DESTDIR (binary, man pages, completions) and
#    `make uninstall` leaves the tree as it found it, with DESTDIR and with PREFIX alone;
#  - `make deb` builds a .deb whose control file states its dependencies and whose
#    contents are the binary, the man pages and the completions; it installs with dpkg into
#    a fresh directory tree (dpkg --root, its own database: the real system is not
#    touched), the installed binary runs, and dpkg -r removes every file again.
set -u
ROOT=${RATELAB_ROOT:-.}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
MAKE_Q="make -s --no-print-directory -C $ROOT"

# 1. staged install: DESTDIR + PREFIX
mkdir -p "$TMP/stage"
(cd "$TMP/stage" && find . | sort) > "$TMP/before"
$MAKE_Q install DESTDIR="$TMP/stage" PREFIX=/opt/ratelab > "$TMP/out" 2>&1 || bad "make install DESTDIR exit $? ($(tail -n 3 "$TMP/out"))"
for f in bin/ratelab share/man/man1/ratelab.1 share/man/man1/ratelab-serve.1 share/man/man1/ratelab-verify.1 \
	share/bash-completion/completions/ratelab share/zsh/site-functions/_ratelab; do
	[ -f "$TMP/stage/opt/ratelab/$f" ] || bad "make install did not write PREFIX/$f"
done
"$TMP/stage/opt/ratelab/bin/ratelab" --version | head -n 1 | grep -q '^ratelab [0-9]' || bad "the installed binary does not run"
n=$(find "$TMP/stage" -type f | wc -l)
[ "$n" -eq 11 ] || bad "make install wrote $n files, not 11 (binary, 8 pages, 2 completions)"
$MAKE_Q uninstall DESTDIR="$TMP/stage" PREFIX=/opt/ratelab > "$TMP/out" 2>&1 || bad "make uninstall exit $?"
(cd "$TMP/stage" && find . | sort) > "$TMP/after"
cmp -s "$TMP/before" "$TMP/after" || bad "make uninstall (DESTDIR) left: $(comm -13 "$TMP/before" "$TMP/after" | tr '\n' ' ')"

# 2. PREFIX alone, into a prefix that exists
mkdir -p "$TMP/prefix"
$MAKE_Q install PREFIX="$TMP/prefix" > "$TMP/out" 2>&1 || bad "make install PREFIX exit $?"
PATH="$TMP/prefix/bin:$PATH" ratelab --version > /dev/null || bad "ratelab from PREFIX/bin does not run"
MANPATH="$TMP/prefix/share/man" man -w ratelab-hammer > /dev/null 2>&1 || bad "man does not find ratelab-hammer under PREFIX"
$MAKE_Q uninstall PREFIX="$TMP/prefix" > "$TMP/out" 2>&1 || bad "make uninstall PREFIX exit $?"
left=$(cd "$TMP/prefix" && find . -mindepth 1)
[ -z "$left" ] && [ -d "$TMP/prefix" ] || bad "make uninstall (PREFIX) left: $(echo $left) (or removed PREFIX)"

# 3. the .deb
$MAKE_Q deb > "$TMP/deb.out" 2>&1 || bad "make deb exit $? ($(tail -n 3 "$TMP/deb.out"))"
deb=$(sed -n 's/^package: //p' "$TMP/deb.out" | tail -n 1)
case $deb in /*) ;; *) deb=$ROOT/$deb ;; esac
[ -f "$deb" ] || { bad "make deb named no package ($(cat "$TMP/deb.out"))"; echo "package: $fail failures"; exit 1; }
dpkg-deb -I "$deb" > "$TMP/info" || bad "dpkg-deb -I exit $?"
grep -q '^ Package: ratelab$' "$TMP/info" || bad "control: no Package: ratelab"
version=$(sed -n 's/^#define RATELAB_VERSION "\(.*\)"$/\1/p' "$ROOT/common/version.h")
grep -q "^ Version: $version\$" "$TMP/info" || bad "control: no Version: $version"
for d in libmicrohttpd12 libcurl4 libjansson4 libhiredis libc6; do
	grep '^ Depends:' "$TMP/info" | grep -q "$d" || bad "control: Depends lacks $d ($(grep '^ Depends:' "$TMP/info"))"
done
dpkg-deb -c "$deb" | awk '{ print $NF }' > "$TMP/contents"
for f in ./usr/bin/ratelab ./usr/share/man/man1/ratelab.1.gz ./usr/share/man/man1/ratelab-serve.1.gz \
	./usr/share/man/man1/ratelab-merge.1.gz ./usr/share/bash-completion/completions/ratelab \
	./usr/share/zsh/site-functions/_ratelab; do
	grep -qx -- "$f" "$TMP/contents" || bad "the .deb lacks $f"
done
R=$TMP/root
mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates"
: > "$R/var/lib/dpkg/status"
# the libraries live in the real system, not in the fresh tree: their absence is expected
dpkg --root="$R" --force-depends --force-script-chrootless -i "$deb" > "$TMP/dpkg.out" 2>&1 ||
	bad "dpkg --root -i exit $? ($(tail -n 3 "$TMP/dpkg.out"))"
"$R/usr/bin/ratelab" --version > "$TMP/version" || bad "the installed ratelab --version exit $?"
head -n 1 "$TMP/version" | grep -qx "ratelab $version" || bad "the installed binary says '$(head -n 1 "$TMP/version")'"
"$R/usr/bin/ratelab" serve --limter gcra 2> "$TMP/err"
rc=$?
[ "$rc" -eq 2 ] && grep -q "did you mean --limiter" "$TMP/err" || bad "the installed binary: serve --limter exit $rc ($(cat "$TMP/err"))"
zcat "$R/usr/share/man/man1/ratelab-serve.1.gz" | grep -q '^\.SH EXIT STATUS' || bad "the installed ratelab-serve(1) has no EXIT STATUS"
dpkg --root="$R" --admindir="$R/var/lib/dpkg" -s ratelab 2> /dev/null | grep -q '^Status: install ok installed' ||
	bad "the fresh tree's dpkg database does not list ratelab as installed"
dpkg --root="$R" --force-script-chrootless -r ratelab > "$TMP/dpkg.out" 2>&1 || bad "dpkg --root -r exit $?"
left=$(cd "$R" && find . -mindepth 1 -not -path './var*')
[ -z "$left" ] || bad "dpkg -r left: $(echo $left)"
echo "package: $fail failures"
[ "$fail" -eq 0 ]
