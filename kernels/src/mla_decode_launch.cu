// Host side of MLA decode: the split plan and the launch (first version: the naive FP32 kernel
// plus a pass that rounds to BF16; replaced by the tiled tensor-core kernel).
#include <cuda_bf16.h>

#include "kvpatch/mla_decode_launch.h"
#include "kvpatch/mla_naive_gpu.h"
#include "kvpatch/numeric.h"

namespace kvpatch::mla {
namespace {

__global__ void finalize_kernel(const float* out_f32, const float* lse_f32, DecodeParams p) {
  const int h = blockIdx.x, b = blockIdx.y;
  const float* src = out_f32 + (static_cast<int64_t>(b) * p.num_heads + h) * kHeadDimCkv;
  uint16_t* dst = static_cast<uint16_t*>(p.out) + b * p.out_stride_b + h * p.out_stride_h;
  for (int d = threadIdx.x; d < kHeadDimCkv; d += blockDim.x) dst[d] = float_to_bf16_bits(src[d]);
  if (p.lse && threadIdx.x == 0) p.lse[b * p.num_heads + h] = lse_f32[b * p.num_heads + h];
}

}  // namespace

DecodePlan plan_decode(int batch, int num_heads, int /*max_kv_len*/, int /*sm_count*/) {
  DecodePlan plan;
  plan.num_splits = 1;
  plan.workspace_bytes = static_cast<size_t>(batch) * num_heads * (kHeadDimCkv + 1) * sizeof(float);
  return plan;
}

cudaError_t launch_decode(const DecodeParams& p, const DecodePlan& plan, void* workspace, cudaStream_t stream) {
  if (p.batch == 0) return cudaSuccess;
  if (p.num_heads < 1 || p.num_heads > 128 || p.page_size < 1 || !p.out || !workspace) return cudaErrorInvalidValue;
  float* out_f32 = static_cast<float*>(workspace);
  float* lse_f32 = out_f32 + static_cast<size_t>(p.batch) * p.num_heads * kHeadDimCkv;
  (void)plan;
  if (cudaError_t err = launch_naive_decode(p, out_f32, lse_f32, stream); err != cudaSuccess) return err;
  finalize_kernel<<<dim3(p.num_heads, p.batch), 128, 0, stream>>>(out_f32, lse_f32, p);
  return cudaGetLastError();
}

}  // namespace kvpatch::mla
