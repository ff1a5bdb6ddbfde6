#!/usr/bin/env python3
"""GPU test of kernels/python/kvpatch_mla_flashinfer.py: FlashInfer's MLA wrapper interface over kvpatch's kernel.

  flashinfer_compat_test.py [--lib build/kernels/libkvpatch_mla_capi.so]

Called as SGLang's FlashInfer MLA backend calls FlashInfer (plan()'s twelve positional arguments,
run() positionally and with query= / kv_cache=), the wrapper must give the same bits as the Python
API it wraps, refuse what it does not implement by name, and keep a captured CUDA graph valid across
plan() calls. Where FlashInfer itself imports (kernels/bench/flashinfer_env.sh on the GPU machine),
the very same calls go to FlashInfer's BatchMLAPagedAttentionWrapper too, and both outputs must be
within the verifier's tolerance of the FP32 reference. Exit 0 all pass, 1 a failure, 77 skipped.
"""
import math
import os
import sys

try:
    import torch
except ImportError:
    print("skipped: PyTorch is not installed")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "kernels", "python"))
import kvpatch_mla
import kvpatch_mla_flashinfer
import python_api_test as api  # the pool, index and reference helpers

FP8 = torch.float8_e4m3fn



def bits_equal(a, b):
    return a.shape == b.shape and bool(torch.equal(a.view(torch.int16), b.view(torch.int16)))


def batch(lens, heads, kv_dtype, seed):
    """One decode batch in SGLang's layout: a [slots, 1, 576] pool sliced into ckv / kpe views."""
    kv = api.pool(sum(lens) + 9, kv_dtype, seed).view(-1, 1, 576)
    g = torch.Generator(device="cuda").manual_seed(seed + 1)
    q = torch.randn(len(lens), heads, 576, generator=g, device="cuda").to(torch.bfloat16)
    indptr, indices = api.batch_indices(lens, 1, kv.shape[0], seed)
    return {"q_nope": q[..., :512], "q_pe": q[..., 512:], "ckv": kv[..., :512], "kpe": kv[..., 512:],
            "indptr": indptr, "indices": indices, "lens": torch.tensor(lens, dtype=torch.int32, device="cuda"),
            "qo_indptr": torch.arange(len(lens) + 1, dtype=torch.int32, device="cuda")}


def sglang_plan(wrapper, b, heads, sm_scale, kv_dtype):
    """plan() exactly as SGLang's decode updater calls it: twelve positional arguments."""
    wrapper.plan(b["qo_indptr"], b["indptr"], b["indices"], b["lens"], heads, 512, 64, 1, False, sm_scale,
                 torch.bfloat16, kv_dtype)


def same_as_python_api(lib):
    """FP8 and BF16 caches, both run() forms, the LSE bases, against BatchMLADecodeWrapper."""
    heads, sm_scale = 16, 1.0 / math.sqrt(192.0)
    for kv_dtype, scales in ((FP8, {"ckv_scale": 0.75, "kpe_scale": 1.25}), (torch.bfloat16, {})):
        b = batch([1000, 0, 37, 5000], heads, kv_dtype, 3)
        ws = torch.empty(128 << 20, dtype=torch.uint8, device="cuda")
        w = kvpatch_mla_flashinfer.BatchMLAPagedAttentionWrapper(ws, library=lib)
        sglang_plan(w, b, heads, sm_scale, kv_dtype)
        out, lse2 = w.run(b["q_nope"], b["q_pe"], b["ckv"], b["kpe"], return_lse=True, **scales)
        out_kw, lse_e = w.run(query=(b["q_nope"], b["q_pe"]), kv_cache=(b["ckv"], b["kpe"]), return_lse=True,
                              return_lse_base_on_e=True, **scales)
        plain = kvpatch_mla.BatchMLADecodeWrapper(library=lib)
        plain.plan(b["indptr"], b["indices"], b["lens"], heads, 1, sm_scale, kv_dtype)
        ref_out, ref_lse = plain.run(b["q_nope"], b["q_pe"], b["ckv"], b["kpe"], return_lse=True,
                                     ckv_scale=scales.get("ckv_scale", 1.0), kpe_scale=scales.get("kpe_scale", 1.0))
        torch.cuda.synchronize()
        name = str(kv_dtype).replace("torch.", "")
        api.check(bits_equal(out, ref_out) and bits_equal(out_kw, ref_out),
              f"{name}: SGLang's positional plan() and both run() forms give the Python API's bits")
        api.check(bool(torch.equal(lse2.view(torch.int32), ref_lse.view(torch.int32))),
                  f"{name}: LSE base 2 as the API's")
        finite = torch.isfinite(lse2)
        api.check(bool(torch.equal(torch.isfinite(lse_e), finite)) and
              bool(torch.allclose(lse_e[finite], lse2[finite] * math.log(2.0), rtol=1e-6, atol=0)),
              f"{name}: return_lse_base_on_e gives the base-e LSE")


