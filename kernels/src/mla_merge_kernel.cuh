// Merge pass of split-KV decode: out = sum_s 2^lse_s * out_s / sum_s 2^lse_s, lse = log2 of the
// denominator. Empty splits carry lse -inf and drop out; a NaN split makes the row NaN.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "device_primitives.cuh"
#include "kvpatch/mla_decode.h"
#include "mla_decode_config.h"

namespace kvpatch::mla::device {

using tiling::kMergeThreads;

__global__ void __launch_bounds__(kMergeThreads)
    mla_merge_kernel(const DecodeParams p, const int num_splits, const float* partial_out, const float* partial_lse) {
  const int head = blockIdx.x, b = blockIdx.y;
  const int64_t part0 = (static_cast<int64_t>(b) * p.num_heads + head) * num_splits;
  float max_lse = -INFINITY;
  for (int s = 0; s < num_splits; ++s) max_lse = fmaxf(max_lse, partial_lse[part0 + s]);  // skips NaN
  const float base = max_lse == -INFINITY ? 0.f : max_lse;
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
  float weight_sum = 0.f;
  for (int s = 0; s < num_splits; ++s) {
    const float weight = exp2f(partial_lse[part0 + s] - base);
    weight_sum += weight;
    if (weight == 0.f) continue;
    const float4 v = reinterpret_cast<const float4*>(partial_out + (part0 + s) * kHeadDimCkv)[threadIdx.x];
    acc.x += weight * v.x, acc.y += weight * v.y, acc.z += weight * v.z, acc.w += weight * v.w;
  }
  const float inv = weight_sum == 0.f ? 0.f : 1.f / weight_sum;
  uint16_t* dst = static_cast<uint16_t*>(p.out) + b * p.out_stride_b + head * p.out_stride_h + 4 * threadIdx.x;
  const uint32_t lo = pack_bf16x2(acc.x * inv, acc.y * inv), hi = pack_bf16x2(acc.z * inv, acc.w * inv);
  if (reinterpret_cast<uintptr_t>(dst) % 8 == 0) {
    *reinterpret_cast<uint2*>(dst) = make_uint2(lo, hi);
  } else {
    dst[0] = static_cast<uint16_t>(lo), dst[1] = static_cast<uint16_t>(lo >> 16);
    dst[2] = static_cast<uint16_t>(hi), dst[3] = static_cast<uint16_t>(hi >> 16);
  }
  if (p.lse && threadIdx.x == 0) p.lse[static_cast<int64_t>(b) * p.num_heads + head] = base + log2f(weight_sum);
}

}  // namespace kvpatch::mla::device
