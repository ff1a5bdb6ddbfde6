#!/usr/bin/env python3
"""Issue 3's target shapes timed four ways, side by side (the fourth, span, in a second process):

  isolated  as bench_decode.py times every variant: CUDA events around one launch, the L2 flushed
            (a 256 MB read) before it. Each launch also pays what the events and the launch cost
            around it (the "timing floor": a one-element zero_() timed the same way).
  span      the same launches, each after the same flush, timed as FlashInfer's benchmarks time a
            kernel by default: the GPU span of the call's kernels from CUPTI's activity records, first
            start to last end (kernel_span.py). No launch or event cost; the gap between our decode
            grid and its merge grid stays in. Its copy and its floor are timed the same way. It runs
            in a second process after the others (--span-only): once CUPTI has traced a process,
            event timings in it have come out slower.
  replay    as a server's decode step runs: one CUDA graph of N launches back to back, replayed;
            the time per launch is the replay's event time / N, median over --iters rounds in
            which every variant's graph is replayed once in turn. Each launch reads its own set of
            pool slots, and a set comes round again only after at least twice the L2's size of
            other KV has been read (cold_sets), so no launch finds its KV in the L2, with no flush
            between launches.
  replay_pdl  the same, our launches programmatic dependents of the launch before them
            (LaunchOptions::programmatic). FlashInfer's replay times are repeated there: its MLA
            wrapper had no such option in 0.7.0.post1, and 0.7.4's plan(enable_pdl=) is not used.

Variants: our FP8 kernel, our BF16 kernel on a BF16 copy, FlashInfer's fa3 FP8 and BF16 paths
(bench_decode.py's flashinfer_runner, one planned wrapper per slot set) when importable and
capturable (the reason is kept if not). The copy (1 GiB, timed after the flush like a variant) is
the bandwidth ceiling for isolated and both replays, its span for span; targets.py judges each
timing on its own. Back to back, the H200 can reach its power cap
(NOTES.md, eleventh session), so replay is not simply the isolated time less the floor.
Writes replay.json and replay.md (the side-by-side table and targets.py's summary for each timing).
Usage: replay_decode.py --lib build/kernels/libkvpatch_mla_capi.so --out results/ [--iters 15]
"""
import argparse
import datetime
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

from kernel_span import SpanError, time_spans
from targets import applies, timing_markdown

ROW = 576
MIN_GRAPH_LAUNCHES = 16


def cold_sets(fp8_bytes_per_launch, l2_bytes):
    """How many disjoint slot sets a shape cycles through: enough that between two launches on the
    same set at least 2 x the L2's size of other KV is read (the L2 keeps no reused line)."""
    return max(2, 1 + math.ceil(2 * l2_bytes / fp8_bytes_per_launch))


def graph_launches(sets):
    """Launches per captured graph: at least MIN_GRAPH_LAUNCHES, a whole number of rounds over the
    sets, so that each replay starts on the set that has waited longest."""
    return sets * math.ceil(MIN_GRAPH_LAUNCHES / sets)


def replay_shapes(shapes):
    """The uniform shapes of bench_decode.SHAPES that some target applies to."""
    return [(name, heads, lens) for name, heads, lens in shapes
            if len(set(lens)) == 1 and applies(len(lens), heads, lens[0], len(lens) * lens[0] * ROW)]


def shape_key(shape):
    """NAME:CTX, how --shapes names a shape (name, heads, lens), e.g. b1_h16:131072."""
    name, _, lens = shape
    return f"{name}:{lens[0]}"


