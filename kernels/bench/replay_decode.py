#!/usr/bin/env python3
"""Issue 3's target shapes timed three ways, side by side in one process:

  isolated  as bench_decode.py times every variant: CUDA events around one launch, the L2 flushed
            (a 256 MB read) before it. Each launch also pays what the events and the launch cost
            around it (the "timing floor": a one-element zero_() timed the same way).
  span      the same launches, each after the same flush, timed as FlashInfer's benchmarks time a
            kernel by default: the GPU span of the call's kernels from CUPTI's activity records, first
            start to last end (kernel_span.py). No launch or event cost; the gap between our decode
            grid and its merge grid stays in. Its copy and its floor are timed the same way.
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
capturable (the reason is kept if not). The copy (1 GiB, isolated) is the bandwidth ceiling for
all three; targets.py judges each timing on its own. Back to back, the H200 can reach its power cap
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
import sys

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


def run_shape(torch, bench, kv_api, name, heads, lens, l2_bytes, flush, iters, sms, fi):
    """{timing: row} for one shape, rows in bench.json's form, for each timing of MODES it got (no
    replay_pdl without programmatic launches, no span if the profiler could not place the kernels)."""
    device = "cuda"
    batch, ctx = len(lens), lens[0]
    tokens = batch * ctx
    fp8_bytes = tokens * ROW
    sets = cold_sets(fp8_bytes, l2_bytes)
    launches = graph_launches(sets)
    slots = sets * tokens
    pool_u8 = torch.empty(slots, ROW, dtype=torch.uint8, device=device)
    for start in range(0, slots, bench.POOL_SLOTS):  # FP32 randoms in pieces, as bench_decode.py does
        piece = pool_u8[start:start + bench.POOL_SLOTS]
        piece.copy_(torch.randn(piece.shape, device=device).to(torch.float8_e4m3fn).view(torch.uint8))
    pool_bf16 = torch.empty(slots, ROW, dtype=torch.bfloat16, device=device)
    kv_api.cast(pool_u8, pool_bf16)
    gen = torch.Generator(device="cpu").manual_seed(batch * 1000003 + heads * 101 + ctx)
    perm = torch.randperm(slots, generator=gen).to(torch.int32).to(device)
    indices = [perm[r * tokens:(r + 1) * tokens] for r in range(sets)]  # disjoint, each in random order
    lens_t, indptr, q, q_nope, q_pe, sm_scale = bench.request_inputs(lens, heads, device)
    plan = kv_api.plan(batch, heads, ctx, sms)
    ws = torch.empty(max(plan[2], 16), dtype=torch.uint8, device=device)
    lse = torch.empty(batch, heads, dtype=torch.float32, device=device)
    out = {k: torch.empty(batch, heads, 512, dtype=torch.bfloat16, device=device)
           for k in ("fp8", "bf16", "fp8_pdl", "bf16_pdl", "fp8_after_write", "fp8_after_write_pdl", "ref")}
    ready = 1 if plan[0] == 0 else 0
    if ready:  # a length-aware plan: its split table once (every set has the same lengths)
        kv_api.decode(q_nope, q_pe, pool_u8, 0, indptr, indices[0], lens_t, out["fp8"], lse, sm_scale, plan, ws, mode=2)

    def ours(pool, dtype, key, idx, mode=ready):
        return lambda: kv_api.decode(q_nope, q_pe, pool, dtype, indptr, idx, lens_t, out[key], lse, sm_scale, plan,
                                     ws, mode)

    q_source = q.clone()

    def after_query_write(decode):
        def layer():
            q.copy_(q_source)
            decode()
        return layer

    byte_counts = {"fp8": fp8_bytes, "bf16": 2 * fp8_bytes, "fi_fp8": fp8_bytes, "fi_bf16": 2 * fp8_bytes}
    pools = {"fp8": (pool_u8, 0), "bf16": (pool_bf16, 1)}
    iso, notes, graphs = {}, {}, {}
    alone = {}  # each variant's call on the first set, timed alone: by events (iso) and by span
    alive = []  # a captured graph holds raw pointers: FlashInfer's wrappers (their buffers) must outlive it
    # Each launch a programmatic dependent of the kernel before it (libraries of ABI 4 and later).
    pdl_mode = ready | kv_api.MODE_PROGRAMMATIC if kv_api.programmatic_abi else None
    for key, (pool, dtype) in pools.items():
        alone[key] = ours(pool, dtype, key, indices[0])
        iso[key] = bench.variant_result(bench.time_variant(alone[key], flush, iters), byte_counts[key])
        graphs[key] = capture(torch, [ours(pool, dtype, key, idx) for idx in indices], launches)
        if pdl_mode is not None:
            graphs[key + "_pdl"] = capture(torch, [ours(pool, dtype, key + "_pdl", idx, pdl_mode) for idx in indices],
                                           launches)
    if pdl_mode is not None:
        # After another kernel, as in a server's layer: PyTorch's copy kernel writes the query (it
        # triggers no dependent early, so PDL can only hide the launch), then the FP8 decode.
        for suffix, mode in (("", ready), ("_pdl", pdl_mode)):
            graphs["fp8_after_write" + suffix] = capture(
                torch, [after_query_write(ours(pool_u8, 0, "fp8_after_write" + suffix, idx, mode)) for idx in indices],
                launches)
    if fi["api"] is not None:
        for key, dtype, pool in (("fi_fp8", torch.float8_e4m3fn, pool_u8.view(torch.float8_e4m3fn)),
                                 ("fi_bf16", torch.bfloat16, pool_bf16)):
            try:
                runs = [bench.flashinfer_runner(fi["api"], q, pool, indptr, idx, lens_t, sm_scale, dtype,
                                                fi["backend"])[0] for idx in indices]
                alive.append(runs)
                alone[key] = runs[0]
                iso[key] = bench.variant_result(bench.time_variant(runs[0], flush, iters), byte_counts[key])
                graphs[key] = capture(torch, runs, launches)
            except Exception as exc:  # the reason goes into the results
                notes[key + "_error"] = bench._short_error(exc)
    span = None
    try:
        span = {k: bench.variant_result(ms, byte_counts[k]) for k, ms in time_spans(torch, alone, flush, iters).items()}
    except SpanError as exc:  # the reason goes into the results; the other timings stand
        notes["span_error"] = str(exc)
    replayed = time_replays(torch, graphs, iters, launches)
    del graphs, alive  # their private memory goes back at empty_cache() below
    after = {k: replayed.pop(k) for k in list(replayed) if k.startswith("fp8_after_write")}
    if after:  # us per (query write + decode), in stream order and programmatic
        notes["after_query_write_us"] = {"stream_order": round(after["fp8_after_write"] * 1e3, 2),
                                         "programmatic": round(after["fp8_after_write_pdl"] * 1e3, 2)}
    rep = {k: bench.variant_result(ms, byte_counts[k]) for k, ms in replayed.items() if not k.endswith("_pdl")}
    pdl = None
    if pdl_mode is not None:  # FlashInfer's replays stand (its plan(enable_pdl=) is not used)
        pdl = {**rep, **{k[:-4]: bench.variant_result(ms, byte_counts[k[:-4]])
                         for k, ms in replayed.items() if k.endswith("_pdl")}}
    # Each graph's last launch ran on the last set: its output must be what an eager launch gives,
    # and FP8 must equal BF16 on the exactly cast pool, bit for bit.
    ours(pool_u8, 0, "ref", indices[-1])()
    torch.cuda.synchronize()
    bits = {k: out[k].view(torch.int16) for k in out if k == "ref" or k in replayed or k in after}
    fp8_keys = ("fp8", "fp8_pdl", "fp8_after_write", "fp8_after_write_pdl")
    notes["replay_matches_eager"] = all(torch.equal(bits[k], bits["ref"]) for k in fp8_keys if k in bits)
    notes["fp8_bf16_bit_identical"] = all(torch.equal(bits[k], bits["ref"]) for k in ("bf16", "bf16_pdl") if k in bits)
    base = {"shape": name, "batch": batch, "heads": heads, "context": ctx, "kv_tokens": tokens, "ragged": False,
            "cold_sets": sets, "graph_launches": launches, "pool_slots": slots, **notes}
    del pool_u8, pool_bf16
    torch.cuda.empty_cache()
    rows = {"isolated": iso, "span": span, "replay": rep, "replay_pdl": pdl}
    return {m: {**base, "variants": v} for m, v in rows.items() if v is not None}


MODES = (("isolated", "isolated launches"), ("span", "isolated launches, GPU span (CUPTI)"),
         ("replay", "CUDA-graph replay"), ("replay_pdl", "CUDA-graph replay, our launches programmatic (PDL)"))


def copy_span_gbps(torch):
    """The 1 GiB device copy's bandwidth (GB/s) with its time taken as a GPU span."""
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    ms = time_spans(torch, {"copy": lambda: dst.copy_(src)}, lambda: None, 15)["copy"]
    return 2 * src.numel() / (ms * 1e-3) / 1e9


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
    args = ap.parse_args()

    import bench_decode as bench
    import torch

    shapes = replay_shapes(bench.SHAPES)
    keep = set(filter(None, args.shapes.split(",")))
    if keep:
        known = {f"{n}:{lens[0]}" for n, _, lens in shapes}
        if keep - known:
            ap.error(f"--shapes: {sorted(keep - known)} not among the target shapes {sorted(known)}")
        shapes = [s for s in shapes if f"{s[0]}:{s[2][0]}" in keep]
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
    copy_gbps, _ = bench.copy_bandwidth(args.iters)
    tiny = torch.empty(1, dtype=torch.int32, device="cuda")
    floor_graph = {"zero_": capture(torch, [lambda: tiny.zero_()], MIN_GRAPH_LAUNCHES)}
    floors = {"isolated": bench.time_variant(lambda: tiny.zero_(), flush, args.iters) * 1e3,
              "replay": time_replays(torch, floor_graph, args.iters, MIN_GRAPH_LAUNCHES)["zero_"] * 1e3}
    copies = {"isolated": copy_gbps / 1e9, "replay": copy_gbps / 1e9, "replay_pdl": copy_gbps / 1e9}
    try:  # the span timing's own copy and floor; without them it is left out, the reason printed
        copies["span"] = copy_span_gbps(torch)
        floors["span"] = time_spans(torch, {"zero_": lambda: tiny.zero_()}, flush, args.iters)["zero_"] * 1e3
    except SpanError as exc:
        print(f"span timing left out: {exc}", flush=True)
    print(f"copy: {copy_gbps / 1e9:.0f} GB/s by events, {copies.get('span', float('nan')):.0f} by span; "
          f"timing floor: isolated {floors['isolated']:.1f} us, span {floors.get('span', float('nan')):.2f} us, "
          f"replay {floors['replay']:.2f} us per launch", flush=True)
    fi = {"api": fi_api, "backend": args.flashinfer_backend}
    rows = {m: [] for m, _ in MODES}
    for name, heads, lens in shapes:
        found = run_shape(torch, bench, kv_api, name, heads, lens, props.L2_cache_size, flush, args.iters,
                          props.multi_processor_count, fi)
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
                  "copy_gbps": copies[m], "rows": rows[m]} for m, _ in MODES if rows[m] and m in copies}
    with open(os.path.join(args.out, "replay.json"), "w") as f:
        json.dump(result, f, indent=1)
    write_markdown(result, os.path.join(args.out, "replay.md"))
    with open(os.path.join(args.out, "replay.md")) as f:
        sys.stdout.write(f.read())


if __name__ == "__main__":
    main()
