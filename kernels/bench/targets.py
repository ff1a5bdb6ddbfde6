#!/usr/bin/env python3
"""Issue 3's speed targets, checked against one benchmark run (bench_decode.py's bench.json).

  memory-bound shapes (H <= 32, FP8 KV read >= 256 MB): FP8 kernel >= 80% of the copy bandwidth,
      and no slower than FlashInfer's fa3 FP8 path;
  context >= 32K: FP8 kernel >= 1.8x faster than our BF16-KV kernel;
  one request of 128K tokens: FP8 kernel >= 60% of the copy bandwidth.

Ragged batches (rows marked "ragged") are not the issue's shapes and are left out.
Prints a Markdown table, one line per (target, shape): the measured value, the FP8 kernel time the
target asks for against the measured one (and, for the BF16 ratio, the share of the copy that time
would be), and met / NOT met.
No GPU or PyTorch needed: usage: targets.py results/bench.json [> targets.md]
"""
import json
import sys

MEMORY_BOUND_BYTES = 256 << 20


def us(ms):
    return f"{1000 * ms:.1f} us"


def needs(fp8_ms, limit_ms, note=""):
    """The FP8 time a target allows against the measured one, and the cut it would take."""
    cut = 100 * (1 - limit_ms / fp8_ms)
    gap = f", {cut:.0f}% less time" if cut > 0 else ""
    return f"<= {us(limit_ms)}{note} (now {us(fp8_ms)}{gap})"


def checks(result):
    """Yields (target, shape label, measured text, needed text, met) for every shape a target
    applies to."""
    copy = result["copy_gbps"]
    for r in result["rows"]:
        if r.get("ragged"):  # extra rows, not among the shapes
            continue
        v = r["variants"]
        fp8 = v["fp8"]
        label = f"{r['shape']} ctx={r['context']}"
        pct = 100 * fp8["gbps"] / copy

        def at_share(share):  # the FP8 time at `share` of the copy bandwidth (GB/s, so bytes / 1e6)
            return fp8["bytes"] / (share * copy * 1e6)

        if r["heads"] <= 32 and fp8["bytes"] >= MEMORY_BOUND_BYTES:
            yield ("memory-bound: >= 80% of copy", label, f"{pct:.0f}%", needs(fp8["ms"], at_share(0.8)),
                   pct >= 80)
            if "fi_fp8" in v:
                ratio = v["fi_fp8"]["ms"] / fp8["ms"]
                yield ("memory-bound: latency <= FlashInfer fa3 FP8", label, f"{ratio:.2f}x faster",
                       needs(fp8["ms"], v["fi_fp8"]["ms"]), ratio >= 1)
        if r["context"] >= 32768:
            ratio = v["bf16"]["ms"] / fp8["ms"]
            limit = v["bf16"]["ms"] / 1.8
            share = 100 * fp8["bytes"] / (limit * copy * 1e6)
            yield (">= 32K: FP8 >= 1.8x the BF16 kernel", label, f"{ratio:.2f}x",
                   needs(fp8["ms"], limit, f", {share:.0f}% of copy"), ratio >= 1.8)
        if r["batch"] == 1 and r["context"] >= 131072:
            yield ("one 128K request: >= 60% of copy", label, f"{pct:.0f}%", needs(fp8["ms"], at_share(0.6)),
                   pct >= 60)


def markdown(result):
    rows = list(checks(result))
    lines = [f"# Issue 3 targets — {result['meta']['gpu']}, {result['meta']['date']} "
             f"(copy {result['copy_gbps']:.0f} GB/s)", "",
             "| target | shape | measured | FP8 time it needs | |", "|---|---|---|---|---|"]
    lines += [f"| {t} | {s} | {m} | {n} | {'met' if ok else 'NOT met'} |" for t, s, m, n, ok in rows]
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
