"""GPU spans: how long a call keeps the GPU busy, read from CUPTI's activity records (through PyTorch's
profiler), the way FlashInfer's benchmarks time a kernel by default (`bench_gpu_time` with CUPTI).

A call's span runs from the start of the first kernel (or memcpy / memset) it launched to the end of
the last one, on the GPU's own clock. CUDA events around a launch also count the launch and the
events themselves (the ~3 us "timing floor" of bench_decode.py); a span does not, but it keeps any
gap between a call's own kernels (our decode grid and its merge grid, for example). A call that
makes several launches from Python (the benchmark's gather path) leaves the GPU waiting between
them, and its span counts those waits: up to 89 us more than its events time on an H200.

Which kernels belong to which call: every call runs inside a `record_function` window on the host;
the runtime and driver API calls made inside that window carry CUPTI correlation ids, and the GPU
activities with those ids are the call's. `spans_from_trace` does that matching on an exported
Chrome trace and needs no GPU; `time_spans` runs the calls.
"""
import bisect
import json
import os
import statistics
import tempfile
import warnings

WINDOW_PREFIX = "kvpatch_span"
LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver")
GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")


class SpanError(RuntimeError):
    pass


def window_name(name, iteration):
    return f"{WINDOW_PREFIX}:{name}:{iteration}"


def spans_from_trace(trace):
    """{call name: [span in ms, one per window]} from a Chrome trace (a dict) holding windows named
    by window_name(). Raises SpanError when a window launched nothing the trace can place on the GPU,
    or when one call's windows ran different kernels (as FlashInfer's benchmark checks too)."""
    events = trace.get("traceEvents", trace) if isinstance(trace, dict) else trace
    windows = [e for e in events if e.get("ph") == "X" and str(e.get("name", "")).startswith(WINDOW_PREFIX + ":")
               and e.get("cat") != "gpu_user_annotation"]
    launches = sorted((e for e in events if e.get("cat") in LAUNCH_CATEGORIES and "correlation" in e.get("args", {})),
                      key=lambda e: e["ts"])
    launch_ts = [e["ts"] for e in launches]
    gpu = {}
    for e in events:
        if e.get("cat") in GPU_CATEGORIES and "correlation" in e.get("args", {}):
            gpu.setdefault(e["args"]["correlation"], []).append(e)
    spans, signatures = {}, {}
    for w in windows:
        name = w["name"][len(WINDOW_PREFIX) + 1:].rsplit(":", 1)[0]  # a call's name may hold ':' itself
        start, end = w["ts"], w["ts"] + w.get("dur", 0)
        inside = launches[bisect.bisect_left(launch_ts, start):bisect.bisect_right(launch_ts, end)]
        ids = [e["args"]["correlation"] for e in inside]
        work = [a for i in ids for a in gpu.get(i, [])]
        if not work:
            raise SpanError(f"{w['name']}: no GPU activity correlated with the {len(ids)} API calls in this window "
                            "(was the profiler run with CUDA activities, and does CUPTI see this library's launches?)")
        first, last = min(a["ts"] for a in work), max(a["ts"] + a.get("dur", 0) for a in work)
        signature = tuple(sorted(a["name"] for a in work))
        if signatures.setdefault(name, signature) != signature:
            raise SpanError(f"{w['name']}: ran {list(signature)}, another window of {name!r} ran "
                            f"{list(signatures[name])}")
        spans.setdefault(name, []).append((last - first) * 1e-3)  # trace times are in us
    return spans


def time_spans(torch, calls, flush, iters, warmup=3):
    """{name: median span in ms} of each call in `calls` (name -> function), each run `iters` times
    after `flush()` (which empties the L2), the calls taken in turn within each round."""
    from torch.profiler import ProfilerActivity, profile, record_function

    for call in calls.values():
        for _ in range(warmup):
            call()
    torch.cuda.synchronize()
    with warnings.catch_warnings():
        # PyTorch warns that a profile without a schedule keeps only its last cycle: there is one.
        warnings.filterwarnings("ignore", message=".*Profiler clears events at the end of each cycle.*")
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for i in range(iters):
                for name, call in calls.items():
                    flush()
                    with record_function(window_name(name, i)):
                        call()
                    torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
    spans = spans_from_trace(trace)
    missing = set(calls) - set(spans)
    if missing:
        raise SpanError(f"no window of {sorted(missing)} in the profiler's trace")
    return {name: statistics.median(spans[name]) for name in calls}
