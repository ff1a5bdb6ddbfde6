#!/usr/bin/env python3
"""GPU test: a real SGLang release's FlashInfer MLA backend, as released and as kvpatch patches it, on FlashInfer.

  sglang_release_backend_test.py [--cache DIR] [--kvpatch BIN] [--releases 0.5.16,...] [--lib LIB]
                                 [--bench-layers N] [--bench-releases 0.5.16,0.5.23] [--out DIR]

The backend module (sglang/srt/layers/attention/flashinfer_mla_backend.py) is taken from the release at run
time: DIR/sglang-backends/<version>/flashinfer_mla_backend.py, else extracted from DIR/sglang's wheel. Its
patched texts, one per --kv-dtype-form (original, upstream, sm90), are
DIR/sglang-backends/<version>/kvpatch-applied[-upstream|-sm90]/flashinfer_mla_backend.py
(kernels/bench/sglang_backends.sh writes them all), or `kvpatch apply` run here by --kvpatch on a copy.
Nothing of SGLang is kept in this repository.

Each text is loaded as a module. Only its sglang imports are stood in for (sglang_stand_ins.py): the
parallel state of one GPU, the index builders, a base class. The code under test is the release's own:
the indices updaters' __init__ and call_begin_forward, which plan FlashInfer's
BatchMLAPagedAttentionWrapper, and the backend's forward_decode and forward_extend (paged MLA
prefill, causal), which run it. They run over an FP8 E4M3 KV pool, as SGLang keeps it with
--kv-cache-dtype fp8_e4m3. Checked for each release:
- as released: plan() is given BF16 for the KV side, and run() a BF16 copy of the pool;
- patched, in each form: both paths plan FP8 KV and run() the pool as stored, with scales;
- all within the verifier's tolerance of an FP32 reference (causal for the prefill);
- decode under CUDA graphs as SGLang serves it: a use_cuda_graph wrapper planned by the updater,
  forward_decode captured, the release's fast_mla_decode_plan installed, and replays with other lengths
  through the updater's replay branch, each within tolerance (on FlashInfer, and with --lib on ours);
- with torch and FlashInfer reporting SM120 (where FlashInfer plans no BF16-query x FP8-KV MLA): the
  sm90 form plans BF16 and casts, within tolerance; the original form's plan() fails;
- the patch applied to decode only, the first manual fix's mistake (the prefill updater's plan edits
  reverted): the prefill path must then fail, raising or leaving the tolerance. This shows the
  check can fail;
- an FP8 E5M2 cache: as released and in the upstream and sm90 forms, planned BF16 and cast, within
  tolerance. What the original form does with it (it plans E5M2) is printed as "seen", not checked:
  FlashInfer 0.7.4 refuses that plan, a limit of the form that `kvpatch apply` notes.
With --lib (libkvpatch_mla_capi.so), the patched decode path also runs on kvpatch's kernel through its
stand-in for FlashInfer's wrapper (kernels/python/kvpatch_mla_flashinfer.py), as it would on a GPU
FlashInfer has no BF16-query x FP8-KV path for, and is held to the same tolerance.
With --bench-layers N it also times one decode step of N layers, each with its own pool of
495,552 slots (GLM-5's), as released against patched (and patched on kvpatch's kernel). Each step
is captured in a CUDA graph, as SGLang replays decode, and also run eager; the forms are
interleaved round by round. It prints the medians and their ratios, and writes them to --out as
JSON. Exit 0 all pass, 1 a failure, 77 skipped (no GPU, PyTorch,
FlashInfer or release source).
"""
import argparse
import functools
import inspect
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import types

try:
    import torch
except ImportError:
    print("skipped: PyTorch is not installed")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import python_api_test as api  # noqa: E402  (pool, tolerance, check / verdict)
import sglang_stand_ins as stand_ins  # noqa: E402
from flashinfer_sm90_gate_test import ReportedCapability  # noqa: E402
from sglang_graph_replay_test import backend_source  # noqa: E402

