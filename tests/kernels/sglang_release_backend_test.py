#!/usr/bin/env python3
"""GPU test: a real SGLang release's FlashInfer MLA backend, as released and as kvpatch patches it, on FlashInfer.

  sglang_release_backend_test.py [--cache DIR] [--kvpatch BIN] [--releases 0.5.16,...] [--lib LIB]

The backend module (sglang/srt/layers/attention/flashinfer_mla_backend.py) is taken from the release at run
time: DIR/sglang-backends/<version>/flashinfer_mla_backend.py, else extracted from DIR/sglang's wheel. Its
patched texts, one per --kv-dtype-form (original, upstream, sm90), are
DIR/sglang-backends/<version>/kvpatch-applied[-upstream|-sm90]/flashinfer_mla_backend.py
(kernels/bench/sglang_backends.sh writes them all), or `kvpatch apply` run here by --kvpatch on a copy.
Nothing of SGLang is kept in this repository.

Each text is loaded as a module (sglang_release_harness.py). Only its sglang imports are stood in for
(sglang_stand_ins.py): the
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
  tolerance; the original form plans E5M2, which FlashInfer must refuse (the limit of that form that
  `kvpatch apply` notes: this keeps the note true).
With --lib (libkvpatch_mla_capi.so), the patched decode path also runs on kvpatch's kernel through its
stand-in for FlashInfer's wrapper (kernels/python/kvpatch_mla_flashinfer.py), as it would on a GPU
FlashInfer has no BF16-query x FP8-KV path for, and is held to the same tolerance.
kernels/bench/sglang_release_step.py times a decode step of these backends.
Exit 0 all pass, 1 a failure, 77 skipped (no GPU, PyTorch,
FlashInfer or release source).
"""
import argparse
import functools
import os
import re
import shutil
import sys
import types

try:
    import torch
except ImportError:
    print("skipped: PyTorch is not installed")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import python_api_test as api  # noqa: E402  (check / verdict, FlashInfer's import)
import sglang_stand_ins as stand_ins  # noqa: E402
from flashinfer_sm90_gate_test import ReportedCapability  # noqa: E402
from sglang_release_harness import (  # noqa: E402
    BF16,
    FORMS,
    FP8,
    Backend,
    Batch,
    call_with_names,
    kvpatch_wrapper_class,
    passes,
    release_sources,
)

E5M2 = torch.float8_e5m2
# Every release kvpatch patches with its own FlashInfer pin (0.6.14 and later), 0.5.16 to the newest.
RELEASES = ("0.5.16", "0.5.17", "0.5.18", "0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23")


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


def same_bits(outs, what):
    """Prints whether the patched output equals the released one bit for bit (information, not a check:
    FlashInfer's FP8 and BF16 kernels need not share an accumulation order)."""
    released, patched = outs["as released"], outs["patched"]
    same = bool(torch.equal(released.view(torch.int16), patched.view(torch.int16)))
    diff = (released.float() - patched.float()).abs().max().item()
    print(f"     {what}: patched {'equals' if same else 'differs from'} as released bit for bit (max |diff| {diff:g})")


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
                      lambda: Backend(modules["patched"], flashinfer_wrapper, decode_batch).plan_decode(),
                      ("FP8 kv_data_type", "SM90"))

    # An FP8 E5M2 cache (SGLang's --kv-cache-dtype fp8_e5m2). The upstream and sm90 forms keep the cast for
    # it and plan BF16, as released. The original form plans E5M2, which FlashInfer refuses: `kvpatch apply`
    # says so in a note, and this keeps the note true (if FlashInfer starts to take E5M2, this fails).
    e5m2_decode = Batch([700, 3000, 1, 1500], [1, 1, 1, 1], 6000, 1, seed=9, kv_dtype=E5M2)
    e5m2_prefill = Batch([700, 300, 37], [5, 300, 1], 1100, 1, seed=10, kv_dtype=E5M2)
    for form in ("as released", "patched, upstream form", "patched, sm90 form"):
        expect_paths(f"SGLang {version} {form}, E5M2 cache", modules[form], flashinfer_wrapper, e5m2_decode,
                     e5m2_prefill, BF16)
    expect_raises(f"SGLang {version} patched (original form), E5M2 cache: decode plan() fails, as apply's note says",
                  lambda: Backend(modules["patched"], flashinfer_wrapper, e5m2_decode).plan_decode(),
                  ("float8_e5m2", "not supported"))
    expect_raises(f"SGLang {version} patched (original form), E5M2 cache: paged prefill fails, as apply's note says",
                  lambda: Backend(modules["patched"], flashinfer_wrapper, e5m2_prefill).extend(0),
                  ("float8_e5m2", "not supported"))

    module = stand_ins.load(decode_only(sources["patched"]), f"{version} decode-only")
    expect_raises(f"SGLang {version} patched for decode only: paged prefill fails",
                  lambda: prefill_passes_or_raise(module, flashinfer_wrapper, prefill_batch),
                  ("kv_data_type",), ("left the tolerance",))


def prefill_passes_or_raise(module, wrapper_class, batch):
    """The paged prefill path; raises if its output is not within tolerance (a wrong result is a failure too)."""
    out = Backend(module, wrapper_class, batch).extend(0)
    ref, mag = batch.reference(0, causal=True)
    if not passes(out, ref, mag, batch):
        raise AssertionError("the output left the tolerance")


def expect_raises(what, fn, *mentions):
    """Checks that fn raises, with a message holding every word of one of `mentions` (word tuples): a
    refusal for the expected reason, not any error (a fault in the test would raise too)."""
    try:
        fn()
    except Exception as err:
        text = str(err)
        why = any(all(word in text for word in words) for words in mentions)
        api.check(why, f"{what} (raised {type(err).__name__}: {text.splitlines()[0][:120] if text else ''})")
        return
    api.check(False, f"{what} (it ran)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", default=os.path.join(HERE, "..", "..", ".cache"))
    ap.add_argument("--kvpatch", default=shutil.which("kvpatch"), help="kvpatch to patch with, if none is carried")
    ap.add_argument("--releases", default=",".join(RELEASES))
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
    for version in args.releases.split(","):
        sources = release_sources(args.cache, version, args.kvpatch, flashinfer.__version__)
        if isinstance(sources, str):
            print(f"skipped: {sources}")
            return 77
        correctness(version, sources, flashinfer, kernel_wrapper)
    return api.verdict()


if __name__ == "__main__":
    sys.exit(main())
