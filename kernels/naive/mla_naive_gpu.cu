// Plain FP32 MLA decode on the GPU: each warp runs its own online softmax over every 8th token,
// then the block merges the 8 warps. Same arithmetic as reference_decode(), up to summation order.
#include "kvpatch/mla_naive_gpu.h"

#include <cmath>

#include "kvpatch/numeric.h"

namespace kvpatch::mla {
namespace {

constexpr int kWarps = kNaiveDecodeThreads / 32;
constexpr int kDimsPerLane = kHeadDimCkv / 32;  // 16 latent dims per lane
constexpr int kRopePerLane = kHeadDimKpe / 32;  // 2 rope dims per lane

__device__ float load_kv(const void* base, int64_t index, KvDtype dtype) {
  if (dtype == KvDtype::kFp8E4M3) return e4m3_to_float(static_cast<const uint8_t*>(base)[index]);
  return bf16_bits_to_float(static_cast<const uint16_t*>(base)[index]);
}

__device__ float load_bf16(const void* base, int64_t index) {
  return bf16_bits_to_float(static_cast<const uint16_t*>(base)[index]);
}

__global__ void __launch_bounds__(kWarps * 32) naive_decode_kernel(DecodeParams p, float* out_f32, float* lse_f32) {
  const int h = blockIdx.x, b = blockIdx.y;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int len = p.kv_len[b];
  const float neg_inf = -INFINITY;
  const float score_scale = p.sm_scale * 1.4426950408889634f;

  float q_ckv[kDimsPerLane], q_kpe[kRopePerLane], acc[kDimsPerLane];
  for (int i = 0; i < kDimsPerLane; ++i) {
    q_ckv[i] = load_bf16(p.q_nope, b * p.q_nope_stride_b + h * p.q_nope_stride_h + lane + 32 * i);
    acc[i] = 0.f;
  }
  for (int i = 0; i < kRopePerLane; ++i)
    q_kpe[i] = load_bf16(p.q_pe, b * p.q_pe_stride_b + h * p.q_pe_stride_h + lane + 32 * i);

  float running_max = neg_inf, running_sum = 0.f;
  for (int t = warp; t < len; t += kWarps) {
    const int64_t page = p.kv_indices[p.kv_indptr[b] + t / p.page_size];
    const int64_t slot = page * p.page_size + t % p.page_size;
    float v[kDimsPerLane], dot_ckv = 0.f, dot_kpe = 0.f;
    for (int i = 0; i < kDimsPerLane; ++i) {
      v[i] = load_kv(p.ckv, slot * p.ckv_stride_slot + lane + 32 * i, p.kv_dtype);
      dot_ckv += q_ckv[i] * v[i];
    }
    for (int i = 0; i < kRopePerLane; ++i)
      dot_kpe += q_kpe[i] * load_kv(p.kpe, slot * p.kpe_stride_slot + lane + 32 * i, p.kv_dtype);
    for (int offset = 16; offset > 0; offset /= 2) {
      dot_ckv += __shfl_xor_sync(0xffffffffu, dot_ckv, offset);
      dot_kpe += __shfl_xor_sync(0xffffffffu, dot_kpe, offset);
    }
    const float score = (p.ckv_scale * dot_ckv + p.kpe_scale * dot_kpe) * score_scale;
    const float new_max = fmaxf(running_max, score);  // NaN scores reach the sum through exp2
    const float base = new_max == neg_inf ? 0.f : new_max;
    const float rescale = exp2f(running_max - base);
    const float weight = exp2f(score - base);
    running_sum = running_sum * rescale + weight;
    for (int i = 0; i < kDimsPerLane; ++i) acc[i] = acc[i] * rescale + weight * v[i];
    running_max = new_max;
  }

  __shared__ float warp_max[kWarps], warp_sum[kWarps], warp_acc[kWarps][kHeadDimCkv];
  if (lane == 0) {
    warp_max[warp] = running_max;
    warp_sum[warp] = running_sum;
  }
  for (int i = 0; i < kDimsPerLane; ++i) warp_acc[warp][lane + 32 * i] = acc[i];
  __syncthreads();

  float block_max = neg_inf;
  for (int w = 0; w < kWarps; ++w) block_max = fmaxf(block_max, warp_max[w]);
  const float base = block_max == neg_inf ? 0.f : block_max;
  float total = 0.f;
  for (int w = 0; w < kWarps; ++w) total += warp_sum[w] * exp2f(warp_max[w] - base);
  const float inv_total = total == 0.f ? 0.f : 1.f / total;
  float* out = out_f32 + (static_cast<int64_t>(b) * p.num_heads + h) * kHeadDimCkv;
  for (int d = threadIdx.x; d < kHeadDimCkv; d += kWarps * 32) {
    float merged = 0.f;
    for (int w = 0; w < kWarps; ++w) merged += warp_acc[w][d] * exp2f(warp_max[w] - base);
    out[d] = merged * inv_total * p.ckv_scale;
  }
  if (threadIdx.x == 0) lse_f32[static_cast<int64_t>(b) * p.num_heads + h] = base + log2f(total);
}

}  // namespace

cudaError_t launch_naive_decode(const DecodeParams& p, float* out_f32, float* lse_f32, cudaStream_t stream) {
  if (p.batch == 0) return cudaSuccess;
  if (p.num_heads < 1 || p.page_size < 1 || !out_f32 || !lse_f32) return cudaErrorInvalidValue;
  naive_decode_kernel<<<dim3(p.num_heads, p.batch), kWarps * 32, 0, stream>>>(p, out_f32, lse_f32);
  return cudaGetLastError();
}

}  // namespace kvpatch::mla