FP8 = torch.float8_e4m3fn
E5M2 = torch.float8_e5m2
BF16 = torch.bfloat16
# Every release kvpatch patches with its own FlashInfer pin (0.6.14 and later), 0.5.16 to the newest.
RELEASES = ("0.5.16", "0.5.17", "0.5.18", "0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23")
BENCH_RELEASES = ("0.5.16", "0.5.23")
HEADS, SM_SCALE = 16, 1.0 / math.sqrt(192.0)  # DeepSeek-V3 at TP 8: 16 local heads, qk head dim 128 + 64


FORMS = {"patched": "original", "patched, upstream form": "upstream", "patched, sm90 form": "sm90"}


def patched_source(cache, version, kvpatch, flashinfer_version, form):
    """kvpatch's output for the release's backend in one --kv-dtype-form: the carried file (written by
    kernels/bench/sglang_backends.sh), else `kvpatch apply` on a copy."""
    sub = "kvpatch-applied" if form == "original" else f"kvpatch-applied-{form}"
    carried = os.path.join(cache, "sglang-backends", version, sub, "flashinfer_mla_backend.py")
    if os.path.exists(carried):
        with open(carried, encoding="utf-8") as f:
            return f.read()
    if not kvpatch:
        return None
    original = backend_source(cache, version)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "flashinfer_mla_backend.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(original)
        done = subprocess.run([kvpatch, "apply", "--isolated", "--flashinfer-version", flashinfer_version,
                               "--kv-dtype-form", form, path], check=False, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"kvpatch apply --kv-dtype-form {form} on SGLang {version}'s backend exited "
                             f"{done.returncode}:\n{done.stdout}{done.stderr}")
        with open(path, encoding="utf-8") as f:
            return f.read()


def decode_only(patched):
    """The patched text with the prefill updater's plan edits reverted: the first manual fix's mistake."""
    start = patched.index("class FlashInferMLAIndicesUpdaterPrefill")
    end = re.search(r"^(class|def) ", patched[start + 1:], re.M)
    end = len(patched) if end is None else start + 1 + end.start()
    prefill = patched[start:end]
    reverted = prefill.replace("self.kv_data_type,", "self.data_type,")
    if reverted == prefill:
        raise SystemExit("the patched prefill updater threads no self.kv_data_type: nothing to revert")
    return patched[:start] + reverted + patched[end:]


class Recorder:
    """What the release's code handed the wrapper: plan()'s KV dtype, and run()'s cache dtype and scales.
    The wrapper is FlashInfer's BatchMLAPagedAttentionWrapper, or kvpatch's stand-in for it (decode only)."""

    def __init__(self, wrapper_class):
        recorder = self

        class Wrapper(wrapper_class):
            def plan(self, *args, **kwargs):
                bound = inspect.signature(super().plan).bind(*args, **kwargs)
                recorder.plan_kv_dtypes.append(bound.arguments.get("kv_data_type"))
                return super().plan(*args, **kwargs)

            def run(self, *args, **kwargs):
                bound = inspect.signature(super().run).bind(*args, **kwargs)
                recorder.run_kv_dtypes.append(bound.arguments["ckv_cache"].dtype)
                recorder.run_scales.append(("ckv_scale" in bound.arguments, "kpe_scale" in bound.arguments))
                return super().run(*args, **kwargs)

        self.make_wrapper = Wrapper
        self.plan_kv_dtypes, self.run_kv_dtypes, self.run_scales = [], [], []


def call_with_names(fn, available, extra=None):
    """Calls fn with those of `available` its signature names (the updaters' parameters differ by release),
    and `extra` through its **kwargs (the CUDA-graph replay's fast_decode_kwargs)."""
    names = [p for p in inspect.signature(fn).parameters if p in available]
    return fn(**{name: available[name] for name in names}, **(extra or {}))


