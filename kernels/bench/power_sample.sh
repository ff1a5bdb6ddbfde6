#!/usr/bin/env bash
# The SM clock, power draw and clock-event (throttle) reasons while the FP8 decode kernel runs back to
# back for a few seconds per shape: is the GPU at its power cap when the kernel runs below its
# maximum clock? Builds kernels/bench/timeline.cu (CUDA toolkit only) and samples nvidia-smi every
# 100 ms. Each shape first runs 15 single launches with the L2 flushed before each (the last one's
# CUDA-event time is printed, as the benchmark times), then ~4 s back to back.
# Usage (repo root, GPU machine): bash kernels/bench/power_sample.sh ["B H CTX" | read]...
# `read` runs timeline.cu's 256 MB read back to back instead (DRAM at full speed, little SM work).
set -euo pipefail
out="${OUT:-/tmp/kvpatch-out}"
mkdir -p "$out"
nvcc -std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a -DKVPATCH_TIMELINE -Ikernels/include -Ikernels/src \
  kernels/bench/timeline.cu -o /tmp/kvpatch_timeline
# Newer drivers call the reasons clocks_event_reasons, older ones clocks_throttle_reasons.
reasons=clocks_event_reasons
nvidia-smi --query-gpu=$reasons.active --format=csv >/dev/null 2>&1 || reasons=clocks_throttle_reasons
fields=timestamp,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu,$reasons.active
fields+=,$reasons.sw_power_cap,$reasons.hw_slowdown,$reasons.sw_thermal_slowdown
[[ $# -gt 0 ]] || set -- "32 16 32768" "1 16 131072" read
for shape in "$@"; do
  if [[ "$shape" == read ]]; then
    csv="$out/power_read.csv" b=1 h=16 ctx=1024 read_env=(KVPATCH_SUSTAIN_READ=1)
  else
    read -r b h ctx <<<"$shape"
    csv="$out/power_b${b}_h${h}_${ctx}.csv" read_env=()
  fi
  nvidia-smi --query-gpu="$fields" --format=csv,nounits -lms 100 >"$csv" &
  sampler=$!
  trap 'kill "$sampler" 2>/dev/null' EXIT  # no sampler left behind if the run fails
  env "${read_env[@]}" KVPATCH_SUSTAIN_S=4 /tmp/kvpatch_timeline "$b" "$h" "$ctx" 15 | grep -E "^B=|sustained"
  kill "$sampler"
  wait "$sampler" 2>/dev/null || true
  # The samples taken under load: power above half the limit. Median clock and power, and how many
  # samples name each reason as active.
  python3 - "$csv" "$reasons" <<'PY'
import csv, statistics, sys
reasons = sys.argv[2]
rows = list(csv.reader(open(sys.argv[1])))
head = [h.strip() for h in rows[0]]
data = [dict(zip(head, (v.strip() for v in r))) for r in rows[1:] if len(r) == len(head)]
col = lambda key: next(h for h in head if h.startswith(key))
limit = float(data[0][col("power.limit")])
busy = [d for d in data if float(d[col("power.draw")]) > limit / 2]
if not busy:
    sys.exit(f"{sys.argv[1]}: no sample above half the power limit")
med = lambda key: statistics.median(float(d[col(key)]) for d in busy)
clocks = sorted(float(d[col("clocks.current.sm")]) for d in busy)
print(f"  {len(busy)} loaded samples: SM clock median {med('clocks.current.sm'):.0f} MHz (min {clocks[0]:.0f}, "
      f"max {clocks[-1]:.0f}), power median {med('power.draw'):.0f} W of {limit:.0f} W, "
      f"temperature {med('temperature.gpu'):.0f} C")
for reason in ("sw_power_cap", "hw_slowdown", "sw_thermal_slowdown"):
    active = sum(d[col(f"{reasons}.{reason}")] == "Active" for d in busy)
    print(f"  {reason}: active in {active} of {len(busy)}")
PY
done
