#!/usr/bin/env python3
"""Issue 3's speed targets, checked against one benchmark run (bench_decode.py's bench.json).

  memory-bound shapes (H <= 32, FP8 KV read >= 256 MB): FP8 kernel >= 80% of the copy bandwidth,
      and no slower than FlashInfer's fa3 FP8 path;
  context >= 32K: FP8 kernel >= 1.8x faster than our BF16-KV kernel;
  one request of 128K tokens: FP8 kernel >= 60% of the copy bandwidth.

Ragged batches (rows marked "ragged") are not the issue's shapes and are left out.
Prints a Markdown table, one line per (target, shape): the measured value (shares of the copy to
0.1%, so that a check missed by a hair does not read as met), the FP8 kernel time the
target asks for against the measured one (and, for the BF16 ratio, the share of the copy that time
would be), and met / NOT met. Then, per check not met, what any mma.sync kernel would need to meet
it: the time the tensor cores alone take at the H200's mma.sync rate (the issue allows mma.sync,
not wgmma), the time the KV bytes take at the copy bandwidth, the benchmark's timing floor, and the
share of the allowed time (less the floor) that the tensor cores would have to be busy.
Last, for every 1.8x check, the ratio that two kernels would reach if both ran at their bounds
(the timing floor plus the longer of the tensor cores' time at mma.sync's peak, 637 TFLOP/s, and
their KV bytes at the copy bandwidth). The two are instances of one template with the same mma
work, so a ratio under 1.8 there means that no improvement to the shared kernel meets the check;
only a slower BF16 instance would.
The copy-share checks are judged against the copy measured in the same run, which has differed by
up to 4.6% between GPU machines; --copy-gbps judges them against a fixed figure instead (both the
measured and the fixed one are printed). A replay.json (replay_decode.py) is judged once per timing.
No GPU or PyTorch needed: usage: targets.py [--copy-gbps GBPS] results/bench.json|replay.json [> targets.md]
"""
import argparse
import json
import sys
from typing import NamedTuple

MEMORY_BOUND_BYTES = 256 << 20
ROW_BYTES_FP8 = 576              # one token's latent + rope bytes
FLOP_PER_TOKEN_HEAD = 2 * 1088   # QK over 576 dims and PV over 512, a multiply-add each
# FP16 m16n8k16 mma.sync on the H200 with a new B operand per mma, as the decode kernel feeds it:
# 631-637 TFLOP/s with one B register throughout (kernels/bench/mma_peak.cu) times 192.6 / 265.5
# cycles per step (kernels/bench/convert_throughput.cu, fixed against fresh operands); NOTES.md,
# eleventh session.
MMA_SYNC_TFLOPS = 461
# The most any mma.sync kernel can get: FP16 m16n8k16 with one B register throughout, 631-637
# TFLOP/s (mma_peak.cu). A kernel that reuses a converted operand across m-tiles (the wide blocks)
# can exceed the fresh-operand rate, so bounds that must hold for every kernel use this one.
MMA_SYNC_PEAK_TFLOPS = 637
RATIO = 1.8  # how many times faster than the BF16 kernel the FP8 one must be at >= 32K
RATIO_TARGET = f">= 32K: FP8 >= {RATIO}x the BF16 kernel"


def us(ms):
    return f"{1000 * ms:.1f} us"


def needs(fp8_ms, limit_ms, note=""):
    """The FP8 time a target allows against the measured one, and the cut it would take."""
    cut = 100 * (1 - limit_ms / fp8_ms)
    digits = 1 if cut < 1 else 0  # a cut under 1% would round to "0%"
    gap = f", {cut:.{digits}f}% less time" if cut > 0 else ""
    return f"<= {us(limit_ms)}{note} (now {us(fp8_ms)}{gap})"


def tensor_us(row, tflops):
    """The least time the tensor cores take for the row's mma work at `tflops`."""
    tokens = row["variants"]["fp8"]["bytes"] / ROW_BYTES_FP8
    return tokens * row["heads"] * FLOP_PER_TOKEN_HEAD / (tflops * 1e6)


def copy_us(result, row, variant):
    """The time the variant's KV bytes take at the run's copy bandwidth."""
    return row["variants"][variant]["bytes"] / (result["copy_gbps"] * 1e3)


