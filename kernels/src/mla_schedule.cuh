// Which KV a decode block reads: one or more "pieces", each a tile-aligned token range of one request.
//
// Uniform plans: grid (head groups, splits, batch); a block's one piece is its split of its request.
// Length-aware plans: grid (head groups, blocks); mla_schedule_kernel works the table out on the
// device from kv_len (no host round trip: a captured CUDA graph replays with new lengths), in one of
// two ways, whichever it estimates faster:
//  - one piece per block: the smallest tile cap k with sum_b capped_splits(tiles_b, k) <= blocks;
//    request b gets n_b = capped_splits(tiles_b, k) consecutive blocks, one split each;
//  - even shares: lay the batch's 64-token tiles end to end, request after request, T in all; n
//    blocks get ceil(T / n) or floor(T / n) consecutive tiles each (share_start), cut into pieces
//    where requests begin and end. Every block then reads the same number of tiles (+-1) however
//    ragged the lengths, but a block that spans requests pays for each switch (kPieceSwitchTiles):
//    it finishes one piece's output and stages the next request's query while its KV pipeline runs on.
// The lengths are the same for every layer of a decode step, so the table is made once per step.
//
// Partial outputs: piece (block i, request b) has index i + b. Along the pieces in (block, request)
// order each step raises i or b or both, so indices are unique, < n + batch, and one request's are
// contiguous: (first block + b, pieces) per request for the merge. A request with one piece gets
// its output written by the decode kernel. An empty request is an empty piece of the block that
// holds the tile where it would start (the last block with tiles when it is past the end; block 0
// when every request is empty): that block writes its zeros and LSE -inf.
#pragma once

#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

#include "device_primitives.cuh"
#include "kvpatch/mla_decode.h"
#include "mla_decode_config.h"

#if defined(__CUDACC__)
#define KVPATCH_SCHEDULE_FN __host__ __device__ inline
#else
#define KVPATCH_SCHEDULE_FN inline
#endif

namespace kvpatch::mla::device {

using tiling::capped_splits;
using tiling::kMaxLengthAwareBatch;
using tiling::kPieceSwitchTiles;
using tiling::kTileTokens;
using tiling::request_tiles;

// A piece: request b's tokens [begin, end), begin a multiple of kTileTokens.
struct SplitRange {
  int begin = 0, end = 0;
  __device__ int tiles() const {
    return static_cast<int>(static_cast<unsigned>(end - begin + kTileTokens - 1) / kTileTokens);  // end >= begin
  }
};

__device__ inline SplitRange split_range(int len, int split, int num_splits) {
  const int per_split = (len + num_splits - 1) / num_splits;
  const int chunk = (per_split + kTileTokens - 1) / kTileTokens * kTileTokens;
  SplitRange range;
  range.begin = min(len, split * chunk);
  range.end = min(len, range.begin + chunk);
  return range;
}

struct Piece {
  int b = 0;
  SplitRange range;
  int page_offset = 0;  // kv_indptr[b]
  int part = 0;         // partial output index (when not single)
  bool single = true;   // b's only piece: the block writes b's output
};

// The block's pieces. Length-aware: requests first_b .. first_b + count - 1 within its share of the
// batch's tiles (work table entry); piece 0 comes with the entry, later ones (later_piece) from the
// table again, which keeps the loops' live registers to a pointer.
struct BlockPieces {
  int count = 0;
  int total_tiles = 0;
  Piece first;
  const int4* table = nullptr;  // length-aware plans: the work table
};

// Work table (length-aware plans): per block two int4, {first_b, count, share_begin, share_end}
// (one piece per block: {b, 1, 0, its split's tiles}) and piece 0's {begin, end, kv_indptr, pieces
// of first_b}; then request_info [batch]: {first tile, kv_len, kv_indptr, pieces} per request
// (read only by even shares' later pieces).
inline constexpr int kWorkEntryInts = 8;

__device__ inline BlockPieces uniform_pieces(const DecodeParams& p) {
  BlockPieces bp;
  const int b = blockIdx.z, split = blockIdx.y, splits = gridDim.y;
  bp.count = 1;
  bp.first.b = b;
  bp.first.range = split_range(p.kv_len[b], split, splits);
  bp.first.page_offset = p.kv_indptr[b];
  bp.first.part = b * splits + split;
  bp.first.single = splits == 1;
  bp.total_tiles = bp.first.range.tiles();
  return bp;
}

__device__ inline BlockPieces table_pieces(const int4* work_table) {
  const int4 share = work_table[2 * blockIdx.y], piece = work_table[2 * blockIdx.y + 1];
  BlockPieces bp;
  bp.count = share.y;
  bp.total_tiles = share.w - share.z;
  bp.first.b = share.x;
  bp.first.range.begin = piece.x, bp.first.range.end = piece.y;
  bp.first.page_offset = piece.z;
  bp.first.part = blockIdx.y + share.x;
  bp.first.single = piece.w == 1;
  bp.table = work_table;
  return bp;
}

// Request b's part of tiles [share_begin, share_end), as a token range.
__device__ inline SplitRange share_range(int request_first_tile, int len, int share_begin, int share_end) {
  const int tiles = request_tiles(len);
  SplitRange range;
  if (tiles > 0) {
    const int t0 = max(share_begin, request_first_tile) - request_first_tile;
    const int t1 = min(share_end, request_first_tile + tiles) - request_first_tile;
    range.begin = t0 * kTileTokens;
    range.end = min(len, t1 * kTileTokens);
  }
  return range;
}

// Piece k (0 < k < count) of a length-aware block: two loads from the work table. A later piece is
// a whole request or its start (range.begin == 0): the block's share began before the request did.
__device__ inline Piece later_piece(const BlockPieces& bp, int k) {
  const int4 share = bp.table[2 * blockIdx.y];
  const int b = share.x + k;
  const int4 info = bp.table[2 * gridDim.y + b];
  Piece piece;
  piece.b = b;
  piece.range = share_range(info.x, info.y, share.z, share.w);
  piece.page_offset = info.z;
  piece.part = blockIdx.y + b;
  piece.single = info.w == 1;
  return piece;
}

__device__ inline Piece piece_at(const BlockPieces& bp, int k) { return k == 0 ? bp.first : later_piece(bp, k); }

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

// Block-wide exclusive scan of one value per thread (warp scans, then the warp totals); also the total.
__device__ inline int block_exclusive_scan(int value, int* warp_runs, int& total) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int inclusive = value;
  for (int offset = 1; offset < 32; offset *= 2) {
    const int before = __shfl_up_sync(0xffffffffu, inclusive, offset);
    if (lane >= offset) inclusive += before;
  }
  __syncthreads();  // warp_runs may still be read from a previous scan
  if (lane == 31) warp_runs[warp] = inclusive;
  __syncthreads();
  int exclusive = inclusive - value;
  total = 0;
  for (int w = 0; w < kScheduleWarps; ++w) {
    if (w < warp) exclusive += warp_runs[w];
    total += warp_runs[w];
  }
  return exclusive;
}

