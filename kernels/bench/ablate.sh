#!/usr/bin/env bash
# Where the decode kernel's time goes, without hardware counters: builds the C-ABI library once per
# variant (by default normal, KV loads only, arithmetic only: KVPATCH_ABLATE in mla_decode_kernel.cuh)
# and times the FP8 kernel of each on the same shapes, in one process per variant.
# Usage (repo root, GPU machine): [ABLATE_VARIANTS="0 1 2 3 4"] bash kernels/bench/ablate.sh [bench_decode.py args...]
# (3: value warps alone, 4: score warps alone, each with the loads; 5-8: part of one or both warp
# groups' mma skipped or moved, see KVPATCH_ABLATE in the kernel; outputs are wrong on purpose).
set -uo pipefail
out="${OUT:-/tmp/kvpatch-out}"
mkdir -p "$out"
variants="${ABLATE_VARIANTS:-0 1 2}"
for variant in $variants; do
  build="build-ablate$variant"
  cmake -S . -B "$build" -G Ninja -DKVPATCH_PATCHER=OFF -DKVPATCH_CUDA=ON \
    -DCMAKE_CUDA_FLAGS="-DKVPATCH_ABLATE=$variant" >"$out/ablate$variant.build.log" 2>&1 &&
    cmake --build "$build" -j16 --target kvpatch_mla_capi >>"$out/ablate$variant.build.log" 2>&1 ||
    { tail -30 "$out/ablate$variant.build.log"; exit 1; }
done
labels=(full loads-only math-only "no-QK-softmax (loads + PV)" "no-PV (loads + QK + softmax)"
  "value warps skip 2 of 8 PV n-tiles" "those 2 n-tiles in the score warps" "score warps skip the rope mma"
  "value warps skip 2 PV n-tiles, score warps the rope mma")
for variant in $variants; do
  label=${labels[$variant]}
  echo "== $label"
  PYTHONUNBUFFERED=1 python3 kernels/bench/bench_decode.py --lib "build-ablate$variant/kernels/libkvpatch_mla_capi.so" \
    --out "$out/ablate$variant" "$@" 2>&1 | sed -E -f kernels/bench/brief.sed
done
