#!/usr/bin/env python3
"""MLA decode benchmark on one GPU, every variant side by side in one process, per shape:

  fp8        our kernel on the FP8 E4M3 pool (the fix), with plan_decode's plan. A length-aware
             plan's split table is made once per shape before timing (launch_decode_schedule: once
             per decode step in a server, like FlashInfer's plan()); the time is one layer's launch
  fp8_self   the same, the launch making its own split table (launch_decode alone)
  schedule   launch_decode_schedule alone (once per decode step)
  fp8_uniform  our FP8 kernel on the uniform plan (every request the same split count: plan_decode's
             choice before length-aware plans)
  (fp8_self, schedule and fp8_uniform only where plan_decode's plan is length-aware)
  bf16       our kernel on a BF16 copy of the pool
  cast+bf16  the original bug: cast the whole FP8 pool to BF16, then our BF16 kernel (the pool: the
             report's 495,552 slots, or one slot per token when the batch holds more tokens)
  gather+bf16  dequantize only the referenced slots (PyTorch index + cast), then our BF16 kernel
  fi_fp8 / fi_bf16  FlashInfer BatchMLAPagedAttentionWrapper on the same pool (when importable; reason kept
             if not). Written against flashinfer-python 0.7.0.post1's API, which 0.7.4 keeps
             (kernels/bench/flashinfer_wheels.sh, flashinfer_env.sh); plan(), JIT/AOT module load and
             buffers are outside the timed region.
  copy       a device-to-device copy, the bandwidth ceiling (bytes read + written)

Every token has its own slot in the pool (a random permutation): no two tokens share a KV row, so the
L2 serves only what a kernel itself reads twice (our kernel at H > 16: one read per head group of 16 or 32 heads).
Timing: CUDA events around each variant, the L2 flushed (a 256 MB read) before every timed run,
warm-up first, median of --iters runs. With --timing guarded, a ~200 us spin kernel follows the flush,
so the GPU is still busy when the host makes the call: a call's host time beyond the flush (FlashInfer's
Python run(): 49-72 us) is not counted. It is not neutral: after the spin our FP8 kernel measured 2-4 us
slower at B >= 32, where it runs at the power cap (NOTES.md item 34). With --timing span, each run's
GPU span instead (CUPTI through PyTorch's profiler, kernel_span.py: first kernel's start to last
kernel's end, as FlashInfer's own benchmarks time kernels), the copy and the floor too; no launch or
host time is counted.
KV bandwidth = KV bytes the attention kernel of that variant reads (576 B/token FP8, 1152 B/token
BF16) / the variant's whole time (conversions included).
Writes JSON, a Markdown table and a PNG plot of bandwidth against context length.
Usage: bench_decode.py --lib build/kernels/libkvpatch_mla_capi.so --out results/
"""
import argparse
import ctypes
import datetime
import json
import math
import os
import statistics
import sys
import time
import traceback

import torch

POOL_SLOTS = 495_552  # GLM-5 per-layer pool of the original report
ROW = 576
L2_FLUSH_BYTES = 256 << 20


def pool_slots(tokens):
    """Slots of the pool a shape runs on: the report's pool, or one slot per token when the batch holds
    more tokens than that (a server's pool holds every token in flight). Every token gets its own slot:
    two tokens sharing a slot would let the second read come from the L2 and flatter the bandwidth."""
    return max(POOL_SLOTS, tokens)


def ragged_lengths(batch, low, high, seed):
    gen = torch.Generator(device="cpu").manual_seed(seed)
    return torch.randint(low, high + 1, (batch,), generator=gen).tolist()


# (name, heads, request lengths): sweeps for the plot, the target shapes, then ragged
# batches (not the shapes; targets.py leaves them out): one long request among short ones,
# and lengths drawn uniformly from 1K-32K.
SHAPES = (
    [("b1_h16", 16, [ctx]) for ctx in (1024, 4096, 16384, 32768, 65536, 131072)]
    + [("b32_h16", 16, [ctx] * 32) for ctx in (1024, 4096, 8192, 16384, 32768)]
    + [("b64_h16", 16, [8192] * 64), ("b32_h32", 32, [16384] * 32), ("b8_h32", 32, [32768] * 8),
       ("b1_h32", 32, [131072]), ("b16_h64", 64, [16384] * 16), ("b16_h128", 128, [16384] * 16),
       ("b1_h128", 128, [65536])]
    + [("ragged_1x128k_31x4k", 16, [131072] + [4096] * 31),
       ("ragged_b32_1k_32k", 16, ragged_lengths(32, 1024, 32768, 3)),
       ("ragged_b16_h64_1k_32k", 64, ragged_lengths(16, 1024, 32768, 4))]
)


