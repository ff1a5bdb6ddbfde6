// Merge pass of split-KV decode: out = sum_s 2^lse_s * out_s / sum_s 2^lse_s, lse = log2 of the
// denominator. Empty splits carry lse -inf and drop out; a NaN split makes the row NaN.
//
// Two shapes of the same sum, both launched as programmatic dependents of the decode kernel (their
// blocks start while the decode grid drains and wait at griddepcontrol.wait for the partials):
//  - few splits (<= kMergeFewSplits, i.e. batches that fill the GPU): a block per (request, head),
//    a thread per 4 dims that loads every split's LSE and partial at once and sums in registers:
//    no shared memory, no barrier, one round trip to L2;
//  - many splits (one long request): a block per (request, head, 32-dim slice); its threads turn
//    the LSEs into weights in shared memory, then 32 groups of 8 lanes sum the splits
//    s = group, group + 32, ... (8 loads in flight per thread) and the block adds the group sums
//    in a fixed order.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "device_primitives.cuh"
#include "kvpatch/mla_decode.h"
#include "mla_decode_config.h"
#include "timeline.cuh"

namespace kvpatch::mla::device {

using tiling::kMaxSplits;
using tiling::kMergeDimsPerBlock;
using tiling::kMergeFewSplits;
using tiling::kMergeFewThreads;
using tiling::kMergeGroups;
using tiling::kMergeLanes;
using tiling::kMergeThreads;

// Writes 4 merged dims of (b, head) as BF16, and the LSE once per row.
__device__ inline void store_merged(const DecodeParams& p, int b, int head, int dim, float4 total, float weight_sum,
                                    float base, bool writes_lse) {
  const float inv = weight_sum == 0.f ? 0.f : 1.f / weight_sum;
  uint16_t* dst = static_cast<uint16_t*>(p.out) + b * p.out_stride_b + head * p.out_stride_h + dim;
  const uint32_t lo = pack_bf16x2(total.x * inv, total.y * inv), hi = pack_bf16x2(total.z * inv, total.w * inv);
  if (reinterpret_cast<uintptr_t>(dst) % 8 == 0) {
    *reinterpret_cast<uint2*>(dst) = make_uint2(lo, hi);
  } else {
    dst[0] = static_cast<uint16_t>(lo), dst[1] = static_cast<uint16_t>(lo >> 16);
    dst[2] = static_cast<uint16_t>(hi), dst[3] = static_cast<uint16_t>(hi >> 16);
  }
  if (p.lse && writes_lse) p.lse[static_cast<int64_t>(b) * p.num_heads + head] = base + log2f(weight_sum);
}

__device__ inline void add_weighted(float4& acc, float weight, const float4& v) {
  acc.x += weight * v.x, acc.y += weight * v.y, acc.z += weight * v.z, acc.w += weight * v.w;
}

__global__ void __launch_bounds__(kMergeFewThreads)
    mla_merge_few_kernel(const DecodeParams p, const int num_splits, const float* partial_out, const float* partial_lse) {
  const int head = blockIdx.x, b = blockIdx.y, dim = 4 * threadIdx.x;
  const int64_t part0 = (static_cast<int64_t>(b) * p.num_heads + head) * num_splits;
  KVPATCH_MARK(1, 0);  // entry
  grid_dependency_wait();
  KVPATCH_MARK(1, 1);  // the decode grid has completed
  float lse[kMergeFewSplits];
  float4 v[kMergeFewSplits];
#pragma unroll
  for (int s = 0; s < kMergeFewSplits; ++s) {
    if (s >= num_splits) break;
    lse[s] = partial_lse[part0 + s];
    v[s] = *reinterpret_cast<const float4*>(partial_out + (part0 + s) * kHeadDimCkv + dim);
  }
  float max_lse = -INFINITY;
#pragma unroll
  for (int s = 0; s < kMergeFewSplits; ++s)
    if (s < num_splits) max_lse = fmaxf(max_lse, lse[s]);  // fmaxf skips NaN
  const float base = max_lse == -INFINITY ? 0.f : max_lse;
  float weight_sum = 0.f;
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
  for (int s = 0; s < kMergeFewSplits; ++s) {
    if (s >= num_splits) break;
    const float weight = exp2f(lse[s] - base);  // NaN LSE -> NaN weight; empty split -> 0 (output zeros)
    weight_sum += weight;
    add_weighted(acc, weight, v[s]);
  }
  store_merged(p, b, head, dim, acc, weight_sum, base, threadIdx.x == 0);
  KVPATCH_MARK(1, 2);  // stored
}

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
  KVPATCH_MARK(1, 0);  // entry
  grid_dependency_wait();
  KVPATCH_MARK(1, 1);  // the decode grid has completed

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
#pragma unroll 8
  for (int s = group; s < num_splits; s += kMergeGroups)
    add_weighted(acc, weights[s], *reinterpret_cast<const float4*>(column + static_cast<int64_t>(s) * kHeadDimCkv));
  group_sums[group][lane] = acc;
  __syncthreads();
  if (threadIdx.x >= kMergeLanes) return;
  float4 total = group_sums[0][lane];
  for (int k = 1; k < kMergeGroups; ++k) add_weighted(total, 1.f, group_sums[k][lane]);
  store_merged(p, b, head, dim, total, weight_sum, base, slice == 0 && lane == 0);
  KVPATCH_MARK(1, 2);  // stored
}

}  // namespace kvpatch::mla::device
