#!/usr/bin/env bash
# Fetches the tree-sitter-python grammar sources from PyPI source distributions into .deps/.
#
# Debian bookworm's libtree-sitter 0.20.7 loads parsers of ABI 13-14. tree-sitter-python 0.23.6
# generates ABI 14 (0.25 generates 15, which that runtime refuses). Its sdist ships src/parser.c
# and src/scanner.c but not the tree_sitter/{parser,array,alloc,ts_assert}.h headers they include,
# and Debian's parser.h is too old for them, so those headers come from the matching py-tree-sitter
# 0.23.2 sdist (tree_sitter/core/lib/src). Both archives are pinned by sha256.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dest=$root/.deps/tree-sitter-python
stamp=$dest/.complete-0.23.6
[ -f "$stamp" ] && exit 0

grammar_sdist=tree_sitter_python-0.23.6.tar.gz
grammar_sha=354bfa0a2f9217431764a631516f85173e9711af2c13dbd796a8815acfe505d9
core_sdist=tree-sitter-0.23.2.tar.gz
core_sha=66bae8dd47f1fed7bdef816115146d3a41c39b5c482d7bad36d9ba1def088450

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m pip download -q --no-deps --no-binary :all: \
  tree-sitter-python==0.23.6 tree-sitter==0.23.2 -d "$work"
echo "$grammar_sha  $work/$grammar_sdist" | sha256sum -c --quiet -
echo "$core_sha  $work/$core_sdist" | sha256sum -c --quiet -

rm -rf "$dest"
mkdir -p "$dest/src/tree_sitter"
tar -xzf "$work/$grammar_sdist" -C "$work"
tar -xzf "$work/$core_sdist" -C "$work"
cp "$work"/tree_sitter_python-0.23.6/src/{parser.c,scanner.c} "$dest/src/"
cp "$work"/tree_sitter_python-0.23.6/LICENSE "$dest/LICENSE"
for h in parser.h array.h alloc.h ts_assert.h; do
  cp "$work/tree-sitter-0.23.2/tree_sitter/core/lib/src/$h" "$dest/src/tree_sitter/$h"
done
grep -q '#define LANGUAGE_VERSION 14' "$dest/src/parser.c" || { echo "fetch-grammar: expected parser ABI 14" >&2; exit 2; }
touch "$stamp"
