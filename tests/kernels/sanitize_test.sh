#!/usr/bin/env bash
# kernels.gpu_sanitize: compute-sanitizer's racecheck (shared-memory hazards across the mbarrier
# hand-offs between warp groups), synccheck (barrier misuse) and initcheck (reads of unwritten global
# memory) over the GPU test's --sanitize shapes, at the H200's pipeline depth and at SM120's. Each tool
# runs far slower than the test alone, hence the small set; memcheck runs over the whole small matrix
# in device_run.sh. Skipped (77) without a GPU or without compute-sanitizer.
# Usage: sanitize_test.sh TEST_BINARY [LOG_DIR]
set -uo pipefail
test_binary=$1
if [[ $# -ge 2 ]]; then
  logs=$2
  mkdir -p "$logs"
else
  logs=$(mktemp -d)
  trap 'rm -rf "$logs"' EXIT  # what matters of each log is printed below
fi
# On the PATH, else where the CUDA toolkit installs it by default.
sanitizer=$(command -v compute-sanitizer || true)
if [[ -z "$sanitizer" && -x /usr/local/cuda/bin/compute-sanitizer ]]; then sanitizer=/usr/local/cuda/bin/compute-sanitizer; fi
if [[ -z "$sanitizer" ]]; then echo "compute-sanitizer not found: skipped"; exit 77; fi
timeout 300 "$test_binary" --sanitize >"$logs/plain.log" 2>&1
plain=$?
if [[ $plain -eq 77 ]]; then echo "no CUDA device: skipped"; exit 77; fi
[[ $plain -eq 0 ]] || { echo "the --sanitize shapes fail without a sanitizer (exit $plain):"; tail -20 "$logs/plain.log"; exit 1; }
status=0
for depth in deep shallow; do
  depth_env=()
  [[ $depth == deep ]] || depth_env=(KVPATCH_SHALLOW_PIPELINE=1)
  for tool in racecheck synccheck initcheck; do
    log="$logs/sanitize_${tool}_$depth.log"
    # Each took under a minute on the H200; a kernel that deadlocks under the tool fails here (124), not later.
    env "${depth_env[@]}" timeout 600 "$sanitizer" --tool "$tool" --error-exitcode 9 "$test_binary" --sanitize \
      >"$log" 2>&1
    tool_status=$?
    [[ $tool_status -eq 0 ]] || status=1
    echo "$tool ($depth pipeline): exit $tool_status, $(grep -c 'parity=bit-exact' "$log") bit-exact runs;" \
      "$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | sort -u | tr '\n' ' ')"
    [[ $tool_status -eq 0 ]] || grep -m 20 -E '^========= (Error|Warning|Host API|Invalid|Uninitialized)' "$log"
  done
done
exit $status