def capture(torch, fns, launches):
    """One CUDA graph of `launches` calls cycling through fns (each called once first, outside the
    capture, as PyTorch asks)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for fn in fns:
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(launches):
            fns[i % len(fns)]()
    return graph


def time_replays(torch, graphs, iters, launches):
    """{name: median milliseconds per launch} of graphs {name: graph}: iters rounds, each replaying
    every graph once in turn (two untimed rounds first), so that the GPU's clock and power state,
    which sustained work pushes down, reach every variant alike."""
    times = {name: [] for name in graphs}
    for round_ in range(iters + 2):
        for name, graph in graphs.items():
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            graph.replay()
            end.record()
            end.synchronize()
            if round_ >= 2:
                times[name].append(start.elapsed_time(end) / launches)
    return {name: statistics.median(t) for name, t in times.items()}


class ShapeInputs:
    """One shape's pools (FP8 and its exact BF16 cast, `sets` disjoint slot sets), query, plan and
    outputs, made the same way (same seeds) in every process that times the shape."""

    def __init__(self, torch, bench, kv_api, name, heads, lens, l2_bytes, sms):
        device = "cuda"
        self.name, self.heads, self.batch, self.ctx = name, heads, len(lens), lens[0]
        self.tokens = self.batch * self.ctx
        fp8_bytes = self.tokens * ROW
        self.sets = cold_sets(fp8_bytes, l2_bytes)
        self.launches = graph_launches(self.sets)
        self.slots = self.sets * self.tokens
        self.pool_u8 = torch.empty(self.slots, ROW, dtype=torch.uint8, device=device)
        for start in range(0, self.slots, bench.POOL_SLOTS):  # FP32 randoms in pieces, as bench_decode.py does
            piece = self.pool_u8[start:start + bench.POOL_SLOTS]
            piece.copy_(torch.randn(piece.shape, device=device).to(torch.float8_e4m3fn).view(torch.uint8))
        self.pool_bf16 = torch.empty(self.slots, ROW, dtype=torch.bfloat16, device=device)
        kv_api.cast(self.pool_u8, self.pool_bf16)
        gen = torch.Generator(device="cpu").manual_seed(self.batch * 1000003 + heads * 101 + self.ctx)
        perm = torch.randperm(self.slots, generator=gen).to(torch.int32).to(device)
        # disjoint, each in random order
        self.indices = [perm[r * self.tokens:(r + 1) * self.tokens] for r in range(self.sets)]
        self.lens_t, self.indptr, self.q, q_nope, q_pe, sm_scale = bench.request_inputs(lens, heads, device)
        self.sm_scale = sm_scale
        plan = kv_api.plan(self.batch, heads, self.ctx, sms)
        ws = torch.empty(max(plan[2], 16), dtype=torch.uint8, device=device)
        lse = torch.empty(self.batch, heads, dtype=torch.float32, device=device)
        self.out = {k: torch.empty(self.batch, heads, 512, dtype=torch.bfloat16, device=device)
                    for k in ("fp8", "bf16", "fp8_pdl", "bf16_pdl", "fp8_after_write", "fp8_after_write_pdl", "ref")}
        self.ready = 1 if plan[0] == 0 else 0
        if self.ready:  # a length-aware plan: its split table once (every set has the same lengths)
            kv_api.decode(q_nope, q_pe, self.pool_u8, 0, self.indptr, self.indices[0], self.lens_t, self.out["fp8"],
                          lse, sm_scale, plan, ws, mode=2)
        self.byte_counts = {"fp8": fp8_bytes, "bf16": 2 * fp8_bytes, "fi_fp8": fp8_bytes, "fi_bf16": 2 * fp8_bytes}
        self.pools = {"fp8": (self.pool_u8, 0), "bf16": (self.pool_bf16, 1)}
        self._decode = lambda pool, dtype, key, idx, mode: kv_api.decode(
            q_nope, q_pe, pool, dtype, self.indptr, idx, self.lens_t, self.out[key], lse, sm_scale, plan, ws, mode)

    def ours(self, key, out_key, idx, mode=None):
        """Our kernel on pool `key` (fp8 or bf16) and slot set idx, writing out[out_key]."""
        pool, dtype = self.pools[key]
        mode = self.ready if mode is None else mode
        return lambda: self._decode(pool, dtype, out_key, idx, mode)

    def flashinfer(self, torch, bench, fi, key, sets=None):
        """FlashInfer's planned run() for each of the first `sets` slot sets (all by default), FP8
        (fi_fp8) or BF16 (fi_bf16) KV."""
        dtype, pool = ((torch.float8_e4m3fn, self.pool_u8.view(torch.float8_e4m3fn)) if key == "fi_fp8"
                       else (torch.bfloat16, self.pool_bf16))
        return [bench.flashinfer_runner(fi["api"], self.q, pool, self.indptr, idx, self.lens_t, self.sm_scale, dtype,
                                        fi["backend"])[0] for idx in self.indices[:sets]]

    def row(self, variants, **notes):
        return {"shape": self.name, "batch": self.batch, "heads": self.heads, "context": self.ctx,
                "kv_tokens": self.tokens, "ragged": False, "cold_sets": self.sets, "graph_launches": self.launches,
                "pool_slots": self.slots, **notes, "variants": variants}


def run_shape(torch, bench, kv_api, inputs, flush, iters, fi):
    """{timing: row} for one shape (ShapeInputs), rows in bench.json's form: isolated, replay and
    (with programmatic launches) replay_pdl. The span timing runs in a process of its own (span_shape)."""
    s = inputs
    q_source = s.q.clone()

    def after_query_write(decode):
        def layer():
            s.q.copy_(q_source)
            decode()
        return layer

    iso, notes, graphs = {}, {}, {}
    alive = []  # a captured graph holds raw pointers: FlashInfer's wrappers (their buffers) must outlive it
    # Each launch a programmatic dependent of the kernel before it (libraries of ABI 4 and later).
    pdl_mode = s.ready | kv_api.MODE_PROGRAMMATIC if kv_api.programmatic_abi else None
    for key in s.pools:
        iso[key] = bench.variant_result(bench.time_variant(s.ours(key, key, s.indices[0]), flush, iters),
                                        s.byte_counts[key])
        graphs[key] = capture(torch, [s.ours(key, key, idx) for idx in s.indices], s.launches)
        if pdl_mode is not None:
            graphs[key + "_pdl"] = capture(torch, [s.ours(key, key + "_pdl", idx, pdl_mode) for idx in s.indices],
                                           s.launches)
    if pdl_mode is not None:
        # After another kernel, as in a server's layer: PyTorch's copy kernel writes the query (it
        # triggers no dependent early, so PDL can only hide the launch), then the FP8 decode.
        for suffix, mode in (("", s.ready), ("_pdl", pdl_mode)):
            graphs["fp8_after_write" + suffix] = capture(
                torch, [after_query_write(s.ours("fp8", "fp8_after_write" + suffix, idx, mode)) for idx in s.indices],
                s.launches)
    if fi["api"] is not None:
        for key in ("fi_fp8", "fi_bf16"):
            try:
                runs = s.flashinfer(torch, bench, fi, key)
                alive.append(runs)
                iso[key] = bench.variant_result(bench.time_variant(runs[0], flush, iters), s.byte_counts[key])
                graphs[key] = capture(torch, runs, s.launches)
            except Exception as exc:  # the reason goes into the results
                notes[key + "_error"] = bench._short_error(exc)
    replayed = time_replays(torch, graphs, iters, s.launches)
    del graphs, alive  # their private memory goes back at empty_cache() below
    after = {k: replayed.pop(k) for k in list(replayed) if k.startswith("fp8_after_write")}
    if after:  # us per (query write + decode), in stream order and programmatic
        notes["after_query_write_us"] = {"stream_order": round(after["fp8_after_write"] * 1e3, 2),
                                         "programmatic": round(after["fp8_after_write_pdl"] * 1e3, 2)}
    rep = {k: bench.variant_result(ms, s.byte_counts[k]) for k, ms in replayed.items() if not k.endswith("_pdl")}
    pdl = None
    if pdl_mode is not None:  # FlashInfer's replays stand (its plan(enable_pdl=) is not used)
        pdl = {**rep, **{k[:-4]: bench.variant_result(ms, s.byte_counts[k[:-4]])
                         for k, ms in replayed.items() if k.endswith("_pdl")}}
    # Each graph's last launch ran on the last set: its output must be what an eager launch gives,
    # and FP8 must equal BF16 on the exactly cast pool, bit for bit.
    s.ours("fp8", "ref", s.indices[-1])()
    torch.cuda.synchronize()
    bits = {k: s.out[k].view(torch.int16) for k in s.out if k == "ref" or k in replayed or k in after}
    fp8_keys = ("fp8", "fp8_pdl", "fp8_after_write", "fp8_after_write_pdl")
    notes["replay_matches_eager"] = all(torch.equal(bits[k], bits["ref"]) for k in fp8_keys if k in bits)
    notes["fp8_bf16_bit_identical"] = all(torch.equal(bits[k], bits["ref"]) for k in ("bf16", "bf16_pdl") if k in bits)
    rows = {"isolated": iso, "replay": rep, "replay_pdl": pdl}
    return {m: s.row(v, **notes) for m, v in rows.items() if v is not None}


def span_shape(torch, bench, inputs, flush, iters, fi):
    """The span timing's row for one shape: each variant alone on the first slot set, after the flush."""
    s = inputs
    calls, notes = {key: s.ours(key, key, s.indices[0]) for key in s.pools}, {}
    alive = []
    if fi["api"] is not None:
        for key in ("fi_fp8", "fi_bf16"):
            try:
                alive.append(s.flashinfer(torch, bench, fi, key, sets=1))  # timed on the first set only
                calls[key] = alive[-1][0]
            except Exception as exc:  # the reason goes into the results
                notes[key + "_error"] = bench._short_error(exc)
    try:
        spans = time_spans(torch, calls, flush, iters)
    except SpanError as exc:
        return s.row({}, span_error=str(exc), **notes)
    return s.row({k: bench.variant_result(ms, s.byte_counts[k]) for k, ms in spans.items()}, **notes)


