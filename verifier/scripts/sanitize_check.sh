#!/usr/bin/env bash
# On a GPU machine: kvverify's own GPU code (input generation, the cast, the naive reference, device
# buffers and the out-of-memory path) and the kernel it launches, under compute-sanitizer: memcheck
# and initcheck over the three preset matrices, the self-test, a custom model and a shape too large
# for the device; racecheck and synccheck over a small matrix and the naive reference's own test.
# Usage: bash verifier/scripts/sanitize_check.sh OUT_DIR   (exit 1 when any tool reports an error)
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${1:?usage: sanitize_check.sh OUT_DIR}
build=$root/build-gpu
mkdir -p "$out"
cmake -S "$root" -B "$build" -G Ninja -DKVPATCH_PATCHER=OFF -DKVPATCH_CUDA=ON -DCMAKE_BUILD_TYPE=Release >"$out/build.log" 2>&1 &&
  cmake --build "$build" -j "$(nproc)" --target kvverify verifier_gpu_reference_test >>"$out/build.log" 2>&1 ||
  { tail -40 "$out/build.log"; exit 1; }
kvverify=$build/verifier/kvverify
reference_test=$build/tests/verifier/verifier_gpu_reference_test
status=0
# NAME TOOL EXPECTED_EXIT COMMAND...: the tool's error exit is 9, so a kvverify exit 1 (a skipped shape)
# stays apart from a sanitizer report.
check() {
  local name=$1 tool=$2 expected=$3; shift 3
  local log=$out/$tool-$name.log start
  start=$(date +%s)
  timeout 300 compute-sanitizer --tool "$tool" --error-exitcode 9 "$@" >"$log" 2>&1
  local rc=$?
  [[ $rc -eq $expected ]] || status=1
  echo "$tool $name: exit $rc (expected $expected), $(($(date +%s) - start)) s;" \
    "$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | sort -u | tr '\n' ' ')$(grep -E '^summary' "$log" | tr '\n' ' ')"
}
for tool in memcheck initcheck; do
  for preset in glm-5 kimi-k2 deepseek-v3; do check "$preset" "$tool" 0 "$kvverify" --preset "$preset" --timing-iters 1; done
  check self-test "$tool" 0 "$kvverify" --self-test
done
check custom memcheck 0 "$kvverify" --heads 48 --tp 1,3 --batch-sizes 3,32 --context-lengths 1,777,20000 \
  --page-sizes 1,16 --timing-iters 0
check too-large memcheck 1 "$kvverify" --tp 8 --batch-sizes 1,4096 --context-lengths 262144 --page-sizes 64 --timing-iters 0
check gpu-reference-test memcheck 0 "$reference_test"
small=(--heads 48 --tp 3 --batch-sizes 3 --context-lengths '1,777' --page-sizes '1,16' --timing-iters 0)
check small racecheck 0 "$kvverify" "${small[@]}"
check small synccheck 0 "$kvverify" "${small[@]}"
check gpu-reference-test racecheck 0 "$reference_test"
exit $status
