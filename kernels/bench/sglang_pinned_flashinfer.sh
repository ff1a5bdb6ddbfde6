#!/usr/bin/env bash
# Each SGLang release kvpatch patches, run on the FlashInfer release it pins (not only on the newest):
# tests/kernels/sglang_release_backend_test.py, as released and patched, over the pinned wheel.
#
#   bash kernels/bench/sglang_pinned_flashinfer.sh fetch [FLASHINFER...]  # developer machine: .whl/pinned/<v>/
#   bash kernels/bench/sglang_pinned_flashinfer.sh run                    # GPU machine: every carried <v>
#
# At most 64 MiB travels per GPU call, work tree included, so carry a few versions at a time:
# `.whl/pinned/ffi`, `.cache/sglang-backends` (kernels/bench/sglang_backends.sh) and some `.whl/pinned/<v>`.
# SGLang 0.5.22 and 0.5.23 pin FlashInfer 0.7.1 and 0.7.2, whose wheels (65-67 MB) do not fit as they are:
# their files travel as a .tar.xz (~25 MB; the wheels are pure Python, so unpacking them is installing
# them, as kernels/bench/flashinfer_wheels.sh does for 0.7.4). Packing takes a few minutes on 2 cores.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dest="$root/.whl/pinned"

# FlashInfer release -> the SGLang releases pinning it (tests/patcher/sglang/survey-2026-11-30.md), and
# the wheel's sha256 as PyPI served it on 2026-12-01.
declare -A releases=(
  [0.6.14]="0.5.16" [0.6.15.post1]="0.5.17" [0.6.17]="0.5.18" [0.6.18]="0.5.19,0.5.20,0.5.21"
  [0.7.1]="0.5.22" [0.7.2]="0.5.23"
)
declare -A hashes=(
  [0.6.14]=d124369346a3d48eac67e31c42f7a3c813bcc0abc10e2e36db413b7b3dfd97df
  [0.6.15.post1]=f2419fd2b77c2705816e8d0a31c784c6456b17f373f8494b5cfc3bdf434d5c44
  [0.6.17]=ab7ce3aec42faf2f6079aa840c2407ac00ecd277a0524cdb708a8ff4a64dad90
  [0.6.18]=d5d26edb48f8def0bf28b2c94415aef7f0754e2cd9e3cb3d6e7081262d068aad
  [0.7.1]=69302ed6e91314a85a4392324becc194594a782ba181646d25d5c305e1b7e8c4
  [0.7.2]=770550a0aa92b2f10e6c9a1f048dd43713f0f3bb6a12710186fcf8e4e9c99bd8
)
packed=(0.7.1 0.7.2)  # carried as the wheel's files in a .tar.xz

case "${1:-}" in
  fetch)
    shift
    versions=("$@")
    [[ ${#versions[@]} -gt 0 ]] || versions=(0.6.14 0.6.15.post1 0.6.17 0.6.18 0.7.1 0.7.2)
    for v in "${versions[@]}"; do
      [[ -n "${hashes[$v]:-}" ]] || { echo "no pin recorded for FlashInfer $v (one of: ${!hashes[*]})" >&2; exit 2; }
      # A packed copy replaces its wheel, so it is kept once made (its wheel was hash-checked then).
      [[ -f "$dest/$v/flashinfer_python-$v.tar.xz" ]] && { echo "FlashInfer $v: packed copy present"; continue; }
      mkdir -p "$dest/$v"
      printf 'flashinfer-python==%s --hash=sha256:%s\n' "$v" "${hashes[$v]}" >"$dest/$v/requirement.txt"
      python3 -m pip download -q --no-deps --only-binary=:all: --require-hashes -r "$dest/$v/requirement.txt" \
        -d "$dest/$v"
      rm "$dest/$v/requirement.txt"
      if [[ " ${packed[*]} " == *" $v "* ]]; then
        files=$(mktemp -d)
        python3 -m zipfile -e "$dest/$v/flashinfer_python-$v-py3-none-any.whl" "$files"
        [[ -z "$(compgen -G "$files/*.data")" ]] || { echo "FlashInfer $v's wheel has a .data folder" >&2; exit 1; }
        echo "packing FlashInfer $v's files into .whl/pinned/$v/flashinfer_python-$v.tar.xz (a few minutes)"
        XZ_OPT=-T2 tar -C "$files" -cJf "$dest/$v/.flashinfer_python-$v.tar.xz" .
        mv "$dest/$v/.flashinfer_python-$v.tar.xz" "$dest/$v/flashinfer_python-$v.tar.xz"
        rm -rf "$files" "$dest/$v/flashinfer_python-$v-py3-none-any.whl"
      fi
    done
    # Every one of them imports apache-tvm-ffi, which the GPU image lacks (flashinfer_wheels.sh pins it).
    if [[ -z "$(compgen -G "$dest/ffi/apache_tvm_ffi-*.whl")" ]]; then
      [[ -n "$(compgen -G "$root/.whl/apache_tvm_ffi-*.whl")" ]] || bash "$root/kernels/bench/flashinfer_wheels.sh"
      mkdir -p "$dest/ffi" && cp "$root"/.whl/apache_tvm_ffi-*.whl "$dest/ffi/"
    fi
    du -sh "$dest"/* ;;
  run)
    ffi=$(compgen -G "$dest/ffi/apache_tvm_ffi-*.whl" | head -1 || true)
    [[ -n "$ffi" ]] || { echo "no $dest/ffi/apache_tvm_ffi-*.whl: run '$0 fetch' first and carry .whl/pinned/ffi" >&2; exit 2; }
    rm -rf /tmp/fi-ffi && python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/fi-ffi "$ffi"
    export CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")}
    export FLASHINFER_CUDA_ARCH_LIST=9.0a MAX_JOBS=${MAX_JOBS:-16}
    status=0 ran=0
    for carried in "$dest"/*/flashinfer_python-*; do
      [[ -e "$carried" ]] || continue
      v=${carried##*/flashinfer_python-}; v=${v%%-py3*}; v=${v%.tar.xz}
      site=/tmp/fi-$v
      rm -rf "$site" && mkdir -p "$site"
      if [[ $carried == *.tar.xz ]]; then tar -xJf "$carried" -C "$site"
      else python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" "$carried"; fi
      echo "=== FlashInfer $v, SGLang ${releases[$v]}"
      PYTHONPATH=$site:/tmp/fi-ffi FLASHINFER_WORKSPACE_BASE=/tmp/fi-ws-$v \
        python3 -W ignore::DeprecationWarning "$root/tests/kernels/sglang_release_backend_test.py" \
        --cache "$root/.cache" --releases "${releases[$v]}" 2>&1 | grep -v "worst element" || status=1
      ran=$((ran + 1))
    done
    [[ $ran -gt 0 ]] || { echo "no .whl/pinned/<v>/flashinfer_python-* carried" >&2; exit 2; }
    exit $status ;;
  *) echo "usage: $0 fetch [FLASHINFER...] | run" >&2; exit 2 ;;
esac