MODES = (("isolated", "isolated launches"), ("span", "isolated launches, GPU span (CUPTI)"),
         ("replay", "CUDA-graph replay"), ("replay_pdl", "CUDA-graph replay, our launches programmatic (PDL)"))


def span_timing(torch, bench, kv_api, shapes, props, flush, iters, fi, meta):
    """The span timing's result: its own copy (1 GiB) and floor (a one-element zero_()), then a row
    per shape that the profiler could place (the others' reasons go into the meta)."""
    timer = bench.span_timer(flush, iters)
    copy_gbps, _ = bench.copy_bandwidth(timer)
    tiny = torch.empty(1, dtype=torch.int32, device="cuda")
    floor_ms = timer({"zero_": lambda: tiny.zero_()})["zero_"]
    rows, errors = [], {}
    for name, heads, lens in shapes:
        inputs = ShapeInputs(torch, bench, kv_api, name, heads, lens, props.L2_cache_size, props.multi_processor_count)
        row = span_shape(torch, bench, inputs, flush, iters, fi)
        del inputs
        torch.cuda.empty_cache()
        if row["variants"]:
            rows.append(row)
        else:
            errors[f"{name}:{lens[0]}"] = row["span_error"]
    return {"meta": {**meta, "timing": "span", "timing_floor_us": round(floor_ms * 1e3, 2),
                     **({"span_errors": errors} if errors else {})},
            "copy_gbps": copy_gbps / 1e9, "rows": rows}


