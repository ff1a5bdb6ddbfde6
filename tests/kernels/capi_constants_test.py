#!/usr/bin/env python3
"""The Python API's copies of the C ABI's constants agree with kvpatch/mla_capi.h.

kernels/python/kvpatch_mla.py talks to the library through ctypes, so it cannot include the
header; this test reads the header's #defines and compares. PyTorch is not needed: a stand-in
module answers the attribute lookups the module makes at import time (dtype names stay names).
"""
import pathlib
import re
import sys
import types

ROOT = pathlib.Path(__file__).resolve().parents[2]


def header_defines():
    text = (ROOT / "kernels/include/kvpatch/mla_capi.h").read_text()
    return {name: int(value) for name, value in re.findall(r"^#define (KVPATCH_MLA_\w+) (\d+)", text, re.M)}


def main():
    stand_in = types.ModuleType("torch")
    stand_in.__getattr__ = lambda name: name
    sys.modules.setdefault("torch", stand_in)
    sys.path.insert(0, str(ROOT / "kernels/python"))
    import kvpatch_mla

    h = header_defines()
    checks = [
        ("the module's minimum ABI is one the header describes", kvpatch_mla._MIN_ABI <= h["KVPATCH_MLA_ABI_VERSION"]),
        ("kv_dtype codes", kvpatch_mla._KV_DTYPES == {"float8_e4m3fn": h["KVPATCH_MLA_KV_FP8_E4M3"],
                                                      "bfloat16": h["KVPATCH_MLA_KV_BF16"]}),
        ("schedule-ready mode", kvpatch_mla._MODE_SCHEDULE_READY == h["KVPATCH_MLA_MODE_SCHEDULE_READY"]),
        ("programmatic bit", kvpatch_mla._MODE_PROGRAMMATIC == h["KVPATCH_MLA_MODE_PROGRAMMATIC"]),
    ]
    failed = [name for name, ok in checks if not ok]
    for name, ok in checks:
        print(f"{'ok  ' if ok else 'FAIL'} {name}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
