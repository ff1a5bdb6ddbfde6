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
exit $status