def span_timing_in_child(args):
    """The span timing run by this script in a second process (--span-only), after this one's
    timings: once CUPTI had traced a process, later event timings in it came out slower (8-12% at
    B=32 16K in two of five probe processes; NOTES.md, twenty-seventh session). Its result, or
    {"error": why}."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, os.path.abspath(__file__), "--lib", args.lib, "--out", tmp, "--iters", str(args.iters),
               "--shapes", args.shapes, "--flashinfer-backend", args.flashinfer_backend, "--span-only"]
        done = subprocess.run(cmd, check=False, capture_output=True, text=True)
        path = os.path.join(tmp, "span.json")
        if done.returncode != 0 or not os.path.exists(path):
            return {"error": f"exit {done.returncode}: {last_lines(done.stderr)}"}
        with open(path) as f:
            return json.load(f)["span"]


def last_lines(text, lines=8):
    return " | ".join(text.strip().splitlines()[-lines:])


def write_markdown(result, path):
    modes = [(m, title) for m, title in MODES if m in result]
    first = result[modes[0][0]]
    meta = first["meta"]
    keys = ["fp8", "bf16", "fi_fp8", "fi_bf16"]
    lines = [f"# MLA decode, isolated launches against CUDA-graph replay — {meta['gpu']}, {meta['date']}", "",
             "Copy bandwidth (1 GiB, read + write; timed as a span for `span`, by events otherwise): " + ", ".join(
                 f"{m} {result[m]['copy_gbps']:.0f} GB/s" for m, _ in modes) + ". Timing floor (a one-element "
             "zero_() timed the same way): " + ", ".join(f"{m} {result[m]['meta']['timing_floor_us']} us"
                                                         for m, _ in modes) +
             ". Times are medians in us per launch. `span`: the isolated launches' GPU time from CUPTI (first kernel's "
             "start to last kernel's end), as FlashInfer's own benchmarks time kernels; its copy is timed that way "
             "too. `replay`: a CUDA graph of N launches back to back, each on its "
             "own slot set (`sets`, so no launch finds its KV in the L2); `replay_pdl`: the same with our launches "
             "programmatic dependents of the one before (FlashInfer's replay times are repeated: its wrapper's PDL "
             "option, where it has one, is not used). `%copy`: the FP8 kernel's KV bandwidth over the copy's; "
             "`bf16/fp8` and `fi_fp8/fp8`: how many times faster our FP8 kernel is. `replay = eager`: the last "
             "replayed launch's output equals an eager launch's on the same set; `bit-identical`: FP8 against BF16 "
             "there.", "",
             "| shape | B | H | ctx | sets | N | timing | " + " | ".join(f"{k} us" for k in keys) +
             " | %copy | bf16/fp8 | fi_fp8/fp8 |", "|" + "---|" * (7 + len(keys) + 3)]
    by_shape = {m: {(r["shape"], r["context"]): r for r in result[m]["rows"]} for m, _ in modes}
    for shape in first["rows"]:
        for m, _ in modes:
            r = by_shape[m].get((shape["shape"], shape["context"]))
            if r is None:  # e.g. no span: the reason is in the row's notes below
                continue
            v = r["variants"]
            cells = [f"{v[k]['ms'] * 1e3:.1f}" if k in v else "-" for k in keys]
            pct = f"{100 * v['fp8']['gbps'] / result[m]['copy_gbps']:.1f}%"
            ratios = [f"{v[k]['ms'] / v['fp8']['ms']:.2f}" if k in v else "-" for k in ("bf16", "fi_fp8")]
            lines.append(f"| {r['shape']} | {r['batch']} | {r['heads']} | {r['context']} | {r['cold_sets']} | "
                         f"{r['graph_launches']} | {m} | " + " | ".join([*cells, pct, *ratios]) + " |")
    for r in first["rows"]:
        after = r.get("after_query_write_us")
        lines.append(f"\n{r['shape']} ctx={r['context']}: replay = eager "
                     f"{'yes' if r['replay_matches_eager'] else 'NO'}, FP8/BF16 bit-identical "
                     f"{'yes' if r['fp8_bf16_bit_identical'] else 'NO'}" +
                     (f"; query write + FP8 decode, replayed: {after['stream_order']} us in stream order, "
                      f"{after['programmatic']} us programmatic" if after else "") +
                     "".join(f"; {k[:-6]} not measured: {r[k]}" for k in r if k.endswith("_error")))
    for m, title in modes:
        lines += ["", timing_markdown(result[m], title)]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True, help="path of libkvpatch_mla_capi.so")
    ap.add_argument("--out", required=True, help="folder for replay.json and replay.md")
    ap.add_argument("--iters", type=int, default=15)
    ap.add_argument("--shapes", default="", help="comma-separated NAME:CTX to keep (e.g. b1_h16:131072; default: "
                                                 "every uniform shape a target applies to)")
    ap.add_argument("--flashinfer-backend", default="fa3")
    ap.add_argument("--span-only", action="store_true",
                    help="time only the span timing and write span.json (how the full run times it, in a process "
                         "of its own after the other timings)")
    args = ap.parse_args()

    import bench_decode as bench
    import torch

    shapes = replay_shapes(bench.SHAPES)
    keep = set(filter(None, args.shapes.split(",")))
    if keep:
        known = {shape_key(s) for s in shapes}
        if keep - known:
            ap.error(f"--shapes: {sorted(keep - known)} not among the target shapes {sorted(known)}")
        shapes = [s for s in shapes if shape_key(s) in keep]
    os.makedirs(args.out, exist_ok=True)
    kv_api = bench.Kvpatch(args.lib)
    props = torch.cuda.get_device_properties(0)
    fi_api, fi_version, fi_error = bench.load_flashinfer()
    meta = {"gpu": props.name, "sms": props.multi_processor_count, "l2_bytes": props.L2_cache_size,
            "date": datetime.date.today().isoformat(), "torch": torch.__version__,
            "flashinfer": f"flashinfer {fi_version} backend={args.flashinfer_backend}" if fi_api
            else f"not run ({fi_error})"}
    print(meta, flush=True)
    flush = bench.l2_flusher()
    fi = {"api": fi_api, "backend": args.flashinfer_backend}
    if args.span_only:  # the child process of span_timing_in_child()
        result = {"span": span_timing(torch, bench, kv_api, shapes, props, flush, args.iters, fi, meta)}
        with open(os.path.join(args.out, "span.json"), "w") as f:
            json.dump(result, f, indent=1)
        return
    copy_gbps, _ = bench.copy_bandwidth(bench.event_timer(flush, args.iters))
    tiny = torch.empty(1, dtype=torch.int32, device="cuda")
    floor_graph = {"zero_": capture(torch, [lambda: tiny.zero_()], MIN_GRAPH_LAUNCHES)}
    floors = {"isolated": bench.time_variant(lambda: tiny.zero_(), flush, args.iters) * 1e3,
              "replay": time_replays(torch, floor_graph, args.iters, MIN_GRAPH_LAUNCHES)["zero_"] * 1e3}
    print(f"copy: {copy_gbps / 1e9:.0f} GB/s; timing floor: isolated {floors['isolated']:.1f} us, "
          f"replay {floors['replay']:.2f} us per launch", flush=True)
    rows = {m: [] for m, _ in MODES}
    for name, heads, lens in shapes:
        inputs = ShapeInputs(torch, bench, kv_api, name, heads, lens, props.L2_cache_size, props.multi_processor_count)
        found = run_shape(torch, bench, kv_api, inputs, flush, args.iters, fi)
        del inputs
        torch.cuda.empty_cache()
        for m, row in found.items():
            rows[m].append(row)
        iso = found["isolated"]
        print(f"{name:9s} ctx={lens[0]:<6d} sets={iso['cold_sets']} N={iso['graph_launches']} " +
              " ".join(f"{k}=" + "/".join(f"{found[m]['variants'][k]['ms'] * 1e3:.1f}" for m, _ in MODES
                                         if m in found and k in found[m]["variants"]) + "us"
                       for k in iso["variants"]) +
              f" replay=eager:{iso['replay_matches_eager']} bit-identical:{iso['fp8_bf16_bit_identical']}" +
              "".join(f" {k}={iso[k]}" for k in iso if k.endswith("_error")), flush=True)
    floors["replay_pdl"] = floors["replay"]
    result = {m: {"meta": {**meta, "timing": m, "timing_floor_us": round(floors[m], 2)},
                  "copy_gbps": copy_gbps / 1e9, "rows": rows[m]} for m, _ in MODES if rows[m]}
    span = span_timing_in_child(args)
    if "rows" in span:
        result["span"] = span
        for r in span["rows"]:
            print(f"{r['shape']:9s} ctx={r['context']:<6d} span: " +
                  " ".join(f"{k}={v['ms'] * 1e3:.1f}us" for k, v in r["variants"].items()), flush=True)
    else:
        result["isolated"]["meta"]["span_not_timed"] = span["error"]
        print(f"span timing not run: {span['error']}", flush=True)
    result = {m: result[m] for m, _ in MODES if m in result}  # the table's order
    with open(os.path.join(args.out, "replay.json"), "w") as f:
        json.dump(result, f, indent=1)
    write_markdown(result, os.path.join(args.out, "replay.md"))
    with open(os.path.join(args.out, "replay.md")) as f:
        sys.stdout.write(f.read())

if __name__ == "__main__":
    main()