class Kvpatch:
    """Our kernels through the C ABI (kernels/include/kvpatch/mla_capi.h). Unlike the Python API's loader
    it also drives libraries with older ABIs, the reference side of kernels/bench/ab.sh."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        c = ctypes
        # Libraries built before length-aware plans (kernels/bench/ab.sh's reference side) lack
        # kvpatch_mla_plan_uniform and take no block count.
        self.length_aware_abi = hasattr(self.lib, "kvpatch_mla_plan_uniform")
        # Libraries before wide blocks lack kvpatch_mla_abi_version and take no head rows.
        version = self.lib.kvpatch_mla_abi_version() if hasattr(self.lib, "kvpatch_mla_abi_version") else 0
        self.rows_abi = version >= 3
        self.programmatic_abi = version >= 4  # MODE_PROGRAMMATIC in decode()'s mode
        ip, sp = c.POINTER(c.c_int), c.POINTER(c.c_size_t)
        rows_out = [ip] if self.rows_abi else []
        plan_outputs = [ip, ip, sp] if self.length_aware_abi else [ip, sp]
        self.lib.kvpatch_mla_plan.argtypes = [*([c.c_int] * 4), *plan_outputs, *rows_out]
        if self.length_aware_abi:
            self.lib.kvpatch_mla_plan_uniform.argtypes = [c.c_int] * 4 + [ip, sp] + rows_out
        ll, vp = c.c_longlong, c.c_void_p
        self.lib.kvpatch_mla_decode.argtypes = [
            vp, ll, ll, vp, ll, ll, vp, ll, vp, ll, c.c_int, vp, vp, vp, c.c_int, c.c_int, c.c_int,
            c.c_float, c.c_float, c.c_float, vp, ll, ll, vp, c.c_int] + ([c.c_int] if self.length_aware_abi else []) + (
            [c.c_int] if self.rows_abi else []) + [c.c_size_t, vp] + ([c.c_int] if self.length_aware_abi else []) + [vp]
        self.lib.kvpatch_mla_cast_fp8_to_bf16.argtypes = [vp, vp, c.c_size_t, vp]
        self.lib.kvpatch_mla_workspace_bytes.argtypes = [c.c_int, c.c_int, c.c_int]
        self.lib.kvpatch_mla_workspace_bytes.restype = c.c_size_t

    def plan(self, batch, heads, max_len, sms):
        """(splits, blocks, workspace bytes, head rows); splits 0: a length-aware plan over `blocks` blocks per
        head group; head rows 16 or 32 (0 from libraries before wide blocks: 16 heads per block)."""
        splits, blocks, ws, rows = ctypes.c_int(), ctypes.c_int(), ctypes.c_size_t(), ctypes.c_int()
        rows_arg = [ctypes.byref(rows)] if self.rows_abi else []
        if not self.length_aware_abi:
            self.lib.kvpatch_mla_plan(batch, heads, max_len, sms, ctypes.byref(splits), ctypes.byref(ws))
            return splits.value, 0, ws.value, 0
        self.lib.kvpatch_mla_plan(batch, heads, max_len, sms, ctypes.byref(splits), ctypes.byref(blocks),
                                  ctypes.byref(ws), *rows_arg)
        return splits.value, blocks.value, ws.value, rows.value

    def plan_uniform(self, batch, heads, max_len, sms):
        splits, ws, rows = ctypes.c_int(), ctypes.c_size_t(), ctypes.c_int()
        self.lib.kvpatch_mla_plan_uniform(batch, heads, max_len, sms, ctypes.byref(splits), ctypes.byref(ws),
                                          *([ctypes.byref(rows)] if self.rows_abi else []))
        return splits.value, 0, ws.value, rows.value

    def workspace_bytes(self, batch, heads, splits):
        return self.lib.kvpatch_mla_workspace_bytes(batch, heads, splits)

    MODE_PROGRAMMATIC = 4

    def decode(self, q_nope, q_pe, kv, kv_dtype, indptr, indices, lens, out, lse, sm_scale, plan, ws, mode=0):
        """mode: 0 launch_decode, 1 with schedule_ready, 2 launch_decode_schedule (length-aware plans);
        plus MODE_PROGRAMMATIC: launched as a programmatic dependent of the previous kernel (ABI 4)."""
        elem = kv.element_size()
        kpe_ptr = kv.data_ptr() + 512 * elem
        stream = torch.cuda.current_stream().cuda_stream
        err = self.lib.kvpatch_mla_decode(
            q_nope.data_ptr(), q_nope.stride(0), q_nope.stride(1), q_pe.data_ptr(), q_pe.stride(0), q_pe.stride(1),
            kv.data_ptr(), kv.stride(0), kpe_ptr, kv.stride(0), kv_dtype, indptr.data_ptr(), indices.data_ptr(),
            lens.data_ptr(), lens.numel(), q_nope.shape[1], 1, sm_scale, 1.0, 1.0, out.data_ptr(), out.stride(0),
            out.stride(1), lse.data_ptr() if lse is not None else None, plan[0],
            *([plan[1]] if self.length_aware_abi else []), *([plan[3]] if self.rows_abi else []), ws.numel(),
            ws.data_ptr(), *([mode] if self.length_aware_abi else []), stream)
        if err != 0:
            raise RuntimeError(f"kvpatch_mla_decode returned CUDA error {err}")

    def cast(self, src, dst):
        err = self.lib.kvpatch_mla_cast_fp8_to_bf16(src.data_ptr(), dst.data_ptr(), src.numel(),
                                                    torch.cuda.current_stream().cuda_stream)
        if err != 0:
            raise RuntimeError(f"kvpatch_mla_cast_fp8_to_bf16 returned CUDA error {err}")


def iteration_times(fn, flush, iters, warmup=3):
    """Milliseconds of fn() in each of iters runs, each after an L2 flush, by CUDA events."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        flush()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return times


