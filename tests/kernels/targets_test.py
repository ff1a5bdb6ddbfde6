#!/usr/bin/env python3
"""kernels/bench/targets.py against a small bench.json made here: which checks apply to which
shapes, met / NOT met at the edges, the FP8 time each target asks for, and what an mma.sync kernel
would need for the checks not met."""
import importlib.util
import json
import pathlib
import subprocess
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("targets", ROOT / "kernels/bench/targets.py")
targets = importlib.util.module_from_spec(spec)
spec.loader.exec_module(targets)

COPY_GBPS = 4000.0


def row(shape, batch, heads, context, fp8_ms, bf16_ms, fi_fp8_ms=None, ragged=False):
    fp8_bytes = batch * context * 576
    variants = {
        "fp8": {"ms": fp8_ms, "bytes": fp8_bytes, "gbps": fp8_bytes / (fp8_ms * 1e6)},
        "bf16": {"ms": bf16_ms, "bytes": 2 * fp8_bytes, "gbps": 2 * fp8_bytes / (bf16_ms * 1e6)},
    }
    if fi_fp8_ms is not None:
        variants["fi_fp8"] = {"ms": fi_fp8_ms, "bytes": fp8_bytes, "gbps": fp8_bytes / (fi_fp8_ms * 1e6)}
    return {"shape": shape, "batch": batch, "heads": heads, "context": context, "ragged": ragged,
            "variants": variants}


def at_share(batch, context, share):
    return batch * context * 576 / (share * COPY_GBPS * 1e6)


# B=32 H=16 32K: 302 MB, so memory-bound; exactly 80% of the copy, and 1.8x the BF16 kernel.
MEMORY_BOUND_MET = row("b32_h16", 32, 16, 32768, at_share(32, 32768, 0.8), 1.8 * at_share(32, 32768, 0.8),
                       fi_fp8_ms=1.0)
# B=64 H=16 8K: memory-bound at 65% of the copy, slower than FlashInfer, short context.
MEMORY_BOUND_SLOW = row("b64_h16", 64, 16, 8192, at_share(64, 8192, 0.65), 0.2, fi_fp8_ms=at_share(64, 8192, 0.75))
# One 128K request at 50% of the copy (75 MB: not memory-bound by the 256 MB).
SINGLE_128K = row("b1_h16", 1, 16, 131072, at_share(1, 131072, 0.5), 0.05)
# H = 64: never a memory-bound shape, whatever its bytes.
WIDE = row("b32_h64", 32, 64, 32768, 1.0, 1.0)
RAGGED = row("ragged", 32, 16, 32768, 10.0, 1.0, ragged=True)


def result(*rows, timing_floor_us=None):
    meta = {"gpu": "test GPU", "date": "2026-11-29"}
    if timing_floor_us is not None:
        meta["timing_floor_us"] = timing_floor_us
    return {"meta": meta, "copy_gbps": COPY_GBPS, "rows": list(rows)}


