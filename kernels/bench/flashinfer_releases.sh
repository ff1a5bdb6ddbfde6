#!/usr/bin/env bash
# Which FlashInfer releases compute the plan kvpatch's patch makes (BF16 query x FP8 E4M3 KV MLA)?
#
#   bash kernels/bench/flashinfer_releases.sh fetch   # developer machine: wheels into .whl/releases/
#   bash kernels/bench/flashinfer_releases.sh run     # GPU machine, carrying .whl: one probe per release
#
# The answer decides where the patch is safe, and it is a property of the FlashInfer release a server
# runs, which SGLang pins (tests/patcher/sglang/survey-*.md has each release's pin). `run` installs each
# carried release into its own folder and runs flashinfer_fp8_kv_probe.py on it with the backend left to
# FlashInfer (fa3 on SM90) and with fa2 forced, the MLA path FlashInfer takes on every GPU other than SM90
# (so the fa2 line stands for SM120 as well). The releases run side by side (their JIT builds overlap).
# 0.7.4 comes from flashinfer_wheels.sh's .whl/flashinfer_python-0.7.4.tar.xz when present.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dest="$root/.whl/releases"

# The releases before FlashInfer's own FP8 check (0.6.14): the newest of them, and the newest 0.5
# (SGLang 0.5.6 and 0.5.7 pin 0.5.3); PyPI has wheels from 0.5.0 only (0.2.x to 0.4.x are sdists).
# sha256 as PyPI served them on 2026-11-30.
pins=(
  "flashinfer-python==0.5.3 --hash=sha256:b601293b72f9138bad173edc28df84b9f239a013be974e2e79d4ba98aeb38cf5"
  "flashinfer-python==0.6.13 --hash=sha256:239e6ddc3cbbaf0bee251861a8c7c69438b1171830d69ddfa133ddea4494850d"
)

case "${1:-}" in
  fetch)
    mkdir -p "$dest"
    for pin in "${pins[@]}"; do
      printf '%s\n' "$pin" >"$dest/requirement.txt"
      python3 -m pip download -q --no-deps --only-binary=:all: --require-hashes -r "$dest/requirement.txt" -d "$dest"
    done
    rm -f "$dest/requirement.txt"
    # apache-tvm-ffi (both releases import it) comes from flashinfer_wheels.sh.
    [[ -n "$(compgen -G "$root/.whl/apache_tvm_ffi-*.whl")" ]] || FI_VERSION=0.7.4 bash "$root/kernels/bench/flashinfer_wheels.sh"
    ls -la "$dest" ;;
  run)
    ffi=$(compgen -G "$root/.whl/apache_tvm_ffi-*.whl" | head -1)
    [[ -n "$ffi" ]] || { echo "no .whl/apache_tvm_ffi-*.whl: run '$0 fetch' here first and carry .whl" >&2; exit 2; }
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/fi-ffi "$ffi"
    sources=("$dest"/flashinfer_python-*.whl)
    [[ -f "$root/.whl/flashinfer_python-0.7.4.tar.xz" ]] && sources+=("$root/.whl/flashinfer_python-0.7.4.tar.xz")
    export CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")}
    export FLASHINFER_CUDA_ARCH_LIST=9.0a MAX_JOBS=${MAX_JOBS:-8}
    for src in "${sources[@]}"; do
      name=${src##*/}; version=${name#flashinfer_python-}; version=${version%%-py3*}; version=${version%.tar.xz}
      site=/tmp/fi-$version
      rm -rf "$site" && mkdir -p "$site"
      if [[ $src == *.tar.xz ]]; then tar -xJf "$src" -C "$site"
      else python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" "$src"; fi
      (
        export PYTHONPATH=$site:/tmp/fi-ffi FLASHINFER_WORKSPACE_BASE=/tmp/fi-ws-$version
        for backend in auto fa2; do
          python3 -W ignore::DeprecationWarning "$root/kernels/bench/flashinfer_fp8_kv_probe.py" --backend "$backend" 2>&1 | grep -v "^\s*$" || true
        done >"/tmp/fi-probe-$version.log"
        # fa2 is SM120's path: build it for sm_120a too. It cannot run here, so the verdict to read is
        # whether plan() got past the JIT build (a "no kernel image" error) or not (a compiler error).
        echo "fa2 built for sm_120a (FLASHINFER_CUDA_ARCH_LIST=12.0a; compile only on this GPU):" >>"/tmp/fi-probe-$version.log"
        FLASHINFER_CUDA_ARCH_LIST=12.0a FLASHINFER_WORKSPACE_BASE=/tmp/fi-ws-$version-sm120 \
          python3 -W ignore::DeprecationWarning "$root/kernels/bench/flashinfer_fp8_kv_probe.py" --backend fa2 2>&1 | grep -v "^\s*$" \
          >>"/tmp/fi-probe-$version.log" || true
      ) &
    done
    wait
    for log in /tmp/fi-probe-*.log; do cat "$log"; echo; done ;;
  *) echo "usage: $0 fetch|run" >&2; exit 2 ;;
esac
