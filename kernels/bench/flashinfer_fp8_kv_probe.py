#!/usr/bin/env python3
"""Does the importable FlashInfer compute a BF16-query x FP8-KV MLA decode, as kvpatch's patch plans it?

  flashinfer_fp8_kv_probe.py --backend auto|fa2|fa3

kvpatch's patch makes SGLang plan FlashInfer's BatchMLAPagedAttentionWrapper with q_data_type BF16 and
kv_data_type FP8 E4M3 and hand run() the pool as stored. Whether that is right depends on the FlashInfer
release the server runs, not on SGLang. This probe plans one decode batch both ways on the importable
FlashInfer and prints, per way, one line (`result <what>: <verdict>`):
  cast   BF16 plan on the whole pool cast to BF16 (the unpatched server);
  fp8    FP8 KV plan on the pool as stored (the patched server; scales of 1.0 where run() takes them).
Verdicts: `raised <Error>: <first line>` (plan or run refused it, JIT failures included), `wrong
(<share> of the bound, <n> non-finite)` or `within tolerance (<share> of the bound)`, measured against
an FP32 reference computed here, with the verifier's tolerance (tests/kernels/python_api_test.py).
A record for the team, not a test: exit 0 whatever the verdicts, 77 without GPU / PyTorch / FlashInfer.
"""
import argparse
import inspect
import math
import os
import sys

try:
    import torch
except ImportError:
    print("skipped: PyTorch is not installed")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "kernels"))
import python_api_test as api  # the pool, index and reference helpers

FP8 = torch.float8_e4m3fn


def first_line(err):
    """The error's type and last line; for a failed JIT build, also the compiler's first error."""
    text = str(err).strip().splitlines()
    said = f"{type(err).__name__}: {text[-1] if text else ''}"[:300]
    compiler = next((line.strip() for line in text if " error" in line or line.startswith("error")), None)
    return said + (f" [first compiler error: {compiler[:400]}]" if compiler and compiler not in said else "")


def share_of_bound(out, ref, mag, lens):
    """The verifier's bound (python_api_test.within_tolerance), as a number, and the non-finite count."""
    u = 2.0 ** -8
    bound = u * ref.abs() + (4 * u + max(lens) * 2.0 ** -24) * mag + 1e-30
    diff = (out.float() - ref).abs()
    finite = torch.isfinite(diff)
    worst = (diff[finite] / bound[finite]).max().item() if bool(finite.any()) else math.inf
    return worst, int((~finite).sum().item())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="auto", choices=("auto", "fa2", "fa3"))
    args = parser.parse_args()
    flashinfer = api.flashinfer_or_skip()
    if flashinfer is None:
        return 77
    major, minor = torch.cuda.get_device_capability()
    print(f"FlashInfer {flashinfer.__version__}, backend={args.backend}, SM{major}{minor}")

    b = api.SGLangDecodeBatch([1000, 1, 37, 5000, 64], 16, 31)
    lens = b.lens
    fp8_pool = api.pool(b.slots, FP8, 31)  # SGLang's layout: [slots, 1, 576]
    ref, _, mag = b.reference(fp8_pool)
    takes_scales = "ckv_scale" in inspect.signature(flashinfer.mla.BatchMLAPagedAttentionWrapper.run).parameters

    def attempt(name, kv_dtype, pool):
        try:
            w = b.plan(flashinfer.mla.BatchMLAPagedAttentionWrapper(b.workspace, backend=args.backend), kv_dtype)
            extra = {"ckv_scale": 1.0, "kpe_scale": 1.0} if kv_dtype == FP8 and takes_scales else {}
            out = w.run(b.q_nope, b.q_pe, pool[:, :, :512], pool[:, :, 512:], **extra)
            torch.cuda.synchronize()
        except Exception as err:
            print(f"result {name}: raised {first_line(err)}")
            return None
        share, nonfinite = share_of_bound(out, ref, mag, lens)
        verdict = "within tolerance" if share <= 1.0 and nonfinite == 0 else "wrong"
        print(f"result {name}: {verdict} ({share:.3g} of the bound, {nonfinite} non-finite)")
        return out

    out_cast = attempt("cast", torch.bfloat16, fp8_pool.to(torch.bfloat16))
    out_fp8 = attempt("fp8", FP8, fp8_pool)
    if out_cast is not None and out_fp8 is not None:
        same = torch.equal(out_cast.view(torch.int16), out_fp8.view(torch.int16))
        print(f"     fp8 path against cast path: {'bit for bit' if same else 'differs'}, largest difference "
              f"{(out_fp8.float() - out_cast.float()).abs().max().item():.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