def floors(result, row, limit_ms):
    """(mma us, copy us, tensor-core share) for one check: the least times the tensor cores and the
    DRAM take for the row's work, and how busy the tensor cores must be within the time the target
    allows less the timing floor."""
    mma_us = tensor_us(row, MMA_SYNC_TFLOPS)
    usable_us = 1000 * limit_ms - result["meta"].get("timing_floor_us", 0.0)
    return mma_us, copy_us(result, row, "fp8"), mma_us / usable_us if usable_us > 0 else float("inf")


def pair_bound(result, row):
    """(FP8 us, BF16 us, ratio) for one row if both instances ran at their bounds: the timing floor
    plus the longer of the tensor cores' time at mma.sync's peak (the same mma work in both) and the
    instance's own KV bytes at the copy bandwidth. Conversions and fixed costs beyond the floor are
    left out, so the real ratio of one template's two instances can only fall short of this one."""
    floor = result["meta"].get("timing_floor_us", 0.0)
    mma_us = tensor_us(row, MMA_SYNC_PEAK_TFLOPS)
    fp8_us = floor + max(mma_us, copy_us(result, row, "fp8"))
    bf16_us = floor + max(mma_us, copy_us(result, row, "bf16"))
    return fp8_us, bf16_us, bf16_us / fp8_us


def memory_bound(heads, fp8_bytes):
    """The issue's memory-bound shapes: H <= 32 and at least 256 MB of FP8 KV read."""
    return heads <= 32 and fp8_bytes >= MEMORY_BOUND_BYTES


def long_context(context):
    return context >= 32768


def single_128k(batch, context):
    return batch == 1 and context >= 131072


def applies(batch, heads, context, fp8_bytes):
    """Whether any of the targets applies to a uniform shape (replay_decode.py times only these)."""
    return memory_bound(heads, fp8_bytes) or long_context(context) or single_128k(batch, context)


class Check(NamedTuple):
    target: str
    shape: str
    measured: str
    needed: str
    met: bool
    row: dict          # the bench.json row it was checked on
    allowed_ms: float  # the FP8 time the target allows


def checks(result):
    """Yields a Check for every shape a target applies to."""
    copy = result["copy_gbps"]
    for r in result["rows"]:
        if r.get("ragged"):  # extra rows, not among the shapes
            continue
        v = r["variants"]
        fp8 = v["fp8"]
        label = f"{r['shape']} ctx={r['context']}"
        pct = 100 * fp8["gbps"] / copy

        def at_share(share, fp8_bytes=fp8["bytes"]):  # the FP8 time at `share` of the copy (GB/s: bytes / 1e6)
            return fp8_bytes / (share * copy * 1e6)

        if memory_bound(r["heads"], fp8["bytes"]):
            yield Check("memory-bound: >= 80% of copy", label, f"{pct:.1f}%", needs(fp8["ms"], at_share(0.8)),
                        pct >= 80, r, at_share(0.8))
            if "fi_fp8" in v:
                ratio = v["fi_fp8"]["ms"] / fp8["ms"]
                yield Check("memory-bound: latency <= FlashInfer fa3 FP8", label, f"{ratio:.2f}x faster",
                            needs(fp8["ms"], v["fi_fp8"]["ms"]), ratio >= 1, r, v["fi_fp8"]["ms"])
        if long_context(r["context"]):
            ratio = v["bf16"]["ms"] / fp8["ms"]
            limit = v["bf16"]["ms"] / RATIO
            share = 100 * fp8["bytes"] / (limit * copy * 1e6)
            yield Check(RATIO_TARGET, label, f"{ratio:.2f}x",
                        needs(fp8["ms"], limit, f", {share:.0f}% of copy"), ratio >= RATIO, r, limit)
        if single_128k(r["batch"], r["context"]):
            yield Check("one 128K request: >= 60% of copy", label, f"{pct:.1f}%", needs(fp8["ms"], at_share(0.6)),
                        pct >= 60, r, at_share(0.6))


def with_copy_reference(result, gbps):
    """The run judged against a fixed copy bandwidth (GB/s) instead of the copy it measured."""
    return {**result, "copy_gbps": gbps, "measured_copy_gbps": result["copy_gbps"]}


