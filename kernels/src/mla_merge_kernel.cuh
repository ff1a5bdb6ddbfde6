// Merge pass of split-KV decode: out = sum_s 2^lse_s * out_s / sum_s 2^lse_s, lse = log2 of the
// denominator. Empty splits carry lse -inf and drop out; a NaN split makes the row NaN.
//
// A block merges one (request, head, 64-dim slice). Its threads first turn every split's LSE into a
// weight in shared memory; then 16 groups of 16 lanes (a float4 of dims each) sum the splits
// s = group, group + 16, ... with four loads in flight per thread (the partials sit in L2: the pass
// is bound by how many loads are outstanding, so it spreads over 8 x heads x batch blocks), and
// the block adds the 16 group sums in a fixed order.
//
// It is launched as a programmatic dependent of the decode kernel: its blocks start while the
// decode grid drains and wait at griddepcontrol.wait until every partial is written.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "device_primitives.cuh"
#include "kvpatch/mla_decode.h"
#include "mla_decode_config.h"

namespace kvpatch::mla::device {

using tiling::kMaxSplits;
using tiling::kMergeDimsPerBlock;
using tiling::kMergeGroups;
using tiling::kMergeLanes;
using tiling::kMergeThreads;

__device__ inline float block_reduce(float value, float* scratch, bool take_max) {
  constexpr int kWarpsHere = kMergeThreads / 32;
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other = __shfl_xor_sync(0xffffffffu, value, offset);
    value = take_max ? fmaxf(value, other) : value + other;
  }
  __syncthreads();  // scratch may still be read from a previous reduction
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = value;
  __syncthreads();
  float total = scratch[0];
  for (int w = 1; w < kWarpsHere; ++w) total = take_max ? fmaxf(total, scratch[w]) : total + scratch[w];
  return total;
}

__global__ void __launch_bounds__(kMergeThreads)
    mla_merge_kernel(const DecodeParams p, const int num_splits, const float* partial_out, const float* partial_lse) {
  __shared__ float weights[kMaxSplits];
  __shared__ float scratch[kMergeThreads / 32];
  __shared__ float4 group_sums[kMergeGroups][kMergeLanes];
  const int head = blockIdx.x, b = blockIdx.y, slice = blockIdx.z;
  const int group = threadIdx.x / kMergeLanes, lane = threadIdx.x % kMergeLanes;
  const int64_t part0 = (static_cast<int64_t>(b) * p.num_heads + head) * num_splits;
  grid_dependency_wait();  // the decode grid's partials are complete and visible past this point

  float local_max = -INFINITY;
  for (int s = threadIdx.x; s < num_splits; s += kMergeThreads) local_max = fmaxf(local_max, partial_lse[part0 + s]);
  const float max_lse = block_reduce(local_max, scratch, true);  // fmaxf skips NaN
  const float base = max_lse == -INFINITY ? 0.f : max_lse;
  float local_sum = 0.f;
  for (int s = threadIdx.x; s < num_splits; s += kMergeThreads) {
    const float weight = exp2f(partial_lse[part0 + s] - base);  // NaN LSE -> NaN weight
    weights[s] = weight;
    local_sum += weight;
  }
  const float weight_sum = block_reduce(local_sum, scratch, false);  // also publishes `weights`

  const int dim = slice * kMergeDimsPerBlock + 4 * lane;
  const float* column = partial_out + part0 * kHeadDimCkv + dim;
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 4
  for (int s = group; s < num_splits; s += kMergeGroups) {
    const float4 v = *reinterpret_cast<const float4*>(column + static_cast<int64_t>(s) * kHeadDimCkv);
    const float weight = weights[s];
    // An empty split's output is zeros with weight 0; the select keeps the loads unconditional.
    if (weight != 0.f) acc.x += weight * v.x, acc.y += weight * v.y, acc.z += weight * v.z, acc.w += weight * v.w;
  }
  group_sums[group][lane] = acc;
  __syncthreads();
  if (threadIdx.x >= kMergeLanes) return;
  float4 total = group_sums[0][lane];
  for (int k = 1; k < kMergeGroups; ++k) {
    const float4 v = group_sums[k][lane];
    total.x += v.x, total.y += v.y, total.z += v.z, total.w += v.w;
  }
  const float inv = weight_sum == 0.f ? 0.f : 1.f / weight_sum;
  uint16_t* dst = static_cast<uint16_t*>(p.out) + b * p.out_stride_b + head * p.out_stride_h + dim;
  const uint32_t lo = pack_bf16x2(total.x * inv, total.y * inv), hi = pack_bf16x2(total.z * inv, total.w * inv);
  if (reinterpret_cast<uintptr_t>(dst) % 8 == 0) {
    *reinterpret_cast<uint2*>(dst) = make_uint2(lo, hi);
  } else {
    dst[0] = static_cast<uint16_t>(lo), dst[1] = static_cast<uint16_t>(lo >> 16);
    dst[2] = static_cast<uint16_t>(hi), dst[3] = static_cast<uint16_t>(hi >> 16);
  }
  if (p.lse && slice == 0 && lane == 0) p.lse[static_cast<int64_t>(b) * p.num_heads + head] = base + log2f(weight_sum);
}

}  // namespace kvpatch::mla::device
