#!/usr/bin/env bash
# One full GPU-machine pass for the kernels: build (CUDA toolkit only), GPU tests, compute-sanitizer
# memcheck on the small matrix, sm_90a resource report, benchmark. Logs and results go to $OUT.
# Usage (repo root, on the GPU machine): bash kernels/bench/device_run.sh [tests|sanitize|python|bench|profile|quick|replay|all] [bench args...]
# sanitize = compute-sanitizer's racecheck, synccheck and initcheck over the test's --sanitize shapes, at
# both pipeline depths (each far slower than memcheck, which `tests` runs over the small matrix);
# python = the Python API's GPU tests alone (and its FlashInfer-interface wrapper's); quick = small GPU tests + ncu stall profile + benchmark; replay = the target shapes timed isolated, as GPU spans and
# as CUDA-graph replay (replay_decode.py; the bench args go to it).
set -uo pipefail
what="${1:-all}"; shift || true
out="${OUT:-/tmp/kvpatch-out}"
mkdir -p "$out"
build="build-gpu"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,memory.used --format=csv | tee "$out/gpu.txt"
cmake -S . -B "$build" -G Ninja -DKVPATCH_PATCHER=OFF -DKVPATCH_CUDA=ON >"$out/build.log" 2>&1 &&
  cmake --build "$build" -j16 --target kvpatch_gpu_decode_test kvpatch_mla_capi >>"$out/build.log" 2>&1 ||
  { tail -50 "$out/build.log"; exit 1; }
echo "build ok"
status=0
if [[ "$what" == quick ]]; then
  timeout 120 "$build/tests/kernels/kvpatch_gpu_decode_test" --small >"$out/gpu_test_small.log" 2>&1
  echo "small GPU tests exit: $?"; grep -c "parity=bit-exact" "$out/gpu_test_small.log"; grep FAIL "$out/gpu_test_small.log" | head
fi
if [[ "$what" == profile || "$what" == quick ]]; then
  # Stall reasons of one FP8 decode launch per shape (the 4th: after the benchmark's 3 warm-ups).
  for shape in "b32_h16 32768" "b1_h16 131072" "b32_h32 16384"; do
    read -r name ctx <<<"$shape"
    ncu --clock-control none -k regex:mla_decode_kernel --launch-skip 3 --launch-count 1 \
      --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy \
      --section MemoryWorkloadAnalysis --section LaunchStats \
      --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
      python3 kernels/bench/bench_decode.py --lib "$build/kernels/libkvpatch_mla_capi.so" --out /tmp/ncu-bench \
      --shapes "$name" --contexts "$ctx" --iters 1 >"$out/ncu_${name}_$ctx.txt" 2>&1
    echo "ncu $name $ctx: $?"
  done