def graph_keeps_its_plan(lib):
    """use_cuda_graph: run() captured after a length-aware plan; plan() again with every request within
    one tile (alone, that batch gets a uniform plan and no split table); replay must equal an eager run
    of the captured plan: plan() keeps the captured split plan and refreshes its split table."""
    heads, sm_scale, pages_total = 16, 0.07, 4 * 3000 + 7
    kv = api.pool(pages_total, FP8, 11).view(pages_total, 1, 576)
    ckv, kpe = kv[..., :512], kv[..., 512:]
    q = torch.randn(4, heads, 576, device="cuda").to(torch.bfloat16)
    q_nope, q_pe = q[..., :512], q[..., 512:]
    buffers = {"qo_indptr": torch.zeros(5, dtype=torch.int32, device="cuda"),
               "kv_indptr": torch.zeros(5, dtype=torch.int32, device="cuda"),
               "kv_indices": torch.zeros(pages_total, dtype=torch.int32, device="cuda"),
               "kv_len_arr": torch.zeros(4, dtype=torch.int32, device="cuda")}
    ws = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
    w = kvpatch_mla_flashinfer.BatchMLAPagedAttentionWrapper(ws, True, **buffers, library=lib)
    qo = torch.arange(5, dtype=torch.int32)
    indptr = torch.tensor([0, 3000, 6000, 9000, 12000], dtype=torch.int32)
    indices = torch.arange(pages_total, dtype=torch.int32)

    def plan(lens):  # host tensors, as a server's scheduler has them; the wrapper copies them in
        w.plan(qo, indptr, indices, torch.tensor(lens, dtype=torch.int32), heads, 512, 64, 1, False, sm_scale,
               torch.bfloat16, FP8)

    out = torch.empty(4, heads, 512, dtype=torch.bfloat16, device="cuda")
    plan([700, 2900, 12, 1500])
    graph = api.capture(lambda: w.run(q_nope, q_pe, ckv, kpe, out=out, ckv_scale=1.0, kpe_scale=1.0))
    captured = w._decode.split_plan
    short = [5, 64, 1, 30]
    plan(short)
    graph.replay()
    eager = kvpatch_mla.BatchMLADecodeWrapper(library=lib)
    lens = torch.tensor(short, dtype=torch.int32, device="cuda")
    eager.plan(indptr.cuda(), indices.cuda(), lens, heads, 1, sm_scale, FP8, max_kv_len=2900)
    expected = eager.run(q_nope, q_pe, ckv, kpe)
    alone = kvpatch_mla.BatchMLADecodeWrapper(library=lib)
    alone.plan(indptr.cuda(), indices.cuda(), lens, heads, 1, sm_scale, FP8)
    torch.cuda.synchronize()
    api.check(captured == w._decode.split_plan and alone.split_plan != captured,
          f"CUDA graph: the second plan() kept the captured plan {captured} (alone it would be {alone.split_plan})")
    api.check(bits_equal(out, expected), "CUDA graph: replay after plan() with new lengths equals an eager run")


def expect_error(what, text, fn):
    try:
        fn()
    except ValueError as err:
        api.check(text in str(err), f"refused: {what}, naming '{text}' ({err})")
        return
    api.check(False, f"refused: {what} (no ValueError)")


