#!/bin/sh
# Every file or folder of the tree that README.md and the lab guide name in backticks exists,
# so a move or a rename cannot leave the docs pointing at nothing.
set -u
ROOT=${RATELAB_ROOT:-.}
cd "$ROOT" || exit 1
checked=0
missing=0
for doc in README.md lab-guide/*.md; do
	for p in $(grep -o '`[^`]*`' "$doc" | tr -d '`' | tr ' ' '\n' |
	           grep -E '^(common|server|hammer|lab|tests|bench|scripts|lab-guide)/[A-Za-z0-9_./-]*$' |
	           sed 's/[.,:;)]*$//' | sort -u); do
		checked=$((checked + 1))
		if [ ! -e "$p" ]; then
			echo "FAIL: $doc names $p, which is not in the tree"
			missing=$((missing + 1))
		fi
	done
done
echo "doc_paths: $checked paths checked, $missing missing"
[ "$checked" -gt 10 ] || { echo "FAIL: only $checked paths found: the pattern broke"; exit 1; }
[ "$missing" -eq 0 ]
