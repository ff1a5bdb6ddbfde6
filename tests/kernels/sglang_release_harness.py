"""What the real-release GPU test and step benchmark share: a release's backend texts, as released and as
kvpatch patches them, and the environment its updaters and forward methods run in.

Used by tests/kernels/sglang_release_backend_test.py and kernels/bench/sglang_release_step.py. The texts
come from DIR/sglang-backends/<version>/ (kernels/bench/sglang_backends.sh writes them), else from
DIR/sglang's wheel, with `kvpatch apply` run on a copy for the patched ones. The module's own `sglang.*`
imports are stood in for by sglang_stand_ins.py.
"""
import inspect
import math
import os
import subprocess
import sys
import tempfile
import types

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import python_api_test as api  # noqa: E402  (pool, tolerance)
import sglang_stand_ins as stand_ins  # noqa: E402
from sglang_graph_replay_test import backend_source  # noqa: E402

FP8 = torch.float8_e4m3fn
BF16 = torch.bfloat16
HEADS, SM_SCALE = 16, 1.0 / math.sqrt(192.0)  # DeepSeek-V3 at TP 8: 16 local heads, qk head dim 128 + 64
FORMS = {"patched": "original", "patched, upstream form": "upstream", "patched, sm90 form": "sm90"}


def release_sources(cache, version, kvpatch, flashinfer_version):
    """{"as released": text, and one text per FORMS name}, or a string saying what is missing."""
    original = backend_source(cache, version)
    if original is None:
        return f"no SGLang {version} backend under {cache} (kernels/bench/sglang_backends.sh)"
    sources = {"as released": original}
    for name, form in FORMS.items():
        sources[name] = patched_source(cache, version, original, kvpatch, flashinfer_version, form)
        if sources[name] is None:
            return f"no {form}-form patch of SGLang {version} (kernels/bench/sglang_backends.sh, or --kvpatch)"
    return sources


def patched_source(cache, version, original, kvpatch, flashinfer_version, form):
    """kvpatch's output for the release's backend (`original`, its text) in one --kv-dtype-form: the carried
    file (written by kernels/bench/sglang_backends.sh), else `kvpatch apply` on a copy."""
    sub = "kvpatch-applied" if form == "original" else f"kvpatch-applied-{form}"
    carried = os.path.join(cache, "sglang-backends", version, sub, "flashinfer_mla_backend.py")
    if os.path.exists(carried):
        with open(carried, encoding="utf-8") as f:
            return f.read()
    if not kvpatch:
        return None
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


def kvpatch_wrapper_class(lib):
    """kvpatch's stand-in for FlashInfer's MLA wrapper (kernels/python/kvpatch_mla_flashinfer.py) over `lib`."""
    sys.path.insert(0, os.path.join(HERE, "..", "..", "kernels", "python"))
    import kvpatch_mla_flashinfer

    class KvpatchWrapper(kvpatch_mla_flashinfer.BatchMLAPagedAttentionWrapper):
        def __init__(self, workspace, *args, **kwargs):
            super().__init__(workspace, *args, library=lib, **kwargs)

    return KvpatchWrapper