fi
if [[ "$what" == tests || "$what" == all ]]; then
  "$build/tests/kernels/kvpatch_gpu_decode_test" 2>&1 | tee "$out/gpu_test.log" | grep -v "^small\|^matrix" | tail -20
  [[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
  grep -c "parity=bit-exact" "$out/gpu_test.log" | sed 's/^/bit-exact shape runs: /'
  # SM120's pipeline depth, run here (KVPATCH_SHALLOW_PIPELINE=1): the small matrix.
  KVPATCH_SHALLOW_PIPELINE=1 "$build/tests/kernels/kvpatch_gpu_decode_test" --small >"$out/gpu_test_shallow.log" 2>&1
  shallow_status=$?
  [[ $shallow_status -eq 0 ]] || status=1
  echo "SM120 depth, small matrix: exit $shallow_status, $(grep -c "parity=bit-exact" "$out/gpu_test_shallow.log") bit-exact runs"
  compute-sanitizer --tool memcheck --error-exitcode 9 "$build/tests/kernels/kvpatch_gpu_decode_test" --small \
    >"$out/memcheck.log" 2>&1
  echo "memcheck exit: $? ($(grep -c 'Invalid' "$out/memcheck.log") invalid accesses)"; tail -3 "$out/memcheck.log"
fi
# Not part of `all`: the six tool runs took 78 s on the H200, and `all` is near the GPU machine's 10-minute limit.
if [[ "$what" == sanitize ]]; then
  bash tests/kernels/sanitize_test.sh "$build/tests/kernels/kvpatch_gpu_decode_test" "$out" || status=1
fi
if [[ "$what" == tests || "$what" == all || "$what" == python ]]; then
  # The Python API (kernels/python/kvpatch_mla.py) as PyTorch callers use it.
  python3 tests/kernels/python_api_test.py --lib "$build/kernels/libkvpatch_mla_capi.so" 2>&1 |
    tee "$out/python_api_test.log" | tail -40
  [[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
  # FlashInfer's wrapper interface over it; compared with FlashInfer itself when flashinfer_env.sh
  # was sourced first.
  python3 tests/kernels/flashinfer_compat_test.py --lib "$build/kernels/libkvpatch_mla_capi.so" 2>&1 |
    tee "$out/flashinfer_compat_test.log" | tail -40
  [[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
  # The run() scales kvpatch adds, on FlashInfer's own wrapper (skipped, 77, without FlashInfer).
  python3 tests/kernels/flashinfer_run_scales_test.py 2>&1 | tee "$out/flashinfer_run_scales_test.log" | tail -20
  [[ ${PIPESTATUS[0]} -eq 0 || ${PIPESTATUS[0]} -eq 77 ]] || status=1
  # --kv-dtype-form sm90's patched code on FlashInfer's wrapper, on this SM90 GPU and reported as SM120.
  python3 tests/kernels/flashinfer_sm90_gate_test.py 2>&1 | tee "$out/flashinfer_sm90_gate_test.log" | tail -20
  [[ ${PIPESTATUS[0]} -eq 0 || ${PIPESTATUS[0]} -eq 77 ]] || status=1
  # SGLang's CUDA-graph replay plan on the FlashInfer-interface wrapper (carry .cache/sglang-backends).
  python3 tests/kernels/sglang_graph_replay_test.py --lib "$build/kernels/libkvpatch_mla_capi.so" 2>&1 |
    tee "$out/sglang_graph_replay_test.log" | tail -20
  [[ ${PIPESTATUS[0]} -eq 0 || ${PIPESTATUS[0]} -eq 77 ]] || status=1
  # Two SGLang releases' backends, as released and as kvpatch patched them (kernels/bench/sglang_backends.sh),
  # on FlashInfer's own wrapper and the patched decode on ours; then a 61-layer decode step timed each way.
  python3 tests/kernels/sglang_release_backend_test.py --lib "$build/kernels/libkvpatch_mla_capi.so" 2>&1 |
    tee "$out/sglang_release_backend_test.log" | tail -40
  test_status=${PIPESTATUS[0]}
  [[ $test_status -eq 0 || $test_status -eq 77 ]] || status=1
  if [[ $test_status -eq 0 ]]; then
    python3 kernels/bench/sglang_release_step.py --lib "$build/kernels/libkvpatch_mla_capi.so" --out "$out" 2>&1 |
      tee "$out/sglang_release_step.log" | tail -8
  fi
fi
if [[ "$what" == bench || "$what" == all || "$what" == quick ]]; then
  PYTHONUNBUFFERED=1 python3 kernels/bench/bench_decode.py --lib "$build/kernels/libkvpatch_mla_capi.so" \
    --out "$out" "$@" 2>&1 | tee "$out/bench.log" | tail -30
fi
if [[ "$what" == replay ]]; then
  PYTHONUNBUFFERED=1 python3 kernels/bench/replay_decode.py --lib "$build/kernels/libkvpatch_mla_capi.so" \
    --out "$out" "$@" 2>&1 | tee "$out/replay.log" | tail -60
  [[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
fi
# Few files travel back from the GPU machine (8 per call): bundle the profiles, then every log into
# one archive whose name sorts first, so the memcheck and SM120-depth logs come back too.
ls "$out"/ncu_*.txt >/dev/null 2>&1 && (cd "$out" && tar -czf ncu.tgz ncu_*.txt) && rm -f "$out"/ncu_*.txt
(cd "$out" && ls *.log >/dev/null 2>&1 && tar -czf 0-logs.tgz *.log)
exit $status