// The one-piece plan's tile cap: the smallest k with sum_b capped_splits(tiles_b, k) <= blocks.
// f(k) falls as k grows. Equal lengths t: f(k) = batch * ceil(t / k) <= blocks from k = ceil(t /
// (blocks / batch)) on. Otherwise f(k) >= total / k > blocks below ceil(total / blocks), and f(k) <=
// total / k + batch, so f(most) = batch and, with spare blocks, f(ceil(total / (blocks - batch)))
// fit. Each round the warps try one cap each, spread over [lo, hi) (warp 0 tries lo), which narrows
// the range 8-fold. Every thread returns the cap.
__device__ inline int one_piece_cap(const int* lens, int batch, int blocks, int total, int most, int least,
                                    int (&verdicts)[2][kScheduleWarps]) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
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
  return hi;
}

// Block i's share starts at tile i q + min(i, r), q = total / n, r = total % n: the first r shares
// hold q + 1 tiles, the rest q (with fewer tiles than blocks, the empty shares are the last ones).
KVPATCH_SCHEDULE_FN int share_start(long long i, long long total, int blocks) {
  return static_cast<int>(i * (total / blocks) + (i < total % blocks ? i : total % blocks));
}
// The block whose share holds tile x (0 <= x < total).
KVPATCH_SCHEDULE_FN int share_block(long long x, long long total, int blocks) {
  const long long q = total / blocks, r = total % blocks;
  return static_cast<int>(x < r * (q + 1) ? x / (q + 1) : r + (x - r * (q + 1)) / q);
}