class Batch:
    """Requests in SGLang's req_to_token layout over per-layer FP8 pools: kv lengths, new tokens and queries."""

    def __init__(self, kv_lens, new_tokens, slots, layers, seed, kv_dtype=FP8):
        self.kv_lens, self.new_tokens, self.kv_dtype = kv_lens, new_tokens, kv_dtype
        self.prefix_lens = [n - q for n, q in zip(kv_lens, new_tokens)]
        g = torch.Generator().manual_seed(seed)
        width = max(kv_lens)
        self.req_to_token = torch.zeros(len(kv_lens) + 3, width, dtype=torch.int32)
        perm = torch.randperm(slots, generator=g)
        self.req_pool_indices = torch.arange(3, 3 + len(kv_lens), dtype=torch.int64)  # rows 0-2 belong to no one
        used = 0
        for b, n in enumerate(kv_lens):
            self.req_to_token[3 + b, :n] = perm[used:used + n].to(torch.int32)
            used += n
        self.req_to_token = self.req_to_token.cuda()
        self.req_pool_indices = self.req_pool_indices.cuda()
        self.seq_lens = torch.tensor(kv_lens, dtype=torch.int32, device="cuda")
        self.prefix = torch.tensor(self.prefix_lens, dtype=torch.int32, device="cuda")
        self.pools = [api.pool(slots, kv_dtype, seed + 100 + i) for i in range(layers)]  # [slots, 1, 576] each
        q = torch.randn(sum(new_tokens), HEADS, 576, generator=torch.Generator(device="cuda").manual_seed(seed),
                        device="cuda").to(BF16)
        self.q_nope, self.q_pe = q[..., :512].contiguous(), q[..., 512:].contiguous()

    def reference(self, layer, causal, kv_lens=None):
        """FP32 attention of every query token over its request's KV (up to itself when causal), unit scales;
        kv_lens (no longer than the batch's) for a replayed step with other lengths."""
        pool = self.pools[layer].float().view(-1, 576)
        out = torch.empty(self.q_nope.shape, device="cuda")
        mag = torch.empty_like(out)
        row = 0
        for b, (n, new) in enumerate(zip(kv_lens or self.kv_lens, self.new_tokens)):
            kv = pool[self.req_to_token[3 + b, :n].long()]
            for j in range(new):
                visible = n - new + j + 1 if causal else n
                scores = (self.q_nope[row].float() @ kv[:visible, :512].T
                          + self.q_pe[row].float() @ kv[:visible, 512:].T) * SM_SCALE
                p = torch.softmax(scores, dim=-1)
                out[row] = p @ kv[:visible, :512]
                mag[row] = p @ kv[:visible, :512].abs()
                row += 1
        return out, mag


