"""Python API of kvpatch's MLA decode kernel (BF16 query x FP8 E4M3 or BF16 KV), for PyTorch callers.

It is shaped after FlashInfer's BatchMLAPagedAttentionWrapper, so that a backend written for that
wrapper can call it with the tensors it already has: plan() once per decode step, run() once per
layer.

    import torch, kvpatch_mla
    wrapper = kvpatch_mla.BatchMLADecodeWrapper()            # finds libkvpatch_mla_capi.so
    wrapper.plan(kv_indptr, kv_indices, kv_len_arr, num_heads=16, page_size=1,
                 sm_scale=softmax_scale, kv_data_type=torch.float8_e4m3fn)
    out = wrapper.run(q_nope, q_pe, ckv_cache, kpe_cache, ckv_scale=k_scale, kpe_scale=k_scale)

Shapes (B requests, H heads): q_nope [B, H, 512] and q_pe [B, H, 64] BF16; ckv_cache [pages,
page_size, 512] and kpe_cache [pages, page_size, 64] (or [slots, 512] / [slots, 64]), FP8 E4M3
(torch.float8_e4m3fn, or torch.uint8 holding its bytes) or BF16, e.g. the two strided views
`buf[..., :512]` and `buf[..., 512:]` of SGLang's [slots, 1, 576] pool. kv_indptr [B + 1] and
kv_indices hold page ids, kv_len_arr [B] tokens per request. Real KV = stored x ckv_scale (latent)
or x kpe_scale (rope). The output is [B, H, 512] BF16; return_lse=True also returns the base-2
log-sum-exp of the scaled scores, [B, H] float32 (-inf for a request of length 0, whose output is
zeros).

The library is the CMake target kvpatch_mla_capi (built whenever nvcc is found, or with
-DKVPATCH_CUDA=ON). It is looked up at `library=`, then $KVPATCH_MLA_LIBRARY, then beside this
module (where `cmake --install` puts both, in <prefix>/lib/kvpatch/), then the build folders of
this checkout (build/, build-gpu/).
"""
import ctypes
import functools
import os

import torch

HEAD_DIM_CKV = 512  # kv_lora_rank: the latent part, also the value
HEAD_DIM_KPE = 64  # qk_rope_head_dim: the rope part, keys only
LIBRARY_NAME = "libkvpatch_mla_capi.so"
# Copies of kvpatch/mla_capi.h's constants (ctypes cannot include it; tests/kernels/capi_constants_test.py
# holds them equal).
_MIN_ABI = 5  # kvpatch_mla_error_string, kvpatch_mla_schedule
_KV_DTYPES = {torch.float8_e4m3fn: 0, torch.bfloat16: 1}  # kvpatch::mla::KvDtype
_MODE_SCHEDULE_READY, _MODE_PROGRAMMATIC = 1, 4


class KvpatchMlaError(RuntimeError):
    """The library could not be loaded, or a launch returned a CUDA error."""


def _checkout_root():
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def find_library(library=None):
    """The path of libkvpatch_mla_capi.so: `library`, $KVPATCH_MLA_LIBRARY, beside this module, or a build."""
    candidates = [library] if library else []
    if os.environ.get("KVPATCH_MLA_LIBRARY"):
        candidates.append(os.environ["KVPATCH_MLA_LIBRARY"])
    if not candidates:
        root = _checkout_root()
        candidates = [os.path.join(os.path.dirname(os.path.abspath(__file__)), LIBRARY_NAME)]
        candidates += [os.path.join(root, d, "kernels", LIBRARY_NAME) for d in ("build", "build-gpu")]
    for path in candidates:
        if os.path.isfile(path):
            return path
    raise KvpatchMlaError(
        f"cannot find {LIBRARY_NAME} (looked at {', '.join(candidates)}); build it with "
        "`cmake -S . -B build -DKVPATCH_CUDA=ON && cmake --build build --target kvpatch_mla_capi` "
        "or set KVPATCH_MLA_LIBRARY to its path")


@functools.lru_cache(maxsize=None)
def _load(path):
    """One typed handle per library file and process, shared by every wrapper (a server makes one per
    model runner; typing the functions again for each would be wasted work)."""
    return _Library(path)