// One block of kScheduleThreads; p.batch <= min(blocks, kMaxLengthAwareBatch), blocks <= kMaxSplits
// (the launcher checks both).
__global__ void __launch_bounds__(kScheduleThreads)
    mla_schedule_kernel(const DecodeParams p, const int blocks, int4* work_table, int2* request_parts) {
  __shared__ int warp_runs[kScheduleWarps], warp_stats[3][kScheduleWarps];
  __shared__ int verdicts[2][kScheduleWarps];
  __shared__ int lens[kMaxLengthAwareBatch], page_offsets[kMaxLengthAwareBatch], first_tile[kMaxLengthAwareBatch];
  __shared__ int first_block[kMaxLengthAwareBatch + 1], last_block[kMaxLengthAwareBatch];
  __shared__ int most_pieces;
  // Launched programmatically after the caller's kernel (LaunchOptions::programmatic): kv_len and
  // the tables may be that kernel's to write (a no-op in any other launch).
  grid_dependency_wait();
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, batch = p.batch;
  const bool has_request = tid < batch;
  const int len = has_request ? p.kv_len[tid] : 0, tiles = request_tiles(len);
  if (has_request) lens[tid] = len, page_offsets[tid] = p.kv_indptr[tid];
  if (tid == 0) most_pieces = 0;
  {
    const int most = warp_max(tiles), least = -warp_max(has_request ? -tiles : INT_MIN + 1);
    if (lane == 0) warp_stats[0][warp] = most, warp_stats[1][warp] = least;
  }
  int total = 0;
  const int first = block_exclusive_scan(tiles, warp_runs, total);  // each request's first tile
  int most = 0, least = INT_MAX;
  for (int w = 0; w < kScheduleWarps; ++w) most = max(most, warp_stats[0][w]), least = min(least, warp_stats[1][w]);

  // Even shares: the blocks holding each request's tiles (an empty request: where its first tile
  // would be), then the most pieces any block gets.
  if (has_request) {
    int lo = 0, hi = 0;
    if (total > 0) {
      lo = share_block(min(first, total - 1), total, blocks);
      hi = tiles > 0 ? share_block(first + tiles - 1, total, blocks) : lo;
    }
    first_tile[tid] = first, first_block[tid] = lo, last_block[tid] = hi;
  }
  __syncthreads();
  // Block i's requests: the b with first_block[b] <= i <= last_block[b], a contiguous run (both
  // bounds rise with b). Binary searches over the batch.
  auto share_requests = [&](int block, int& b_first) {
    int b_after = 0;  // b_first: first request with last_block >= i; b_after: first with first_block > i
    b_first = 0;
    for (int step = kMaxLengthAwareBatch; step > 0; step /= 2) {
      if (b_first + step <= batch && last_block[b_first + step - 1] < block) b_first += step;
      if (b_after + step <= batch && first_block[b_after + step - 1] <= block) b_after += step;
    }
    return max(0, b_after - b_first);
  };
  for (int block = tid; block < blocks; block += kScheduleThreads) {
    int b_first = 0;
    atomicMax(&most_pieces, share_requests(block, b_first));
  }
  // The one-piece plan's cap, and which plan is estimated faster (ties: one piece, no switches).
  const int cap = one_piece_cap(lens, batch, blocks, total, most, least, verdicts);
  __syncthreads();  // most_pieces is complete
  const int share_tiles = (total + blocks - 1) / blocks;
  const bool even_shares = share_tiles + kPieceSwitchTiles * (most_pieces - 1) < cap;

  if (even_shares) {
    if (has_request) {
      request_parts[tid] = make_int2(first_block[tid] + tid, last_block[tid] - first_block[tid] + 1);
      work_table[2 * blocks + tid] = make_int4(first, len, page_offsets[tid], last_block[tid] - first_block[tid] + 1);
    }
    for (int block = tid; block < blocks; block += kScheduleThreads) {
      int b_first = 0;
      const int count = share_requests(block, b_first);
      const int share_begin = share_start(block, total, blocks), share_end = share_start(block + 1, total, blocks);
      int4 piece = make_int4(0, 0, 0, 0);
      if (count > 0) {
        const int b = b_first;
        const SplitRange range = share_range(first_tile[b], lens[b], share_begin, share_end);
        piece = make_int4(range.begin, range.end, page_offsets[b], last_block[b] - first_block[b] + 1);
      }
      work_table[2 * block] = make_int4(b_first, count, share_begin, share_end);
      work_table[2 * block + 1] = piece;
    }
    return;
  }

  // One piece per block: request b's n_b splits on blocks [first_b, first_b + n_b).
  const int splits = has_request ? capped_splits(tiles, cap) : 0;
  int used = 0;
  const int first_split_block = block_exclusive_scan(splits, warp_runs, used);
  __syncthreads();  // the shares' first_block is no longer read
  if (has_request) {
    first_block[tid] = first_split_block;
    request_parts[tid] = make_int2(first_split_block + tid, splits);
    work_table[2 * blocks + tid] = make_int4(first, len, page_offsets[tid], splits);
  }
  if (tid == 0) first_block[batch] = used;
  __syncthreads();
  for (int block = tid; block < blocks; block += kScheduleThreads) {
    int4 share = make_int4(0, 0, 0, 0), piece = make_int4(0, 0, 0, 0);
    if (block < used) {
      int b = 0;  // the request whose run holds this block
      for (int step = kMaxLengthAwareBatch; step > 0; step /= 2)
        if (b + step < batch && first_block[b + step] <= block) b += step;
      const int n = first_block[b + 1] - first_block[b];
      const SplitRange range = split_range(lens[b], block - first_block[b], n);
      share = make_int4(b, 1, 0, range.tiles());
      piece = make_int4(range.begin, range.end, page_offsets[b], n);
    }
    work_table[2 * block] = share;
    work_table[2 * block + 1] = piece;
  }
}

}  // namespace kvpatch::mla::device