class Backend:
    """One loaded module with the environment its updaters and forward methods read, over one Batch."""

    def __init__(self, module, wrapper_class, batch):
        self.module, self.batch, self.recorder = module, batch, Recorder(wrapper_class)
        bs = len(batch.kv_lens)
        self.model_runner = types.SimpleNamespace(
            model_config=types.SimpleNamespace(num_attention_heads=HEADS, kv_lora_rank=512, qk_nope_head_dim=128,
                                               qk_rope_head_dim=64, v_head_dim=128, scaling=SM_SCALE),
            dtype=BF16, kv_cache_dtype=batch.kv_dtype,
            req_to_token_pool=types.SimpleNamespace(req_to_token=batch.req_to_token),
            token_to_kv_pool_allocator=None)  # 0.5.17-0.5.18 hand it to unified_mla_hooks, stood in for
        self.attn = types.SimpleNamespace(
            kv_indptr=torch.zeros(bs + 1, dtype=torch.int32, device="cuda"),
            qo_indptr=torch.zeros(bs + 1, dtype=torch.int32, device="cuda"),
            q_indptr_decode=torch.arange(bs + 1, dtype=torch.int32, device="cuda"),
            prefill_wrapper_ragged=None,
            kv_index_translator=stand_ins.Translator(batch.req_to_token))
        self.workspace = torch.empty(128 << 20, dtype=torch.uint8, device="cuda")
        self.backend = object.__new__(module.FlashInferMLAAttnBackend)  # its __init__ builds a server's worth
        self.backend.token_to_kv_pool = stand_ins.KVPool(batch.pools)

    def layer(self, i):
        return types.SimpleNamespace(layer_id=i, tp_q_head_num=HEADS, tp_k_head_num=1, v_head_dim=512, head_dim=576,
                                     scaling=SM_SCALE, logit_cap=0.0)

    def plan_decode(self):
        updater = self.module.FlashInferMLAIndicesUpdaterDecode(self.model_runner, self.attn)
        wrapper = self.recorder.make_wrapper(self.workspace)
        b = self.batch
        call_with_names(updater.call_begin_forward, dict(
            wrapper=wrapper, req_pool_indices=b.req_pool_indices, paged_kernel_lens=b.seq_lens,
            paged_kernel_lens_sum=sum(b.kv_lens), q_indptr=updater.q_indptr, kv_indptr=updater.kv_indptr,
            plan=None, kv_view=stand_ins.kv_index_table(b.req_to_token, b.req_pool_indices)))
        self.backend.forward_metadata = types.SimpleNamespace(decode_wrapper=wrapper)

    def decode(self, layer):
        batch = types.SimpleNamespace(forward_mode=stand_ins.DECODE, token_to_kv_pool=self.backend.token_to_kv_pool,
                                      out_cache_loc=None, attn_dcp_metadata=None)
        q = self.batch.q_nope.reshape(len(self.batch.kv_lens), -1)
        return self.backend.forward_decode(q, None, None, self.layer(layer), batch, save_kv_cache=False,
                                           q_rope=self.batch.q_pe.reshape(q.shape[0], -1))

    def extend(self, layer):
        updater = self.module.FlashInferMLAIndicesUpdaterPrefill(self.model_runner, self.attn)
        wrapper = self.recorder.make_wrapper(self.workspace)
        b = self.batch
        call_with_names(updater.call_begin_forward, dict(
            wrapper_ragged=None, wrapper_paged=wrapper, req_pool_indices=b.req_pool_indices,
            paged_kernel_lens=b.seq_lens, paged_kernel_lens_sum=sum(b.kv_lens), seq_lens=b.seq_lens,
            prefix_lens=b.prefix, kv_indptr=updater.kv_indptr, qo_indptr=updater.qo_indptr, use_ragged=False,
            plan=None, kv_view=stand_ins.kv_index_table(b.req_to_token, b.req_pool_indices)))
        self.backend.forward_metadata = types.SimpleNamespace(prefill_wrapper=wrapper, use_ragged=False)
        batch = types.SimpleNamespace(forward_mode=stand_ins.EXTEND, token_to_kv_pool=self.backend.token_to_kv_pool,
                                      out_cache_loc=None, attn_dcp_metadata=None, attn_attend_prefix_cache=None,
                                      extend_prefix_lens_cpu=b.prefix_lens)
        q = self.batch.q_nope.reshape(sum(b.new_tokens), -1)
        return self.backend.forward_extend(q, None, None, self.layer(layer), batch, save_kv_cache=False,
                                           q_rope=self.batch.q_pe.reshape(q.shape[0], -1))


def passes(out, ref, mag, batch):
    """Finite and within the verifier's tolerance of the FP32 reference."""
    shaped = out.view(-1, HEADS, 512)
    return bool(torch.isfinite(shaped).all()) and api.within_tolerance(shaped, ref, mag, batch.kv_lens)


def same_bits(outs, what):
    """Prints whether the patched output equals the released one bit for bit (information, not a check:
    FlashInfer's FP8 and BF16 kernels need not share an accumulation order)."""
    released, patched = outs["as released"], outs["patched"]
    same = bool(torch.equal(released.view(torch.int16), patched.view(torch.int16)))
    diff = (released.float() - patched.float()).abs().max().item()
    print(f"     {what}: patched {'equals' if same else 'differs from'} as released bit for bit (max |diff| {diff:g})")


