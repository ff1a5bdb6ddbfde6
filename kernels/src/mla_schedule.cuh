// Which request, and which of its KV splits, a decode block owns.
//
// Uniform plans: grid (head groups, splits, batch); every request has the same split count.
// Length-aware plans: grid (head groups, blocks); the batch's KV tiles are shared out over `blocks`
// blocks per head group, each request split in proportion to its length, so one long request in a
// batch of short ones no longer runs on a few SMs while the rest idle. mla_schedule_kernel works
// the split counts out from kv_len on the device (no host round trip: a captured CUDA graph
// replays with new lengths): the smallest tile cap k with sum_b capped_splits(tiles_b, k) <= blocks;
// request b gets n_b = capped_splits(tiles_b, k) splits, blocks [first_b, first_b + n_b) with
// first_b = n_0 + ... + n_(b-1), and blocks past the last request's idle. It writes one work entry
// per block and (first_b, n_b) per request for the merge pass; a block's partial output has the
// block's index, so a request's partials are contiguous. The lengths are the same for every layer
// of a decode step, so the table can be made once per step; the decode kernel then loads its
// entry, one load where a uniform plan loads kv_len[b] and kv_indptr[b].
#pragma once

#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

#include "kvpatch/mla_decode.h"
#include "mla_decode_config.h"

namespace kvpatch::mla::device {

using tiling::capped_splits;
using tiling::kMaxLengthAwareBatch;
using tiling::request_tiles;

struct BlockWork {
  int b = -1;  // request; -1: a spare block of a length-aware plan
  int split = 0, num_splits = 1;
  int part = 0;         // index of the block's partial output when num_splits > 1
  int len = 0;          // kv_len[b]
  int page_offset = 0;  // kv_indptr[b]
};

__device__ inline BlockWork uniform_work(const DecodeParams& p) {
  BlockWork work;
  work.b = blockIdx.z, work.split = blockIdx.y, work.num_splits = gridDim.y;
  work.part = work.b * work.num_splits + work.split;
  work.len = p.kv_len[work.b], work.page_offset = p.kv_indptr[work.b];
  return work;
}

// A work entry: {request | split << 16 (-1: spare block), splits, kv_len, kv_indptr}.
__device__ inline BlockWork table_work(const int4* work_table) {
  const int4 entry = work_table[blockIdx.y];
  BlockWork work;
  work.b = entry.x < 0 ? -1 : entry.x & 0xFFFF;
  work.split = entry.x < 0 ? 0 : entry.x >> 16;
  work.num_splits = entry.y, work.len = entry.z, work.page_offset = entry.w;
  work.part = blockIdx.y;
  return work;
}

using tiling::kScheduleThreads;
inline constexpr int kScheduleWarps = kScheduleThreads / 32;
static_assert(kScheduleThreads >= kMaxLengthAwareBatch, "one thread per request");

__device__ inline int warp_sum(int value) {
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}

__device__ inline int warp_max(int value) {
  for (int offset = 16; offset > 0; offset /= 2) value = max(value, __shfl_xor_sync(0xffffffffu, value, offset));
  return value;
}

// One block of kScheduleThreads; p.batch <= min(blocks, kMaxLengthAwareBatch), blocks <= kMaxSplits
// (the launcher checks both).
__global__ void __launch_bounds__(kScheduleThreads)
    mla_schedule_kernel(const DecodeParams p, const int blocks, int4* work_table, int2* request_parts) {
  __shared__ int totals[kScheduleWarps], longest[kScheduleWarps], shortest[kScheduleWarps];
  __shared__ int verdicts[2][kScheduleWarps];  // alternate rounds
  __shared__ int warp_runs[kScheduleWarps];
  __shared__ int lens[kMaxLengthAwareBatch], page_offsets[kMaxLengthAwareBatch], first_block[kMaxLengthAwareBatch + 1];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, batch = p.batch;
  const bool has_request = tid < batch;
  const int len = has_request ? p.kv_len[tid] : 0, tiles = request_tiles(len);
  if (has_request) lens[tid] = len, page_offsets[tid] = p.kv_indptr[tid];
  {
    const int t = warp_sum(tiles), most = warp_max(tiles), least = -warp_max(has_request ? -tiles : INT_MIN + 1);
    if (lane == 0) totals[warp] = t, longest[warp] = most, shortest[warp] = least;
  }
  __syncthreads();
  int total = 0, most = 0, least = INT_MAX;
  for (int w = 0; w < kScheduleWarps; ++w) total += totals[w], most = max(most, longest[w]), least = min(least, shortest[w]);

  // The cap k: f(k) = sum_b capped_splits(tiles_b, k) falls as k grows. Equal lengths t: f(k) =
  // batch * ceil(t / k) <= blocks from k = ceil(t / (blocks / batch)) on. Otherwise f(k) >= total / k
  // > blocks below ceil(total / blocks), and f(k) <= total / k + batch, so f(most) = batch and, with
  // spare blocks, f(ceil(total / (blocks - batch))) fit. Each round the warps try one cap each,
  // spread over [lo, hi) (warp 0 tries lo), which narrows the range 8-fold.
  int lo = max(1, (total + blocks - 1) / blocks), hi = max(1, most);
  if (blocks > batch) hi = max(lo, min(hi, (total + blocks - batch - 1) / (blocks - batch)));
  if (least == most) lo = hi = max(1, (most + blocks / batch - 1) / (blocks / batch));
  for (int round = 0; lo < hi; ++round) {
    const int cap = lo + static_cast<int>(static_cast<long long>(hi - lo) * warp / kScheduleWarps);
    int count = 0;
    for (int b = lane; b < batch; b += 32) count += capped_splits(request_tiles(lens[b]), cap);
    count = warp_sum(count);
    if (lane == 0) verdicts[round % 2][warp] = count <= blocks ? cap : -cap;  // caps are >= 1
    __syncthreads();
    for (int w = 0; w < kScheduleWarps; ++w) {
      const int v = verdicts[round % 2][w];
      if (v > 0) hi = min(hi, v);
      else lo = max(lo, 1 - v);
    }
  }
  const int cap = hi;

  // first_b by a block-wide exclusive scan of the split counts (warp scans, then warp totals).
  const int splits = has_request ? capped_splits(tiles, cap) : 0;
  int inclusive = splits;
  for (int offset = 1; offset < 32; offset *= 2) {
    const int before = __shfl_up_sync(0xffffffffu, inclusive, offset);
    if (lane >= offset) inclusive += before;
  }
  if (lane == 31) warp_runs[warp] = inclusive;
  __syncthreads();
  int first = inclusive - splits;
  for (int w = 0; w < warp; ++w) first += warp_runs[w];
  if (has_request) {
    first_block[tid] = first;
    request_parts[tid] = make_int2(first, splits);
  }
  if (tid == batch - 1) first_block[batch] = first + splits;
  __syncthreads();
  // Thread i writes block i's entry: the request whose run holds i (binary search over first_b).
  const int used = first_block[batch];
  for (int block = tid; block < blocks; block += kScheduleThreads) {
    int4 entry = make_int4(-1, 0, 0, 0);
    if (block < used) {
      int b = 0;
      for (int step = kMaxLengthAwareBatch; step > 0; step /= 2)
        if (b + step < batch && first_block[b + step] <= block) b += step;
      entry = make_int4(b | (block - first_block[b]) << 16, first_block[b + 1] - first_block[b], lens[b], page_offsets[b]);
    }
    work_table[block] = entry;
  }
}

}  // namespace kvpatch::mla::device
