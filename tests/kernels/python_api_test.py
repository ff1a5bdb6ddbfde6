#!/usr/bin/env python3
"""GPU test of the Python API (kernels/python/kvpatch_mla.py) as a PyTorch caller uses it.

  python_api_test.py [--lib build/kernels/libkvpatch_mla_capi.so]

Each case plans and runs the wrapper on tensors in the layouts SGLang and FlashInfer hand over, and
checks the output and LSE against an FP32 reference computed here with PyTorch, within the
verifier's tolerance (|out - ref| <= u|ref| + (4u + L 2^-24) a, u = 2^-8, a the softmax-weighted
magnitude); FP8 KV against BF16 KV on an exactly cast copy, bit for bit at unit scales; CUDA-graph
replay after a replan; and the errors bad input gets. Exit 0 all pass, 1 a failure, 77 skipped (no
PyTorch, no GPU, or no library).
"""
import argparse
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

FAILURES = []


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what)
    if not condition:
        FAILURES.append(what)


def verdict(note=""):
    """Prints PASSED or FAILED: N (the checks of this process, every test module's that uses check()); the exit code."""
    print(f"{'FAILED: ' + str(len(FAILURES)) if FAILURES else 'PASSED'}{note}")
    return 1 if FAILURES else 0


def pool(slots, kv_dtype, seed):
    """A [slots, 1, 576] KV pool like SGLang's: latent-sized values (~N(0, 0.5)), in FP8 rounded to the
    nearest E4M3 code. The softmax they give with N(0, 1) queries is neither uniform nor one-hot. (With
    codes drawn over E4M3's whole range, scores run to the thousands: the FP32 sums' rounding then
    decides which tokens win, and probabilities fall below the 2^-29 under which the FP8 path's
    FP16 operands stop matching the BF16 path's; kernels/src/mma_operand.cuh.)"""
    g = torch.Generator(device="cuda").manual_seed(seed)
    return (torch.randn(slots, 1, 576, generator=g, device="cuda") * 0.5).to(kv_dtype)


