// C ABI over the decode launcher, declared and documented in kvpatch/mla_capi.h (included here, so
// that the compiler holds these definitions to it). Loaded with ctypes by the Python API
// (kernels/python/kvpatch_mla.py) and by the benchmark drivers, so that our kernels, PyTorch and
// FlashInfer run side by side in one process.
#include "kvpatch/mla_capi.h"

#include <cuda_runtime.h>

#include "kvpatch/mla_decode_launch.h"

using kvpatch::mla::DecodeParams;
using kvpatch::mla::DecodePlan;
using kvpatch::mla::KvDtype;

extern "C" {

// Libraries older than version 3 lack this function (and take no head_rows); those without
// kvpatch_mla_plan_uniform take no block count either.
int kvpatch_mla_abi_version() { return KVPATCH_MLA_ABI_VERSION; }

const char* kvpatch_mla_error_string(int code) { return cudaGetErrorString(static_cast<cudaError_t>(code)); }

int kvpatch_mla_plan(int batch, int num_heads, int max_kv_len, int sm_count, int* num_splits, int* blocks,
                     size_t* workspace_bytes, int* head_rows) {
  const DecodePlan plan = kvpatch::mla::plan_decode(batch, num_heads, max_kv_len, sm_count);
  *num_splits = plan.num_splits, *blocks = plan.blocks, *workspace_bytes = plan.workspace_bytes;
  *head_rows = plan.head_rows;
  return 0;
}

int kvpatch_mla_plan_uniform(int batch, int num_heads, int max_kv_len, int sm_count, int* num_splits,
                             size_t* workspace_bytes, int* head_rows) {
  const DecodePlan plan = kvpatch::mla::plan_decode_uniform(batch, num_heads, max_kv_len, sm_count);
  *num_splits = plan.num_splits, *workspace_bytes = plan.workspace_bytes, *head_rows = plan.head_rows;
  return 0;
}

size_t kvpatch_mla_workspace_bytes(int batch, int num_heads, int num_splits) {
  return kvpatch::mla::uniform_plan(batch, num_heads, num_splits).workspace_bytes;
}

static_assert(KVPATCH_MLA_KV_FP8_E4M3 == static_cast<int>(KvDtype::kFp8E4M3) &&
              KVPATCH_MLA_KV_BF16 == static_cast<int>(KvDtype::kBf16), "kv_dtype values are KvDtype's");

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
  options.programmatic = (mode & KVPATCH_MLA_MODE_PROGRAMMATIC) != 0;
  mode &= ~KVPATCH_MLA_MODE_PROGRAMMATIC;
  options.schedule_ready = mode == KVPATCH_MLA_MODE_SCHEDULE_READY;
  return mode == KVPATCH_MLA_MODE_SCHEDULE_ONLY ? kvpatch::mla::launch_decode_schedule(p, plan, workspace, s)
                   : kvpatch::mla::launch_decode(p, plan, workspace, s, options);
}

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
