#!/usr/bin/env bash
# Developer machine: fetch the FlashInfer wheels that bench_decode.py's fi_fp8 / fi_bf16 columns need
# into the git-ignored .whl/, for the GPU machine (no network there; at most 64 MiB travels per call,
# work tree included). Then, on the GPU machine: `source kernels/bench/flashinfer_env.sh`.
#
# Why 0.7.0.post1: the newest release whose wheel fits (33.7 MB; 0.7.1, 0.7.2, 0.7.2.post1 and 0.7.4 are
# 62-101 MB) and whose fa3 MLA path takes FP8 E4M3 KV with BF16 q on SM90. Of its requirements only
# apache-tvm-ffi is missing from the GPU image and needed: `import flashinfer` and the MLA wrapper
# load without nvidia-cutlass-dsl, nvidia-cudnn-frontend, cuda-tile, nccl4py or cuda-python.
#
# Optional: FI_PREBUILD_PYTHON=/path/to/python3.12-with-torch-2.11 also compiles the two fa3 MLA modules
# (BF16 q; FP8 and BF16 KV) for sm_90a with this machine's nvcc (13.0, as on the GPU machine) into
# .whl/flashinfer-aot/, which flashinfer_env.sh drops where flashinfer looks for AOT modules. That
# saves the ~1-2 min first-use JIT build on the GPU machine; if a prebuilt module fails to load,
# flashinfer falls back to JIT-building it there.
#
# Usage (repo root): bash kernels/bench/flashinfer_wheels.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dest="$root/.whl"
mkdir -p "$dest"

# name==version and sha256 of each wheel, as PyPI served them on 2026-11-29.
pins=(
  "flashinfer-python==0.7.0.post1 --hash=sha256:c7adf826568d61fc1b7d3aadd4cae387a35a138bfc08e2deca2f34ecfa280716"
  "apache-tvm-ffi==0.1.15.post2 --hash=sha256:059eed9bfc94bcd41650fb8eefde74040a1bc7e7b1a6f0a8ff897b02b118875b"
)
files=(
  "flashinfer_python-0.7.0.post1-py3-none-any.whl"
  "apache_tvm_ffi-0.1.15.post2-cp312-cp312-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl"
)

# Modules prebuilt for another flashinfer would be loaded as if they were this one's.
if [[ -d "$dest/flashinfer-aot" && "$(cat "$dest/flashinfer-aot/built-for" 2>/dev/null)" != "${files[0]}" ]]; then
  echo "removing .whl/flashinfer-aot (not built for ${files[0]})"; rm -rf "$dest/flashinfer-aot"
fi
# Two versions of one package in .whl/ would stop the GPU machine's install.
for f in "$dest"/flashinfer_python-*.whl "$dest"/apache_tvm_ffi-*.whl; do
  [[ -e "$f" ]] || continue
  keep=0; for w in "${files[@]}"; do [[ "$(basename "$f")" == "$w" ]] && keep=1; done
  [[ $keep == 1 ]] || { echo "removing other version $(basename "$f")"; rm -f "$f"; }
done

req=$(mktemp); trap 'rm -f "$req"' EXIT
printf '%s\n' "${pins[@]}" >"$req"
# The GPU machine's interpreter (CPython 3.12, x86-64, manylinux), whatever runs pip here.
python3 -m pip download -q --no-deps --require-hashes -r "$req" -d "$dest" \
  --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64

# pip checked the hashes of what it downloaded; check again what is on disk (a file kept from before).
for i in "${!files[@]}"; do
  want=${pins[$i]##*sha256:}
  got=$(sha256sum "$dest/${files[$i]}" | cut -d' ' -f1)
  [[ "$got" == "$want" ]] || { echo "sha256 mismatch: ${files[$i]}" >&2; rm -f "$dest/${files[$i]}"; exit 1; }
done

if [[ -n "${FI_PREBUILD_PYTHON:-}" ]]; then
  nvcc_bin="${CUDA_HOME:-/usr/local/cuda}/bin/nvcc"
  "$nvcc_bin" --version | grep -q "release 13.0" ||
    echo "warning: $nvcc_bin is not CUDA 13.0 (the GPU machine's toolkit and driver are 13.0)" >&2
  work=$(mktemp -d); trap 'rm -f "$req"; rm -rf "$work"' EXIT
  "$FI_PREBUILD_PYTHON" -m pip install -q --no-index --no-deps --no-compile --target "$work/site" \
    "${files[@]/#/$dest/}"
  rm -rf "$dest/flashinfer-aot"; mkdir -p "$dest/flashinfer-aot"
  # flashinfer's own JIT (its nvcc flags, -gencode sm_90a) in a throw-away cache; only the .so files are kept.
  PATH="$(dirname "$FI_PREBUILD_PYTHON"):$PATH" PYTHONPATH="$work/site" FLASHINFER_WORKSPACE_BASE="$work/ws" \
    FLASHINFER_CUDA_ARCH_LIST=9.0a CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}" \
    "$FI_PREBUILD_PYTHON" - "$dest/flashinfer-aot" <<'EOF'
import shutil, sys, time
from pathlib import Path
import torch
from flashinfer.jit import gen_batch_mla_module
for kv in (torch.float8_e4m3fn, torch.bfloat16):
    spec = gen_batch_mla_module("fa3", torch.bfloat16, kv, torch.bfloat16, torch.int32, 512, 64, False)
    t = time.time()
    spec.build()
    out = Path(sys.argv[1]) / spec.name
    out.mkdir()
    shutil.copy2(spec.jit_library_path, out / f"{spec.name}.so")
    print(f"prebuilt {spec.name} ({time.time() - t:.0f} s)")
EOF
  echo "${files[0]}" >"$dest/flashinfer-aot/built-for"
fi

ls -l "$dest"
echo "total $(du -cb "$dest" | tail -1 | cut -f1) bytes in .whl/ (the GPU machine takes at most 64 MiB per call, work tree included)"
