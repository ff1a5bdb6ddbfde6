#!/usr/bin/env python3
"""GPU test: SGLang's own CUDA-graph replay plan, fast_mla_decode_plan, on kvpatch's FlashInfer-interface wrapper.

  sglang_graph_replay_test.py [--lib LIB] [--cache DIR]

SGLang's FlashInfer MLA backend, after capturing a decode step, replaces the wrapper's plan with
fast_mla_decode_plan (functools.partial), which reaches into FlashInfer's private _cached_module. This
test takes that function's source from real SGLang releases at run time (the backend files under
DIR/sglang-backends/<version>/, else extracted from DIR/sglang/sglang-<version>-*.whl; nothing of SGLang
is kept in this repository), runs the backend's flow on kvpatch_mla_flashinfer.BatchMLAPagedAttentionWrapper
(construct with use_cuda_graph buffers, plan with twelve positional arguments, capture run() with the
FP8 scales kvpatch's patch passes, install fast_mla_decode_plan, then per step: page ids written into
the captured kv_indices buffer in place, the fast plan with host arrays, replay), and holds every replay
to an eager run of the same plan bit for bit and to the FP32 reference within the verifier's tolerance.
Exit 0 all pass, 1 a failure, 77 skipped (no GPU, PyTorch, library or SGLang release).
"""
import argparse
import ast
import functools
import glob
import os
import sys
import typing
import zipfile

try:
    import torch
except ImportError:
    print("skipped: PyTorch is not installed")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "kernels", "python"))
sys.path.insert(0, HERE)
import kvpatch_mla  # noqa: E402
import kvpatch_mla_flashinfer  # noqa: E402
import python_api_test as api  # noqa: E402  (pool, indices, reference, tolerance, capture)

RELEASES = ("0.4.6", "0.4.9", "0.5.23")  # the three shapes of fast_mla_decode_plan: stream arg, .default, plain
BACKEND = "sglang/srt/layers/attention/flashinfer_mla_backend.py"
FP8 = torch.float8_e4m3fn



def backend_source(cache, version):
    extracted = os.path.join(cache, "sglang-backends", version, "flashinfer_mla_backend.py")
    if os.path.exists(extracted):
        with open(extracted, encoding="utf-8") as f:
            return f.read()
    for wheel in glob.glob(os.path.join(cache, "sglang", f"sglang-{version}-*.whl")):
        with zipfile.ZipFile(wheel) as z:
            return z.read(BACKEND).decode()
    return None


def fast_plan_of(source):
    """SGLang's fast_mla_decode_plan, compiled from the release's own source text."""
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "fast_mla_decode_plan":
            namespace = {"torch": torch, "Optional": typing.Optional}
            exec(compile(ast.Module([node], []), "<sglang fast_mla_decode_plan>", "exec"), namespace)
            return namespace["fast_mla_decode_plan"]
    return None


def sglang_flow(lib, version, fast_plan):
    heads, sm_scale, batch, slots = 16, 0.07, 4, 4 * 3000 + 7
    pool = api.pool(slots, FP8, 31).view(slots, 1, 576)  # SGLang's k_buffer
    q = torch.randn(batch, heads, 576, device="cuda").to(torch.bfloat16)
    q_nope, q_pe = q[..., :512], q[..., 512:]
    # The backend's CUDA-graph buffers (cuda_graph_kv_indptr / kv_indices / kv_lens and q indptr).
    qo_buf = torch.arange(batch + 1, dtype=torch.int32, device="cuda")
    indptr_buf = torch.zeros(batch + 1, dtype=torch.int32, device="cuda")
    indices_buf = torch.zeros(slots, dtype=torch.int32, device="cuda")
    lens_buf = torch.ones(batch, dtype=torch.int32, device="cuda")
    ws = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
    w = kvpatch_mla_flashinfer.BatchMLAPagedAttentionWrapper(
        ws, use_cuda_graph=True, qo_indptr=qo_buf, kv_indptr=indptr_buf, kv_indices=indices_buf,
        kv_len_arr=lens_buf, backend="auto", library=lib)

    # Capture: the updater's plan() with device tensors (twelve positional arguments), then run().
    capture_lens = [700, 3000, 12, 1500]
    indptr, indices = api.batch_indices(capture_lens, 1, slots, 1)
    w.plan(qo_buf, indptr, indices, torch.tensor(capture_lens, dtype=torch.int32, device="cuda"), heads, 512, 64, 1,
           False, sm_scale, torch.bfloat16, FP8)
    out = torch.empty(batch, heads, 512, dtype=torch.bfloat16, device="cuda")
    scales = {"ckv_scale": 1.0, "kpe_scale": 1.0} if pool.dtype == FP8 else {}  # as kvpatch's patch passes them
    graph = api.capture(lambda: w.run(q_nope, q_pe, pool[:, :, :512], pool[:, :, 512:], out=out, **scales))
    w.plan = functools.partial(fast_plan, w)  # what SGLang does once the capture is done

    for n, lens in enumerate(([5, 64, 1, 30], [3000, 17, 2999, 640], [1, 1, 1, 1]), start=2):
        indptr, indices = api.batch_indices(lens, 1, slots, n)
        indices_buf[: indices.numel()].copy_(indices)  # SGLang writes the page ids in place
        lens_cpu = torch.tensor(lens, dtype=torch.int32)
        indptr_cpu = indptr.cpu()
        # call_begin_forward's replay call: host qo / kv indptr and lengths, positional.
        w.plan(torch.arange(batch + 1, dtype=torch.int32), indptr_cpu, indices_buf, lens_cpu, heads, 512, 64, 1,
               False, sm_scale, torch.bfloat16, FP8)
        graph.replay()
        eager = kvpatch_mla.BatchMLADecodeWrapper(library=lib)
        eager.plan(indptr, indices, lens_cpu.cuda(), heads, 1, sm_scale, FP8, max_kv_len=3000)  # the captured plan's
        expected = eager.run(q_nope, q_pe, pool[:, :, :512], pool[:, :, 512:])
        ref, _, mag = api.reference(q_nope, q_pe, pool[:, :, :512], pool[:, :, 512:], indptr, indices, lens, 1,
                                    sm_scale, 1.0, 1.0)
        torch.cuda.synchronize()
        same = bool(torch.equal(out.view(torch.int16), expected.view(torch.int16)))
        api.check(same, f"SGLang {version}: replay {n - 1} after fast_mla_decode_plan equals an eager run, bit for bit")
        api.check(api.within_tolerance(out, ref, mag, lens), f"SGLang {version}: replay {n - 1} within tolerance")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", default=None)
    parser.add_argument("--cache", default=os.path.join(HERE, "..", "..", ".cache"))
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("skipped: no CUDA device")
        return 77
    try:
        lib = kvpatch_mla.find_library(args.lib)
    except kvpatch_mla.KvpatchMlaError as err:
        print(f"skipped: {err}")
        return 77
    ran = 0
    for version in RELEASES:
        source = backend_source(args.cache, version)
        fast_plan = fast_plan_of(source) if source else None
        if fast_plan is None:
            print(f"skip SGLang {version}: no backend under {args.cache} (run the patcher.sglang.download test)")
            continue
        torch.manual_seed(0)
        sglang_flow(lib, version, fast_plan)
        ran += 1
    if ran == 0:
        print("skipped: no SGLang release found")
        return 77
    return api.verdict(f" ({ran} releases)")


if __name__ == "__main__":
    sys.exit(main())