def kvpatch_wrapper_class(lib):
    """kvpatch's stand-in for FlashInfer's MLA wrapper (kernels/python/kvpatch_mla_flashinfer.py) over `lib`."""
    sys.path.insert(0, os.path.join(HERE, "..", "..", "kernels", "python"))
    import kvpatch_mla_flashinfer

    class KvpatchWrapper(kvpatch_mla_flashinfer.BatchMLAPagedAttentionWrapper):
        def __init__(self, workspace, *args, **kwargs):
            super().__init__(workspace, *args, library=lib, **kwargs)

    return KvpatchWrapper


def expect_paths(label, module, wrapper_class, decode_batch, prefill_batch, expect, prefill=True):
    """Runs the module's decode (and paged prefill) path; checks the KV dtype planned and run, run()'s scales
    and the outputs against FP32. Returns (decode out, prefill out or None)."""
    b = Backend(module, wrapper_class, decode_batch)
    b.plan_decode()
    decode_out = b.decode(0)
    r = b.recorder
    api.check(r.plan_kv_dtypes == [expect] and r.run_kv_dtypes == [expect] and
              r.run_scales == [(expect == FP8, expect == FP8)],
              f"{label}: decode plans and runs {expect} KV (plan {r.plan_kv_dtypes}, run {r.run_kv_dtypes}, "
              f"scales {r.run_scales})")
    ref, mag = decode_batch.reference(0, causal=False)
    api.check(passes(decode_out, ref, mag, decode_batch), f"{label}: decode within tolerance of FP32")
    if not prefill:
        return decode_out, None
    b = Backend(module, wrapper_class, prefill_batch)
    prefill_out = b.extend(0)
    r = b.recorder
    api.check(r.plan_kv_dtypes == [expect] and r.run_kv_dtypes == [expect],
              f"{label}: paged prefill plans and runs {expect} KV (plan {r.plan_kv_dtypes}, run {r.run_kv_dtypes})")
    ref, mag = prefill_batch.reference(0, causal=True)
    api.check(passes(prefill_out, ref, mag, prefill_batch), f"{label}: paged prefill (causal) within tolerance")
    return decode_out, prefill_out


def graph_replay(label, module, wrapper_class, batch, expect, replays):
    """The decode path as SGLang runs it under CUDA graphs: a use_cuda_graph wrapper over the backend's graph
    buffers, planned by the updater (init_metadata_replay=False) and forward_decode captured; then the
    release's own fast_mla_decode_plan installed as the wrapper's plan, and per step the updater's replay
    branch (init_metadata_replay=True: page ids written into the captured buffer in place, the fast plan
    from host arrays) and a replay. Each replay is held to the FP32 reference of its lengths."""
    bs = len(batch.kv_lens)
    b = Backend(module, wrapper_class, batch)
    qo_indptr = torch.arange(bs + 1, dtype=torch.int32, device="cuda")
    kv_indices = torch.zeros(sum(batch.kv_lens), dtype=torch.int32, device="cuda")
    wrapper = b.recorder.make_wrapper(
        b.workspace, use_cuda_graph=True, qo_indptr=qo_indptr,
        kv_indptr=torch.zeros(bs + 1, dtype=torch.int32, device="cuda"), kv_indices=kv_indices,
        kv_len_arr=torch.ones(bs, dtype=torch.int32, device="cuda"), backend="auto")
    updater = module.FlashInferMLAIndicesUpdaterDecode(b.model_runner, b.attn)

    def plan(lens, replay, extra=None):
        call_with_names(updater.call_begin_forward, dict(
            wrapper=wrapper, req_pool_indices=batch.req_pool_indices,
            paged_kernel_lens=torch.tensor(lens, dtype=torch.int32, device="cuda"), paged_kernel_lens_sum=sum(lens),
            q_indptr=updater.q_indptr, kv_indptr=updater.kv_indptr, init_metadata_replay=replay, plan=None,
            kv_view=stand_ins.kv_index_table(batch.req_to_token, batch.req_pool_indices)), extra)

    plan(batch.kv_lens, False)
    b.backend.forward_metadata = types.SimpleNamespace(decode_wrapper=wrapper)
    captured = {}
    graph = api.capture(lambda: captured.update(out=b.decode(0)))
    wrapper.plan = functools.partial(module.fast_mla_decode_plan, wrapper)  # as the backend does after capture
    r = b.recorder
    api.check(set(r.plan_kv_dtypes) == {expect} and set(r.run_kv_dtypes) == {expect},
              f"{label}: captured decode plans and runs {expect} KV")
    for n, lens in enumerate(replays, start=1):
        kv_len_cpu = torch.tensor(lens, dtype=torch.int32)
        plan(lens, True, {"kv_indices": kv_indices, "qo_indptr_cpu": qo_indptr.cpu(),
                          "kv_indptr_cpu": torch.cat([torch.zeros(1, dtype=torch.int32), kv_len_cpu.cumsum(0)]).int(),
                          "kv_len_arr_cpu": kv_len_cpu})
        graph.replay()
        ref, mag = batch.reference(0, causal=False, kv_lens=lens)
        api.check(passes(captured["out"], ref, mag, types.SimpleNamespace(kv_lens=lens)),
                  f"{label}: replay {n} after the release's fast_mla_decode_plan, within tolerance of FP32")