class TargetsTest(unittest.TestCase):
    def checks(self, *rows):
        return {(t, s): (m, n, ok) for t, s, m, n, ok, *_ in targets.checks(result(*rows))}

    def test_memory_bound_shape_meets_at_the_edge(self):
        got = self.checks(MEMORY_BOUND_MET)
        self.assertEqual(set(got), {("memory-bound: >= 80% of copy", "b32_h16 ctx=32768"),
                                    ("memory-bound: latency <= FlashInfer fa3 FP8", "b32_h16 ctx=32768"),
                                    (">= 32K: FP8 >= 1.8x the BF16 kernel", "b32_h16 ctx=32768")})
        self.assertTrue(all(ok for _, _, ok in got.values()))
        measured, needed, _ = got[("memory-bound: >= 80% of copy", "b32_h16 ctx=32768")]
        self.assertEqual(measured, "80.0%")
        self.assertNotIn("less time", needed)
        _, needed, _ = got[(">= 32K: FP8 >= 1.8x the BF16 kernel", "b32_h16 ctx=32768")]
        self.assertIn("80% of copy", needed)

    def test_slow_shape_says_how_much_faster_it_must_be(self):
        got = self.checks(MEMORY_BOUND_SLOW)
        measured, needed, ok = got[("memory-bound: >= 80% of copy", "b64_h16 ctx=8192")]
        self.assertFalse(ok)
        self.assertEqual(measured, "65.0%")
        limit_us = 1000 * at_share(64, 8192, 0.8)
        now_us = 1000 * at_share(64, 8192, 0.65)
        self.assertEqual(needed, f"<= {limit_us:.1f} us (now {now_us:.1f} us, 19% less time)")  # 1 - 65 / 80
        measured, _, ok = got[("memory-bound: latency <= FlashInfer fa3 FP8", "b64_h16 ctx=8192")]
        self.assertFalse(ok)
        self.assertEqual(measured, "0.87x faster")  # 65 / 75
        self.assertNotIn((">= 32K: FP8 >= 1.8x the BF16 kernel", "b64_h16 ctx=8192"), got)

    def test_a_hair_short_reads_as_short(self):
        # 0.1% more time than 80% of the copy allows: 79.9%, not met, and the cut to one decimal.
        limit_ms = at_share(32, 16384, 0.8)
        got = self.checks(row("b32_h16", 32, 16, 16384, 1.001 * limit_ms, 1.0))
        measured, needed, ok = got[("memory-bound: >= 80% of copy", "b32_h16 ctx=16384")]
        self.assertFalse(ok)
        self.assertEqual(measured, "79.9%")
        self.assertIn(", 0.1% less time)", needed)

    def test_single_request_and_shapes_outside_the_targets(self):
        got = self.checks(SINGLE_128K, WIDE, RAGGED)
        measured, needed, ok = got[("one 128K request: >= 60% of copy", "b1_h16 ctx=131072")]
        self.assertFalse(ok)
        self.assertEqual(measured, "50.0%")
        self.assertIn(f"<= {1000 * at_share(1, 131072, 0.6):.1f} us", needed)
        self.assertNotIn(("memory-bound: >= 80% of copy", "b1_h16 ctx=131072"), got)  # 75 MB
        self.assertNotIn(("memory-bound: >= 80% of copy", "b32_h64 ctx=32768"), got)  # H = 64
        self.assertIn((">= 32K: FP8 >= 1.8x the BF16 kernel", "b32_h64 ctx=32768"), got)
        self.assertFalse(any(s.startswith("ragged") for _, s in got))

    def test_markdown_counts_the_checks_met(self):
        text = targets.markdown(result(MEMORY_BOUND_MET, MEMORY_BOUND_SLOW))
        self.assertIn("| target | shape | measured | FP8 time it needs | |", text)
        self.assertIn("\n3 of 5 checks met.\n", text)

    def test_floors_of_the_checks_not_met(self):
        # B=32 H=32 16K at 50% of the copy: 524,288 tokens x 32 heads x 2,176 flop = 36.5 GFLOP, so
        # 79.2 us of tensor cores at 461 TFLOP/s; 302 MB at 4,000 GB/s is 75.5 us.
        slow = row("b32_h32", 32, 32, 16384, at_share(32, 16384, 0.5), 1.0)
        text = targets.markdown(result(slow, MEMORY_BOUND_MET, timing_floor_us=3.0))
        table = text.split("What any mma.sync kernel needs")[1].split("two instances")[0]
        self.assertIn("3.0 us timing floor", table)
        allowed_us = 1000 * at_share(32, 16384, 0.8)  # 94.4 us
        mma_us = 32 * 16384 * 32 * 2176 / 461e6
        busy, busy_now = mma_us / (allowed_us - 3.0), mma_us / (1000 * at_share(32, 16384, 0.5) - 3.0)
        self.assertIn(f"| memory-bound: >= 80% of copy | b32_h32 ctx=16384 | {allowed_us:.1f} us | {mma_us:.1f} us "
                      f"| 75.5 us | {100 * busy:.0f}% | {100 * busy_now:.0f}% |", table)
        self.assertNotIn("b32_h16", table)  # its checks are met
        self.assertNotIn("What any mma.sync kernel needs", targets.markdown(result(MEMORY_BOUND_MET)))

    def test_fixed_copy_reference(self):
        # 65% of the measured 4,000 GB/s is 80% of a fixed 3,250: met against that, and both printed.
        fixed = targets.with_copy_reference(result(MEMORY_BOUND_SLOW), 3250.0)
        got = {(c.target, c.shape): c for c in targets.checks(fixed)}
        check = got[("memory-bound: >= 80% of copy", "b64_h16 ctx=8192")]
        self.assertTrue(check.met)
        self.assertEqual(check.measured, "80.0%")
        self.assertIn("(copy reference 3250 GB/s, fixed; the run measured 4000)", targets.markdown(fixed))
        self.assertIn("(copy 4000 GB/s)", targets.markdown(result(MEMORY_BOUND_SLOW)))

    def test_ratio_both_instances_at_their_bounds(self):
        # B=1 H=128 64K: 18.25 GFLOP is 28.7 us of tensor cores at 637 TFLOP/s, longer than either instance's KV
        # (37.7 and 75.5 MB: 9.4 and 18.9 us), so the pair's best ratio is 1.00x whatever the
        # measured times. B=32 H=16 32K is memory-bound in both: (3 + 302 MB x 2 / 4000) / (3 + 302 / 4000).
        h128 = row("b1_h128", 1, 128, 65536, 0.08, 0.09)
        got = {c.shape: c for c in targets.checks(result(h128, MEMORY_BOUND_MET, timing_floor_us=3.0))}
        fp8_us, bf16_us, ratio = targets.pair_bound(result(h128, timing_floor_us=3.0), got["b1_h128 ctx=65536"].row)
        self.assertAlmostEqual(fp8_us, 3.0 + 65536 * 128 * 2176 / 637e6, places=6)
        self.assertAlmostEqual(bf16_us, fp8_us)
        self.assertAlmostEqual(ratio, 1.0)
        copy_us = 32 * 32768 * 576 / 4000e3
        _, _, ratio = targets.pair_bound(result(MEMORY_BOUND_MET, timing_floor_us=3.0),
                                         got["b32_h16 ctx=32768"].row)
        self.assertAlmostEqual(ratio, (3.0 + 2 * copy_us) / (3.0 + copy_us))
        text = targets.markdown(result(h128, MEMORY_BOUND_MET, timing_floor_us=3.0)).split("two instances")[1]
        self.assertIn("| b1_h128 ctx=65536 | 31.7 us | 31.7 us | 1.00x | no: only a slower BF16 instance meets it |",
                      text)
        self.assertIn(f"| b32_h16 ctx=32768 | {3.0 + copy_us:.1f} us | {3.0 + 2 * copy_us:.1f} us | 1.98x | yes |",
                      text)
        self.assertIn("\n1 of the 2 1.8x checks are out of reach of such a pair.\n", text)
        # The timing floor alone can put a memory-bound pair out of reach: B=1 H=16 32K at 3 us is
        # (3 + 9.4) / (3 + 4.7) = 1.61x; with no floor, 2.00x.
        short = row("b1_h16", 1, 16, 32768, 0.02, 0.02)
        for floor, expected in ((3.0, (3.0 + 2 * 4.718592) / (3.0 + 4.718592)), (0.0, 2.0)):
            self.assertAlmostEqual(targets.pair_bound(result(short, timing_floor_us=floor), short)[2], expected)
        self.assertNotIn("two instances", targets.markdown(result(MEMORY_BOUND_SLOW)))  # no 1.8x check

    def run_cli(self, data, *args):
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            json.dump(data, f)
            f.flush()
            return subprocess.run([sys.executable, str(ROOT / "kernels/bench/targets.py"), *args, f.name],
                                  capture_output=True, text=True, check=False)

    def test_replay_json_is_judged_per_timing(self):
        slow = result(MEMORY_BOUND_SLOW)
        replay = {"isolated": slow, "replay": result(MEMORY_BOUND_MET)}
        done = self.run_cli(replay, "--copy-gbps", "3250")
        self.assertEqual(done.returncode, 0, done.stderr)
        isolated, replayed = done.stdout.split("## Issue 3 targets, replay ")
        self.assertIn("## Issue 3 targets, isolated — test GPU", isolated)
        self.assertIn("copy reference 3250 GB/s, fixed", isolated)
        self.assertIn("| memory-bound: >= 80% of copy | b64_h16 ctx=8192 | 80.0% |", isolated)
        self.assertIn("| memory-bound: >= 80% of copy | b32_h16 ctx=32768 | 98.5% |", replayed)  # 80 x 4000 / 3250
        self.assertEqual(self.run_cli(slow).stdout, targets.markdown(slow))

    def test_bad_arguments_are_refused(self):
        self.assertEqual(self.run_cli(result(MEMORY_BOUND_MET), "--copy-gbps", "0").returncode, 2)
        refused = self.run_cli({"meta": {}}, "--copy-gbps", "4000")
        self.assertEqual(refused.returncode, 2)
        self.assertIn("neither a bench.json", refused.stderr)


if __name__ == "__main__":
    sys.exit(unittest.main())
