#!/usr/bin/env python3
"""kernels/bench/replay_decode.py's arithmetic, which needs no GPU: the slot sets that keep every
replayed launch's KV out of the L2, the launches per graph, and which shapes it times (those some
target in targets.py applies to)."""
import pathlib
import sys
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "kernels/bench"))
import replay_decode  # noqa: E402

L2 = 50 << 20
ROW = 576


class ReplayTest(unittest.TestCase):
    def test_a_set_comes_round_only_after_twice_the_l2(self):
        for tokens in (1, 1000, 32768, 65536, 131072, 32 * 16384, 32 * 32768):
            sets = replay_decode.cold_sets(tokens * ROW, L2)
            self.assertGreaterEqual((sets - 1) * tokens * ROW, 2 * L2, tokens)
            # and no more sets than that needs (one fewer would not do), never fewer than two
            if sets > 2:
                self.assertLess((sets - 2) * tokens * ROW, 2 * L2, tokens)
            self.assertGreaterEqual(sets, 2)

    def test_a_graph_is_whole_rounds_of_at_least_sixteen(self):
        for sets in range(2, 40):
            n = replay_decode.graph_launches(sets)
            self.assertEqual(n % sets, 0)
            self.assertGreaterEqual(n, replay_decode.MIN_GRAPH_LAUNCHES)
            self.assertLess(n - sets, replay_decode.MIN_GRAPH_LAUNCHES)

    def test_times_the_uniform_shapes_a_target_applies_to(self):
        shapes = [("b1_h16", 16, [16384]),            # short, one request: no target
                  ("b1_h16", 16, [32768]),            # >= 32K: the 1.8x check
                  ("b32_h16", 16, [8192] * 32),       # 151 MB: not memory-bound, short
                  ("b64_h16", 16, [8192] * 64),       # 302 MB at H = 16: memory-bound
                  ("b16_h64", 64, [16384] * 16),      # H = 64: never memory-bound, short
                  ("ragged", 16, [131072, 4096])]     # ragged: left out
        kept = [(name, lens[0]) for name, _, lens in replay_decode.replay_shapes(shapes)]
        self.assertEqual(kept, [("b1_h16", 32768), ("b64_h16", 8192)])


if __name__ == "__main__":
    unittest.main()
