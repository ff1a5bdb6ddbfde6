#!/usr/bin/env bash
# A/B timing of the working tree's decode kernel against another source tree of the project (for
# example `git archive <commit> CMakeLists.txt cmake kernels tests | tar -x -C ref`): builds both
# (CUDA toolkit only), runs the small GPU tests on the working tree, then times the two libraries in
# alternating processes (A B A B) on the same shapes, so drift shows as the A-A and B-B spread.
# Usage (repo root, GPU machine): bash kernels/bench/ab.sh REF_DIR -- [bench_decode.py args]
# Results: $OUT/ab-{a,b}-{1,2}/bench.* and the logs, all of them also in $OUT/0-ab.tgz; everything
# printed also in $OUT/0-ab.txt (a GPU call that runs past its limit returns no stdout). A working
# tree whose small tests fail or hang is not timed.
set -uo pipefail
ref="$1"; shift
[[ "${1:-}" == "--" ]] && shift
out="${OUT:-/tmp/kvpatch-out}"
mkdir -p "$out"
exec > >(tee "$out/0-ab.txt") 2>&1
for side in a b; do
  src=$([[ $side == a ]] && echo . || echo "$ref")
  { cmake -S "$src" -B "build-ab-$side" -G Ninja -DKVPATCH_PATCHER=OFF -DKVPATCH_CUDA=ON &&
    cmake --build "build-ab-$side" -j16 --target kvpatch_mla_capi kvpatch_gpu_decode_test; } >"$out/ab-$side.build.log" 2>&1 ||
    { tail -30 "$out/ab-$side.build.log"; exit 1; }
done
timeout 180 build-ab-a/tests/kernels/kvpatch_gpu_decode_test --small >"$out/ab-a.small.log" 2>&1
deep=$?
echo "A (working tree): small GPU tests exit $deep, $(grep -c parity=bit-exact "$out/ab-a.small.log") bit-exact runs"
grep FAIL "$out/ab-a.small.log" | head -5
KVPATCH_SHALLOW_PIPELINE=1 timeout 180 build-ab-a/tests/kernels/kvpatch_gpu_decode_test --small >"$out/ab-a.small-shallow.log" 2>&1
shallow=$?
echo "A with SM120's pipeline depth (KVPATCH_SHALLOW_PIPELINE=1): small GPU tests exit $shallow, $(grep -c parity=bit-exact "$out/ab-a.small-shallow.log") bit-exact runs"
grep FAIL "$out/ab-a.small-shallow.log" | head -5
if [[ $deep != 0 || $shallow != 0 ]]; then
  echo "A is not timed: its small GPU tests did not pass"
else
  for round in 1 2; do
    for side in a b; do
      echo "== $side (round $round)"
      PYTHONUNBUFFERED=1 timeout 300 python3 kernels/bench/bench_decode.py --lib "build-ab-$side/kernels/libkvpatch_mla_capi.so" \
        --out "$out/ab-$side-$round" "$@" 2>&1 | sed -E -f kernels/bench/brief.sed
    done
  done
fi
# Few files travel back from the GPU machine (8 per call, in name order): both sides' results and
# every log also in one archive whose name sorts first (without it, only side A's first results
# came back).
(cd "$out" && shopt -s nullglob && tar -czf 0-ab.tgz ab-*.log ab-[ab]-[12])
