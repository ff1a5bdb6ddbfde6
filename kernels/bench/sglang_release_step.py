#!/usr/bin/env python3
"""What removing the cast buys in SGLang's own decode code: one decode step of N layers, as released and patched.

  sglang_release_step.py [--cache DIR] [--kvpatch BIN] [--releases 0.5.16,0.5.23] [--layers 61] [--lib LIB]
                         [--out DIR]

GPU machine, with FlashInfer importable (kernels/bench/flashinfer_env.sh) and the releases' backends in
DIR/sglang-backends (kernels/bench/sglang_backends.sh). Each release's flashinfer_mla_backend.py, as released
and as kvpatch patched it (original form), is loaded as tests/kernels/sglang_release_backend_test.py loads it,
and its decode updater and forward_decode run one step of N layers: DeepSeek-V3 at TP 8 (16 local heads),
batch 32 x 4,096 tokens, each layer its own FP8 pool of 495,552 slots (GLM-5's). As released, each layer
casts its whole pool to BF16 and FlashInfer runs a BF16 plan; patched, FlashInfer runs the FP8 plan on the
pool as stored; with --lib, the patched step also runs on kvpatch's kernel (kvpatch_mla_flashinfer). Each
step is captured in a CUDA graph, as SGLang replays decode, and also run eager from Python; the forms are
interleaved round by round. Prints the medians and their ratios, and PyTorch's cast of one pool alone;
writes them to --out/sglang-release-step.json. Correctness is the test's job, not this script's.
"""
import argparse
import json
import os
import shutil
import statistics
import sys

import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "kernels"))
import python_api_test as api  # noqa: E402  (FlashInfer's import, CUDA-graph capture)
import sglang_stand_ins as stand_ins  # noqa: E402
from sglang_release_harness import BF16, HEADS, Backend, Batch, kvpatch_wrapper_class, release_sources  # noqa: E402


def bench(version, sources, wrappers, layers, rounds=7):
    """Median ms of one decode step of `layers` layers, as released and patched, interleaved round by round:
    replayed as a CUDA graph (as SGLang runs decode) and, for comparison, eager from Python."""
    batch = Batch([4096] * 32, [1] * 32, 495_552, layers, seed=11)
    steps = {}
    for form, wrapper_class in wrappers.items():
        source = sources["as released" if form == "as released" else "patched"]
        b = Backend(stand_ins.load(source, f"{version} {form}"), wrapper_class, batch)
        b.plan_decode()

        def eager(b=b):
            return [b.decode(i) for i in range(layers)]
        steps[("graph", form)] = api.capture(eager).replay
        steps[("eager", form)] = eager
    times = {key: [] for key in steps}
    for _ in range(rounds):
        for key, step in steps.items():
            step()  # warm-up; 61 layers' KV (4.6 GB) pass through the 60 MB L2, so the timed step starts cold
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            step()
            end.record()
            end.synchronize()
            times[key].append(start.elapsed_time(end))
    cast = []  # what the released path adds per layer: PyTorch's cast of the whole pool, timed alone
    for _ in range(rounds):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        batch.pools[0].to(BF16)
        end.record()
        end.synchronize()
        cast.append(start.elapsed_time(end))
    med = {key: statistics.median(t) for key, t in times.items()}
    result = {"release": version, "layers": layers, "batch": 32, "kv_len": 4096, "pool_slots": 495_552,
              "heads": HEADS, "rounds": rounds, "ms_pool_cast_alone": statistics.median(cast)}
    print(f"SGLang {version}: one pool's cast to BF16 (Tensor.to, as the released decode path makes it per layer) "
          f"alone: {statistics.median(cast):.3f} ms")
    for mode in ("graph", "eager"):
        released = med[(mode, "as released")]
        parts = [f"{released:.2f} ms as released"]
        result[mode] = {"ms_as_released": released, "times_ms_as_released": times[(mode, "as released")]}
        for form in list(wrappers)[1:]:
            ms = med[(mode, form)]
            parts.append(f"{ms:.2f} ms {form} ({released / ms:.2f}x)")
            result[mode][f"ms_{form}"] = ms
            result[mode][f"times_ms_{form}"] = times[(mode, form)]
        print(f"SGLang {version}, {mode}: {layers}-layer decode step, batch 32 x 4096 tokens, pools of 495,552 "
              f"slots: {', '.join(parts)}")
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", default=os.path.join(ROOT, ".cache"))
    ap.add_argument("--kvpatch", default=shutil.which("kvpatch"), help="kvpatch to patch with, if none is carried")
    ap.add_argument("--releases", default="0.5.16,0.5.23")
    ap.add_argument("--layers", type=int, default=61)
    ap.add_argument("--lib", default=None,
                    help="libkvpatch_mla_capi.so: also time the patched step on kvpatch's kernel")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    flashinfer = api.flashinfer_or_skip()
    if flashinfer is None:
        return 2
    print(f"FlashInfer {flashinfer.__version__}, {torch.cuda.get_device_name()}")
    wrappers = {"as released": flashinfer.BatchMLAPagedAttentionWrapper,
                "patched": flashinfer.BatchMLAPagedAttentionWrapper}
    if args.lib:
        wrappers["patched, kvpatch kernel"] = kvpatch_wrapper_class(args.lib)
    steps = []
    for version in args.releases.split(","):
        sources = release_sources(args.cache, version, args.kvpatch, flashinfer.__version__)
        if isinstance(sources, str):
            print(sources, file=sys.stderr)
            return 2
        steps.append(bench(version, sources, wrappers, args.layers))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "sglang-release-step.json"), "w", encoding="utf-8") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "flashinfer": flashinfer.__version__,
                       "torch": torch.__version__, "steps": steps}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