def batch_indices(lens, page_size, pages_total, seed):
    """kv_indptr / kv_indices (page ids, shuffled, none shared) for the requests' lengths."""
    g = torch.Generator().manual_seed(seed)
    pages = [(n + page_size - 1) // page_size for n in lens]
    perm = torch.randperm(pages_total, generator=g)[: sum(pages)]
    indptr = torch.tensor([0, *torch.tensor(pages).cumsum(0).tolist()], dtype=torch.int32)
    return indptr.cuda(), perm.to(torch.int32).cuda()


def reference(q_nope, q_pe, ckv, kpe, indptr, indices, lens, page_size, sm_scale, ckv_scale, kpe_scale):
    """FP32 attention per request: (out [B, H, 512] float, lse base 2 [B, H], magnitude a [B, H, 512])."""
    batch, heads = q_nope.shape[:2]
    out = torch.zeros(batch, heads, 512, device="cuda")
    mag = torch.zeros_like(out)
    lse = torch.full((batch, heads), -math.inf, device="cuda")
    ckv2 = ckv.float().reshape(-1, 512)  # slot-major rows: (page p, slot i) -> p x page_size + i
    kpe2 = kpe.float().reshape(-1, 64)
    for b in range(batch):
        n = int(lens[b])
        if n == 0:
            continue
        page_ids = indices[int(indptr[b]):int(indptr[b + 1])].long()
        slots = (page_ids[:, None] * page_size + torch.arange(page_size, device="cuda")[None, :]).reshape(-1)[:n]
        lat = ckv2[slots] * ckv_scale
        rope = kpe2[slots] * kpe_scale
        scores = (q_nope[b].float() @ lat.T + q_pe[b].float() @ rope.T) * sm_scale  # [H, n]
        p = torch.softmax(scores, dim=-1)
        out[b] = p @ lat
        mag[b] = p @ lat.abs()
        lse[b] = torch.logsumexp(scores, dim=-1) / math.log(2.0)
    return out, lse, mag


class SGLangDecodeBatch:
    """One decode batch as SGLang's FlashInfer MLA backend hands it to FlashInfer's wrapper: BF16 queries split
    into q_nope / q_pe, page size 1, shuffled page ids into a pool of sum(lens) + 9 slots made with pool(), and
    plan()'s twelve positional arguments. The tests that run FlashInfer's own wrapper share it."""

    def __init__(self, lens, heads, seed):
        self.lens, self.heads, self.sm_scale = lens, heads, 1.0 / math.sqrt(192.0)
        self.slots = sum(lens) + 9
        g = torch.Generator(device="cuda").manual_seed(seed + 1)
        q = torch.randn(len(lens), heads, 576, generator=g, device="cuda").to(torch.bfloat16)
        self.q_nope, self.q_pe = q[..., :512], q[..., 512:]
        self.indptr, self.indices = batch_indices(lens, 1, self.slots, seed)
        self.kv_lens = torch.tensor(lens, dtype=torch.int32, device="cuda")
        self.qo_indptr = torch.arange(len(lens) + 1, dtype=torch.int32, device="cuda")
        self.workspace = torch.empty(128 << 20, dtype=torch.uint8, device="cuda")

    def plan(self, wrapper, kv_dtype):
        """wrapper.plan() as SGLang's decode updater calls it; returns the wrapper."""
        wrapper.plan(self.qo_indptr, self.indptr, self.indices, self.kv_lens, self.heads, 512, 64, 1, False,
                     self.sm_scale, torch.bfloat16, kv_dtype)
        return wrapper

    def reference(self, pool):
        """reference() of this batch over a [slots, 1, 576] pool at unit scales: (out, lse, magnitude)."""
        return reference(self.q_nope, self.q_pe, pool[:, :, :512], pool[:, :, 512:], self.indptr, self.indices,
                         self.lens, 1, self.sm_scale, 1.0, 1.0)


def within_tolerance(out, ref, mag, lens):
    """Whether every element is within the verifier's bound; prints the worst share of it used."""
    u = 2.0 ** -8
    longest = max(max(lens), 1)
    bound = u * ref.abs() + (4 * u + longest * 2.0 ** -24) * mag + 1e-30
    share = ((out.float() - ref).abs() / bound).max().item()
    print(f"     worst element: {share:.3f} of its bound")
    return share <= 1.0


def run_case(lib, name, batch_lens, heads, page_size, kv_dtype, *, fp8_storage=None, split_views=True,
             ckv_scale=1.0, kpe_scale=1.0, seed=0):
    """Plans and runs one batch; returns (out, lse) after checking them against the reference."""
    pages_total = sum((n + page_size - 1) // page_size for n in batch_lens) + 7
    kv = pool(pages_total * page_size, kv_dtype, seed)
    if fp8_storage is torch.uint8:
        kv = kv.view(torch.uint8)  # SGLang keeps FP8 pools as uint8 bytes
    kv3 = kv.view(pages_total, page_size, 576)
    ckv, kpe = kv3[..., :512], kv3[..., 512:]  # two strided views of one buffer, as SGLang slices it
    if not split_views:  # separate buffers, as FlashInfer's own tests lay them out
        ckv, kpe = ckv.contiguous(), kpe.contiguous()
    g = torch.Generator(device="cuda").manual_seed(seed + 1)
    q = torch.randn(len(batch_lens), heads, 576, generator=g, device="cuda").to(torch.bfloat16)
    q_nope, q_pe = q[..., :512], q[..., 512:]  # strided views, as the backend slices them
    indptr, indices = batch_indices(batch_lens, page_size, pages_total, seed)
    lens = torch.tensor(batch_lens, dtype=torch.int32, device="cuda")
    sm_scale = 1.0 / math.sqrt(192.0)
    wrapper = kvpatch_mla.BatchMLADecodeWrapper(library=lib)
    wrapper.plan(indptr, indices, lens, heads, page_size, sm_scale, kv_dtype)
    out, lse = wrapper.run(q_nope, q_pe, ckv, kpe, return_lse=True, ckv_scale=ckv_scale, kpe_scale=kpe_scale)
    codes = (ckv.view(torch.float8_e4m3fn), kpe.view(torch.float8_e4m3fn)) if ckv.dtype == torch.uint8 else (ckv, kpe)
    ref, ref_lse, mag = reference(q_nope, q_pe, *codes, indptr, indices, batch_lens, page_size, sm_scale,
                                  ckv_scale, kpe_scale)
    torch.cuda.synchronize()
    plan = wrapper.split_plan
    check(within_tolerance(out, ref, mag, batch_lens), f"{name}: output within tolerance (plan {plan})")
    finite = torch.isfinite(ref_lse)
    check(bool(torch.equal(torch.isfinite(lse), finite)) and
          bool(((lse[finite] - ref_lse[finite]).abs() <= 1e-3 * (1 + ref_lse[finite].abs())).all()),
          f"{name}: LSE (base 2) matches")
    empty = [b for b, n in enumerate(batch_lens) if n == 0]
    if empty:
        check(bool((out[empty] == 0).all()) and bool(torch.isneginf(lse[empty]).all()),
              f"{name}: a request of length 0 gives zeros and LSE -inf")
    return wrapper, (q_nope, q_pe, ckv, kpe, indptr, indices, lens, sm_scale), out, lse


def parity_case(lib, name, batch_lens, heads, page_size):
    """FP8 KV against BF16 KV on the exactly cast pool, unit scales: identical bits."""
    wrapper, (q_nope, q_pe, ckv, kpe, indptr, indices, lens, sm_scale), out8, lse8 = run_case(
        lib, name, batch_lens, heads, page_size, torch.float8_e4m3fn, seed=7)
    bf_ckv, bf_kpe = ckv.to(torch.bfloat16), kpe.to(torch.bfloat16)
    wrapper.plan(indptr, indices, lens, heads, page_size, sm_scale, torch.bfloat16)
    out16, lse16 = wrapper.run(q_nope, q_pe, bf_ckv, bf_kpe, return_lse=True)
    torch.cuda.synchronize()
    check(bool(torch.equal(out8.view(torch.int16), out16.view(torch.int16))) and
          bool(torch.equal(lse8.view(torch.int32), lse16.view(torch.int32))),
          f"{name}: FP8 KV equals BF16 KV on the cast pool bit for bit")


def capture(step):
    """step() once as a warm-up, then captured in a CUDA graph on a side stream; returns the graph."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        step()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            step()
    torch.cuda.current_stream().wait_stream(stream)
    return graph


def flashinfer_or_skip():
    """The flashinfer module with its MLA wrapper loaded, or None after printing why the caller is skipped (no GPU,
    or FlashInfer does not import: kernels/bench/flashinfer_env.sh makes it importable on the GPU machine)."""
    if not torch.cuda.is_available():
        print("skipped: no CUDA device")
        return None
    try:
        import flashinfer
        import flashinfer.mla  # the wrapper, and the modules its plan() checks the device in
    except Exception as err:  # any import failure means: not here
        lines = str(err).strip().splitlines()
        print(f"skipped: flashinfer does not import ({type(err).__name__}: {lines[-1] if lines else ''})")
        return None
    return flashinfer


def library_or_skip(description):
    """Parses --lib; the library's path, or None after printing why the test is skipped."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--lib", default=None, help="path of libkvpatch_mla_capi.so (else the module's lookup)")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("skipped: no CUDA device")
        return None
    try:
        return kvpatch_mla.find_library(args.lib)
    except kvpatch_mla.KvpatchMlaError as err:
        print(f"skipped: {err}")
        return None


def graph_case(lib):
    """run() captured in a CUDA graph; new lengths written in place and plan() again; replay == eager."""
    heads, page_size, longest = 16, 1, 3000
    first, second = [700, 2900, 12, 1500], [2999, 5, 1800, 640]
    pages_total = 4 * longest + 7
    kv = pool(pages_total, torch.float8_e4m3fn, 11).view(pages_total, 1, 576)
    ckv, kpe = kv[..., :512], kv[..., 512:]
    q = torch.randn(4, heads, 576, device="cuda").to(torch.bfloat16)
    q_nope, q_pe = q[..., :512], q[..., 512:]
    indptr = torch.zeros(5, dtype=torch.int32, device="cuda")
    indices = torch.arange(pages_total, dtype=torch.int32, device="cuda")
    lens = torch.zeros(4, dtype=torch.int32, device="cuda")

    def write(batch_lens):  # requests at fixed page offsets, so kv_indices never changes
        indptr.copy_(torch.tensor([0, longest, 2 * longest, 3 * longest, 4 * longest], dtype=torch.int32))
        lens.copy_(torch.tensor(batch_lens, dtype=torch.int32))

    wrapper = kvpatch_mla.BatchMLADecodeWrapper(library=lib)
    write(first)
    wrapper.plan(indptr, indices, lens, heads, page_size, 0.07, torch.float8_e4m3fn, max_kv_len=longest)
    out = torch.empty(4, heads, 512, dtype=torch.bfloat16, device="cuda")
    graph = capture(lambda: wrapper.run(q_nope, q_pe, ckv, kpe, out=out))
    write(second)
    wrapper.plan(indptr, indices, lens, heads, page_size, 0.07, torch.float8_e4m3fn, max_kv_len=longest)
    graph.replay()
    eager = kvpatch_mla.BatchMLADecodeWrapper(library=lib)
    eager.plan(indptr, indices, lens, heads, page_size, 0.07, torch.float8_e4m3fn)
    expected = eager.run(q_nope, q_pe, ckv, kpe)
    torch.cuda.synchronize()
    check(bool(torch.equal(out.view(torch.int16), expected.view(torch.int16))),
          f"CUDA graph: replay after a replan with new lengths equals an eager run (plan {wrapper.split_plan})")


def graph_keeps_plan_case(lib):
    """After run() is captured under a length-aware plan, plan() with lengths that alone would get a
    uniform plan (every request within one tile: no split table) must keep the captured plan, or the
    replay reads a stale split table."""
    heads, pages_total = 16, 4 * 3000 + 7
    kv = pool(pages_total, torch.float8_e4m3fn, 13).view(pages_total, 1, 576)
    ckv, kpe = kv[..., :512], kv[..., 512:]
    q = torch.randn(4, heads, 576, device="cuda").to(torch.bfloat16)
    q_nope, q_pe = q[..., :512], q[..., 512:]
    indptr = torch.tensor([0, 3000, 6000, 9000, 12000], dtype=torch.int32, device="cuda")
    indices = torch.arange(pages_total, dtype=torch.int32, device="cuda")
    lens = torch.tensor([700, 2900, 12, 1500], dtype=torch.int32, device="cuda")
    wrapper = kvpatch_mla.BatchMLADecodeWrapper(library=lib)
    wrapper.plan(indptr, indices, lens, heads, 1, 0.07, torch.float8_e4m3fn)
    captured = wrapper.split_plan
    out = torch.empty(4, heads, 512, dtype=torch.bfloat16, device="cuda")
    graph = capture(lambda: wrapper.run(q_nope, q_pe, ckv, kpe, out=out))
    lens.copy_(torch.tensor([5, 64, 1, 30], dtype=torch.int32))
    wrapper.plan(indptr, indices, lens, heads, 1, 0.07, torch.float8_e4m3fn)
    graph.replay()
    alone = kvpatch_mla.BatchMLADecodeWrapper(library=lib)
    alone.plan(indptr, indices, lens, heads, 1, 0.07, torch.float8_e4m3fn)
    eager = kvpatch_mla.BatchMLADecodeWrapper(library=lib)
    eager.plan(indptr, indices, lens, heads, 1, 0.07, torch.float8_e4m3fn, max_kv_len=2900)
    expected = eager.run(q_nope, q_pe, ckv, kpe)
    torch.cuda.synchronize()
    check(wrapper.split_plan == captured and alone.split_plan != captured,
          f"CUDA graph: plan() after the capture kept {captured} (alone these lengths get {alone.split_plan})")
    check(bool(torch.equal(out.view(torch.int16), expected.view(torch.int16))),
          "CUDA graph: replay after plan() with lengths that alone get another plan equals an eager run")


def expect_error(what, kind, text, fn):
    try:
        fn()
    except kind as err:
        check(text in str(err), f"bad input: {what} raises {kind.__name__} naming '{text}' ({err})")
        return
    check(False, f"bad input: {what} raises {kind.__name__}")


def error_cases(lib):
    whole = pool(65, torch.float8_e4m3fn, 3)
    kv = whole[:64]
    q = torch.randn(2, 16, 576, device="cuda").to(torch.bfloat16)
    indptr = torch.tensor([0, 10, 30], dtype=torch.int32, device="cuda")
    indices = torch.arange(64, dtype=torch.int32, device="cuda")
    lens = torch.tensor([10, 20], dtype=torch.int32, device="cuda")
    w = kvpatch_mla.BatchMLADecodeWrapper(library=lib)
    expect_error("run() before plan()", RuntimeError, "plan",
                 lambda: w.run(q[..., :512], q[..., 512:], kv[..., :512], kv[..., 512:]))
    expect_error("page_size 3", ValueError, "page_size", lambda: w.plan(indptr, indices, lens, 16, 3, 0.1,
                                                                         torch.float8_e4m3fn))
    expect_error("kv_indptr of the wrong length", ValueError, "kv_indptr",
                 lambda: w.plan(indptr[:2], indices, lens, 16, 1, 0.1, torch.float8_e4m3fn))
    w.plan(indptr, indices, lens, 16, 1, 0.1, torch.float8_e4m3fn)
    expect_error("an FP16 query", ValueError, "q_nope",
                 lambda: w.run(q[..., :512].half(), q[..., 512:], kv[..., :512], kv[..., 512:]))
    expect_error("a BF16 cache against an FP8 plan", ValueError, "kv_data_type",
                 lambda: w.run(q[..., :512], q[..., 512:], kv[..., :512].to(torch.bfloat16),
                               kv[..., 512:].to(torch.bfloat16)))
    expect_error("heads that differ from the plan", ValueError, "q_pe",
                 lambda: w.run(q[..., :512], q[:, :8, 512:], kv[..., :512], kv[..., 512:]))
    odd = whole.view(torch.uint8).view(-1)[1:64 * 576 + 1].view(64, 1, 576).view(torch.float8_e4m3fn)
    expect_error("a KV view not 16-byte aligned", kvpatch_mla.KvpatchMlaError, "invalid argument",
                 lambda: w.run(q[..., :512], q[..., 512:], odd[..., :512], odd[..., 512:]))
    other = kvpatch_mla.BatchMLADecodeWrapper(library=lib)
    check(other._lib is w._lib, "two wrappers over one library file share one loaded handle")
    expect_error("a library path that does not exist", kvpatch_mla.KvpatchMlaError, "KVPATCH_MLA_LIBRARY",
                 lambda: kvpatch_mla.BatchMLADecodeWrapper(library="/nonexistent/libkvpatch_mla_capi.so"))


def main():
    lib = library_or_skip(__doc__.splitlines()[0])
    if lib is None:
        return 77
    torch.manual_seed(0)
    fp8 = torch.float8_e4m3fn
    run_case(lib, "SGLang pool as uint8, B=4 ragged with a 0, H=16", [1000, 0, 37, 5000], 16, 1, fp8,
             fp8_storage=torch.uint8, ckv_scale=0.75, kpe_scale=1.25)
    run_case(lib, "one long request, B=1 H=16 (uniform plan)", [40000], 16, 1, fp8, ckv_scale=0.5)
    run_case(lib, "B=33 H=128 (wide blocks where the device has them)", [300 + 37 * b for b in range(33)], 128, 1,
             fp8)
    run_case(lib, "page size 16, separate ckv and kpe buffers, B=3 H=32", [16, 170, 2049], 32, 16, fp8,
             split_views=False)
    run_case(lib, "BF16 KV, page size 64, B=2 H=16", [64, 4097], 16, 64, torch.bfloat16)
    run_case(lib, "every request empty (kv_indices has no element), B=3 H=16", [0, 0, 0], 16, 1, fp8)
    parity_case(lib, "parity, B=5 H=16", [3000, 1, 64, 800, 12000], 16, 1)
    parity_case(lib, "parity, B=2 H=64 page size 16", [513, 9000], 64, 16)
    graph_case(lib)
    graph_keeps_plan_case(lib)
    error_cases(lib)
    return verdict()


if __name__ == "__main__":
    sys.exit(main())
