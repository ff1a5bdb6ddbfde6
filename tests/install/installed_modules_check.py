#!/usr/bin/env python3
"""The installed Python modules, as an installed copy is found: from DIR only (the checkout out of
reach), importing kvpatch_mla and kvpatch_mla_flashinfer, finding the library beside them and loading
it (the C ABI version check), with every wrapper of a process sharing one handle. PyTorch is not
needed for that: a stand-in answers the attribute lookups made at import time. Prints the library's
path; used by install_layout_test.sh (cmake --install) and pip_wheel_test.sh (pip install).

  installed_modules_check.py DIR
"""
import importlib
import sys
import types


def main(directory):
    stand_in = types.ModuleType("torch")
    stand_in.__getattr__ = lambda name: name
    sys.modules.setdefault("torch", stand_in)
    sys.path.insert(0, directory)
    kvpatch_mla = importlib.import_module("kvpatch_mla")
    importlib.import_module("kvpatch_mla_flashinfer")  # imports beside the module it wraps
    path = kvpatch_mla.find_library()
    assert kvpatch_mla._load(path) is kvpatch_mla._load(path), "the library is loaded once per process"
    print(path)


if __name__ == "__main__":
    main(sys.argv[1])