def time_variant(fn, flush, iters, warmup=3):
    """Median milliseconds of fn() over iters runs, each after an L2 flush."""
    return statistics.median(iteration_times(fn, flush, iters, warmup))


def l2_flusher():
    """A function that empties the L2 before a timed launch. Reading 256 MB evicts it and, unlike a
    write, leaves no dirty lines to be written back during the launch that follows."""
    scratch = torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    scratch.fill_(1)
    return lambda: torch.sum(scratch.view(torch.int32), dtype=torch.int32)


def copy_bandwidth(timer):
    """(bytes per second, ms) of a 1 GiB device-to-device copy, timed as every variant is, by `timer`
    (event_timer or span_timer), after the flush. The flush is there to keep the GPU busy while the
    host dispatches the copy: with an idle GPU the events also counted PyTorch's ~14 us of dispatch
    (515 us against 501, 2.7% less bandwidth; NOTES.md, twenty-seventh session), which made every
    %-of-copy check easier."""
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    ms = timer({"copy": lambda: dst.copy_(src)})["copy"]
    return 2 * src.numel() / (ms * 1e-3), ms


def load_flashinfer():
    """(api, version, None) or (None, None, reason). api holds the two names of the API we call (0.7.0.post1's,
    the same in 0.7.4)."""
    try:
        import flashinfer
        from flashinfer.mla import BatchMLAPagedAttentionWrapper, MLAPlanMetadata
        api = {"wrapper": BatchMLAPagedAttentionWrapper, "metadata": MLAPlanMetadata}
        return api, getattr(flashinfer, "__version__", "?"), None
    except Exception as exc:  # the reason goes into the results
        return None, None, f"{type(exc).__name__}: {exc}"


