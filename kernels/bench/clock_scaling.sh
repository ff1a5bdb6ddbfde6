#!/usr/bin/env bash
# Is the FP8 decode kernel bound by the SM clock or by DRAM? Times one launch per shape under ncu
# twice: clocks left free, and locked to base clocks (ncu --clock-control base, which leaves the
# memory clock alone). If the duration scales with 1 / SM frequency, the kernel waits on its own
# instruction stream, not on memory. Prints ncu's duration, SM and DRAM frequency and throughputs.
# Usage (repo root, GPU machine): bash kernels/bench/clock_scaling.sh ["bench_decode.py shape args" ...]
# e.g. "--shapes b32_h16 --contexts 32768" "--shapes none --extra-shapes 33x16x32768"
set -uo pipefail
out="${OUT:-/tmp/kvpatch-out}"
mkdir -p "$out"
[[ $# -gt 0 ]] || set -- "--shapes b32_h16 --contexts 32768" "--shapes b1_h16 --contexts 131072"
cmake -S . -B build-gpu -G Ninja -DKVPATCH_PATCHER=OFF -DKVPATCH_CUDA=ON >"$out/clock_scaling.build.log" 2>&1 &&
  cmake --build build-gpu -j16 --target kvpatch_mla_capi >>"$out/clock_scaling.build.log" 2>&1 ||
  { tail -30 "$out/clock_scaling.build.log"; exit 1; }
for clocks in none base; do
  for shape in "$@"; do
    echo "== clocks $clocks: $shape"
    # The 4th decode launch is the FP8 kernel's first timed run (after the benchmark's 3 warm-ups).
    # shellcheck disable=SC2086  # the shape arguments split on purpose
    ncu --clock-control "$clocks" -k regex:mla_decode_kernel --launch-skip 3 --launch-count 1 --section SpeedOfLight \
      python3 kernels/bench/bench_decode.py --lib build-gpu/kernels/libkvpatch_mla_capi.so --out "$out/clock_scaling" \
      --iters 1 $shape 2>&1 |
      grep -E "SM Frequency|DRAM Frequency|^ +Duration|Memory Throughput|Compute \(SM\)" | tr -s ' ' | tr '\n' ';'
    echo
  done
done
