#!/usr/bin/env bash
# One full GPU-machine pass for the kernels: build (CUDA toolkit only), GPU tests, compute-sanitizer
# memcheck on the small matrix, sm_90a resource report, benchmark. Logs and results go to $OUT.
# Usage (repo root, on the GPU machine): bash kernels/bench/device_run.sh [tests|bench|all] [bench args...]
set -uo pipefail
what="${1:-all}"; shift || true
out="${OUT:-/tmp/kvpatch-out}"
mkdir -p "$out"
build=build-gpu
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,memory.used --format=csv | tee "$out/gpu.txt"
cmake -S . -B "$build" -G Ninja -DKVPATCH_PATCHER=OFF -DKVPATCH_CUDA=ON >"$out/build.log" 2>&1 &&
  cmake --build "$build" -j16 --target kvpatch_gpu_decode_test kvpatch_mla_capi >>"$out/build.log" 2>&1 ||
  { tail -50 "$out/build.log"; exit 1; }
echo "build ok"
status=0
if [[ "$what" == tests || "$what" == all ]]; then
  "$build/tests/kernels/kvpatch_gpu_decode_test" 2>&1 | tee "$out/gpu_test.log" | grep -v "^small\|^matrix" | tail -20
  [[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
  grep -c "parity=bit-exact" "$out/gpu_test.log" | sed 's/^/bit-exact shape runs: /'
  compute-sanitizer --tool memcheck --error-exitcode 9 "$build/tests/kernels/kvpatch_gpu_decode_test" --small \
    >"$out/memcheck.log" 2>&1
  echo "memcheck exit: $? ($(grep -c 'Invalid' "$out/memcheck.log") invalid accesses)"; tail -3 "$out/memcheck.log"
fi
if [[ "$what" == bench || "$what" == all ]]; then
  PYTHONUNBUFFERED=1 python3 kernels/bench/bench_decode.py --lib "$build/kernels/libkvpatch_mla_capi.so" \
    --out "$out" "$@" 2>&1 | tee "$out/bench.log" | tail -30
fi
exit $status
