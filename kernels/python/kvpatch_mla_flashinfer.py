"""FlashInfer's MLA wrapper interface over kvpatch's decode kernel, for code written against
flashinfer's BatchMLAPagedAttentionWrapper (SGLang's FlashInfer MLA backend is), on GPUs where
FlashInfer has no BF16-query x FP8-KV MLA path (SM120) or as a second implementation to compare with.

    from kvpatch_mla_flashinfer import BatchMLAPagedAttentionWrapper
    wrapper = BatchMLAPagedAttentionWrapper(workspace_buffer)      # FlashInfer's constructor
    wrapper.plan(qo_indptr, kv_indptr, kv_indices, kv_len_arr, num_heads, 512, 64, page_size,
                 False, sm_scale, torch.bfloat16, torch.float8_e4m3fn)   # SGLang's positional call
    out = wrapper.run(q_nope, q_pe, ckv_cache, kpe_cache, ckv_scale=k_scale, kpe_scale=k_scale)

Decode only: one query token per request (qo_indptr is 0, 1, ..., B); plan prefill and extend
batches with FlashInfer. The parts of FlashInfer's interface (0.7.4) that a decode step uses are
taken: the constructor's workspace, use_cuda_graph and its caller-reserved buffers; plan()'s twelve
leading parameters, positional or by keyword, and enable_pdl; run()'s positional form and its
query=(q_nope, q_pe) / kv_cache=(ckv, kpe) form, out, lse, return_lse, return_lse_base_on_e,
ckv_scale, kpe_scale (both required for an FP8 cache and refused for a BF16 one, as FlashInfer does)
and enable_pdl. Any other option raises ValueError naming it, rather than being ignored.

SGLang's CUDA-graph decode path also works: after capture it replaces the wrapper's plan with its own
fast_mla_decode_plan (functools.partial), which sets _causal / _page_size / _sm_scale and calls
FlashInfer's private `_cached_module.plan(float_ws, int_ws, pinned_ws, qo_indptr_cpu, kv_indptr_cpu,
kv_len_arr_cpu, num_heads, head_dim_ckv, causal[, stream])` (`.plan.default(...)` in some releases)
with host arrays, having written the page ids into the captured kv_indices buffer itself. This
wrapper answers to those names: the call replans the kernel from the host arrays into the captured
buffers, keeping the captured split plan and the dtypes of the last plan().
"""
import math

import kvpatch_mla
import torch

HEAD_DIM_CKV, HEAD_DIM_KPE = kvpatch_mla.HEAD_DIM_CKV, kvpatch_mla.HEAD_DIM_KPE


def _unsupported(where, options):
    """Raises for options that were given (not None / False) and that this wrapper does not implement."""
    given = sorted(name for name, value in options.items() if value is not None and value is not False)
    if given:
        raise ValueError(f"{where}: {', '.join(given)} not supported by kvpatch's decode wrapper; "
                         "use FlashInfer's wrapper for them")


def _length(value):
    return value.numel() if isinstance(value, torch.Tensor) else len(value)


def _check_decode_queries(where, qo_indptr, batch):
    """Refuses a qo_indptr other than 0, 1, ..., B: this wrapper is for decode."""
    # Placed on the host by name: SGLang 0.4.6 plans inside `with self.device:`, where an unplaced
    # torch.arange would land on the GPU.
    queries = torch.as_tensor(qo_indptr).to(device="cpu", dtype=torch.int64)  # small: one int per request
    if queries.numel() != batch + 1 or not torch.equal(queries, torch.arange(batch + 1, device="cpu")):
        raise ValueError(f"{where}: qo_indptr must be 0, 1, ..., B (one query token per request): this "
                         "wrapper is for decode; plan prefill and extend batches with FlashInfer")


class _HostPlan:
    """`_cached_module.plan` as SGLang's fast_mla_decode_plan calls it, and its `.default` (a torch op's
    overload name, which some SGLang releases call)."""

    def __init__(self, wrapper):
        self._wrapper = wrapper
        self.default = self

    def __call__(self, float_workspace, int_workspace, pinned_workspace, qo_indptr, kv_indptr, kv_len_arr,
                 num_heads, head_dim_ckv, causal, *stream):
        del float_workspace, int_workspace, pinned_workspace, causal, stream  # FlashInfer's own; unused here
        self._wrapper._plan_from_host(qo_indptr, kv_indptr, kv_len_arr, num_heads, head_dim_ckv)


class _HostPlanModule:
    """Stands where FlashInfer keeps its compiled MLA module; only the plan entry is taken."""

    def __init__(self, wrapper):
        self.plan = _HostPlan(wrapper)


