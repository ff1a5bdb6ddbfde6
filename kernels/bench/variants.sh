#!/usr/bin/env bash
# Side-by-side timing of compile-time variants of the decode kernel (experiments, not shipped
# code paths): builds the C-ABI library and the GPU test once per CUDA flag set, runs the small GPU
# tests on each (correctness and FP8/BF16 parity must hold for a variant to count), then times
# each on the same shapes. The first variant is timed again at the end to show run-to-run noise.
# Usage (repo root, GPU machine): bash kernels/bench/variants.sh "FLAGS_A" "FLAGS_B" ... -- [bench_decode.py args]
# A variant whose small tests fail or hang (a deadlocked kernel: 90 s; a small run takes ~10 s) is
# not timed. Everything printed also goes to $OUT/0-variants.txt, and the results and logs into
# $OUT/0-variants.tgz: the GPU machine returns 8 files per call, and a call that runs past its
# limit returns no stdout.
set -uo pipefail
out="${OUT:-/tmp/kvpatch-out}"
mkdir -p "$out"
exec > >(tee "$out/0-variants.txt") 2>&1
variants=()
while [[ $# -gt 0 && "$1" != "--" ]]; do variants+=("$1"); shift; done
[[ $# -gt 0 ]] && shift
for i in "${!variants[@]}"; do
  build="build-variant$i"
  { cmake -S . -B "$build" -G Ninja -DKVPATCH_PATCHER=OFF -DKVPATCH_CUDA=ON -DCMAKE_CUDA_FLAGS="${variants[$i]}" &&
    cmake --build "$build" -j16 --target kvpatch_mla_capi kvpatch_gpu_decode_test; } >"$out/variant$i.build.log" 2>&1 ||
    { tail -30 "$out/variant$i.build.log"; exit 1; }
done
timed=()
for i in "${!variants[@]}"; do
  timeout 90 "build-variant$i/tests/kernels/kvpatch_gpu_decode_test" --small >"$out/variant$i.small.log" 2>&1
  rc=$?
  echo "variant $i (${variants[$i]}): small GPU tests exit $rc$([[ $rc == 124 ]] && echo ' (hung)'), $(grep -c parity=bit-exact "$out/variant$i.small.log") bit-exact runs"
  grep FAIL "$out/variant$i.small.log" | head -3
  if [[ $rc == 0 ]]; then timed+=("$i"); else echo "variant $i is not timed"; fi
done
[[ ${#timed[@]} -gt 0 ]] && for i in "${timed[@]}" "${timed[0]}"; do
  echo "== variant $i: ${variants[$i]}"
  PYTHONUNBUFFERED=1 timeout 300 python3 kernels/bench/bench_decode.py --lib "build-variant$i/kernels/libkvpatch_mla_capi.so" \
    --out "$out/variant$i" "$@" 2>&1 | sed -E -f kernels/bench/brief.sed
done
(cd "$out" && tar -czf 0-variants.tgz variant*)
