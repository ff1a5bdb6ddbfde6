#!/usr/bin/env python3
"""Why does replay_decode.py time FlashInfer's MLA path alone up to 44% above its GPU span (NOTES.md
item 33)? For one shape, FlashInfer's FP8 and BF16 runs are planned as replay_decode.py plans them
(a wrapper per slot set) and as the span timing does (one wrapper), and each is timed alone by CUDA
events after the L2 flush three ways:
  events   as bench_decode.time_variant times every variant;
  guarded  the same, with a ~200 us spin kernel queued after the flush (bench_decode.guarded_timer),
           so that the GPU is still busy while the host makes the call: host time the call spends
           before its kernel launches then no longer shows, unless the call waits for the GPU;
  host     the host's own time in the call (time.perf_counter, no synchronization), made while the
           flush runs: a call that waits for the GPU (a synchronizing copy, say) takes the flush's
           remaining time here.
Our FP8 kernel is timed the same ways for comparison.
Usage: fi_alone_probe.py --lib build/kernels/libkvpatch_mla_capi.so [--shape b1_h16:32768] [--iters 15]
"""
import argparse
import statistics
import time

import bench_decode as bench
import torch
from replay_decode import ShapeInputs, replay_shapes, shape_key


def host_us(fn, flush, iters):
    times = []
    for _ in range(iters):
        flush()
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
        torch.cuda.synchronize()
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--shape", default="b1_h16:32768", help="NAME:CTX among replay_decode.py's shapes")
    ap.add_argument("--iters", type=int, default=15)
    ap.add_argument("--flashinfer-backend", default="fa3")
    args = ap.parse_args()
    shapes = [s for s in replay_shapes(bench.SHAPES) if shape_key(s) == args.shape]
    if not shapes:
        ap.error(f"--shape {args.shape}: not a replay_decode.py shape")
    name, heads, lens = shapes[0]
    fi_api, fi_version, fi_error = bench.load_flashinfer()
    if fi_api is None:
        raise SystemExit(f"FlashInfer not importable: {fi_error}")
    kv_api = bench.Kvpatch(args.lib)
    props = torch.cuda.get_device_properties(0)
    flush = bench.l2_flusher()
    inputs = ShapeInputs(torch, bench, kv_api, name, heads, lens, props.L2_cache_size, props.multi_processor_count)
    fi = {"api": fi_api, "backend": args.flashinfer_backend}
    calls = {"ours fp8": inputs.ours("fp8", "fp8", inputs.indices[0])}
    alive = []
    for key in ("fi_fp8", "fi_bf16"):
        every_set = inputs.flashinfer(torch, bench, fi, key)  # as replay_decode.run_shape plans it
        one_set = inputs.flashinfer(torch, bench, fi, key, sets=1)  # as its span timing does
        alive += [every_set, one_set]
        calls[f"{key} (a wrapper per set: {len(every_set)})"] = every_set[0]
        calls[f"{key} (one wrapper)"] = one_set[0]
    print(f"flashinfer {fi_version}, {args.shape}, {inputs.sets} slot sets; us, medians of {args.iters}", flush=True)
    events_timer, guarded_timer = bench.event_timer(flush, args.iters), bench.guarded_timer(flush, args.iters)
    for label, fn in calls.items():
        events = events_timer({label: fn})[label] * 1e3
        guarded = guarded_timer({label: fn})[label] * 1e3
        host = host_us(fn, flush, args.iters)
        print(f"{label:34s} events {events:7.1f}  guarded {guarded:7.1f}  host time in the call {host:7.1f}",
              flush=True)


if __name__ == "__main__":
    main()
