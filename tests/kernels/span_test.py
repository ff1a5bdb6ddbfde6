#!/usr/bin/env python3
"""kernels/bench/kernel_span.py's matching of host windows to GPU work, on Chrome traces written here
in the form PyTorch's profiler exports: which kernels a window owns, the span from first start to
last end, and the errors for a window with no GPU work or with other kernels than its siblings."""
import pathlib
import sys
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "kernels/bench"))
import kernel_span  # noqa: E402


def window(name, iteration, ts, dur):
    return {"ph": "X", "cat": "user_annotation", "name": kernel_span.window_name(name, iteration), "ts": ts, "dur": dur}


def launch(correlation, ts, cat="cuda_runtime"):
    return {"ph": "X", "cat": cat, "name": "cudaLaunchKernelExC", "ts": ts, "dur": 2.0,
            "args": {"correlation": correlation}}


def gpu(correlation, name, ts, dur, cat="kernel"):
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "args": {"correlation": correlation}}


def decode_call(iteration, host_ts, gpu_ts, decode_us, gap_us, merge_us, first_id):
    """One call of ours: a decode grid and its merge grid, launched inside one window."""
    return [window("fp8", iteration, host_ts, 20.0),
            launch(first_id, host_ts + 5.0), launch(first_id + 1, host_ts + 12.0, cat="cuda_driver"),
            gpu(first_id, "mla_decode_kernel", gpu_ts, decode_us),
            gpu(first_id + 1, "mla_merge_kernel", gpu_ts + decode_us + gap_us, merge_us)]


class SpanTest(unittest.TestCase):
    def test_a_span_runs_from_the_first_start_to_the_last_end_gaps_included(self):
        trace = {"traceEvents": decode_call(0, 1000.0, 5000.0, 25.0, 1.5, 2.0, 10)}
        spans = kernel_span.spans_from_trace(trace)
        self.assertEqual(list(spans), ["fp8"])
        self.assertAlmostEqual(spans["fp8"][0], (25.0 + 1.5 + 2.0) * 1e-3)

    def test_work_launched_outside_the_window_is_not_counted(self):
        # The L2 flush before the window and a kernel after it, both on the GPU around the call.
        events = [launch(1, 990.0), gpu(1, "reduce_kernel", 4900.0, 60.0),
                  *decode_call(0, 1000.0, 5000.0, 25.0, 1.5, 2.0, 10),
                  launch(99, 1030.0), gpu(99, "elementwise_kernel", 5100.0, 3.0)]
        spans = kernel_span.spans_from_trace({"traceEvents": events})
        self.assertAlmostEqual(spans["fp8"][0], 28.5e-3)

    def test_memsets_count_and_each_window_gives_one_span(self):
        events = []
        for i, (host, dev) in enumerate(((1000.0, 5000.0), (2000.0, 6000.0), (3000.0, 7000.0))):
            events += [window("fi_fp8", i, host, 20.0), launch(100 + 2 * i, host + 1.0),
                       launch(101 + 2 * i, host + 3.0),
                       gpu(100 + 2 * i, "memset", dev, 1.0, cat="gpu_memset"),
                       gpu(101 + 2 * i, "fa3_mla_kernel", dev + 2.0, 10.0 + i)]
        spans = kernel_span.spans_from_trace(events)  # a bare event list is accepted too
        self.assertEqual([round(s * 1e3, 6) for s in spans["fi_fp8"]], [12.0, 13.0, 14.0])

    def test_a_call_name_may_hold_colons(self):
        events = [window("b1_h16:131072", 0, 1000.0, 20.0), launch(5, 1001.0), gpu(5, "k", 5000.0, 30.0)]
        self.assertEqual(list(kernel_span.spans_from_trace(events)), ["b1_h16:131072"])

    def test_the_gpu_copy_of_a_window_is_not_a_window(self):
        events = decode_call(0, 1000.0, 5000.0, 25.0, 1.5, 2.0, 10)
        events.append({**window("fp8", 0, 5000.0, 28.5), "cat": "gpu_user_annotation"})
        self.assertEqual(len(kernel_span.spans_from_trace(events)["fp8"]), 1)

    def test_a_window_without_gpu_work_is_an_error_naming_it(self):
        events = [window("bf16", 3, 1000.0, 20.0), launch(7, 1005.0)]  # no activity with id 7
        with self.assertRaisesRegex(kernel_span.SpanError, r"kvpatch_span:bf16:3: no GPU activity"):
            kernel_span.spans_from_trace(events)

    def test_windows_of_one_call_must_run_the_same_kernels(self):
        events = decode_call(0, 1000.0, 5000.0, 25.0, 1.5, 2.0, 10)
        events += [window("fp8", 1, 2000.0, 20.0), launch(20, 2005.0), gpu(20, "mla_decode_kernel", 6000.0, 25.0)]
        with self.assertRaisesRegex(kernel_span.SpanError, r"kvpatch_span:fp8:1: ran \['mla_decode_kernel'\]"):
            kernel_span.spans_from_trace(events)


if __name__ == "__main__":
    unittest.main()
