#!/usr/bin/env python3
"""GPU test of `--kv-dtype-form sm90`: the patched code, run on FlashInfer's own MLA wrapper, on SM90 and off it.

  flashinfer_sm90_gate_test.py [--sm90-diff fixtures/sm90-form/expected.diff]
                               [--original-diff fixtures/gen-b-unpatched/expected.diff]

FlashInfer 0.6.14 and later serve a plan with a BF16 query and an FP8 KV cache on SM90 only; on any
other GPU plan() raises. The sm90 form plans the FP8 KV dtype only where
torch.cuda.get_device_capability() says SM90 and keeps the casts elsewhere, under the matching guard.
This test takes the texts kvpatch inserts from the golden diff of the sm90-form fixture: the
module-level helper the guards call (a cached platform test), the field's expression, the decode
cast's guard and run()'s scale argument. It evaluates them as the
patched SGLang does (field, plan(), guarded cast, run()) on this GPU (SM90), and again with the
GPU reported as SM120. For that second run, torch's and FlashInfer's capability queries are both
replaced, so FlashInfer's own SM90 check sees SM120 too. On SM90 the output must equal the cast
path's bit for bit with no cast taken. On "SM120" the plan must be BF16, the cast taken, and the
output again equal to the cast path's. The original form's field, under "SM120", must make plan()
raise: that is the failure the gate prevents. A BF16 cache must plan and run as before.
Exit 0 all pass, 1 a failure, 77 skipped (no GPU, PyTorch or a FlashInfer that checks the device).
"""
import argparse
import os
import re
import sys
import types

try:
    import torch
except ImportError:
    print("skipped: PyTorch is not installed")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import python_api_test as api  # noqa: E402  (the pool, index and reference helpers)
from flashinfer_run_scales_test import release_tuple, scales_argument  # noqa: E402

FP8 = torch.float8_e4m3fn
FIXTURES = os.path.join(HERE, "..", "..", "fixtures")


def added_line(diff_path, pattern):
    """The first group of `pattern` on the first added line of the diff that matches it."""
    with open(diff_path, encoding="utf-8") as f:
        for line in f:
            match = re.match(r"^\+\s*" + pattern + r"\s*$", line.rstrip("\n"))
            if match:
                return match.group(1)
    raise SystemExit(f"{diff_path}: no added line matching {pattern!r}")


def added_helpers(diff_path):
    """The module-level defs the diff adds (the sm90 form's cached platform test), run: name -> function."""
    block, taking = [], False
    with open(diff_path, encoding="utf-8") as f:
        for raw in f:
            line = raw.rstrip("\n")
            if re.match(r"^\+@", line) or re.match(r"^\+def ", line):
                taking = True
            elif taking and not line.startswith(("+ ", "+\t")):
                taking = False
            if taking:
                block.append(line[1:])
    namespace = {"torch": torch}
    exec("import functools\n" + "\n".join(block) + "\n", namespace)  # kvpatch's own output, from the golden diff
    return {name: value for name, value in namespace.items() if callable(value) and name.startswith("_kvpatch")}


