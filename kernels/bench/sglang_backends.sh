#!/usr/bin/env bash
# Developer machine: put the FlashInfer MLA backends of a few real SGLang releases, as released and as
# kvpatch patches them, where the GPU tests read them (the GPU machine has no network and no kvpatch):
#   .cache/sglang-backends/<version>/flashinfer_mla_backend.py                       as released
#   .cache/sglang-backends/<version>/kvpatch-applied/flashinfer_mla_backend.py       after `kvpatch apply`
#   .cache/sglang-backends/<version>/kvpatch-applied-FORM/flashinfer_mla_backend.py  the same with
#                                                   --kv-dtype-form FORM, for FORM upstream and sm90
# Both are git-ignored; carry `.cache/sglang-backends` (a few hundred KB) to the GPU machine.
# Wheels come from .cache/sglang/ (the real-SGLang tests' cache), else from PyPI with pip download.
# The patch targets the FlashInfer release the GPU tests load (FI_VERSION, default 0.7.4: what
# kernels/bench/flashinfer_wheels.sh fetches).
#
# Usage (repo root, after a build with the patcher): bash kernels/bench/sglang_backends.sh [VERSION...]
#   default versions: 0.4.6 0.4.9 0.5.23 (the graph-replay test's), and 0.5.16 to 0.5.23 (every release
#   kvpatch patches with its own FlashInfer pin; the real-release backend test's)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
kvpatch=${KVPATCH:-$root/build/patcher/kvpatch}
fi_version=${FI_VERSION:-0.7.4}
[[ -x "$kvpatch" ]] || { echo "sglang_backends.sh: no kvpatch at $kvpatch (build it, or set KVPATCH)" >&2; exit 2; }
versions=("$@")
[[ ${#versions[@]} -gt 0 ]] || versions=(0.4.6 0.4.9 0.5.16 0.5.17 0.5.18 0.5.19 0.5.20 0.5.21 0.5.22 0.5.23)
backend=sglang/srt/layers/attention/flashinfer_mla_backend.py
mkdir -p "$root/.cache/sglang"
for v in "${versions[@]}"; do
  wheel=$(compgen -G "$root/.cache/sglang/sglang-$v-*.whl" | head -1 || true)
  if [[ -z "$wheel" ]]; then
    staging=$(mktemp -d "$root/.cache/sglang/.download-XXXXXX")
    python3 -m pip download -q --no-deps --only-binary=:all: -d "$staging" "sglang==$v"
    mv "$staging"/sglang-"$v"-*.whl "$root/.cache/sglang/"
    rmdir "$staging"
    wheel=$(compgen -G "$root/.cache/sglang/sglang-$v-*.whl" | head -1)
  fi
  dest="$root/.cache/sglang-backends/$v"
  mkdir -p "$dest"
  # Written beside, then renamed: a reader never sees half a file.
  python3 -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))' \
    "$wheel" "$backend" >"$dest/.flashinfer_mla_backend.py.tmp"
  mv "$dest/.flashinfer_mla_backend.py.tmp" "$dest/flashinfer_mla_backend.py"
  for form in original upstream sm90; do
    sub=kvpatch-applied$([[ $form == original ]] || echo "-$form")
    work=$(mktemp -d)
    cp "$dest/flashinfer_mla_backend.py" "$work/"
    set +e
    "$kvpatch" apply --isolated --flashinfer-version "$fi_version" --kv-dtype-form "$form" \
      "$work/flashinfer_mla_backend.py" >"$work/log" 2>&1
    rc=$?
    set -e
    rm -rf "${dest:?}/$sub"
    if [[ $rc -ne 0 ]]; then
      # Releases kvpatch does not patch (nothing to thread, or none of its edits apply) keep no patched copy.
      echo "sglang $v ($form form): as released only (kvpatch apply exited $rc: $(head -1 "$work/log"))"
    else
      mkdir -p "$dest/$sub"
      mv "$work/flashinfer_mla_backend.py" "$dest/$sub/flashinfer_mla_backend.py"
      echo "sglang $v ($form form): $sub ($(head -1 "$work/log"))"
    fi
    rm -rf "$work"
  done
done