class BatchMLAPagedAttentionWrapper:
    """plan() once per decode step, run() once per layer, as with FlashInfer's class of this name."""

    def __init__(self, float_workspace_buffer, use_cuda_graph=False, qo_indptr=None, kv_indptr=None,
                 kv_indices=None, kv_len_arr=None, backend="auto", *, library=None):
        """float_workspace_buffer: any contiguous CUDA tensor (FlashInfer's is uint8); its bytes hold the
        split partials. With use_cuda_graph, plan() copies its metadata into kv_indptr, kv_indices and
        kv_len_arr (int32 CUDA tensors the caller keeps, as with FlashInfer), which a captured run()
        reads; once run() is captured, later plan() calls keep its split plan (BatchMLADecodeWrapper
        does that), so a replay stays valid.
        backend: "auto" (or "kvpatch"); FlashInfer's own backends are not here."""
        if backend not in ("auto", "kvpatch"):
            raise ValueError(f"backend: {backend!r}; this wrapper runs kvpatch's kernel only (use 'auto')")
        if not isinstance(float_workspace_buffer, torch.Tensor) or not float_workspace_buffer.is_contiguous():
            raise ValueError("float_workspace_buffer: expected a contiguous CUDA tensor")
        workspace = float_workspace_buffer.reshape(-1).view(torch.uint8)
        self._decode = kvpatch_mla.BatchMLADecodeWrapper(workspace, library=library)
        self._graph = bool(use_cuda_graph)
        if self._graph:
            for name, buf in (("kv_indptr", kv_indptr), ("kv_indices", kv_indices), ("kv_len_arr", kv_len_arr)):
                if not isinstance(buf, torch.Tensor) or buf.dtype != torch.int32 or buf.device != self._decode.device:
                    raise ValueError(f"{name}: with use_cuda_graph=True, pass an int32 buffer on "
                                     f"{self._decode.device} for plan() to copy into (as FlashInfer requires)")
        self._buffers = (kv_indptr, kv_indices, kv_len_arr)
        self._graph_shape = None  # (batch, num_heads) of the first plan() in graph mode
        self._kv_dtype = None
        self._enable_pdl = False
        # The names SGLang's fast_mla_decode_plan reads and sets (see the module docstring).
        self.device = self._decode.device
        self._float_workspace_buffer = float_workspace_buffer
        self._int_workspace_buffer = None
        self._pin_memory_int_workspace_buffer = None
        self._cached_module = _HostPlanModule(self)
        self._causal, self._page_size, self._sm_scale = False, None, None

    def plan(self, qo_indptr=None, kv_indptr=None, kv_indices=None, kv_len_arr=None, num_heads=None,
             head_dim_ckv=None, head_dim_kpe=None, page_size=None, causal=None, sm_scale=None,
             q_data_type=None, kv_data_type=None, use_profiler=False, *, enable_pdl=None, **options):
        """FlashInfer's plan() for a decode batch. causal does not matter with one query per request."""
        _unsupported("plan()", {"use_profiler": use_profiler, **options})
        for name, value in (("kv_indptr", kv_indptr), ("kv_indices", kv_indices), ("kv_len_arr", kv_len_arr),
                            ("num_heads", num_heads), ("page_size", page_size), ("sm_scale", sm_scale),
                            ("kv_data_type", kv_data_type)):
            if value is None:
                raise ValueError(f"plan(): {name} is required")
        if head_dim_ckv not in (None, HEAD_DIM_CKV) or head_dim_kpe not in (None, HEAD_DIM_KPE):
            raise ValueError(f"plan(): head_dim_ckv {head_dim_ckv} / head_dim_kpe {head_dim_kpe}; the kernel "
                             f"takes {HEAD_DIM_CKV} / {HEAD_DIM_KPE} (absorbed MLA, kv_lora_rank 512, rope 64)")
        if q_data_type not in (None, torch.bfloat16):
            raise ValueError(f"plan(): q_data_type {q_data_type}; the kernel takes a BF16 query")
        batch = _length(kv_len_arr)
        if qo_indptr is not None:
            _check_decode_queries("plan()", qo_indptr, batch)
        max_kv_len = None  # the wrapped plan() reads it from the caller's lengths
        if self._graph:
            # From the caller's lengths before they are copied: no device sync when they are on the host.
            max_kv_len = int(torch.as_tensor(kv_len_arr).max()) if batch else 0
            kv_indptr, kv_indices, kv_len_arr = self._into_graph_buffers("plan()", kv_indptr, kv_indices,
                                                                         kv_len_arr, batch, num_heads)
        self._decode.plan(kv_indptr, kv_indices, kv_len_arr, num_heads, page_size, sm_scale, kv_data_type,
                          max_kv_len=max_kv_len)
        self._kv_dtype = kv_data_type
        self._enable_pdl = bool(enable_pdl)
        self._causal, self._page_size, self._sm_scale = bool(causal), page_size, sm_scale

    def _plan_from_host(self, qo_indptr, kv_indptr, kv_len_arr, num_heads, head_dim_ckv):
        """SGLang's replay plan: host indptr and lengths, the page ids already in the captured kv_indices
        buffer. Page size and sm_scale are what fast_mla_decode_plan has just set; dtypes the last plan()'s."""
        if not self._graph or self._kv_dtype is None:
            raise ValueError("_cached_module.plan(): only for a use_cuda_graph wrapper after its first plan() "
                             "(SGLang installs fast_mla_decode_plan after capture)")
        if head_dim_ckv != HEAD_DIM_CKV:
            raise ValueError(f"_cached_module.plan(): head_dim_ckv {head_dim_ckv}; the kernel takes {HEAD_DIM_CKV}")
        batch = _length(kv_len_arr)
        _check_decode_queries("_cached_module.plan()", qo_indptr, batch)
        max_kv_len = int(torch.as_tensor(kv_len_arr).max()) if batch else 0  # the host copy: no device sync
        kv_indptr, kv_indices, kv_len_arr = self._into_graph_buffers("_cached_module.plan()", kv_indptr, None,
                                                                     kv_len_arr, batch, num_heads)
        self._decode.plan(kv_indptr, kv_indices, kv_len_arr, num_heads, self._page_size, self._sm_scale,
                          self._kv_dtype, max_kv_len=max_kv_len)

    def _into_graph_buffers(self, where, kv_indptr, kv_indices, kv_len_arr, batch, num_heads):
        """Copies the metadata into the caller's buffers, whose addresses a captured run() keeps, and returns
        their slices. kv_indices None: the page ids are in that buffer already (SGLang's replay writes them
        there), as many as kv_indptr's last entry."""
        buf_indptr, buf_indices, buf_lens = self._buffers
        indptr = torch.as_tensor(kv_indptr)
        pages = _length(kv_indices) if kv_indices is not None else (int(indptr[batch]) if batch else 0)
        if buf_indptr.numel() < batch + 1 or buf_lens.numel() < batch or buf_indices.numel() < pages:
            raise ValueError(f"{where}: the use_cuda_graph buffers hold {buf_indptr.numel()} / "
                             f"{buf_indices.numel()} / {buf_lens.numel()} entries; this batch needs "
                             f"{batch + 1} / {pages} / {batch}")
        if self._graph_shape not in (None, (batch, num_heads)):
            raise ValueError(f"{where}: a CUDA-graph wrapper keeps its batch and heads {self._graph_shape}, "
                             f"got {(batch, num_heads)}; make a wrapper per captured shape")
        self._graph_shape = (batch, num_heads)
        buf_indptr[: batch + 1].copy_(indptr, non_blocking=True)
        if kv_indices is not None:
            buf_indices[:pages].copy_(torch.as_tensor(kv_indices), non_blocking=True)
        buf_lens[:batch].copy_(torch.as_tensor(kv_len_arr), non_blocking=True)
        return buf_indptr[: batch + 1], buf_indices[:pages], buf_lens[:batch]

    def run(self, q_nope=None, q_pe=None, ckv_cache=None, kpe_cache=None, out=None, lse=None, return_lse=False,
            profiler_buffer=None, kv_len=None, page_table=None, return_lse_base_on_e=False, o_scale=None, *,
            query=None, kv_cache=None, ckv_scale=None, ckv_scale_arr=None, kpe_scale=None, enable_pdl=None,
            **options):
        """FlashInfer's run(): the output [B, H, 512] BF16, and with return_lse the LSE [B, H] float32,
        base 2 (FlashInfer's default) or, with return_lse_base_on_e, base e."""
        _unsupported("run()", {"profiler_buffer": profiler_buffer, "kv_len": kv_len, "page_table": page_table,
                               "o_scale": o_scale, "ckv_scale_arr": ckv_scale_arr, **options})
        if query is not None:
            if q_nope is not None or q_pe is not None:
                raise ValueError("run(): pass the query either as q_nope, q_pe or as query=(q_nope, q_pe)")
            q_nope, q_pe = query
        if kv_cache is not None:
            if ckv_cache is not None or kpe_cache is not None:
                raise ValueError("run(): pass the cache either as ckv_cache, kpe_cache or as kv_cache=(ckv, kpe)")
            ckv_cache, kpe_cache = kv_cache
        if self._kv_dtype == torch.float8_e4m3fn:
            if ckv_scale is None or kpe_scale is None:
                raise ValueError("run(): an FP8 cache needs ckv_scale and kpe_scale (real = stored x scale)")
        elif ckv_scale is not None or kpe_scale is not None:
            raise ValueError("run(): ckv_scale / kpe_scale are only for an FP8 cache")
        pdl = self._enable_pdl if enable_pdl is None else bool(enable_pdl)
        result = self._decode.run(q_nope, q_pe, ckv_cache, kpe_cache, out=out, lse=lse,
                                  return_lse=return_lse or lse is not None,
                                  ckv_scale=1.0 if ckv_scale is None else float(ckv_scale),
                                  kpe_scale=1.0 if kpe_scale is None else float(kpe_scale), enable_pdl=pdl)
        if not (return_lse or lse is not None):
            return result
        out, lse = result
        if return_lse_base_on_e:
            lse.mul_(math.log(2.0))
        return (out, lse) if return_lse else out
