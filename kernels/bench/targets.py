#!/usr/bin/env python3
"""Issue 3's speed targets, checked against one benchmark run (bench_decode.py's bench.json).

  memory-bound shapes (H <= 32, FP8 KV read >= 256 MB): FP8 kernel >= 80% of the copy bandwidth,
      and no slower than FlashInfer's fa3 FP8 path;
  context >= 32K: FP8 kernel >= 1.8x faster than our BF16-KV kernel;
  one request of 128K tokens: FP8 kernel >= 60% of the copy bandwidth.

Ragged batches (rows marked "ragged") are not the issue's shapes and are left out.
Prints a Markdown table, one line per (target, shape), with the measured value and met / NOT met.
No GPU or PyTorch needed: usage: targets.py results/bench.json [> targets.md]
"""
import json
import sys

MEMORY_BOUND_BYTES = 256 << 20


def checks(result):
    """Yields (target, shape label, measured text, met) for every shape a target applies to."""
    copy = result["copy_gbps"]
    for r in result["rows"]:
        if r.get("ragged"):  # extra rows, not among the shapes
            continue
        v = r["variants"]
        label = f"{r['shape']} ctx={r['context']}"
        pct = 100 * v["fp8"]["gbps"] / copy
        if r["heads"] <= 32 and v["fp8"]["bytes"] >= MEMORY_BOUND_BYTES:
            yield "memory-bound: >= 80% of copy", label, f"{pct:.0f}%", pct >= 80
            if "fi_fp8" in v:
                ratio = v["fi_fp8"]["ms"] / v["fp8"]["ms"]
                yield "memory-bound: latency <= FlashInfer fa3 FP8", label, f"{ratio:.2f}x faster", ratio >= 1
        if r["context"] >= 32768:
            ratio = v["bf16"]["ms"] / v["fp8"]["ms"]
            yield ">= 32K: FP8 >= 1.8x the BF16 kernel", label, f"{ratio:.2f}x", ratio >= 1.8
        if r["batch"] == 1 and r["context"] >= 131072:
            yield "one 128K request: >= 60% of copy", label, f"{pct:.0f}%", pct >= 60


def markdown(result):
    rows = list(checks(result))
    lines = [f"# Issue 3 targets — {result['meta']['gpu']}, {result['meta']['date']} "
             f"(copy {result['copy_gbps']:.0f} GB/s)", "",
             "| target | shape | measured | |", "|---|---|---|---|"]
    lines += [f"| {t} | {s} | {m} | {'met' if ok else 'NOT met'} |" for t, s, m, ok in rows]
    met = sum(ok for *_, ok in rows)
    lines += ["", f"{met} of {len(rows)} checks met."]
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        sys.stdout.write(markdown(json.load(f)))


if __name__ == "__main__":
    main()