def observe_paths(label, module, wrapper_class, decode_batch, prefill_batch):
    """Runs both paths and prints what happened, checking nothing: for a case whose right outcome is not
    this test's to decide (it is reported, and the README says what was seen)."""
    for path, batch in (("decode", decode_batch), ("paged prefill", prefill_batch)):
        b = Backend(module, wrapper_class, batch)
        try:
            if path == "decode":
                b.plan_decode()
                out = b.decode(0)
            else:
                out = b.extend(0)
            ref, mag = batch.reference(0, causal=path != "decode")
            outcome = "within tolerance of FP32" if passes(out, ref, mag, batch) else "OUTSIDE the tolerance"
        except Exception as err:
            outcome = f"raised {type(err).__name__}: {str(err).splitlines()[0][:160]}"
        r = b.recorder
        print(f"seen {label}: {path} planned {r.plan_kv_dtypes}, ran {r.run_kv_dtypes}, scales {r.run_scales}: "
              f"{outcome}")


def correctness(version, sources, flashinfer, kernel_wrapper):
    decode_batch = Batch([700, 3000, 1, 1500], [1, 1, 1, 1], 6000, 1, seed=7)
    prefill_batch = Batch([700, 300, 37], [5, 300, 1], 1100, 1, seed=8)  # prefix + new tokens; one with no prefix
    flashinfer_wrapper = flashinfer.BatchMLAPagedAttentionWrapper
    modules = {form: stand_ins.load(text, f"{version} {form}") for form, text in sources.items()}
    outs = {}
    for form, module in modules.items():
        outs[form] = expect_paths(f"SGLang {version} {form}", module, flashinfer_wrapper, decode_batch,
                                  prefill_batch, BF16 if form == "as released" else FP8)
    for form in FORMS:
        same_bits({"as released": outs["as released"][0], "patched": outs[form][0]}, f"decode, {form}")
        same_bits({"as released": outs["as released"][1], "patched": outs[form][1]}, f"paged prefill, {form}")

    if kernel_wrapper is not None:  # the patched decode path on kvpatch's kernel, as on a GPU FlashInfer cannot serve
        expect_paths(f"SGLang {version} patched, kvpatch's kernel", modules["patched"], kernel_wrapper,
                     decode_batch, prefill_batch, FP8, prefill=False)

    # Decode under CUDA graphs, as SGLang serves it: capture, then the release's fast plan and replays.
    graph_batch = Batch([700, 3000, 5, 1500], [1, 1, 1, 1], 6000, 1, seed=12)
    replays = ([5, 64, 1, 30], [699, 2999, 5, 1500], [1, 1, 1, 1])
    for form, module in modules.items():
        graph_replay(f"SGLang {version} {form}, CUDA graph", module, flashinfer_wrapper, graph_batch,
                     BF16 if form == "as released" else FP8, replays)
    if kernel_wrapper is not None:
        graph_replay(f"SGLang {version} patched, kvpatch's kernel, CUDA graph", modules["patched"], kernel_wrapper,
                     graph_batch, FP8, replays)

    # The same process with torch and FlashInfer reporting SM120, where FlashInfer plans no BF16-query x
    # FP8-KV MLA: the sm90 form must fall back to the cast; the original form's plan() must fail there.
    helper = modules["patched, sm90 form"]._kvpatch_fp8_kv_dtype
    with ReportedCapability((12, 0), [helper]):
        expect_paths(f"SGLang {version} patched, sm90 form, on \"SM120\"", modules["patched, sm90 form"],
                     flashinfer_wrapper, decode_batch, prefill_batch, BF16)
        expect_raises(f"SGLang {version} patched (original form), on \"SM120\": decode plan() fails",
                      lambda: Backend(modules["patched"], flashinfer_wrapper, decode_batch).plan_decode())

    # An FP8 E5M2 cache (SGLang's --kv-cache-dtype fp8_e5m2). The upstream and sm90 forms keep the cast for
    # it and plan BF16, as released. The original form plans E5M2; what FlashInfer does with that is printed.
    e5m2_decode = Batch([700, 3000, 1, 1500], [1, 1, 1, 1], 6000, 1, seed=9, kv_dtype=E5M2)
    e5m2_prefill = Batch([700, 300, 37], [5, 300, 1], 1100, 1, seed=10, kv_dtype=E5M2)
    for form in ("as released", "patched, upstream form", "patched, sm90 form"):
        expect_paths(f"SGLang {version} {form}, E5M2 cache", modules[form], flashinfer_wrapper, e5m2_decode,
                     e5m2_prefill, BF16)
    observe_paths(f"SGLang {version} patched (original form), E5M2 cache", modules["patched"], flashinfer_wrapper,
                  e5m2_decode, e5m2_prefill)

    module = stand_ins.load(decode_only(sources["patched"]), f"{version} decode-only")
    expect_raises(f"SGLang {version} patched for decode only: paged prefill fails",
                  lambda: prefill_passes_or_raise(module, flashinfer_wrapper, prefill_batch))