class _Library:
    """The C ABI declared in kernels/include/kvpatch/mla_capi.h, typed for ctypes."""

    def __init__(self, path):
        try:
            self.lib = ctypes.CDLL(path)
        except OSError as err:
            raise KvpatchMlaError(f"{path}: cannot load ({err}); rebuild the kvpatch_mla_capi target") from None
        version = self.lib.kvpatch_mla_abi_version() if hasattr(self.lib, "kvpatch_mla_abi_version") else 0
        if version < _MIN_ABI:
            raise KvpatchMlaError(f"{path}: C ABI version {version}, this module needs {_MIN_ABI}; "
                                  "rebuild the kvpatch_mla_capi target from this checkout")
        c = ctypes
        ip, sp, ll, vp = c.POINTER(c.c_int), c.POINTER(c.c_size_t), c.c_longlong, c.c_void_p
        self.lib.kvpatch_mla_plan.argtypes = [c.c_int] * 4 + [ip, ip, sp, ip]
        self.lib.kvpatch_mla_decode.argtypes = [
            vp, ll, ll, vp, ll, ll,  # q_nope, q_pe and their strides
            vp, ll, vp, ll, c.c_int,  # ckv, kpe, their slot strides, KV dtype
            vp, vp, vp, c.c_int, c.c_int, c.c_int,  # kv_indptr, kv_indices, kv_len, batch, heads, page size
            c.c_float, c.c_float, c.c_float,  # sm_scale, ckv_scale, kpe_scale
            vp, ll, ll, vp,  # out, its strides, lse
            c.c_int, c.c_int, c.c_int, c.c_size_t, vp, c.c_int, vp]  # plan, workspace, mode, stream
        self.lib.kvpatch_mla_schedule.argtypes = [vp, vp, c.c_int, c.c_int, c.c_int, c.c_int, c.c_size_t, vp, vp]
        self.lib.kvpatch_mla_error_string.argtypes = [c.c_int]
        self.lib.kvpatch_mla_error_string.restype = c.c_char_p

    def check(self, err, what):
        if err != 0:
            name = self.lib.kvpatch_mla_error_string(err).decode()
            raise KvpatchMlaError(f"{what}: CUDA error {err} ({name})")


def _index_tensor(name, value, device, length=None):
    """`value` as a 1-D int32 tensor on `device`; the same tensor when it already is one, so that a
    caller may update it in place between CUDA-graph replays, as with FlashInfer's plan()."""
    t = value if isinstance(value, torch.Tensor) else torch.as_tensor(value)
    if t.dim() != 1 or t.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"{name}: expected a 1-D int32 or int64 tensor, got {t.dtype} of shape {list(t.shape)}")
    if length is not None and t.numel() != length:
        raise ValueError(f"{name}: expected {length} elements, got {t.numel()}")
    return t if (t.dtype == torch.int32 and t.device == device) else t.to(device=device, dtype=torch.int32)


def _slot_stride(name, cache, dim, page_size, kv_dtype, device):
    """The stride between consecutive slots of a KV view, in elements, after checking its device,
    dtype and shape."""
    if cache.device != device:
        raise ValueError(f"{name}: on {cache.device}, expected {device}")
    allowed = (torch.uint8, torch.float8_e4m3fn) if kv_dtype == torch.float8_e4m3fn else (kv_dtype,)
    if cache.dtype not in allowed:
        raise ValueError(f"{name}: dtype {cache.dtype}, but plan() was given kv_data_type={kv_dtype}; "
                         "plan with the cache's dtype")
    if cache.shape[-1] != dim or cache.stride(-1) != 1:
        raise ValueError(f"{name}: the last dimension must be {dim} contiguous values, got shape "
                         f"{list(cache.shape)} with strides {list(cache.stride())}")
    if cache.dim() == 2:  # slot p x page_size + i of page p is row p x page_size + i
        return cache.stride(0)
    if cache.dim() != 3 or cache.shape[1] != page_size:
        raise ValueError(f"{name}: expected [pages, {page_size}, {dim}] (page_size from plan()), got "
                         f"{list(cache.shape)}")
    if page_size == 1:
        return cache.stride(0)
    if cache.stride(0) != page_size * cache.stride(1):
        raise ValueError(f"{name}: a page's slots must be evenly spaced across pages (stride(0) == "
                         f"page_size x stride(1)), got strides {list(cache.stride())}")
    return cache.stride(1)


def _query(name, q, dim, batch, num_heads, device):
    if q.dtype != torch.bfloat16 or q.device != device:
        raise ValueError(f"{name}: expected a BF16 tensor on {device}, got {q.dtype} on {q.device}")
    if list(q.shape) != [batch, num_heads, dim] or q.stride(-1) != 1:
        raise ValueError(f"{name}: expected shape [{batch}, {num_heads}, {dim}] with a contiguous last "
                         f"dimension (batch and heads from plan()), got {list(q.shape)}, strides {list(q.stride())}")