def markdown(result):
    rows = list(checks(result))
    copy = f"copy {result['copy_gbps']:.0f} GB/s"
    if "measured_copy_gbps" in result:
        copy = (f"copy reference {result['copy_gbps']:.0f} GB/s, fixed; "
                f"the run measured {result['measured_copy_gbps']:.0f}")
    lines = [f"# Issue 3 targets — {result['meta']['gpu']}, {result['meta']['date']} ({copy})", "",
             "| target | shape | measured | FP8 time it needs | |", "|---|---|---|---|---|"]
    lines += [f"| {c.target} | {c.shape} | {c.measured} | {c.needed} | {'met' if c.met else 'NOT met'} |" for c in rows]
    met = sum(c.met for c in rows)
    lines += ["", f"{met} of {len(rows)} checks met."]
    missed = [c for c in rows if not c.met]
    if missed:
        floor = result["meta"].get("timing_floor_us", 0.0)
        lines += ["", (f"What any mma.sync kernel needs for the checks not met: tensor cores at "
                       f"{MMA_SYNC_TFLOPS} TFLOP/s (FP16 mma.sync with fresh operands, as measured on the H200) and "
                       f"DRAM at the copy bandwidth; a launch also pays the {floor:.1f} us timing floor."), "",
                  ("| target | shape | time allowed | tensor cores alone | KV bytes at copy speed "
                   "| tensor cores busy then | busy now |"), "|---|---|---|---|---|---|---|"]
        for c in missed:
            mma_us, copy_us, busy = floors(result, c.row, c.allowed_ms)
            busy_now = floors(result, c.row, c.row["variants"]["fp8"]["ms"])[2]
            lines.append(f"| {c.target} | {c.shape} | {us(c.allowed_ms)} | {mma_us:.1f} us | {copy_us:.1f} us "
                         f"| {100 * busy:.0f}% | {100 * busy_now:.0f}% |")
    ratio_rows = [c for c in rows if c.target == RATIO_TARGET]
    if ratio_rows:
        lines += ["", ("The 1.8x checks compare two instances of one kernel with the same mma work. Both at "
                       "their bounds (the timing floor, plus the longer of the tensor cores alone at mma.sync's "
                       f"peak, {MMA_SYNC_PEAK_TFLOPS} TFLOP/s, and the instance's own KV bytes at copy speed) "
                       "would give:"), "",
                  "| shape | FP8 at its bound | BF16 at its bound | ratio | 1.8x within reach of the pair |",
                  "|---|---|---|---|---|"]
        out_of_reach = 0
        for c in ratio_rows:
            fp8_us, bf16_us, ratio = pair_bound(result, c.row)
            out_of_reach += ratio < RATIO
            reach = "yes" if ratio >= RATIO else "no: only a slower BF16 instance meets it"
            lines.append(f"| {c.shape} | {fp8_us:.1f} us | {bf16_us:.1f} us | {ratio:.2f}x | {reach} |")
        lines += ["", f"{out_of_reach} of the {len(ratio_rows)} 1.8x checks are out of reach of such a pair."]
    return "\n".join(lines) + "\n"


def timing_markdown(result, timing):
    """markdown() for one timing of a replay run, its heading one level down and naming the timing."""
    return markdown(result).replace("# Issue 3 targets", f"## Issue 3 targets, {timing}", 1)


def runs(data):
    """(timing, result) pairs: one for a bench.json, one per timing for a replay.json."""
    if "rows" in data:
        return [(None, data)]
    return [(timing, r) for timing, r in data.items() if isinstance(r, dict) and "rows" in r]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", help="bench.json (bench_decode.py) or replay.json (replay_decode.py)")
    ap.add_argument("--copy-gbps", type=float, help="a fixed copy bandwidth in GB/s for the copy-share checks")
    args = ap.parse_args()
    if args.copy_gbps is not None and not args.copy_gbps > 0:
        ap.error("--copy-gbps must be a positive number of GB/s")
    with open(args.results) as f:
        found = runs(json.load(f))
    if not found:
        ap.error(f"{args.results}: neither a bench.json (rows) nor a replay.json (rows per timing)")
    for timing, result in found:
        if args.copy_gbps is not None:
            result = with_copy_reference(result, args.copy_gbps)
        sys.stdout.write(markdown(result) if timing is None else timing_markdown(result, timing) + "\n")


if __name__ == "__main__":
    main()
