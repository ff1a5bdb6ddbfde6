#!/usr/bin/env python3
"""Host time per decode call from Python: our wrapper's run() (kernels/python/kvpatch_mla.py, checks
included), the bare C ABI call the benchmarks make, and FlashInfer's run() when it is importable.

  python_api_overhead.py --lib build-gpu/kernels/libkvpatch_mla_capi.so [--calls 400] [--batch 32]

Each call is timed on the host alone (time.perf_counter around it, no synchronization inside), in
rounds of 50 calls with the GPU drained between rounds so that the launch queue never fills; it
prints the median and the 90th percentile in microseconds. In eager decode this is paid once per
layer; a CUDA graph replay pays none of it.
"""
import argparse
import math
import os
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, HERE)
import bench_decode  # noqa: E402  (the C ABI binding and FlashInfer's loader)
import kvpatch_mla  # noqa: E402

ROUND = 50


def host_times(call, calls):
    """Microseconds of host time of each call, after 10 warm-up calls."""
    for _ in range(10):
        call()
    torch.cuda.synchronize()
    times = []
    while len(times) < calls:
        for _ in range(ROUND):
            start = time.perf_counter()
            call()
            times.append((time.perf_counter() - start) * 1e6)
        torch.cuda.synchronize()
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", required=True, help="path of libkvpatch_mla_capi.so")
    ap.add_argument("--calls", type=int, default=400)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--context", type=int, default=4096)
    args = ap.parse_args()
    device = torch.device("cuda")
    batch, heads, ctx = args.batch, args.heads, args.context
    slots = batch * ctx
    pool = (torch.randn(slots, 576, device=device) * 0.5).to(torch.float8_e4m3fn)
    lens = torch.full((batch,), ctx, dtype=torch.int32, device=device)
    indptr = torch.arange(0, slots + 1, ctx, dtype=torch.int32, device=device)
    indices = torch.arange(slots, dtype=torch.int32, device=device)
    q = torch.randn(batch, heads, 576, device=device).to(torch.bfloat16)
    q_nope, q_pe = q[..., :512], q[..., 512:]
    sm_scale = 1.0 / math.sqrt(192.0)
    calls = {}

    wrapper = kvpatch_mla.BatchMLADecodeWrapper(library=args.lib)
    wrapper.plan(indptr, indices, lens, heads, 1, sm_scale, torch.float8_e4m3fn)
    out = torch.empty(batch, heads, 512, dtype=torch.bfloat16, device=device)
    ckv, kpe = pool[:, :512], pool[:, 512:]
    calls["kvpatch_mla wrapper run()"] = lambda: wrapper.run(q_nope, q_pe, ckv, kpe, out=out)

    raw = bench_decode.Kvpatch(args.lib)
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    plan = raw.plan(batch, heads, ctx, sms)
    ws = torch.empty(max(plan[2], 16), dtype=torch.uint8, device=device)
    raw_out = torch.empty_like(out)
    mode = 0
    if plan[0] == 0:  # length-aware: the split table once, as the wrapper's plan() makes it
        raw.decode(q_nope, q_pe, pool, 0, indptr, indices, lens, raw_out, None, sm_scale, plan, ws, 2)
        mode = 1
    calls["bare C ABI call (ctypes)"] = lambda: raw.decode(q_nope, q_pe, pool, 0, indptr, indices, lens, raw_out,
                                                           None, sm_scale, plan, ws, mode)

    api, version, reason = bench_decode.load_flashinfer()
    if api is not None:
        try:
            fi_run, _, backend = bench_decode.flashinfer_runner(api, q, pool, indptr, indices, lens, sm_scale,
                                                                torch.float8_e4m3fn, "fa3")
            calls[f"FlashInfer {version} run() ({backend})"] = fi_run
        except Exception as exc:  # reported, not fatal: the other rows still mean something
            print(f"FlashInfer not timed: {bench_decode._short_error(exc)}")
    else:
        print(f"FlashInfer not timed: {reason}")

    print(f"host time per call, B={batch} H={heads} ctx={ctx} FP8, {args.calls} calls, plan {wrapper.split_plan}")
    print(f"{'call':40s} {'median us':>10s} {'p90 us':>8s}")
    for name, call in calls.items():
        t = sorted(host_times(call, args.calls))
        print(f"{name:40s} {statistics.median(t):10.1f} {t[int(0.9 * (len(t) - 1))]:8.1f}")
    torch.cuda.synchronize()
    same = torch.equal(out.view(torch.int16), raw_out.view(torch.int16))
    print(f"wrapper output equals the bare call's bit for bit: {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
