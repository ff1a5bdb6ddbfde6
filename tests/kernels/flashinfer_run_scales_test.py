#!/usr/bin/env python3
"""GPU test of the run() scales kvpatch adds: FlashInfer's own MLA wrapper, called as a patched SGLang calls it.

  flashinfer_run_scales_test.py [--diff fixtures/gen-b-unpatched/expected.diff]

With the cast gone, run() is handed SGLang's FP8 pool as stored. FlashInfer 0.6.14 and later raise on
an FP8 run() without ckv_scale / kpe_scale, and on those scales for a BF16 plan; kvpatch therefore adds
`**({"ckv_scale": 1.0, "kpe_scale": 1.0} if <pool>.dtype == torch.float8_e4m3fn else {})`. This test
takes that argument's text from the golden diff of the bundled backend (the exact line kvpatch prints,
which the golden test holds it to) and checks, on FlashInfer's wrapper: the unpatched cast path's output;
the patch without scales raising (the defect the argument fixes); the patch with the argument within the
verifier's tolerance of the FP32 reference and next to the cast path's output; and a BF16 pool, which
the argument leaves alone, planned and run as before. Exit 0 all pass, 1 a failure, 77 skipped (no GPU,
PyTorch or FlashInfer).
"""
import argparse
import os
import re
import sys

try:
    import torch
except ImportError:
    print("skipped: PyTorch is not installed")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import python_api_test as api  # noqa: E402  (the pool, index and reference helpers)

FP8 = torch.float8_e4m3fn



def scales_argument(diff_path):
    """The `**(...)` argument kvpatch adds to decode_wrapper.run, with its pool's name replaced by `k_buffer`."""
    with open(diff_path, encoding="utf-8") as f:
        for line in f:
            match = re.match(r"^\+\s*(\*\*\(\{.*\} if k_buffer\.dtype == .* else \{\}\)),$", line)
            if match:
                return match.group(1)
    raise SystemExit(f"{diff_path}: no added `**(... if k_buffer.dtype == ... else {{}})` argument")


def release_tuple(version):
    return tuple(int(x) for x in re.findall(r"\d+", version)[:3])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--diff", default=os.path.join(HERE, "..", "..", "fixtures", "gen-b-unpatched",
                                                       "expected.diff"))
    args = parser.parse_args()
    flashinfer = api.flashinfer_or_skip()
    if flashinfer is None:
        return 77
    argument = scales_argument(args.diff)
    print(f"FlashInfer {flashinfer.__version__}; kvpatch's argument: {argument}")
    requires_scales = release_tuple(flashinfer.__version__) >= (0, 6, 14)

    b = api.SGLangDecodeBatch([1000, 1, 37, 5000, 64], 16, 21)
    lens, q_nope, q_pe = b.lens, b.q_nope, b.q_pe
    fp8_pool = api.pool(b.slots, FP8, 21)  # SGLang's layout: [slots, 1, 576]

    def planned(kv_dtype):
        return b.plan(flashinfer.mla.BatchMLAPagedAttentionWrapper(b.workspace), kv_dtype)

    def patched_run(w, k_buffer):
        """decode_wrapper.run as kvpatch leaves SGLang's forward_decode: the argument evaluated where it stands."""
        # The text kvpatch inserts, evaluated as what it is: an argument of a call.
        extra = eval(f"dict({argument})", {"torch": torch}, {"k_buffer": k_buffer})
        return w.run(q_nope, q_pe, k_buffer[:, :, :512], k_buffer[:, :, 512:], **extra)

    ref, _, mag = b.reference(fp8_pool)

    # Unpatched: planned for BF16 and handed the whole pool cast to BF16 (the cast kvpatch removes).
    cast = fp8_pool.to(torch.bfloat16)
    out_cast = planned(torch.bfloat16).run(q_nope, q_pe, cast[:, :, :512], cast[:, :, 512:])
    torch.cuda.synchronize()
    api.check(api.within_tolerance(out_cast, ref, mag, lens),
              "cast path (unpatched): within tolerance of the reference")

    # Patched as kvpatch did before the scales: planned for FP8, handed the pool as stored, no scales.
    try:
        planned(FP8).run(q_nope, q_pe, fp8_pool[:, :, :512], fp8_pool[:, :, 512:])
        torch.cuda.synchronize()
        raised = None
    except Exception as err:
        raised = err
    if requires_scales:
        api.check(raised is not None and "scale" in str(raised),
              f"FP8 plan, run() without scales raises on FlashInfer {flashinfer.__version__}: "
              f"{type(raised).__name__ if raised else 'no error'}: {raised}")
    else:
        api.check(raised is None, f"FP8 plan, run() without scales works on FlashInfer {flashinfer.__version__}")

    # Patched with the argument: the FP8 pool gets scales of 1.0, as the cast applied none.
    out_fp8 = patched_run(planned(FP8), fp8_pool)
    torch.cuda.synchronize()
    api.check(api.within_tolerance(out_fp8, ref, mag, lens), "FP8 plan with kvpatch's argument: within tolerance")
    diff = (out_fp8.float() - out_cast.float()).abs().max().item()
    print(f"     largest |FP8 path - cast path| over the output: {diff:.3g}")

    # A BF16 pool (a model served without an FP8 cache): the argument passes nothing, as FlashInfer requires.
    bf16_pool = api.pool(b.slots, torch.bfloat16, 23)
    ref16, _, mag16 = b.reference(bf16_pool)
    out16 = patched_run(planned(torch.bfloat16), bf16_pool)
    torch.cuda.synchronize()
    api.check(api.within_tolerance(out16, ref16, mag16, lens), "BF16 pool with kvpatch's argument: within tolerance")
    if requires_scales:
        try:
            planned(torch.bfloat16).run(q_nope, q_pe, bf16_pool[:, :, :512], bf16_pool[:, :, 512:],
                                        ckv_scale=1.0, kpe_scale=1.0)
            torch.cuda.synchronize()
            refused = False
        except Exception:
            refused = True
        api.check(refused, "scales passed to a BF16 plan raise (why the argument is conditional)")

    return api.verdict()


if __name__ == "__main__":
    sys.exit(main())
