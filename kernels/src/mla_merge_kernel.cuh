// Merge pass of split-KV decode: out = sum_s 2^lse_s * out_s / sum_s 2^lse_s, lse = log2 of the
// denominator, over request b's partials first_b .. first_b + n_b - 1 (mla_schedule.cuh: uniform
// plans b * splits and splits; length-aware plans the table mla_schedule_kernel wrote). Empty splits
// carry lse -inf and drop out; a NaN split makes the row NaN. Requests with one split were written
// by the decode kernel and are skipped.
//
// Launched as a programmatic dependent of the decode kernel: blocks start while the decode grid
// drains, read a length-aware plan's (first partial, pieces) entry, and wait at griddepcontrol.wait
// for the partials. A block of kMergeThreads covers one (head, request) and 512 / slices dims (the
// launcher picks the slices so that small batches still fill the GPU): 4 dims per lane. With one
// slice and at most kMergeRegisterSplits splits each thread sums all splits in registers; otherwise
// the slices' spare lanes form `slices` groups that sum splits s = group, group + slices, ... side
// by side, added in a fixed order at the end. Partials are in the decode kernel's store order
// (tiling::partial_position), so a lane's 4 partial positions are 4 consecutive dims elsewhere in
// the row; out is written in dim order.
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
using tiling::kMergeRegisterSplits;
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

// uniform_splits: the split count of a uniform plan; request_parts: a length-aware plan's table.
__global__ void __launch_bounds__(kMergeThreads)
    mla_merge_kernel(const DecodeParams p, const int uniform_splits, const int2* request_parts, const float* partial_out,
                     const float* partial_lse) {
  __shared__ float weights[kMaxSplits];
  __shared__ float scratch[kMergeThreads / 32];
  __shared__ float4 group_sums[kMergeThreads];
  const int head = blockIdx.x, b = blockIdx.y, slices = gridDim.z;
  const int lanes = kMergeThreads / slices, group = threadIdx.x / lanes, lane = threadIdx.x % lanes;
  // This lane's 4 partial positions (the decode kernel's store order, not dims).
  const int position = blockIdx.z * (kHeadDimCkv / slices) + 4 * lane;
  KVPATCH_MARK(1, 0);  // entry
  int first = b * uniform_splits, n = uniform_splits;
  // A length-aware plan's table is complete before this grid starts: the schedule kernel wrote it
  // before any decode block got past its own griddepcontrol.wait, and this grid launches only once
  // every decode block has triggered it (after that wait) or exited. So the entry is read before
  // this grid's wait, from L2, while the decode grid drains: after the wait it was an L2 round trip
  // on the launch's critical path (H200 timeline, B=32 H=16 16K: 0.51 us of the merge's 1.92).
  if (request_parts != nullptr) {
    const int2 entry = __ldcg(request_parts + b);
    first = entry.x, n = entry.y;
  }
  if (n <= 1) return;  // the decode kernel wrote this request's output
  KVPATCH_MARK(1, 3);  // the request's splits are known
  grid_dependency_wait();
  KVPATCH_MARK(1, 1);  // the decode grid has completed
  // A next kernel launched programmatically (the next layer's decode with LaunchOptions::programmatic)
  // may launch once every block of this grid is running or gone; it waits for this grid's completion
  // before it reads anything, so its launch overlaps this grid's work.
  grid_dependents_launch();

  const float* lse_column = partial_lse + static_cast<int64_t>(first) * p.num_heads + head;
  const float* column = partial_out + (static_cast<int64_t>(first) * p.num_heads + head) * kHeadDimCkv + position;
  const int64_t split_stride = static_cast<int64_t>(p.num_heads) * kHeadDimCkv;
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
  float base = 0.f, weight_sum = 0.f;
  if (slices == 1 && n <= kMergeRegisterSplits) {
    // Few splits (batches that fill the GPU): every thread loads all of its dims' partials and
    // LSEs at once and sums in registers: one round trip to L2, no shared memory, no barrier.
    float lse[kMergeRegisterSplits];
    float4 v[kMergeRegisterSplits];
#pragma unroll
    for (int s = 0; s < kMergeRegisterSplits; ++s) {
      if (s >= n) break;
      lse[s] = lse_column[s * p.num_heads];
      v[s] = *reinterpret_cast<const float4*>(column + s * split_stride);
    }
    float max_lse = -INFINITY;
#pragma unroll
    for (int s = 0; s < kMergeRegisterSplits; ++s)
      if (s < n) max_lse = fmaxf(max_lse, lse[s]);  // fmaxf skips NaN
    base = max_lse == -INFINITY ? 0.f : max_lse;
    KVPATCH_MARK(1, 4);  // the LSEs are in
#pragma unroll
    for (int s = 0; s < kMergeRegisterSplits; ++s) {
      if (s >= n) break;
      const float weight = exp2f(lse[s] - base);  // NaN LSE -> NaN weight; empty split -> 0
      weight_sum += weight;
      add_weighted(acc, weight, v[s]);
    }
    KVPATCH_MARK(1, 5);  // the partials are summed
  } else {
    // Many splits: the block turns the LSEs into weights in shared memory once, then each group
    // sums its splits and the groups are added in a fixed order. A thread's first kEarly partials
    // are loaded before the reductions, with the LSEs: one round trip to L2 instead of two when a
    // group has no more splits than that (one request: 128 splits in 16 groups).
    constexpr int kEarly = 8;
    float4 early[kEarly];
#pragma unroll
    for (int i = 0; i < kEarly; ++i) {
      const int s = group + slices * i;
      early[i] = s < n ? *reinterpret_cast<const float4*>(column + s * split_stride) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
    float local_max = -INFINITY;
    for (int s = threadIdx.x; s < n; s += kMergeThreads) local_max = fmaxf(local_max, lse_column[s * p.num_heads]);
    const float max_lse = block_reduce(local_max, scratch, true);  // fmaxf skips NaN
    base = max_lse == -INFINITY ? 0.f : max_lse;
    KVPATCH_MARK(1, 4);  // the LSEs are in (and their block maximum)
    float local_sum = 0.f;
    for (int s = threadIdx.x; s < n; s += kMergeThreads) {
      const float weight = exp2f(lse_column[s * p.num_heads] - base);  // NaN LSE -> NaN weight
      weights[s] = weight;
      local_sum += weight;
    }
    weight_sum = block_reduce(local_sum, scratch, false);  // also publishes `weights`
#pragma unroll
    for (int i = 0; i < kEarly; ++i) {
      const int s = group + slices * i;
      if (s < n) add_weighted(acc, weights[s], early[i]);
    }
#pragma unroll 8
    for (int s = group + slices * kEarly; s < n; s += slices)
      add_weighted(acc, weights[s], *reinterpret_cast<const float4*>(column + s * split_stride));
    KVPATCH_MARK(1, 5);  // the partials are summed (this group's)
    if (slices > 1) {
      group_sums[threadIdx.x] = acc;
      __syncthreads();
      if (group != 0) return;
      for (int k = 1; k < slices; ++k) add_weighted(acc, 1.f, group_sums[k * lanes + lane]);
    }
  }
  store_merged(p, b, head, tiling::partial_position(position), acc, weight_sum, base, blockIdx.z == 0 && lane == 0);
  KVPATCH_MARK(1, 2);  // stored
}

}  // namespace kvpatch::mla::device