def flashinfer_runner(api, q, pool, indptr, indices, lens, sm_scale, kv_dtype, backend):
    """Plan FlashInfer's MLA wrapper on our pool (page size 1: a page is a slot) and return (run, out, backend).

    Everything but run() happens here, untimed: buffers, plan() (its host copies, and loading or
    JIT-compiling the module). The API is flashinfer 0.7.0.post1's canonical form (keyword plan()
    with MLAPlanMetadata.csr, run(query=, kv_cache=)), unchanged in 0.7.4; the flat/positional forms
    still work in both but are deprecated. Both q [B, H, 576] and the pool [slots, 576] go in packed: the wrapper
    splits them into strided 512/64 views (no copy) and the kernel takes per-tensor strides.
    """
    device = q.device
    batch, heads = q.shape[0], q.shape[1]
    workspace = torch.empty(128 << 20, dtype=torch.uint8, device=device)
    wrapper = api["wrapper"](workspace, backend=backend)
    qo_indptr = torch.arange(batch + 1, dtype=torch.int32, device=device)
    wrapper.plan(metadata=api["metadata"].csr(qo_indptr, indptr, indices, lens),
                 num_heads=heads, head_dim_ckv=512, head_dim_kpe=ROW - 512, page_size=1, causal=False,
                 sm_scale=sm_scale, q_data_type=torch.bfloat16, kv_data_type=kv_dtype)
    kv_cache = pool.view(pool.shape[0], 1, ROW)  # [num_pages, page_size, 512 + 64]
    out = torch.empty(batch, heads, 512, dtype=torch.bfloat16, device=device)
    # An FP8 plan requires per-tensor scales at run(); our pool is unscaled, as in our kernel's call.
    scales = {"ckv_scale": 1.0, "kpe_scale": 1.0} if kv_dtype == torch.float8_e4m3fn else {}

    def run():
        wrapper.run(query=q, kv_cache=kv_cache, out=out, **scales)
    return run, out, getattr(wrapper, "_backend", backend)


def _short_error(exc, head=300, tail=900):
    """A failure reason for the results: the start and the end (a JIT failure's nvcc error is at the end)."""
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= head + tail else text[:head] + " [...] " + text[-tail:]


def variant_result(ms, nbytes):
    """A variant's entry in a bench.json row: its time, the KV bytes it reads and their rate."""
    return {"ms": ms, "bytes": nbytes, "gbps": nbytes / (ms * 1e-3) / 1e9}


def request_inputs(req_lens, heads, device):
    """(kv_len, kv_indptr, q, q_nope, q_pe, sm_scale) for a batch of these lengths: a random BF16
    query [B, H, 576] and its strided 512 / 64 views."""
    lens = torch.tensor(req_lens, dtype=torch.int32, device=device)
    indptr = torch.tensor([0, *req_lens], dtype=torch.int64).cumsum(0).to(torch.int32).to(device)
    q = torch.randn(len(req_lens), heads, ROW, device=device).to(torch.bfloat16)
    return lens, indptr, q, q[:, :, :512], q[:, :, 512:], 1.0 / math.sqrt(ROW)


def event_timer(flush, iters):
    """timer(calls) -> {name: median ms}: each call timed alone by CUDA events after the flush."""
    return lambda calls: {name: time_variant(call, flush, iters) for name, call in calls.items()}


# The guarded timing's spin after the flush: ~200 us at the H200's 1.98 GHz, longer than any call's
# host time measured so far (FlashInfer's run(): 49-72 us; NOTES.md item 34).
GUARD_SPIN_CYCLES = 400_000


def guarded_timer(flush, iters):
    """timer(calls) -> {name: median ms}: as event_timer, with a spin kernel queued after the flush, so
    the GPU is still busy when the host makes the call and none of the call's host time is counted."""
    def flush_then_spin():
        flush()
        torch.cuda._sleep(GUARD_SPIN_CYCLES)
    return lambda calls: {name: time_variant(call, flush_then_spin, iters) for name, call in calls.items()}


def span_timer(flush, iters):
    """timer(calls) -> {name: median ms}: each call's GPU span after the flush (kernel_span.py)."""
    from kernel_span import time_spans
    return lambda calls: time_spans(torch, calls, flush, iters)


