#!/usr/bin/env bash
# On a GPU machine (CUDA toolkit, CMake, ninja; no -dev packages): build kvverify, run its GPU tests,
# time the three preset matrices and the self-test. Usage: bash verifier/scripts/gpu_check.sh OUT_DIR
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${1:?usage: gpu_check.sh OUT_DIR}
build=$root/build-gpu
mkdir -p "$out"
log=$out/run.log
exec > >(tee -a "$log") 2>&1

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
cmake -S "$root" -B "$build" -G Ninja -DKVPATCH_PATCHER=OFF -DKVPATCH_CUDA=ON -DCMAKE_BUILD_TYPE=Release >"$out/build.log" 2>&1 &&
  cmake --build "$build" -j "$(nproc)" --target kvverify verifier_gpu_reference_test >>"$out/build.log" 2>&1 ||
  { tail -40 "$out/build.log"; exit 1; }

(cd "$build" && ctest -R 'verifier\.(gpu|no_gpu)' --output-on-failure)
status=$?
for preset in glm-5 kimi-k2 deepseek-v3; do
  echo "== kvverify --preset $preset"
  start=$(date +%s%N)
  "$build/verifier/kvverify" --preset "$preset" --json "$out/preset-$preset.json" || status=1
  echo "== wall time --preset $preset: $(( ($(date +%s%N) - start) / 1000000 )) ms"
done
echo "== kvverify --self-test"
"$build/verifier/kvverify" --self-test --json "$out/self-test.json" || status=1
echo "== non-unit scales, a custom model, the BF16-KV pair from a report"
"$build/verifier/kvverify" --preset glm-5 --tp 8 --ckv-scale 0.5 --kpe-scale 2 --timing-iters 0 || status=1
"$build/verifier/kvverify" --heads 48 --tp 1,3 --batch-sizes 3,32 --context-lengths 1,777,20000 --page-sizes 1,16 \
  --timing-iters 0 || status=1
echo "== expected exit 1: an unsupported report, and a shape too large for the device (skipped, run goes on)"
"$build/verifier/kvverify" --tp 8 --from "$root/tests/verifier/data/check_report_unsupported.json"
echo "exit $? (expected 1)"
"$build/verifier/kvverify" --tp 8 --batch-sizes 1,4096 --context-lengths 262144 --page-sizes 64 --timing-iters 0
echo "exit $? (expected 1)"
exit $status