def prefill_passes_or_raise(module, wrapper_class, batch):
    """The paged prefill path; raises if its output is not within tolerance (a wrong result is a failure too)."""
    out = Backend(module, wrapper_class, batch).extend(0)
    ref, mag = batch.reference(0, causal=True)
    if not passes(out, ref, mag, batch):
        raise AssertionError("the output left the tolerance")


def expect_raises(what, fn):
    try:
        fn()
    except Exception as err:  # FlashInfer's refusal is the expected failure; which exception is printed
        api.check(True, f"{what} (raised {type(err).__name__}: {str(err).splitlines()[0][:120]})")
        return
    api.check(False, f"{what} (it ran)")


def bench(version, sources, wrappers, layers, rounds=7):
    """Median ms of one decode step of `layers` layers, as released and patched, interleaved round by round:
    replayed as a CUDA graph (as SGLang runs decode) and, for comparison, eager from Python."""
    batch = Batch([4096] * 32, [1] * 32, 495_552, layers, seed=11)
    steps = {}
    for form, wrapper_class in wrappers.items():
        source = sources["as released" if form == "as released" else "patched"]
        b = Backend(stand_ins.load(source, f"{version} {form}"), wrapper_class, batch)
        b.plan_decode()

        def eager(b=b):
            return [b.decode(i) for i in range(layers)]
        steps[("graph", form)] = api.capture(eager).replay
        steps[("eager", form)] = eager
    times = {key: [] for key in steps}
    for _ in range(rounds):
        for key, step in steps.items():
            step()  # warm-up; its 61 layers' KV pass through the 60 MB L2, so the timed step starts cold
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            step()
            end.record()
            end.synchronize()
            times[key].append(start.elapsed_time(end))
    cast = []  # what the released path adds per layer: PyTorch's cast of the whole pool, timed alone
    for _ in range(rounds):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        batch.pools[0].to(BF16)
        end.record()
        end.synchronize()
        cast.append(start.elapsed_time(end))
    med = {key: statistics.median(t) for key, t in times.items()}
    result = {"release": version, "layers": layers, "batch": 32, "kv_len": 4096, "pool_slots": 495_552,
              "heads": HEADS, "rounds": rounds, "ms_pool_cast_alone": statistics.median(cast)}
    print(f"SGLang {version}: one pool's cast to BF16 (Tensor.to, as the released decode path makes it per layer) "
          f"alone: {statistics.median(cast):.3f} ms")
    for mode in ("graph", "eager"):
        released = med[(mode, "as released")]
        parts = [f"{released:.2f} ms as released"]
        result[mode] = {"ms_as_released": released, "times_ms_as_released": times[(mode, "as released")]}
        for form in list(wrappers)[1:]:
            ms = med[(mode, form)]
            parts.append(f"{ms:.2f} ms {form} ({released / ms:.2f}x)")
            result[mode][f"ms_{form}"] = ms
            result[mode][f"times_ms_{form}"] = times[(mode, form)]
        print(f"SGLang {version}, {mode}: {layers}-layer decode step, batch 32 x 4096 tokens, pools of 495,552 "
              f"slots: {', '.join(parts)}")
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", default=os.path.join(HERE, "..", "..", ".cache"))
    ap.add_argument("--kvpatch", default=shutil.which("kvpatch"), help="kvpatch to patch with, if none is carried")
    ap.add_argument("--releases", default=",".join(RELEASES))
    ap.add_argument("--bench-layers", type=int, default=0)
    ap.add_argument("--bench-releases", default=",".join(BENCH_RELEASES), help="the releases whose step is timed")
    ap.add_argument("--out", default=None)
    ap.add_argument("--lib", default=None,
                    help="libkvpatch_mla_capi.so: also run the patched decode on kvpatch's kernel")
    args = ap.parse_args()
    flashinfer = api.flashinfer_or_skip()
    if flashinfer is None:
        return 77
    print(f"FlashInfer {flashinfer.__version__}, {torch.cuda.get_device_name()}")
    if torch.cuda.get_device_capability()[0] != 9:
        print("skipped: FlashInfer plans a BF16 query with an FP8 KV cache for MLA on SM90 only, and this GPU "
              "is not SM90 (the test reports SM120 to FlashInfer itself for the other case)")
        return 77
    kernel_wrapper = kvpatch_wrapper_class(args.lib) if args.lib else None
    if kernel_wrapper is None:
        print("note: no --lib, so the patched decode path is not also run on kvpatch's kernel")
    wrappers = {"as released": flashinfer.BatchMLAPagedAttentionWrapper,
                "patched": flashinfer.BatchMLAPagedAttentionWrapper}
    if kernel_wrapper is not None:
        wrappers["patched, kvpatch kernel"] = kernel_wrapper
    benches = []
    for version in args.releases.split(","):
        original = backend_source(args.cache, version)
        if original is None:
            print(f"skipped: no SGLang {version} backend under {args.cache} (kernels/bench/sglang_backends.sh)")
            return 77
        sources = {"as released": original}
        for name, form in FORMS.items():
            sources[name] = patched_source(args.cache, version, args.kvpatch, flashinfer.__version__, form)
            if sources[name] is None:
                print(f"skipped: no {form}-form patch of SGLang {version} (kernels/bench/sglang_backends.sh, "
                      "or --kvpatch)")
                return 77
        correctness(version, sources, flashinfer, kernel_wrapper)
        if args.bench_layers and version in args.bench_releases.split(","):
            benches.append(bench(version, sources, wrappers, args.bench_layers))
    if args.out and benches:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "sglang-release-step.json"), "w", encoding="utf-8") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "flashinfer": flashinfer.__version__,
                       "torch": torch.__version__, "steps": benches}, f, indent=1)
    return api.verdict()


if __name__ == "__main__":
    sys.exit(main())