def bench_shape(kv_api, name, heads, req_lens, pools, timer, sms, fi, force_splits=0):
    device = "cuda"
    batch, ctx, tokens = len(req_lens), max(req_lens), sum(req_lens)
    num_slots = pool_slots(tokens)
    pool_u8, pool_bf16 = (pool[:num_slots] for pool in pools)
    gen = torch.Generator(device="cpu").manual_seed(batch * 1000003 + heads * 101 + ctx + tokens)
    slots = torch.randperm(num_slots, generator=gen)[:tokens]
    indices = slots.to(torch.int32).to(device)
    lens, indptr, q, q_nope, q_pe, sm_scale = request_inputs(req_lens, heads, device)
    plan = kv_api.plan(batch, heads, ctx, sms)
    if force_splits:  # --splits: time a uniform plan with another split count (workspace sized for it)
        plan = (force_splits, 0, kv_api.workspace_bytes(batch, heads, force_splits), 0)
    uniform = kv_api.plan_uniform(batch, heads, ctx, sms) if plan[0] == 0 else None
    ws = torch.empty(max(plan[2], uniform[2] if uniform else 0, 16), dtype=torch.uint8, device=device)
    out = {k: torch.empty(batch, heads, 512, dtype=torch.bfloat16, device=device)
           for k in ("fp8", "fp8_self", "fp8_uniform", "bf16", "cast", "gather")}
    lse = torch.empty(batch, heads, dtype=torch.float32, device=device)
    cast_dst = torch.empty(num_slots, ROW, dtype=torch.bfloat16, device=device)
    gathered = torch.empty(tokens, ROW, dtype=torch.bfloat16, device=device)
    dense_indices = torch.arange(tokens, dtype=torch.int32, device=device)

    fp8_bytes, bf16_bytes = tokens * ROW, tokens * ROW * 2
    variants = {}
    # A length-aware plan: the split table once (the lengths stay), then the layers' launches.
    ready = 1 if plan[0] == 0 else 0
    if ready:
        kv_api.decode(q_nope, q_pe, pool_u8, 0, indptr, indices, lens, out["fp8"], lse, sm_scale, plan, ws, mode=2)

    def fp8():
        kv_api.decode(q_nope, q_pe, pool_u8, 0, indptr, indices, lens, out["fp8"], lse, sm_scale, plan, ws, ready)

    def fp8_self():
        kv_api.decode(q_nope, q_pe, pool_u8, 0, indptr, indices, lens, out["fp8_self"], lse, sm_scale, plan, ws)

    def schedule():
        kv_api.decode(q_nope, q_pe, pool_u8, 0, indptr, indices, lens, out["fp8_self"], lse, sm_scale, plan, ws, mode=2)

    def fp8_uniform():
        kv_api.decode(q_nope, q_pe, pool_u8, 0, indptr, indices, lens, out["fp8_uniform"], lse, sm_scale, uniform, ws)

    def bf16():
        kv_api.decode(q_nope, q_pe, pool_bf16, 1, indptr, indices, lens, out["bf16"], lse, sm_scale, plan, ws, ready)

    def cast_path():
        kv_api.cast(pool_u8, cast_dst)
        kv_api.decode(q_nope, q_pe, cast_dst, 1, indptr, indices, lens, out["cast"], lse, sm_scale, plan, ws, ready)

    def gather_path():
        gathered.copy_(torch.index_select(pool_u8, 0, indices).view(torch.float8_e4m3fn))
        kv_api.decode(q_nope, q_pe, gathered, 1, indptr, dense_indices, lens, out["gather"], lse, sm_scale, plan, ws,
                      ready)

    ours = {"fp8": (fp8, fp8_bytes)}
    if uniform:
        ours.update(fp8_self=(fp8_self, fp8_bytes), schedule=(schedule, 0), fp8_uniform=(fp8_uniform, fp8_bytes))
    ours.update({"bf16": (bf16, bf16_bytes), "cast+bf16": (cast_path, bf16_bytes),
                 "gather+bf16": (gather_path, bf16_bytes)})
    times = timer({key: call for key, (call, _) in ours.items()})
    variants.update({key: (times[key], nbytes) for key, (_, nbytes) in ours.items()})
    parity = bool(torch.equal(out["fp8"].view(torch.int16), out["bf16"].view(torch.int16)))
    if uniform:  # the launch that makes its own table must give the same bits
        parity = parity and bool(torch.equal(out["fp8"].view(torch.int16), out["fp8_self"].view(torch.int16)))
    fi_notes = {}
    if fi["api"] is not None:
        for key, dtype, pool in (("fi_fp8", torch.float8_e4m3fn, pool_u8.view(torch.float8_e4m3fn)),
                                 ("fi_bf16", torch.bfloat16, pool_bf16)):
            if key in fi["disabled"]:
                fi_notes[key + "_error"] = "skipped: " + fi["disabled"][key]
                continue
            try:
                t0 = time.perf_counter()
                run, fi_out, backend = flashinfer_runner(fi["api"], q, pool, indptr, indices, lens, sm_scale, dtype,
                                                         fi["backend"])
                torch.cuda.synchronize()
                fi_notes[key + "_backend"] = backend
                fi_notes[key + "_plan_s"] = round(time.perf_counter() - t0, 3)  # includes a first-use JIT build
                variants[key] = (timer({key: run})[key], fp8_bytes if dtype != torch.bfloat16 else bf16_bytes)
                ref = out["bf16"].float()
                fi_notes[key + "_rel_err_vs_ours"] = float((fi_out.float() - ref).norm() / ref.norm())
                fi["worked"].add(key)
            except Exception as exc:
                fi_notes[key + "_error"] = _short_error(exc)
                if key not in fi["worked"]:
                    # Failed before ever working (import, JIT build, unsupported dtype): retrying every
                    # shape would rebuild each time, so say why once, in full, and skip it from now on.
                    fi["disabled"][key] = f"failed on {name}"
                    traceback.print_exc()
    row = {"shape": name, "batch": batch, "heads": heads, "context": ctx, "kv_tokens": tokens, "pool_slots": num_slots,
           "splits": plan[0], "blocks": plan[1], "uniform_splits": uniform[0] if uniform else plan[0],
           "head_rows": plan[3] or 16,
           "ragged": len(set(req_lens)) > 1,
           "fp8_bf16_bit_identical": parity, "variants": {}, **fi_notes}
    for key, (ms, nbytes) in variants.items():
        row["variants"][key] = variant_result(ms, nbytes)
    return row


