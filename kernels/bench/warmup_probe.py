#!/usr/bin/env python3
"""Why is replay_decode.py's first shape, timed alone, sometimes 20-33% slow (NOTES.md item 33)?
Starts as replay_decode.py starts a process (the copy reference, the timing floor, one shape's
inputs made by its ShapeInputs), then times that shape's FP8 and BF16 launches alone by CUDA events
in several rounds, printing each round's median, fastest and slowest iteration and the GPU's clocks,
power and P-state (nvidia-smi) after the round. Then keeps the GPU busy for --busy-s seconds
(back-to-back L2 flushes) and times two more rounds. A start-up transient shows as slow early rounds
and fast late ones; a slow first iteration only, as a high maximum with a normal median.
Usage: warmup_probe.py --lib build/kernels/libkvpatch_mla_capi.so --shape b1_h16:131072 [--rounds 4]
"""
import argparse
import statistics
import subprocess
import time

import bench_decode as bench
import torch
from replay_decode import ShapeInputs, replay_shapes, shape_key


def gpu_state():
    query = "clocks.sm,clocks.mem,power.draw,pstate,temperature.gpu"
    try:
        done = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
                              check=False, capture_output=True, text=True, timeout=20)
        return done.stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return f"nvidia-smi failed: {exc}"


def report(label, calls, flush, iters):
    parts = []
    for key, fn in calls.items():
        t = [ms * 1e3 for ms in bench.iteration_times(fn, flush, iters)]
        parts.append(f"{key} median {statistics.median(t):6.1f} min {min(t):6.1f} max {max(t):6.1f} "
                     f"first3 {'/'.join(f'{x:.1f}' for x in t[:3])}")
    print(f"{label:14s} " + " | ".join(parts) + f" | gpu: {gpu_state()}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--shape", required=True, help="NAME:CTX among replay_decode.py's shapes, e.g. b1_h16:131072")
    ap.add_argument("--iters", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--busy-s", type=float, default=2.0)
    args = ap.parse_args()
    print(f"process start | gpu: {gpu_state()}", flush=True)
    shapes = [s for s in replay_shapes(bench.SHAPES) if shape_key(s) == args.shape]
    if not shapes:
        ap.error(f"--shape {args.shape}: not a replay_decode.py shape")
    name, heads, lens = shapes[0]
    kv_api = bench.Kvpatch(args.lib)
    props = torch.cuda.get_device_properties(0)
    flush = bench.l2_flusher()
    copy_gbps, _ = bench.copy_bandwidth(bench.event_timer(flush, args.iters))
    tiny = torch.empty(1, dtype=torch.int32, device="cuda")
    floor_us = bench.time_variant(lambda: tiny.zero_(), flush, args.iters) * 1e3
    print(f"copy {copy_gbps / 1e9:.0f} GB/s, floor {floor_us:.2f} us | gpu: {gpu_state()}", flush=True)
    inputs = ShapeInputs(torch, bench, kv_api, name, heads, lens, props.L2_cache_size, props.multi_processor_count)
    calls = {key: inputs.ours(key, key, inputs.indices[0]) for key in inputs.pools}
    for r in range(args.rounds):
        report(f"round {r + 1}", calls, flush, args.iters)
    end = time.monotonic() + args.busy_s
    while time.monotonic() < end:
        for _ in range(50):
            flush()
        torch.cuda.synchronize()
    print(f"after {args.busy_s:.0f} s of flushes | gpu: {gpu_state()}", flush=True)
    for r in range(2):
        report(f"busy + {r + 1}", calls, flush, args.iters)
    copy_gbps, _ = bench.copy_bandwidth(bench.event_timer(flush, args.iters))
    print(f"copy at the end {copy_gbps / 1e9:.0f} GB/s", flush=True)


if __name__ == "__main__":
    main()
