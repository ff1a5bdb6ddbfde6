"""What a real SGLang backend module imports from the rest of SGLang, stood in for one GPU and no server.

sglang_release_backend_test.py loads a release's flashinfer_mla_backend.py with load(). Its `sglang.*`
imports resolve here, while the module's own code, torch and FlashInfer stay real. Only the names its
decode and paged-prefill paths call are given behaviour: the parallel state of a single GPU with no
context parallelism, the two ways releases build kv_indices from req_to_token, the KV pool and a base
class. Any other name is a Missing that raises on use, naming itself, so a release that starts to rely
on more of SGLang fails loudly instead of running on a silent default.
"""
import importlib.abc
import importlib.machinery
import sys
import types


class Missing:
    """A name the stand-ins do not provide: fine to import, fails on any use."""

    def __init__(self, name):
        self._name = name

    def _fail(self, *args, **kwargs):
        raise RuntimeError(f"sglang_stand_ins: the release's code used {self._name}, which the test does not stand in "
                           "for (add it to tests/kernels/sglang_stand_ins.py)")

    __call__ = _fail

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        self._fail()

    def __getitem__(self, key):
        self._fail()


class _Flag:
    """envs.NAME: SGLang's environment flags, all unset."""

    def get(self):
        return False


class _Envs:
    def __getattr__(self, name):
        return _Flag()


class AttentionBackend:
    """sglang.srt.layers.attention.base_attn_backend.AttentionBackend: the base class, nothing the test calls."""


def get_parallel():
    """One GPU: no attention tensor parallelism, no decode context parallelism."""
    return types.SimpleNamespace(attn_tp_size=1, attn_dcp_size=1, dcp_enabled=False)


def _fill_indices(req_to_token, req_pool_indices, lens, indptr, starts, out):
    for b in range(len(req_pool_indices)):
        begin, end = int(indptr[b]), int(indptr[b + 1])
        start = 0 if starts is None else int(starts[b])
        n = int(lens[b])
        assert end - begin == n, "kv_indptr disagrees with the lengths"
        out[begin:end] = req_to_token[int(req_pool_indices[b]), start:start + n]


class _IndexKernel:
    """create_flashinfer_kv_indices_triton[(grid,)](req_to_token, req_pool_indices, lens, indptr, start, out,
    stride): releases up to 0.5.19 build kv_indices with this Triton kernel (0.5.19 from a KVIndexTable,
    with ENTRY_PAGE_SIZE); here, row copies."""

    def __getitem__(self, grid):
        def launch(req_to_token, req_pool_indices, lens, indptr, starts, out, stride, ENTRY_PAGE_SIZE=1):
            assert ENTRY_PAGE_SIZE == 1, "the stand-ins keep one token per req_to_token entry"
            _fill_indices(req_to_token, req_pool_indices, lens, indptr, starts, out)
        return launch


def kv_index_table(req_to_token, req_pool_indices):
    """The KVIndexTable 0.5.19's updaters take as kv_view: req_to_token's rows, one token per entry."""
    return types.SimpleNamespace(ids=req_to_token, row_ids=req_pool_indices, row_stride=req_to_token.shape[1],
                                 entry_page_size=1)


def unified_mla_hooks(allocator):
    """0.5.17 and 0.5.18: the unified MLA pool's hooks; with no unified pool there is no id translation."""
    return types.SimpleNamespace(translate_kv_loc_dense=None)


class Translator:
    """attn_backend.kv_index_translator: later releases build kv_indices through it. Logical ids are
    physical here (no virtual pool), so nothing is left to translate."""

    needs_read_translate = False

    def __init__(self, req_to_token):
        self.req_to_token = req_to_token

    def pack_read_stream(self, plan, *, req_pool_indices, seq_lens, indptr, out):
        """0.5.22 and later."""
        _fill_indices(self.req_to_token, req_pool_indices, seq_lens, indptr, None, out)
        return False

    def fill_packed_read_stream(self, *, req_pool_indices, seq_lens, indptr, total_tokens, out):
        """0.5.20 and 0.5.21."""
        assert total_tokens == int(indptr[-1])
        _fill_indices(self.req_to_token, req_pool_indices, seq_lens, indptr, None, out)
        return False


class KVPool:
    """token_to_kv_pool: one [slots, 1, 576] FP8 buffer per layer, as SGLang's MLA pool keeps them."""

    def __init__(self, buffers):
        self.buffers = buffers

    def get_key_buffer(self, layer_id):
        return self.buffers[layer_id]


class _Mode:
    """forward_batch.forward_mode: is_<kind>() true for its own kind only."""

    def __init__(self, kind):
        self.kind = kind

    def __getattr__(self, name):
        if name.startswith("is_"):
            return lambda: name == f"is_{self.kind}"
        raise AttributeError(name)


DECODE, EXTEND = _Mode("decode"), _Mode("extend")

PROVIDED = {
    "get_parallel": get_parallel,
    "envs": _Envs(),
    "is_flashinfer_available": lambda: True,
    "AttentionBackend": AttentionBackend,
    "create_flashinfer_kv_indices_triton": _IndexKernel(),
    "unified_mla_hooks": unified_mla_hooks,
}


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name == "sglang" or name.startswith("sglang."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__path__ = []
        module.__getattr__ = lambda attr: PROVIDED.get(attr) or Missing(f"{spec.name}.{attr}")
        return module

    def exec_module(self, module):
        pass


_loaded = 0


def load(source, label):
    """Executes a backend module's source with sglang's imports stood in for; returns the module."""
    global _loaded
    _loaded += 1
    name = f"sglang_release_backend_{_loaded}"
    real = {k: v for k, v in sys.modules.items() if k == "sglang" or k.startswith("sglang.")}
    if real:
        raise RuntimeError("a real sglang is imported in this process; the stand-ins would shadow it")
    finder = _Finder()
    sys.meta_path.insert(0, finder)
    module = types.ModuleType(name)
    module.__file__ = f"<SGLang {label}: flashinfer_mla_backend.py>"
    sys.modules[name] = module
    try:
        exec(compile(source, module.__file__, "exec"), module.__dict__)
    finally:
        sys.meta_path.remove(finder)
        for key in [k for k in sys.modules if k == "sglang" or k.startswith("sglang.")]:
            del sys.modules[key]
    return module
