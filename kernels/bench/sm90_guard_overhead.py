#!/usr/bin/env python3
"""Host cost of the cast guard that `kvpatch apply --kv-dtype-form sm90` writes, per evaluation.

  sm90_guard_overhead.py [--evals 20000] [--layers 61]

The sm90 form keeps each KV cast under
    if k_buf.dtype != (torch.float8_e4m3fn if torch.cuda.get_device_capability()[0] == 9 else None):
which runs once per layer per eager forward (a CUDA-graph replay runs no Python, so none of it). This
times, on the host alone, in blocks of 1,000 evaluations: the capability query by itself, that guard,
the upstream form's guard (`k_buf.dtype != torch.float8_e4m3fn`) and three other ways to write the
platform test (a device-properties read, a functools.cache'd helper, an attribute), and prints the median and the
90th percentile of the per-evaluation time over the blocks, and what one eager decode step of
--layers layers pays for it (61: DeepSeek-V3's layer count). No GPU work is queued.
"""
import argparse
import functools
import statistics
import time

import torch

BLOCK = 1000


def per_eval_us(fn, evals):
    """Microseconds per evaluation of fn, one figure per block of BLOCK evaluations, after a warm-up block."""
    for _ in range(BLOCK):
        fn()
    out = []
    for _ in range(max(1, evals // BLOCK)):
        start = time.perf_counter()
        for _ in range(BLOCK):
            fn()
        out.append((time.perf_counter() - start) * 1e6 / BLOCK)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--evals", type=int, default=20000)
    ap.add_argument("--layers", type=int, default=61)
    args = ap.parse_args()
    k_buf = torch.empty(16, 576, dtype=torch.float8_e4m3fn, device="cuda")
    torch.cuda.synchronize()
    fp8 = torch.float8_e4m3fn
    @functools.cache
    def native_kv_dtype():
        return fp8 if torch.cuda.get_device_capability()[0] == 9 else None

    class Updater:  # the guard could read the dtype the wrapper was planned with, an attribute
        kv_data_type = native_kv_dtype()

    updater = Updater()
    cases = {
        "torch.cuda.get_device_capability()": lambda: torch.cuda.get_device_capability(),
        "sm90 form's guard": lambda: k_buf.dtype != (fp8 if torch.cuda.get_device_capability()[0] == 9 else None),
        "upstream form's guard": lambda: k_buf.dtype != fp8,
        # Other ways to write the platform test, for comparison.
        "get_device_properties(0).major guard": lambda: k_buf.dtype != (
            fp8 if torch.cuda.get_device_properties(0).major == 9 else None),
        "guard through a functools.cache'd helper": lambda: k_buf.dtype != native_kv_dtype(),
        "guard on an attribute": lambda: k_buf.dtype != updater.kv_data_type,
    }
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, capability {torch.cuda.get_device_capability()}")
    print(f"| evaluated | median us | p90 us | per eager step of {args.layers} layers, us |")
    print("|---|---|---|---|")
    medians = {}
    for name, fn in cases.items():
        times = sorted(per_eval_us(fn, args.evals))
        median = statistics.median(times)
        medians[name] = median
        p90 = times[min(len(times) - 1, int(0.9 * len(times)))]
        print(f"| `{name}` | {median:.3f} | {p90:.3f} | {median * args.layers:.1f} |")
    extra = medians["sm90 form's guard"] - medians["upstream form's guard"]
    print(f"the sm90 guard costs {extra:.3f} us more than the upstream guard per evaluation, "
          f"{extra * args.layers:.1f} us per eager step of {args.layers} layers")


if __name__ == "__main__":
    main()