class ReportedCapability:
    """Within the block, torch and every loaded flashinfer module report the GPU as `capability`. The helpers'
    caches are cleared on the way in and out: a cached capability stands for one process on one GPU, and the
    block stands for another process."""

    def __init__(self, capability, helpers=()):
        self.capability = capability
        self.helpers = helpers
        self.saved = []

    def clear_caches(self):
        for helper in self.helpers:
            if hasattr(helper, "cache_clear"):
                helper.cache_clear()

    def __enter__(self):
        self.clear_caches()
        if self.capability is None:
            return self
        fake = lambda *args, **kwargs: self.capability  # noqa: E731
        self.saved.append((torch.cuda, "get_device_capability", torch.cuda.get_device_capability))
        torch.cuda.get_device_capability = fake
        for name, module in list(sys.modules.items()):
            if name.startswith("flashinfer") and hasattr(module, "get_compute_capability"):
                self.saved.append((module, "get_compute_capability", module.get_compute_capability))
                module.get_compute_capability = fake
        return self

    def __exit__(self, *exc):
        for owner, attribute, value in reversed(self.saved):
            setattr(owner, attribute, value)
        self.clear_caches()
        return False


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sm90-diff", default=os.path.join(FIXTURES, "sm90-form", "expected.diff"))
    parser.add_argument("--original-diff", default=os.path.join(FIXTURES, "gen-b-unpatched", "expected.diff"))
    args = parser.parse_args()
    flashinfer = api.flashinfer_or_skip()
    if flashinfer is None:
        return 77
    if release_tuple(flashinfer.__version__) < (0, 6, 14):
        print(f"skipped: FlashInfer {flashinfer.__version__} cannot build the FP8 KV plan at all (before 0.6.14)")
        return 77
    if torch.cuda.get_device_capability()[0] != 9:
        print("skipped: the test's real-GPU half needs an SM90 GPU")
        return 77

    field = added_line(args.sm90_diff, r"self\.kv_data_type = (.+)")
    guard = added_line(args.sm90_diff, r"if k_buffer\.dtype (!= .+):")
    scales = scales_argument(args.sm90_diff)
    original_field = added_line(args.original_diff, r"self\.kv_data_type = (.+)")
    helpers = added_helpers(args.sm90_diff)
    scope = {"torch": torch, **helpers}  # the patched module's globals
    print(f"FlashInfer {flashinfer.__version__}\n  field: {field}\n  guard: k_buffer.dtype {guard}\n  run(): {scales}"
          f"\n  module helpers: {', '.join(helpers) or 'none'}")

    b = api.SGLangDecodeBatch([1000, 1, 37, 5000, 64], 16, 41)
    lens, q_nope, q_pe = b.lens, b.q_nope, b.q_pe
    fp8_pool = api.pool(b.slots, FP8, 41)  # SGLang's layout: [slots, 1, 576]
    bf16_pool = api.pool(b.slots, torch.bfloat16, 43)

    def planned(kv_dtype):
        return b.plan(flashinfer.mla.BatchMLAPagedAttentionWrapper(b.workspace), kv_dtype)

    def patched_decode(field_text, pool, kv_cache_dtype):
        """The patched updater's field, plan(), forward_decode's guarded cast and run(): (out, planned, cast)."""
        model_runner = types.SimpleNamespace(kv_cache_dtype=kv_cache_dtype, dtype=torch.bfloat16)
        kv_data_type = eval(field_text, scope, {"model_runner": model_runner})
        wrapper = planned(kv_data_type)
        k_buffer = pool
        cast = bool(eval(f"k_buffer.dtype {guard}", scope, {"k_buffer": k_buffer}))
        if cast:
            k_buffer = k_buffer.to(q_nope.dtype)  # forward_decode casts to q.dtype, the query's BF16
        extra = eval(f"dict({scales})", {"torch": torch}, {"k_buffer": k_buffer})
        out = wrapper.run(q_nope, q_pe, k_buffer[:, :, :512], k_buffer[:, :, 512:], **extra)
        torch.cuda.synchronize()
        return out, kv_data_type, cast

    def bits_equal(a, b):
        return bool(torch.equal(a.view(torch.int16), b.view(torch.int16)))

    ref, _, mag = b.reference(fp8_pool)
    cast_pool = fp8_pool.to(torch.bfloat16)
    out_cast = planned(torch.bfloat16).run(q_nope, q_pe, cast_pool[:, :, :512], cast_pool[:, :, 512:])
    torch.cuda.synchronize()
    api.check(api.within_tolerance(out_cast, ref, mag, lens), "cast path (unpatched): within tolerance")

    # This GPU, SM90: the FP8 plan, no cast, scales of 1.0.
    out, kv_dtype, cast = patched_decode(field, fp8_pool, FP8)
    api.check(kv_dtype == FP8 and not cast, f"SM90: planned {kv_dtype}, cast taken: {cast} (FP8, none expected)")
    api.check(bits_equal(out, out_cast), "SM90: the patched decode equals the cast path bit for bit")

    # Reported as SM120: FlashInfer refuses the FP8 plan there, so the original form's plan() raises...
    with ReportedCapability((12, 0), helpers.values()):
        model_runner = types.SimpleNamespace(kv_cache_dtype=FP8, dtype=torch.bfloat16)
        try:
            planned(eval(original_field, {"torch": torch}, {"model_runner": model_runner}))
            raised = None
        except Exception as err:
            raised = err
        api.check(raised is not None and "SM90" in str(raised),
                  f"\"SM120\": the original form's plan() raises ({type(raised).__name__ if raised else 'no error'}: "
                  f"{str(raised).splitlines()[0] if raised else ''})")
        # ... and the sm90 form plans BF16 and keeps the cast, as the unpatched server did there (FlashInfer may
        # choose another backend for "SM120", so the cast path is run again under the same report).
        out_cast_there = planned(torch.bfloat16).run(q_nope, q_pe, cast_pool[:, :, :512], cast_pool[:, :, 512:])
        out, kv_dtype, cast = patched_decode(field, fp8_pool, FP8)
    api.check(kv_dtype == torch.bfloat16 and cast, f"\"SM120\": planned {kv_dtype}, cast taken: {cast} "
                                                   "(BF16 and the cast expected)")
    api.check(bits_equal(out, out_cast_there), "\"SM120\": the patched decode equals the cast path bit for bit")
    api.check(api.within_tolerance(out, ref, mag, lens), "\"SM120\": within tolerance")

    # A BF16 cache: planned and run as before on both, no scales.
    ref16, _, mag16 = b.reference(bf16_pool)
    for label, capability in (("SM90", None), ("\"SM120\"", (12, 0))):
        with ReportedCapability(capability, helpers.values()):
            out, kv_dtype, _ = patched_decode(field, bf16_pool, torch.bfloat16)
        api.check(kv_dtype == torch.bfloat16 and api.within_tolerance(out, ref16, mag16, lens),
                  f"{label}, BF16 cache: planned {kv_dtype}, within tolerance")
    return api.verdict()


if __name__ == "__main__":
    sys.exit(main())
