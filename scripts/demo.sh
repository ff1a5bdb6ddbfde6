#!/usr/bin/env bash
# The main job on a bundled example: set-up, then review and check the patch for a seed-era
# (generation B) backend whose decode and prefill plan() calls both miss kv_data_type.
# Usage: bash scripts/demo.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
setup_log=$(mktemp)
if ! bash "$root/scripts/setup.sh" "$root/build" >"$setup_log" 2>&1; then
  cat "$setup_log" >&2
  echo "demo: set-up failed (log above)" >&2
  exit 2
fi
rm -f "$setup_log"
kvpatch=$root/build/patcher/kvpatch
example=$root/fixtures/gen-b-unpatched

echo "== kvpatch check (before): every MLA plan() site and KV cast =="
"$kvpatch" check "$example" || true
echo
echo "== kvpatch diff: the edits, for review =="
"$kvpatch" diff "$example" || true
echo
echo "== kvpatch apply + check on a scratch copy: nothing missing afterwards =="
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cp -r "$example/." "$scratch/"
"$kvpatch" apply "$scratch"
"$kvpatch" check "$scratch"