def refusals(lib):
    heads = 16
    b = batch([100, 200], heads, FP8, 5)
    ws = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
    wrapper_class = kvpatch_mla_flashinfer.BatchMLAPagedAttentionWrapper
    expect_error("backend='fa3'", "backend", lambda: wrapper_class(ws, backend="fa3", library=lib))
    expect_error("use_cuda_graph without buffers", "kv_indptr", lambda: wrapper_class(ws, True, library=lib))
    w = wrapper_class(ws, library=lib)
    args = [b["qo_indptr"], b["indptr"], b["indices"], b["lens"], heads, 512, 64, 1, False, 0.1, torch.bfloat16, FP8]
    expect_error("head_dim_ckv 256", "head_dim_ckv", lambda: w.plan(*args[:5], 256, *args[6:]))
    expect_error("an FP16 query", "q_data_type", lambda: w.plan(*args[:10], torch.float16, FP8))
    expect_error("a prefill batch (two queries in request 0)", "qo_indptr",
                 lambda: w.plan(torch.tensor([0, 2, 3], dtype=torch.int32), *args[1:]))
    expect_error("use_profiler", "use_profiler", lambda: w.plan(*args, True))
    expect_error("plan(lse_mode=...)", "lse_mode", lambda: w.plan(*args, lse_mode="basee"))
    w.plan(*args)
    run = (b["q_nope"], b["q_pe"], b["ckv"], b["kpe"])
    expect_error("an FP8 run without scales", "ckv_scale", lambda: w.run(*run))
    expect_error("run(page_table=...)", "page_table",
                 lambda: w.run(*run, page_table=b["indices"], ckv_scale=1.0, kpe_scale=1.0))
    expect_error("query given twice", "query", lambda: w.run(*run, query=run[:2], ckv_scale=1.0, kpe_scale=1.0))


def against_flashinfer(lib):
    """The same positional calls on FlashInfer's own wrapper (SM90: its fa3 FP8 path)."""
    try:
        import flashinfer
    except Exception as err:  # any import failure means: not here
        print(f"skip FlashInfer comparison: flashinfer does not import ({type(err).__name__}: {err})")
        return
    heads, sm_scale = 16, 1.0 / math.sqrt(192.0)
    lens = [1000, 1, 37, 5000, 64]
    b = batch(lens, heads, FP8, 9)
    results = {}
    for name, cls in (("kvpatch", kvpatch_mla_flashinfer.BatchMLAPagedAttentionWrapper),
                      ("flashinfer", flashinfer.mla.BatchMLAPagedAttentionWrapper)):
        ws = torch.empty(128 << 20, dtype=torch.uint8, device="cuda")
        w = cls(ws, library=lib) if name == "kvpatch" else cls(ws)
        sglang_plan(w, b, heads, sm_scale, FP8)
        results[name] = w.run(b["q_nope"], b["q_pe"], b["ckv"], b["kpe"], return_lse=True, ckv_scale=0.5,
                              kpe_scale=0.5)
    ref, ref_lse, mag = api.reference(b["q_nope"], b["q_pe"], b["ckv"], b["kpe"], b["indptr"], b["indices"], lens,
                                      1, sm_scale, 0.5, 0.5)
    torch.cuda.synchronize()
    for name, (out, lse) in results.items():
        api.check(api.within_tolerance(out, ref, mag, lens), f"FlashInfer {flashinfer.__version__}'s call on {name}: "
              "output within tolerance of the FP32 reference")
        api.check(bool(((lse - ref_lse).abs() <= 1e-3 * (1 + ref_lse.abs())).all()),
              f"FlashInfer's call on {name}: LSE (base 2) matches the reference")
    diff = (results["kvpatch"][0].float() - results["flashinfer"][0].float()).abs().max().item()
    print(f"     largest |kvpatch - flashinfer| over the output: {diff:.3g}")


def main():
    lib = api.library_or_skip(__doc__.splitlines()[0])
    if lib is None:
        return 77
    torch.manual_seed(0)
    same_as_python_api(lib)
    graph_keeps_its_plan(lib)
    refusals(lib)
    against_flashinfer(lib)
    return api.verdict()


if __name__ == "__main__":
    sys.exit(main())