def plan_text(row):
    wide = " w" if row.get("head_rows", 16) == 32 else ""
    if row.get("splits", 1) == 0:
        return f"la {row['blocks']} / u {row['uniform_splits']}{wide}"
    return f"{row['splits']}{wide}"


def write_markdown(rows, copy_gbps, meta, path):
    keys = ["fp8", "fp8_self", "schedule", "fp8_uniform", "bf16", "cast+bf16", "gather+bf16", "fi_fp8", "fi_bf16"]
    ratio_keys = [k for k in keys[1:] if k != "schedule"]
    lines = [f"# MLA decode benchmark — {meta['gpu']}, {meta['date']}", "",
             f"Device-to-device copy: {copy_gbps / 1e9:.0f} GB/s (read + write). FlashInfer: {meta['flashinfer']}.",
             f"Timing floor (a one-element `zero_()` timed the same way): {meta.get('timing_floor_us', '?')} us.",
             {"span": "Timing: GPU spans (CUPTI: first kernel's start to last kernel's end). ",
              "guarded": "Timing: CUDA events around each run, a ~200 us spin kernel queued after the flush "
                         "(no host time counted). "}.get(meta.get("timing"), "Timing: CUDA events around each run. ") +
             "Times are medians in microseconds, L2 flushed before each run; cast+bf16 and gather+bf16 include their",
             "conversion. Every token has its own pool slot (no two tokens share a KV row); the pool is the",
             ("report's 495,552 slots or, for batches holding more tokens, one slot per token. "
              "`fp8 GB/s` counts 576 B of KV per token;"),
             "`%copy` is that over the copy bandwidth. `x<variant>` is how many times faster our FP8 kernel is.",
             "`plan`: `la N` a length-aware plan over N blocks per head group (fp8_uniform: the same kernel on",
             "the uniform plan of `u N` splits per request), else N splits per request; `w`: wide blocks (32 heads",
             "per block, else 16). With a length-aware plan,",
             "fp8 (and bf16, cast, gather) time one layer's launch on a split table made once per decode step;",
             "`schedule` is making that table, `fp8_self` a launch that makes its own. Ragged rows: ctx is the",
             "longest request; their token count is in bench.json. Bit-identical: FP8 against BF16 (and fp8_self).", "",
             "| shape | B | H | ctx | plan | " + " | ".join(f"{k} us" for k in keys) +
             " | fp8 GB/s | %copy | " + " | ".join(f"x{k}" for k in ratio_keys) + " | bit-identical |",
             "|" + "---|" * (8 + len(keys) + len(ratio_keys))]
    for r in rows:
        v = r["variants"]
        fp8 = v["fp8"]["ms"]
        cells = [f"{v[k]['ms'] * 1e3:.1f}" if k in v else "-" for k in keys]
        ratios = [f"{v[k]['ms'] / fp8:.2f}" if k in v else "-" for k in ratio_keys]
        pct = 100 * v["fp8"]["gbps"] * 1e9 / copy_gbps
        lines.append(f"| {r['shape']} | {r['batch']} | {r['heads']} | {r['context']} | {plan_text(r)} | "
                     + " | ".join(cells) + f" | {v['fp8']['gbps']:.0f} | {pct:.1f}% | " + " | ".join(ratios)
                     + f" | {'yes' if r['fp8_bf16_bit_identical'] else 'NO'} |")
    for r in rows:  # FlashInfer failures, with the reason (later shapes of a variant that never ran say "skipped")
        for k in r:
            if k.startswith("fi_") and k.endswith("_error") and not r[k].startswith("skipped: "):
                lines.append(f"\n{r['shape']} ctx={r['context']}: {k[:-6]} not measured: {r[k]}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def write_plot(rows, copy_gbps, meta, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(13, 5))
    for ax, prefix in zip(axes, ("b1_h16", "b32_h16"), strict=True):
        sweep = [r for r in rows if r["shape"] == prefix]
        for key in ("fp8", "bf16", "cast+bf16", "gather+bf16", "fi_fp8", "fi_bf16"):
            pts = [(r["context"], r["variants"][key]["gbps"]) for r in sweep if key in r["variants"]]
            if pts:
                ax.plot(*zip(*pts, strict=True), marker="o", label=key)
        ax.axhline(copy_gbps / 1e9, color="gray", linestyle="--", label="copy (r+w)")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("context length (tokens)")
        ax.set_ylabel("KV GB/s (bytes that variant reads / time)")
        ax.set_title(f"{prefix}: {meta['gpu']}")
        ax.legend(fontsize=8)
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True, help="path of libkvpatch_mla_capi.so")
    ap.add_argument("--out", required=True, help="folder for bench.json, bench.md, bench.png")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--shapes", default="", help="comma-separated shape names to keep (default: all)")
    ap.add_argument("--contexts", default="", help="comma-separated context lengths to keep (default: all)")
    ap.add_argument("--extra-shapes", default="",
                    help="comma-separated uniform shapes BxHxCTX (e.g. 33x16x32768) added after the kept ones "
                         "(--shapes none keeps only these)")
    ap.add_argument("--splits", type=int, default=0,
                    help="time a uniform plan with this split count (1-256; 0: plan_decode's plan)")
    ap.add_argument("--timing", choices=("events", "guarded", "span"), default="events",
                    help="events: CUDA events around each run; guarded: the same with a ~200 us spin kernel "
                         "after the flush, so that no host time of the call is counted (our FP8 kernel then "
                         "measured 2-4 us slower at B >= 32: NOTES.md item 34); span: its GPU span from CUPTI, "
                         "as FlashInfer's benchmarks time kernels (the copy and the floor too)")
    ap.add_argument("--flashinfer-backend", default="fa3",
                    help="BatchMLAPagedAttentionWrapper backend: fa3 (SM90, FP8 and BF16 KV), fa2, auto")
    args = ap.parse_args()
    extra_shapes = []  # checked before any GPU work
    for spec in filter(None, args.extra_shapes.split(",")):
        try:
            batch, heads, ctx = (int(x) for x in spec.split("x"))
        except ValueError:
            ap.error(f"--extra-shapes: {spec!r} is not BxHxCTX (three integers, e.g. 33x16x32768)")
        if min(batch, heads, ctx) < 1:
            ap.error(f"--extra-shapes: {spec!r} needs a batch, heads and context of at least 1")
        extra_shapes.append((f"b{batch}_h{heads}", heads, [ctx] * batch))

    torch.backends.cuda.matmul.allow_tf32 = False
    os.makedirs(args.out, exist_ok=True)
    kv_api = Kvpatch(args.lib)
    props = torch.cuda.get_device_properties(0)
    sms = props.multi_processor_count
    fi_api, fi_version, fi_error = load_flashinfer()
    meta = {"gpu": props.name, "sms": sms, "date": datetime.date.today().isoformat(), "torch": torch.__version__,
            "flashinfer": f"flashinfer {fi_version} backend={args.flashinfer_backend}" if fi_api
            else f"not run ({fi_error})"}
    print(meta, flush=True)

    keep = set(filter(None, args.shapes.split(",")))
    keep_ctx = {int(c) for c in args.contexts.split(",") if c}
    shapes = [s for s in SHAPES if not (keep and s[0] not in keep) and not (keep_ctx and max(s[2]) not in keep_ctx)]
    shapes += extra_shapes
    # One pool for the largest shape; each shape runs on its first pool_slots() rows.
    max_slots = max([POOL_SLOTS] + [pool_slots(sum(lens)) for _, _, lens in shapes])
    pool_u8 = torch.empty(max_slots, ROW, dtype=torch.uint8, device="cuda")
    for start in range(0, max_slots, POOL_SLOTS):  # FP32 randoms in pieces, not 4 bytes x the whole pool
        piece = pool_u8[start:start + POOL_SLOTS]
        piece.copy_(torch.randn(piece.shape, device="cuda").to(torch.float8_e4m3fn).view(torch.uint8))
    pool_bf16 = torch.empty(max_slots, ROW, dtype=torch.bfloat16, device="cuda")
    kv_api.cast(pool_u8, pool_bf16)
    flush = l2_flusher()
    timer = {"events": event_timer, "guarded": guarded_timer, "span": span_timer}[args.timing](flush, args.iters)
    meta["timing"] = args.timing
    copy_gbps, copy_ms = copy_bandwidth(timer)
    print(f"copy: {copy_gbps / 1e9:.0f} GB/s ({copy_ms:.3f} ms for 2 x 1 GiB)", flush=True)
    # What this timing method charges for any call: one 4-byte memset kernel, timed like a variant.
    tiny = torch.empty(1, dtype=torch.int32, device="cuda")
    floor_us = timer({"zero_": lambda: tiny.zero_()})["zero_"] * 1e3
    meta["timing_floor_us"] = round(floor_us, 1)
    print(f"timing floor: {floor_us:.1f} us (a one-element zero_() timed the same way)", flush=True)

    rows = []
    fi = {"api": fi_api, "backend": args.flashinfer_backend, "worked": set(), "disabled": {}}
    for name, heads, req_lens in shapes:
        row = bench_shape(kv_api, name, heads, req_lens, (pool_u8, pool_bf16), timer, sms, fi, args.splits)
        rows.append(row)
        v = row["variants"]
        print(f"{name:9s} B={row['batch']:<3d} H={heads:<3d} ctx={row['context']:<6d} plan={plan_text(row):<12s} " +
              " ".join(f"{k}={v[k]['ms'] * 1e3:8.1f}us/{v[k]['gbps']:5.0f}GB/s" for k in v) +
              f" fp8%copy={100 * v['fp8']['gbps'] * 1e9 / copy_gbps:.1f}% bit-identical={row['fp8_bf16_bit_identical']}"
              + "".join(f" {k}={row[k]}" for k in row if k.startswith("fi_")), flush=True)
    result = {"meta": meta, "copy_gbps": copy_gbps / 1e9, "rows": rows}
    with open(os.path.join(args.out, "bench.json"), "w") as f:
        json.dump(result, f, indent=1)
    write_markdown(rows, copy_gbps, meta, os.path.join(args.out, "bench.md"))
    # Issue 3's targets against this run, at the end of the same Markdown file (targets.py).
    from targets import markdown as targets_markdown
    summary = targets_markdown(result)
    with open(os.path.join(args.out, "bench.md"), "a") as f:
        f.write("\n" + summary.replace("# Issue 3 targets", "## Issue 3 targets", 1))
    print(summary, flush=True)
    try:
        write_plot(rows, copy_gbps, meta, os.path.join(args.out, "bench.png"))
    except Exception as exc:
        print(f"plot not written: {exc}", file=sys.stderr)


if __name__ == "__main__":
    main()
