#!/usr/bin/env python3
"""What FlashInfer does with a plan for an FP8 KV cache whose run() is still handed the BF16 cast.

  source kernels/bench/flashinfer_env.sh; python3 kernels/bench/flashinfer_plan_run_mismatch_probe.py

That was kvpatch's patch of a backend whose decode run() it did not recognise as one (written
`(decode_wrapper.run)(...)`, through getattr() or a local alias, before 2026-12-02): the plan sites
were threaded, while the cast feeding run() was kept as "required" and run() got no FP8 scales.
This probe plans FlashInfer's MLA wrapper as that patch did (BF16 query, FP8 KV) and runs it on the
whole pool cast to BF16, without scales and with scales of 1.0; then the patch kvpatch makes now (the
FP8 pool as stored, with scales) and the unpatched cast path, each against the FP32 reference. It
prints what happened; it asserts nothing (a probe, not a test). Exit 77 without a GPU or FlashInfer.
"""
import os
import sys

try:
    import torch
except ImportError:
    print("skipped: PyTorch is not installed")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "kernels"))
import python_api_test as api  # the batch, pool and reference helpers

FP8 = torch.float8_e4m3fn


def outcome(label, run, ref, mag, lens):
    try:
        out = run()
        torch.cuda.synchronize()
    except Exception as err:  # what FlashInfer raises is the finding
        print(f"{label}: raised {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}")
        return
    finite = bool(torch.isfinite(out.float()).all())
    worst = (out.float() - ref.float()).abs().max().item()
    ok = api.within_tolerance(out, ref, mag, lens)
    print(f"{label}: ran; finite={finite}; largest |out - FP32 reference| = {worst:.3g}; "
          f"within kvverify's tolerance: {ok}")


def main():
    flashinfer = api.flashinfer_or_skip()
    if flashinfer is None:
        return 77
    print(f"FlashInfer {flashinfer.__version__}, {torch.cuda.get_device_name()}")
    b = api.SGLangDecodeBatch([1000, 1, 37, 5000, 64], 16, 21)
    fp8_pool = api.pool(b.slots, FP8, 21)
    cast = fp8_pool.to(torch.bfloat16)
    ref, _, mag = b.reference(fp8_pool)

    def planned(kv_dtype):
        return b.plan(flashinfer.mla.BatchMLAPagedAttentionWrapper(b.workspace), kv_dtype)

    def run(kv_dtype, pool, **scales):
        return lambda: planned(kv_dtype).run(b.q_nope, b.q_pe, pool[:, :, :512], pool[:, :, 512:], **scales)

    outcome("FP8 plan, BF16 cast handed to run(), no scales (the old patch)", run(FP8, cast), ref, mag, b.lens)
    outcome("FP8 plan, BF16 cast handed to run(), scales 1.0", run(FP8, cast, ckv_scale=1.0, kpe_scale=1.0),
            ref, mag, b.lens)
    outcome("FP8 plan, FP8 pool as stored, scales 1.0 (the patch now)",
            run(FP8, fp8_pool, ckv_scale=1.0, kpe_scale=1.0), ref, mag, b.lens)
    outcome("BF16 plan, BF16 cast (unpatched)", run(torch.bfloat16, cast), ref, mag, b.lens)
    return 0


if __name__ == "__main__":
    sys.exit(main())
