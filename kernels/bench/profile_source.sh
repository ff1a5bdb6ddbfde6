#!/usr/bin/env bash
# Source-level (SASS) profile of one FP8 decode launch: ncu's warp-state sampling per instruction,
# plus the scheduler and warp-state summaries. Writes $OUT/profile.tgz (sass.csv, details.txt).
# Usage (repo root, GPU machine): bash kernels/bench/profile_source.sh [LIB] [SHAPE] [CONTEXT]
# (LIB defaults to build-gpu's library, built here when it is missing).
set -uo pipefail
lib="${1:-build-gpu/kernels/libkvpatch_mla_capi.so}"
shape="${2:-b32_h16}"
ctx="${3:-32768}"
out="${OUT:-/tmp/kvpatch-out}"
work=$(mktemp -d)
mkdir -p "$out"
if [[ ! -f "$lib" ]]; then
  cmake -S . -B build-gpu -G Ninja -DKVPATCH_PATCHER=OFF -DKVPATCH_CUDA=ON >"$work/build.log" 2>&1 &&
    cmake --build build-gpu -j16 --target kvpatch_mla_capi >>"$work/build.log" 2>&1 || { tail -30 "$work/build.log"; exit 1; }
fi
ncu --clock-control none -k regex:mla_decode_kernel --launch-skip 3 --launch-count 1 \
  --section SourceCounters --section WarpStateStats --section SchedulerStats --section SpeedOfLight \
  --section MemoryWorkloadAnalysis_Tables -o "$work/prof" \
  python3 kernels/bench/bench_decode.py --lib "$lib" --out "$work/bench" --shapes "$shape" --contexts "$ctx" --iters 1 \
  >"$work/ncu.log" 2>&1
echo "ncu exit $?"
ncu -i "$work/prof.ncu-rep" --page source --print-source sass --csv >"$work/sass.csv" 2>&1
ncu -i "$work/prof.ncu-rep" --page details >"$work/details.txt" 2>&1
tar -C "$work" -czf "$out/profile.tgz" sass.csv details.txt ncu.log
grep -E "Duration|Issued Ipc|Eligible Warps|Active Warps Per|No Eligible|Stall" "$work/details.txt" | head -20
