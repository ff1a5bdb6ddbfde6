#!/usr/bin/env python3
"""Does timing by GPU span (kernel_span.py: PyTorch's profiler, CUPTI) change what CUDA events then
measure in the same process? One shape's FP8 decode and a one-element zero_(), each timed alone after
an L2 flush, alternately by events and by span, twice over: events, span, events, span. If CUPTI's
activity tracing leaves a cost behind, the second events round shows it. The 1 GiB device copy is
timed the same ways (after the flush, which keeps the GPU busy while the host dispatches it), and
with nothing before it, as bench_decode.py timed its copy reference until the twenty-seventh session.
Usage: span_probe.py --lib build/kernels/libkvpatch_mla_capi.so [--iters 15]
"""
import argparse

import bench_decode as bench
import torch
from kernel_span import time_spans

SHAPES = (("b1_h16", 16, [131072]), ("b32_h16", 16, [16384] * 32))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--iters", type=int, default=15)
    args = ap.parse_args()
    kv_api = bench.Kvpatch(args.lib)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    flush = bench.l2_flusher()
    tiny = torch.empty(1, dtype=torch.int32, device="cuda")
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    calls = {"zero_": lambda: tiny.zero_(), "copy": lambda: dst.copy_(src)}
    keep = []
    for name, heads, lens in SHAPES:
        tokens = sum(lens)
        pool = torch.empty(bench.pool_slots(tokens), bench.ROW, dtype=torch.uint8, device="cuda")
        pool.copy_(torch.randn(pool.shape, device="cuda").to(torch.float8_e4m3fn).view(torch.uint8))
        indices = torch.randperm(pool.shape[0], device="cuda")[:tokens].to(torch.int32)
        lens_t, indptr, q, q_nope, q_pe, sm_scale = bench.request_inputs(lens, heads, "cuda")
        plan = kv_api.plan(len(lens), heads, lens[0], sms)
        ws = torch.empty(max(plan[2], 16), dtype=torch.uint8, device="cuda")
        out = torch.empty(len(lens), heads, 512, dtype=torch.bfloat16, device="cuda")
        lse = torch.empty(len(lens), heads, dtype=torch.float32, device="cuda")
        ready = 1 if plan[0] == 0 else 0
        if ready:
            kv_api.decode(q_nope, q_pe, pool, 0, indptr, indices, lens_t, out, lse, sm_scale, plan, ws, mode=2)
        keep.append((pool, indices, q, out, lse, ws))
        calls[f"{name}:{lens[0]}"] = (lambda a: lambda: kv_api.decode(*a))(
            (q_nope, q_pe, pool, 0, indptr, indices, lens_t, out, lse, sm_scale, plan, ws, ready))
    for round_ in ("events 1", "span 1", "events 2", "span 2"):
        if round_.startswith("events"):
            times = {k: bench.time_variant(c, flush, args.iters) for k, c in calls.items()}
        else:
            times = time_spans(torch, calls, flush, args.iters)
        print(f"{round_:9s} " + "  ".join(f"{k}={ms * 1e3:7.2f}us" for k, ms in times.items()) +
              f"  copy={2 * src.numel() / (times['copy'] * 1e6):.0f}GB/s", flush=True)
    # The copy reference as bench_decode.py timed it before the twenty-seventh session: events
    # around the copy with nothing before it, so the GPU sat idle while the host dispatched it.
    ms = bench.time_variant(calls["copy"], lambda: None, args.iters)
    print(f"copy with an idle GPU before it (the old reference): {ms * 1e3:.2f}us "
          f"{2 * src.numel() / (ms * 1e6):.0f}GB/s", flush=True)


if __name__ == "__main__":
    main()