class BatchMLADecodeWrapper:
    """plan() once per decode step, run() once per layer; see the module's docstring."""

    def __init__(self, workspace_buffer=None, device=None, library=None):
        """workspace_buffer: a uint8 CUDA tensor for the split partials, kept for the wrapper's life (a
        CUDA graph captured over run() keeps its address); plan() raises if a batch needs more. By
        default plan() allocates one and grows it when a batch needs more."""
        if workspace_buffer is not None:
            if workspace_buffer.dtype != torch.uint8 or not workspace_buffer.is_contiguous():
                raise ValueError("workspace_buffer: expected a contiguous uint8 tensor")
            device = workspace_buffer.device if device is None else device
        self.device = torch.device(device) if device is not None else torch.device("cuda", torch.cuda.current_device())
        if self.device.type != "cuda":
            raise ValueError(f"device: the kernel runs on CUDA devices, got {self.device}")
        if workspace_buffer is not None and workspace_buffer.device != self.device:
            raise ValueError(f"workspace_buffer: on {workspace_buffer.device}, expected {self.device}")
        self._lib = _load(os.path.realpath(find_library(library)))
        self._workspace, self._fixed_workspace = workspace_buffer, workspace_buffer is not None
        self._planned = False
        self._captured = None  # ((batch, heads), plan, workspace bytes) of a run() captured in a CUDA graph

    def plan(self, kv_indptr, kv_indices, kv_len_arr, num_heads, page_size, sm_scale, kv_data_type,
             max_kv_len=None):
        """Chooses the split plan for this batch and, for a length-aware plan, makes its split table on
        the current stream. Call it again whenever kv_len_arr changes, as with FlashInfer. int32 CUDA
        tensors are used as they are, others copied: a CUDA graph captured over run() reads the
        tensors and the split table of the plan() before the capture, so for replays write the new
        lengths and page ids into those same tensors, then call plan(). Once run() has been captured,
        plan() for a batch of the same size and heads keeps the captured split plan, whatever the new
        lengths. max_kv_len (tokens, an upper bound is fine) saves reading kv_len_arr back from the GPU."""
        if kv_data_type not in _KV_DTYPES:
            raise ValueError(f"kv_data_type: {kv_data_type} is not supported; "
                             "use torch.float8_e4m3fn or torch.bfloat16")
        if not isinstance(page_size, int) or page_size < 1 or page_size & (page_size - 1):
            raise ValueError(f"page_size: {page_size} is not a power of two")
        if not isinstance(num_heads, int) or num_heads < 1:
            raise ValueError(f"num_heads: expected a positive int, got {num_heads!r}")
        lens = _index_tensor("kv_len_arr", kv_len_arr, self.device)
        batch = lens.numel()
        self._indptr = _index_tensor("kv_indptr", kv_indptr, self.device, batch + 1)
        self._indices = _index_tensor("kv_indices", kv_indices, self.device)  # empty: a null pointer, allowed
        self._lens = lens
        if max_kv_len is None:  # from the caller's tensor or list, so a host copy costs no device sync
            source = kv_len_arr if isinstance(kv_len_arr, torch.Tensor) else torch.as_tensor(kv_len_arr)
            max_kv_len = int(source.max().item()) if batch else 0
        with torch.cuda.device(self.device):
            sms = torch.cuda.get_device_properties(self.device).multi_processor_count
            splits, blocks, ws, rows = ctypes.c_int(), ctypes.c_int(), ctypes.c_size_t(), ctypes.c_int()
            self._lib.lib.kvpatch_mla_plan(batch, num_heads, max_kv_len, sms, ctypes.byref(splits),
                                           ctypes.byref(blocks), ctypes.byref(ws), ctypes.byref(rows))
        plan, ws_bytes = (splits.value, blocks.value, rows.value), ws.value
        if self._captured is not None and self._captured[0] == (batch, num_heads):
            # A CUDA graph holds a run() of this shape with the plan it had then. Any plan is correct for
            # any lengths (the kernel reads them on the device), so keep that one: a plan that changed
            # from length-aware to uniform would leave the replay reading a stale split table, and a
            # larger workspace would move the buffer the replay writes to.
            plan, ws_bytes = self._captured[1], self._captured[2]
        if self._workspace is None or self._workspace.numel() < ws_bytes:
            if self._fixed_workspace:
                raise ValueError(f"workspace_buffer: this batch (B={batch}, H={num_heads}, longest {max_kv_len} "
                                 f"tokens) needs {ws_bytes} bytes, the buffer has {self._workspace.numel()}")
            self._workspace = torch.empty(max(ws_bytes, 16), dtype=torch.uint8, device=self.device)
        self._plan, self._ws_bytes = plan, ws_bytes
        self._batch, self._num_heads, self._page_size = batch, num_heads, page_size
        self._sm_scale, self._kv_dtype = float(sm_scale), kv_data_type
        if plan[0] == 0 and batch:  # length-aware: every layer of the step reads one split table
            with torch.cuda.device(self.device):
                err = self._lib.lib.kvpatch_mla_schedule(
                    self._indptr.data_ptr(), lens.data_ptr(), batch, num_heads, plan[1], plan[2],
                    self._workspace.numel(), self._workspace.data_ptr(),
                    torch.cuda.current_stream(self.device).cuda_stream)
            self._lib.check(err, f"plan(): the split table (B={batch}, H={num_heads}; 1-128 heads)")
        self._planned = True

    @property
    def split_plan(self):
        """(splits per request, blocks per head group, heads per block) of the last plan(); splits 0
        is a length-aware plan, heads per block 0 the device's widest."""
        return self._plan

    def run(self, q_nope, q_pe, ckv_cache, kpe_cache, out=None, lse=None, return_lse=False, *,
            ckv_scale=1.0, kpe_scale=1.0, enable_pdl=False):
        """Attention of each request's query over its KV. enable_pdl: launch as a programmatic dependent
        of the kernel before it in the stream (FlashInfer's name for it)."""
        if not self._planned:
            raise RuntimeError("run() before plan(): plan the batch first")
        batch, heads = self._batch, self._num_heads
        _query("q_nope", q_nope, HEAD_DIM_CKV, batch, heads, self.device)
        _query("q_pe", q_pe, HEAD_DIM_KPE, batch, heads, self.device)
        ckv_stride = _slot_stride("ckv_cache", ckv_cache, HEAD_DIM_CKV, self._page_size, self._kv_dtype, self.device)
        kpe_stride = _slot_stride("kpe_cache", kpe_cache, HEAD_DIM_KPE, self._page_size, self._kv_dtype, self.device)
        if out is None:
            out = torch.empty(batch, heads, HEAD_DIM_CKV, dtype=torch.bfloat16, device=self.device)
        else:
            _query("out", out, HEAD_DIM_CKV, batch, heads, self.device)
        if return_lse and lse is None:
            lse = torch.empty(batch, heads, dtype=torch.float32, device=self.device)
        if lse is not None and (lse.dtype != torch.float32 or list(lse.shape) != [batch, heads]
                                or not lse.is_contiguous() or lse.device != self.device):
            raise ValueError(f"lse: expected a contiguous float32 [{batch}, {heads}] tensor on {self.device}")
        splits, blocks, rows = self._plan
        if torch.cuda.is_current_stream_capturing():  # later plan() calls keep this plan (see plan())
            self._captured = ((batch, heads), self._plan, self._ws_bytes)
        mode = (_MODE_SCHEDULE_READY if splits == 0 else 0) | (_MODE_PROGRAMMATIC if enable_pdl else 0)
        with torch.cuda.device(self.device):
            err = self._lib.lib.kvpatch_mla_decode(
                q_nope.data_ptr(), q_nope.stride(0), q_nope.stride(1), q_pe.data_ptr(), q_pe.stride(0),
                q_pe.stride(1), ckv_cache.data_ptr(), ckv_stride, kpe_cache.data_ptr(), kpe_stride,
                _KV_DTYPES[self._kv_dtype], self._indptr.data_ptr(), self._indices.data_ptr(),
                self._lens.data_ptr(), batch, heads, self._page_size, self._sm_scale, float(ckv_scale),
                float(kpe_scale), out.data_ptr(), out.stride(0), out.stride(1),
                lse.data_ptr() if lse is not None else None, splits, blocks, rows, self._workspace.numel(),
                self._workspace.data_ptr(), mode, torch.cuda.current_stream(self.device).cuda_stream)
        self._lib.check(err, f"run() (B={batch}, H={heads}, page_size={self._page_size}; the launcher takes "
                             "1-128 heads, KV views and slot strides in multiples of 16 bytes)")
        return (out, lse) if return_lse else out
