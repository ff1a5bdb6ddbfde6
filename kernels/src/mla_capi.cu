// C ABI over the decode launcher, loaded with ctypes by the Python API (kernels/python/kvpatch_mla.py)
// and by the benchmark drivers, so that our kernels, PyTorch and FlashInfer run side by side in one
// process. Return values are cudaError_t codes; kvpatch_mla_error_string names them.
#include <cuda_runtime.h>

#include "kvpatch/mla_decode_launch.h"

using kvpatch::mla::DecodeParams;
using kvpatch::mla::DecodePlan;
using kvpatch::mla::KvDtype;

extern "C" {

// The ABI's version, for its Python callers: 3 added head_rows to the plans and the launch (libraries
// without this function take none; without kvpatch_mla_plan_uniform, no block count either); 4 the
// programmatic launch bit of kvpatch_mla_decode's mode; 5 kvpatch_mla_error_string and
// kvpatch_mla_schedule.
int kvpatch_mla_abi_version() { return 5; }

// The CUDA runtime's name for an error code this library returned (static storage).
const char* kvpatch_mla_error_string(int code) { return cudaGetErrorString(static_cast<cudaError_t>(code)); }

// num_splits 0 with blocks > 0: a length-aware plan (kvpatch/mla_decode_launch.h).
int kvpatch_mla_plan(int batch, int num_heads, int max_kv_len, int sm_count, int* num_splits, int* blocks,
                     size_t* workspace_bytes, int* head_rows) {
  const DecodePlan plan = kvpatch::mla::plan_decode(batch, num_heads, max_kv_len, sm_count);
  *num_splits = plan.num_splits, *blocks = plan.blocks, *workspace_bytes = plan.workspace_bytes;
  *head_rows = plan.head_rows;
  return 0;
}

// The uniform plan (plan_decode_uniform), as the benchmark's baseline for length-aware plans.
int kvpatch_mla_plan_uniform(int batch, int num_heads, int max_kv_len, int sm_count, int* num_splits,
                             size_t* workspace_bytes, int* head_rows) {
  const DecodePlan plan = kvpatch::mla::plan_decode_uniform(batch, num_heads, max_kv_len, sm_count);
  *num_splits = plan.num_splits, *workspace_bytes = plan.workspace_bytes, *head_rows = plan.head_rows;
  return 0;
}

// The workspace a uniform plan with `num_splits` splits needs.
size_t kvpatch_mla_workspace_bytes(int batch, int num_heads, int num_splits) {
  return kvpatch::mla::uniform_plan(batch, num_heads, num_splits).workspace_bytes;
}

// kv_dtype: 0 = FP8 E4M3, 1 = BF16 (kvpatch::mla::KvDtype). Strides in elements. mode: 0 = launch_decode,
// 1 = launch_decode with schedule_ready, 2 = launch_decode_schedule only (length-aware plans); plus
// kModeProgrammatic: launch_decode with LaunchOptions::programmatic.
constexpr int kModeProgrammatic = 4;
int kvpatch_mla_decode(const void* q_nope, long long q_nope_stride_b, long long q_nope_stride_h, const void* q_pe,
                       long long q_pe_stride_b, long long q_pe_stride_h, const void* ckv, long long ckv_stride_slot,
                       const void* kpe, long long kpe_stride_slot, int kv_dtype, const int* kv_indptr,
                       const int* kv_indices, const int* kv_len, int batch, int num_heads, int page_size,
                       float sm_scale, float ckv_scale, float kpe_scale, void* out, long long out_stride_b,
                       long long out_stride_h, float* lse, int num_splits, int blocks, int head_rows,
                       size_t workspace_bytes, void* workspace, int mode, void* stream) {
  DecodeParams p;
  p.q_nope = q_nope, p.q_nope_stride_b = q_nope_stride_b, p.q_nope_stride_h = q_nope_stride_h;
  p.q_pe = q_pe, p.q_pe_stride_b = q_pe_stride_b, p.q_pe_stride_h = q_pe_stride_h;
  p.ckv = ckv, p.ckv_stride_slot = ckv_stride_slot, p.kpe = kpe, p.kpe_stride_slot = kpe_stride_slot;
  p.kv_dtype = static_cast<KvDtype>(kv_dtype);
  p.kv_indptr = kv_indptr, p.kv_indices = kv_indices, p.kv_len = kv_len;
  p.batch = batch, p.num_heads = num_heads, p.page_size = page_size;
  p.sm_scale = sm_scale, p.ckv_scale = ckv_scale, p.kpe_scale = kpe_scale;
  p.out = out, p.out_stride_b = out_stride_b, p.out_stride_h = out_stride_h, p.lse = lse;
  DecodePlan plan;
  plan.num_splits = num_splits, plan.blocks = blocks, plan.workspace_bytes = workspace_bytes, plan.head_rows = head_rows;
  const auto s = static_cast<cudaStream_t>(stream);
  kvpatch::mla::LaunchOptions options;
  options.programmatic = (mode & kModeProgrammatic) != 0;
  mode &= ~kModeProgrammatic;
  options.schedule_ready = mode == 1;
  return mode == 2 ? kvpatch::mla::launch_decode_schedule(p, plan, workspace, s)
                   : kvpatch::mla::launch_decode(p, plan, workspace, s, options);
}

// launch_decode_schedule for a length-aware plan (num_splits 0): the split table for the current
// kv_len, made once per decode step; the step's launches then pass mode 1 (schedule ready).
int kvpatch_mla_schedule(const int* kv_indptr, const int* kv_len, int batch, int num_heads, int blocks, int head_rows,
                         size_t workspace_bytes, void* workspace, void* stream) {
  DecodeParams p;
  p.kv_indptr = kv_indptr, p.kv_len = kv_len, p.batch = batch, p.num_heads = num_heads;
  DecodePlan plan;
  plan.num_splits = 0, plan.blocks = blocks, plan.head_rows = head_rows, plan.workspace_bytes = workspace_bytes;
  return kvpatch::mla::launch_decode_schedule(p, plan, workspace, static_cast<cudaStream_t>(stream));
}

int kvpatch_mla_cast_fp8_to_bf16(const void* src, void* dst, size_t n, void* stream) {
  return kvpatch::mla::launch_cast_fp8_to_bf16(src, dst, n, static_cast<cudaStream_t>(stream));
}

}  // extern "C"
