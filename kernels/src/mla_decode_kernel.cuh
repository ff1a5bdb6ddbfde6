// MLA paged decode, one template for FP8 E4M3 and BF16 KV (kv_tile.cuh and mma_operand.cuh hold the
// only differences).
//
// A block owns one group of <= 16 heads (<= 32 in a wide block) and a run of "pieces" of KV
// (mla_schedule.cuh: its split of one request, or its even share of the batch's tiles cut where
// requests begin and end); it reads each of their KV bytes once. It is two warp groups that run a
// tile apart, so that one's arithmetic overlaps the other's; the tile pipeline runs on across
// pieces:
//   score warps 0-7, per piece: the request's query into registers (a wide block's second m-tile
//     into shared memory); per 64-token tile:
//     QK:      a narrow block's warp w multiplies its register-resident query slice (k-slices
//              2 (w % 2) and 2 (w % 2) + 1) with 16 tokens' keys (w / 2); a wide block's warp (k-slice
//              w % 4, 32 tokens w / 4) converts each key fragment once and uses it for both m16
//              tiles: the first m-tile's query from registers, the second's from shared memory
//              (ldmatrix). FP32 partial scores go to shared memory;
//     softmax: 16 threads per head row (8 in a wide block), 4 tokens each (8), all in registers:
//              sum the 2 (4) partials in fixed order, row max by shuffles, update the running max /
//              sum, write the probabilities (2-4 buffers, so later tiles' can be written while PV
//              reads tile t's);
//     and at the piece's end its rows' (sum, max) for the value warps;
//   value warps 8-15: copy KV tiles into `stages` shared-memory stages with cp.async, and compute
//     PV: warp w owns latent dims [64w, 64w + 64) of the output for every row (one value fragment
//     conversion serves both m-tiles of a wide block); at a piece's end, its output.
// mbarriers hand over: a stage's KV landed (cp.async arrivals), a stage is free (both groups done),
// a tile's probabilities are written, a probability buffer is free, a piece's row sums are written
// and read.
// Scales are FP32 outside the mma: score = (ckv_scale * latent + kpe_scale * rope) * sm_scale.
// A request in more than one piece gets FP32 partial outputs and base-2 LSEs for mla_merge_kernel.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "device_primitives.cuh"
#include "kv_tile.cuh"
#include "kvpatch/mla_decode.h"
#include "kvpatch/numeric.h"
#include "mla_decode_config.h"
#include "mla_schedule.cuh"
#include "mma_operand.cuh"
#include "timeline.cuh"

// Timing experiments only (kernels/bench/ablate.sh): 1 = KV loads without arithmetic, 2 = arithmetic
// on whatever the stages hold, without KV loads, 3 = no QK and softmax (the value warps' loads and PV
// alone), 4 = no PV (the loads, QK and softmax), 5 = the value warps skip PV's n-tiles 6 and 7 (a
// quarter of their mma and conversions), 6 = 5 plus the score warps compute those two n-tiles of
// their own 16 dims after the softmax (holding the stage until then), 7 = the score warps skip QK's
// rope k-steps (2 of every 18 mma and their key conversions), 8 = 5 and 7 together. Never set in a
// normal build.
#ifndef KVPATCH_ABLATE
#define KVPATCH_ABLATE 0
#endif

namespace kvpatch::mla::device {

using namespace kvpatch::mla::tiling;

// Copies the block's query rows (head0 .. head0 + rows_here - 1 of request b; latent then rope)
// into q_stage [kBlockRows][kQueryRowElems] (one score buffer: the rows are not padded), zeros for
// rows past the last head. 16-byte cp.async chunks when both views allow them (SGLang's packed
// [B, H, 576] query does), else 2-byte copies. Completes with the caller's cp_async_wait + group
// barrier.
template <int kBlockRows>
__device__ inline void stage_query(const DecodeParams& p, int b, int head0, int rows_here, uint16_t* q_stage, int tid) {
  const auto* q_nope = static_cast<const uint16_t*>(p.q_nope);
  const auto* q_pe = static_cast<const uint16_t*>(p.q_pe);
  const bool chunked = ((reinterpret_cast<uintptr_t>(q_nope) | reinterpret_cast<uintptr_t>(q_pe)) % 16 == 0) &&
                       ((p.q_nope_stride_b | p.q_nope_stride_h | p.q_pe_stride_b | p.q_pe_stride_h) % 8 == 0);
  if (chunked) {
    constexpr int kChunksPerRow = kQueryRowElems / 8;
    for (int i = tid; i < kBlockRows * kChunksPerRow; i += kThreads) {
      const int row = i / kChunksPerRow, elem = 8 * (i % kChunksPerRow);
      const bool live = row < rows_here;
      const int head = head0 + (live ? row : 0);
      const uint16_t* src = elem < kHeadDimCkv ? q_nope + b * p.q_nope_stride_b + head * p.q_nope_stride_h + elem
                                               : q_pe + b * p.q_pe_stride_b + head * p.q_pe_stride_h + (elem - kHeadDimCkv);
      cp_async_16(shared_address(q_stage + row * kQueryRowElems + elem), src, live);
    }
  } else {
    for (int i = tid; i < kBlockRows * kQueryRowElems; i += kThreads) {
      const int row = i / kQueryRowElems, elem = i % kQueryRowElems;
      uint16_t value = 0;
      if (row < rows_here) {
        const int head = head0 + row;
        value = elem < kHeadDimCkv ? q_nope[b * p.q_nope_stride_b + head * p.q_nope_stride_h + elem]
                                   : q_pe[b * p.q_pe_stride_b + head * p.q_pe_stride_h + (elem - kHeadDimCkv)];
      }
      q_stage[row * kQueryRowElems + elem] = value;
    }
  }
}

// Pulls request b's query rows into L2 while the current piece runs (the next piece's prologue then
// waits on L2, not DRAM): one prefetch per 128-byte line, latent (8 lines) and rope (1 line).
__device__ inline void prefetch_query(const DecodeParams& p, int b, int head0, int rows_here, int tid) {
  constexpr int kLinesPerRow = kHeadDimCkv * 2 / 128 + 1;
  if (tid >= rows_here * kLinesPerRow) return;
  const int row = tid / kLinesPerRow, line = tid % kLinesPerRow, head = head0 + row;
  const uint16_t* src = line < kLinesPerRow - 1
                            ? static_cast<const uint16_t*>(p.q_nope) + b * p.q_nope_stride_b + head * p.q_nope_stride_h + 64 * line
                            : static_cast<const uint16_t*>(p.q_pe) + b * p.q_pe_stride_b + head * p.q_pe_stride_h;
  asm volatile("prefetch.global.L2 [%0];\n" ::"l"(src));
}

// Where the block's shared memory and mbarriers are (mla_decode_config.h's SmemLayout).
template <KvDtype kDtype, int kStages, int kMTiles>
struct BlockSmem {
  static constexpr int kRows = block_rows(kMTiles);
  static constexpr SmemLayout kLayout = smem_layout(kDtype, kStages, kMTiles);
  static constexpr int kProbBuffers = prob_buffers(kDtype, kStages, kMTiles);
  static constexpr int kScoreBuffers = score_buffers(kDtype, kStages, kMTiles);
  static constexpr int kPageRing = page_ring_tiles(kStages);
  uint8_t* kv_stages;
  float* scores;        // [kScoreBuffers][kKSlices][kRows][kScoreStride]
  uint16_t* probs;      // [kProbBuffers][kRows][kProbStride]
  float* row_alpha;     // [kProbBuffers][kRows]
  float* piece_stats;   // [kPieceStatSlots][2][kRows]: a piece's final row sums, then maxima
  float* slice_max;     // [kKSlices][kRows] the query rows' largest magnitudes per k-slice
  uint16_t* query_ops;  // wide blocks: [16][kQueryStageStride] second m-tile's query, k-step order
  int32_t* page_ring;   // [kPageRing][kTileTokens] page ids
  int32_t* page_slot;   // [kPageRing][kTileTokens] the token's slot within its page, -1: no token
  uint32_t barriers;    // shared address of the first mbarrier

  __device__ explicit BlockSmem(uint8_t* smem)
      : kv_stages(smem + kLayout.kv_offset),
        scores(reinterpret_cast<float*>(smem + kLayout.score_offset)),
        probs(reinterpret_cast<uint16_t*>(smem + kLayout.prob_offset)),
        row_alpha(reinterpret_cast<float*>(smem + kLayout.row_stat_offset)),
        piece_stats(row_alpha + kProbBuffers * kRows),
        slice_max(piece_stats + kPieceStatSlots * 2 * kRows),
        query_ops(reinterpret_cast<uint16_t*>(smem + kLayout.query_offset)),
        page_ring(reinterpret_cast<int32_t*>(smem + kLayout.page_offset)),
        page_slot(page_ring + kPageRing * kTileTokens),
        barriers(shared_address(smem + kLayout.barrier_offset)) {}

  // A stage's KV (and the page ids issued with it) landed: one cp.async arrival per value thread,
  // and one plain arrival from each of the kTileTokens threads that wrote in-page slots with it.
  __device__ uint32_t kv_full(int stage) const { return barriers + 8 * stage; }
  // A stage was read by both groups: every thread of the block arrives.
  __device__ uint32_t kv_empty(int stage) const { return barriers + 8 * (kStages + stage); }
  // A tile's probabilities and rescale factors are written: every score thread arrives.
  __device__ uint32_t probs_full(int buffer) const { return barriers + 8 * (2 * kStages + buffer); }
  // PV has read a probability buffer: every value thread arrives.
  __device__ uint32_t probs_empty(int buffer) const { return barriers + 8 * (2 * kStages + kProbBuffers + buffer); }
  // A piece's row sums and maxima are written (every score thread) / read (every value thread).
  __device__ uint32_t stats_full(int slot) const { return barriers + 8 * (2 * kStages + 2 * kProbBuffers + slot); }
  __device__ uint32_t stats_empty(int slot) const {
    return barriers + 8 * (2 * kStages + 2 * kProbBuffers + kPieceStatSlots + slot);
  }
};

inline constexpr int kScoreGroupBarrier = 1, kValueGroupBarrier = 2;

// The physical query dim a thread's fragment pair (k-slots 2c, 2c + 1 of k-step s, s < 9, of k-slice
// q) comes from: the key fragment map of kv_tile.cuh. k-slots 2c + 8, 2c + 9 are the next pair.
__device__ __forceinline__ int query_dim(int k_slice, int s, int c) {
  return s < 8 ? 128 * k_slice + 64 * (s / 4) + 16 * c + 4 * (s % 4) : kHeadDimCkv + 16 * k_slice + 4 * c;
}

// One piece's query, for the score warps: the first m-tile's fragments of this thread's k-slice in
// registers (q_frag, scaled into the operand type's range), a wide block's second m-tile as mma
// operands in shared memory, and each row's power-of-two shift (mma_operand.cuh).
template <KvDtype kDtype, int kStages, int kMTiles>
__device__ __forceinline__ void load_query(const DecodeParams& p, const BlockSmem<kDtype, kStages, kMTiles>& sm, int b,
                                           int head0, int rows_here,
                                           uint32_t (&q_frag)[slices_per_score_warp(kMTiles) * kKeySteps][4],
                                           float (&latent_scale)[2], float (&rope_scale)[2],
                                           float (&unshift)[kMTiles][2]) {
  using Op = MmaOperand<kDtype>;
  constexpr int kRows = block_rows(kMTiles);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, c = lane % 4;
  constexpr int kSlices = slices_per_score_warp(kMTiles), kPartials = score_partials(kMTiles);
  const int k_group = warp % kPartials, token_group = warp / kPartials;  // k-slices kSlices k_group + j
  // The rows go through the first score buffer (free between pieces: the caller's barrier).
  uint16_t* q_stage = reinterpret_cast<uint16_t*>(sm.scores);
  static_assert(kRows * kQueryRowElems * 2 <= kKSlices * kRows * kScoreStride * 4, "one score buffer holds the query");
  stage_query<kRows>(p, b, head0, rows_here, q_stage, tid);
  cp_async_commit();
  cp_async_wait<0>();
  group_barrier(kScoreGroupBarrier, kThreads);
  KVPATCH_MARK(0, 15);  // the query is in shared memory
  auto quad = [&](int row, int d) { return *reinterpret_cast<const uint2*>(q_stage + row * kQueryRowElems + d); };
#pragma unroll
  for (int half = 0; half < 2; ++half)
#pragma unroll
    for (int j = 0; j < kSlices; ++j)
#pragma unroll
      for (int s = 0; s < kKeySteps; ++s) {
        const uint2 pairs = quad(g + 8 * half, query_dim(kSlices * k_group + j, s, c));
        q_frag[kKeySteps * j + s][half] = pairs.x;      // a0 / a1: k-slots 2c, 2c + 1
        q_frag[kKeySteps * j + s][2 + half] = pairs.y;  // a2 / a3: k-slots 2c + 8, 2c + 9
      }
  // Each row's largest magnitude, from the k-slice warps of the first token group per m-tile, meets
  // in slice_max (a warp of two k-slices writes its maximum for both).
  if constexpr (Op::kScaledQuery) {
    auto publish = [&](int row, float max_abs) {
      max_abs = fmaxf(max_abs, __shfl_xor_sync(0xffffffffu, max_abs, 1));
      max_abs = fmaxf(max_abs, __shfl_xor_sync(0xffffffffu, max_abs, 2));
      if (c == 0)
#pragma unroll
        for (int j = 0; j < kSlices; ++j) sm.slice_max[(kSlices * k_group + j) * kRows + row] = max_abs;
    };
    auto pair_max = [](uint32_t pair) {
      return fmaxf(fabsf(__uint_as_float(pair << 16)), fabsf(__uint_as_float(pair & 0xFFFF0000u)));
    };
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      if (token_group == 0) {
        float max_abs = 0.f;
#pragma unroll
        for (int s = 0; s < kSlices * kKeySteps; ++s) max_abs = fmaxf(max_abs, fmaxf(pair_max(q_frag[s][half]), pair_max(q_frag[s][2 + half])));
        publish(g + 8 * half, max_abs);
      } else if (kMTiles == 2) {  // the second m-tile's rows
        const int row = kMTileRows + g + 8 * half;
        float max_abs = 0.f;
#pragma unroll
        for (int s = 0; s < kKeySteps; ++s) {
          const uint2 pairs = quad(row, query_dim(k_group, s, c));
          max_abs = fmaxf(max_abs, fmaxf(pair_max(pairs.x), pair_max(pairs.y)));
        }
        publish(row, max_abs);
      }
    }
  }
  group_barrier(kScoreGroupBarrier, kThreads);  // slice maxima published
  KVPATCH_MARK(0, 16);  // the slice maxima are published
  auto row_shift = [&](int row) {
    if constexpr (!Op::kScaledQuery) return 0;
    return query_shift(fmaxf(fmaxf(sm.slice_max[row], sm.slice_max[kRows + row]),
                             fmaxf(sm.slice_max[2 * kRows + row], sm.slice_max[3 * kRows + row])));
  };
  // Narrow blocks: rows g and g + 8 get ckv/kpe scale times 2^shift. Wide blocks (short of
  // registers) multiply by the scales, then by 2^shift (rows 16m + g (+ 8)): exact, the same value.
#pragma unroll
  for (int m = 0; m < kMTiles; ++m)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int shift = row_shift(kMTileRows * m + g + 8 * half);
      unshift[m][half] = pow2(shift);
      if (m == 0) {
        latent_scale[half] = p.ckv_scale * pow2(shift);
        rope_scale[half] = p.kpe_scale * pow2(shift);
        const float q_scale = pow2(-shift);
#pragma unroll
        for (int s = 0; s < kSlices * kKeySteps; ++s) {
          q_frag[s][half] = Op::query_pair(q_frag[s][half], q_scale);
          q_frag[s][2 + half] = Op::query_pair(q_frag[s][2 + half], q_scale);
        }
      }
    }
  // A wide block's second m-tile: operands in k-step order, so that one ldmatrix.x4 per k-step
  // yields the A fragment (matrix 0: rows 0-7, k-slots 0-7; 1: rows 8-15; 2, 3: k-slots 8-15).
  // Row r, k-step (q, s): 16 values at (9 q + s) * 16; rows 1,168 B apart (conflict-free ldmatrix).
  if constexpr (kMTiles == 2) {
    constexpr int kPairsPerRow = kKSlices * kKeySteps * 4;  // (k-step, c) pairs of pairs
    for (int i = tid; i < kMTileRows * kPairsPerRow; i += kThreads) {
      const int r = i / kPairsPerRow, step = (i % kPairsPerRow) / 4, pc = i % 4;
      const int q = step / kKeySteps, s = step % kKeySteps;
      const float q_scale = pow2(-row_shift(kMTileRows + r));
      const uint2 pairs = quad(kMTileRows + r, query_dim(q, s, pc));
      uint16_t* dst = sm.query_ops + r * kQueryStageStride + 16 * step + 2 * pc;
      *reinterpret_cast<uint32_t*>(dst) = Op::query_pair(pairs.x, q_scale);
      *reinterpret_cast<uint32_t*>(dst + 8) = Op::query_pair(pairs.y, q_scale);
    }
    group_barrier(kScoreGroupBarrier, kThreads);  // the second m-tile's operands are written
  }
}

// Warps 0-7: per piece the query, then per tile QK and the online softmax; at the piece's end its
// rows' (sum, max) for the value warps.
template <KvDtype kDtype, int kStages, int kMTiles>
__device__ __forceinline__ void score_warps(const DecodeParams& p, const BlockSmem<kDtype, kStages, kMTiles>& sm,
                                            const BlockPieces& work, int head0, int rows_here) {
  using Smem = BlockSmem<kDtype, kStages, kMTiles>;
  using Tile = KvTile<kDtype>;
  using Op = MmaOperand<kDtype>;
  constexpr int kRows = Smem::kRows;
  constexpr int kStageBytes = stage_bytes(kDtype);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, c = lane % 4;
  constexpr int kSlices = slices_per_score_warp(kMTiles), kPartials = score_partials(kMTiles);
  constexpr int kWarpTokens = score_warp_tokens(kMTiles);
  const int k_group = warp % kPartials, token_group = warp / kPartials;  // k-slices kSlices k_group + j
  FragmentOffsets frag_offsets[kSlices];
#pragma unroll
  for (int j = 0; j < kSlices; ++j) frag_offsets[j] = Tile::offsets(kWarpTokens * token_group, kSlices * k_group + j, warp, g, c);
  uint32_t q_ops_address = 0;
  if constexpr (kMTiles == 2)
    q_ops_address = shared_address(sm.query_ops + ((lane & 7) + 8 * ((lane >> 3) & 1)) * kQueryStageStride +
                                   16 * kKeySteps * k_group + 8 * (lane >> 4));
  constexpr int kLanesPerRow = softmax_lanes_per_row(kMTiles), kSoftmaxTokens = softmax_tokens(kMTiles);
  constexpr int kTokenGroups = kSoftmaxTokens / 4;  // 4 consecutive tokens, 4 * kLanesPerRow apart
  const int softmax_row = tid / kLanesPerRow;
  const int softmax_token0 = (tid % kLanesPerRow) * 4;
  const float score_scale = p.sm_scale * 1.4426950408889634f;  // base-2 domain
  constexpr int kScoreBuffers = Smem::kScoreBuffers;
  constexpr int kScoreBufferFloats = kKSlices * kRows * kScoreStride;
  constexpr int kProbBuffers = Smem::kProbBuffers;

  // The block's tiles so far, over all pieces: the pipeline's position (unsigned: its divisions by
  // the power-of-two ring sizes are shifts).
  unsigned tau = 0;
  [[maybe_unused]] float ablate_acc[2][4] = {};  // KVPATCH_ABLATE 6 only
  // The current piece's request and tokens; a later piece is the next request, from its start, so
  // only its end is fetched ahead (few registers live across the tile loop).
  int b = work.first.b;
  SplitRange range = work.first.range;
  for (int k = 0; k < work.count; ++k) {
    const int next_end = k + 1 < work.count ? later_piece(work, k + 1).range.end : 0;  // in flight
    const int tiles = range.tiles();
    uint32_t q_frag[kSlices * kKeySteps][4];  // BF16 pairs as staged; converted to the operand type
    float latent_scale[2], rope_scale[2], unshift[kMTiles][2];
    if (tiles > 0) {
      // Piece k - 1's last softmax may still read the score buffers the query goes through.
      if (k == 1) KVPATCH_MARK(0, 7);  // piece 1: its query is wanted
      if (k > 0) group_barrier(kScoreGroupBarrier, kThreads);
      load_query(p, sm, b, head0, rows_here, q_frag, latent_scale, rope_scale, unshift);
      if (k == 1) KVPATCH_MARK(0, 8);  // piece 1: its query is loaded
    }
    // The next piece's query into L2 now, for that piece's prologue.
    if (k + 1 < work.count) prefetch_query(p, b + 1, head0, rows_here, tid);
    if (k == 0) KVPATCH_MARK(0, 1);  // the query landed
    float running_max = -INFINITY, running_sum = 0.f;
    const unsigned tau_end = tau + tiles;
    for (int tile = 0; tau < tau_end; ++tile, ++tau) {
      const int stage_index = static_cast<int>(tau % kStages);
      mbarrier_wait(sm.kv_full(stage_index), (tau / kStages) & 1);
      const uint8_t* stage = sm.kv_stages + stage_index * kStageBytes;
      float* scores = sm.scores + (tau % kScoreBuffers) * kScoreBufferFloats;
      if (tau == 0) KVPATCH_MARK(0, 3);  // the first tile has landed
      if (k == 1 && tile == 0) KVPATCH_MARK(0, 9);  // piece 1: its first tile has landed

      // QK: partial scores over this warp's k-slices for its tokens, its n8 tiles unrolled.
      auto store_partial = [&](int row, int nt, float x, float y) {
        const int col = kWarpTokens * token_group + 8 * nt + 2 * c;
        *reinterpret_cast<float2*>(scores + (k_group * kRows + row) * kScoreStride + col) = make_float2(x, y);
      };
      if (KVPATCH_ABLATE != 1 && KVPATCH_ABLATE != 3) {
        if constexpr (kMTiles == 1) {
  #pragma unroll
          for (int nt = 0; nt < kWarpTokens / 8; ++nt) {
            uint32_t key[kSlices][kKeySteps][2];
  #pragma unroll
            for (int j = 0; j < kSlices; ++j) load_key<kDtype>(stage, frag_offsets[j], nt, key[j]);
            // Per k-slice two independent accumulation chains over the latent k-steps ("near": the
            // first 4, "far": the last 4) halve the mma latency chain; the rope k-steps apart.
            float near[kSlices][4] = {}, far[kSlices][4] = {}, rope[4] = {0.f, 0.f, 0.f, 0.f};
  #pragma unroll
            for (int s = 0; s < 4; ++s)
  #pragma unroll
              for (int j = 0; j < kSlices; ++j) {
                Op::mma(near[j], q_frag[kKeySteps * j + s], key[j][s][0], key[j][s][1]);
                Op::mma(far[j], q_frag[kKeySteps * j + 4 + s], key[j][4 + s][0], key[j][4 + s][1]);
              }
  #pragma unroll
            for (int j = 0; j < kSlices; ++j)
              if (KVPATCH_ABLATE != 7 && KVPATCH_ABLATE != 8) Op::mma(rope, q_frag[kKeySteps * j + 8], key[j][8][0], key[j][8][1]);
            auto latent = [&](int e) {
              float sum = near[0][e] + far[0][e];
  #pragma unroll
              for (int j = 1; j < kSlices; ++j) sum += near[j][e] + far[j][e];
              return sum;
            };
  #pragma unroll
            for (int half = 0; half < 2; ++half)
              store_partial(g + 8 * half, nt, latent_scale[half] * latent(2 * half) + rope_scale[half] * rope[2 * half],
                            latent_scale[half] * latent(2 * half + 1) + rope_scale[half] * rope[2 * half + 1]);
          }
        } else {
          // Each key fragment is converted once and multiplied with both m-tiles' query: per n8 tile
          // one accumulator per m-tile over the 8 latent k-steps, then the rope k-step apart (its
          // scale differs).
          float acc[kWarpTokens / 8][2][4];
  #pragma unroll
          for (int nt = 0; nt < kWarpTokens / 8; ++nt)
  #pragma unroll
            for (int e = 0; e < 4; ++e) acc[nt][0][e] = 0.f, acc[nt][1][e] = 0.f;
  #pragma unroll
          for (int pair = 0; pair < 4; ++pair) {  // latent k-steps 2 pair, 2 pair + 1
            uint32_t q_second[2][4];
  #pragma unroll
            for (int j = 0; j < 2; ++j) ldmatrix_x4(q_second[j], q_ops_address + 32 * (2 * pair + j));
  #pragma unroll
            for (int nt = 0; nt < kWarpTokens / 8; ++nt) {
              uint32_t key[2][2];
              Tile::load_key_pair(stage, frag_offsets[0], nt, pair, key);
  #pragma unroll
              for (int j = 0; j < 2; ++j) {
                Op::mma(acc[nt][0], q_frag[2 * pair + j], key[j][0], key[j][1]);
                Op::mma(acc[nt][1], q_second[j], key[j][0], key[j][1]);
              }
            }
          }
          uint32_t q_rope[4];
          ldmatrix_x4(q_rope, q_ops_address + 32 * 8);
  #pragma unroll
          for (int nt = 0; nt < kWarpTokens / 8; ++nt) {
            uint32_t key[2];
            Tile::load_key_rope(stage, frag_offsets[0], nt, key);
            float rope[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
            Op::mma(rope[0], q_frag[8], key[0], key[1]);
            Op::mma(rope[1], q_rope, key[0], key[1]);
  #pragma unroll
            for (int m = 0; m < 2; ++m)
  #pragma unroll
              for (int half = 0; half < 2; ++half)
                store_partial(kMTileRows * m + g + 8 * half, nt,
                              unshift[m][half] * (p.ckv_scale * acc[nt][m][2 * half] + p.kpe_scale * rope[m][2 * half]),
                              unshift[m][half] * (p.ckv_scale * acc[nt][m][2 * half + 1] + p.kpe_scale * rope[m][2 * half + 1]));
          }
        }
      }
      if (KVPATCH_ABLATE != 6 || kMTiles != 1) mbarrier_arrive(sm.kv_empty(stage_index));
      group_barrier(kScoreGroupBarrier, kThreads);  // the partial scores are complete

      // Online softmax, kLanesPerRow threads per row (base 2; NaN scores pass through exp2 into the sum).
      const int buffer = static_cast<int>(tau % kProbBuffers);
      if (tau >= kProbBuffers) mbarrier_wait(sm.probs_empty(buffer), (tau / kProbBuffers - 1) & 1);
      if (KVPATCH_ABLATE != 1 && KVPATCH_ABLATE != 3) {
        float s[kSoftmaxTokens];
  #pragma unroll
        for (int t = 0; t < kSoftmaxTokens; ++t) s[t] = 0.f;
  #pragma unroll
        for (int q = 0; q < kPartials; ++q)
  #pragma unroll
          for (int k = 0; k < kTokenGroups; ++k) {
            const float4 part = *reinterpret_cast<const float4*>(scores + (q * kRows + softmax_row) * kScoreStride +
                                                                 softmax_token0 + 4 * kLanesPerRow * k);
            s[4 * k] += part.x, s[4 * k + 1] += part.y, s[4 * k + 2] += part.z, s[4 * k + 3] += part.w;
          }
        const int token_base = range.begin + tile * kTileTokens + softmax_token0;
        float tile_max = -INFINITY;
  #pragma unroll
        for (int t = 0; t < kSoftmaxTokens; ++t) {
          s[t] = token_base + 4 * kLanesPerRow * (t / 4) + t % 4 < range.end ? s[t] * score_scale : -INFINITY;
          tile_max = fmaxf(tile_max, s[t]);
        }
  #pragma unroll
        for (int offset = kLanesPerRow / 2; offset > 0; offset /= 2)
          tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, offset));
        const float new_max = fmaxf(running_max, tile_max);
        const float base = new_max == -INFINITY ? 0.f : new_max;
        const float alpha = fast_exp2(running_max - base);
        float prob[kSoftmaxTokens], tile_sum = 0.f;
  #pragma unroll
        for (int t = 0; t < kSoftmaxTokens; ++t) {
          prob[t] = fast_exp2(s[t] - base);
          tile_sum += prob[t];
        }
        running_sum = running_sum * alpha + tile_sum;
        running_max = new_max;
        uint16_t* dst = sm.probs + (buffer * kRows + softmax_row) * kProbStride + softmax_token0;
  #pragma unroll
        for (int k = 0; k < kTokenGroups; ++k)
          *reinterpret_cast<uint2*>(dst + 4 * kLanesPerRow * k) =
              make_uint2(Op::prob_pair(prob[4 * k], prob[4 * k + 1]), Op::prob_pair(prob[4 * k + 2], prob[4 * k + 3]));
        if (tid % kLanesPerRow == 0) sm.row_alpha[buffer * kRows + softmax_row] = alpha;
      }
      mbarrier_arrive(sm.probs_full(buffer));
      if constexpr (KVPATCH_ABLATE == 6 && kMTiles == 1) {
        // Timing only: the two n-tiles the value warps skip, over this warp's 16 dims.
        group_barrier(kScoreGroupBarrier, kThreads);  // every row's probabilities are written
        const uint16_t* probs = sm.probs + buffer * kRows * kProbStride;
        const FragmentOffsets value_offsets = Tile::offsets(0, 0, warp, g, c);
  #pragma unroll
        for (int k_step = 0; k_step < kTileTokens / 16; ++k_step) {
          uint32_t prob_frag[4], value[4][2];
          ldmatrix_x4(prob_frag, shared_address(probs + (lane & 15) * kProbStride + 16 * k_step + (lane >> 4) * 8));
          Tile::load_value_half(stage, value_offsets, k_step, 1, value);
          Op::mma(ablate_acc[0], prob_frag, value[2][0], value[2][1]);
          Op::mma(ablate_acc[1], prob_frag, value[3][0], value[3][1]);
        }
        mbarrier_arrive(sm.kv_empty(stage_index));
      }
      // One score buffer: every warp must have read it before the next QK writes it. Two: the
      // barrier after the next QK orders this softmax's reads before the QK after that.
      if constexpr (kScoreBuffers == 1) group_barrier(kScoreGroupBarrier, kThreads);
    }
    // The piece's row sums and maxima for the value warps' epilogue (slots alternate by piece).
#pragma unroll
    for (int offset = kLanesPerRow / 2; offset > 0; offset /= 2)
      running_sum += __shfl_xor_sync(0xffffffffu, running_sum, offset);
    const int slot = k % kPieceStatSlots;
    if (k >= kPieceStatSlots) mbarrier_wait(sm.stats_empty(slot), (k / kPieceStatSlots - 1) & 1);
    if (tid % kLanesPerRow == 0) {
      sm.piece_stats[(2 * slot) * kRows + softmax_row] = running_sum;
      sm.piece_stats[(2 * slot + 1) * kRows + softmax_row] = running_max;
    }
    mbarrier_arrive(sm.stats_full(slot));
    b += 1, range.begin = 0, range.end = next_end;
  }
  KVPATCH_MARK(0, 4);  // the last tile's probabilities are written
  if constexpr (KVPATCH_ABLATE == 6) {  // keeps the ablation's products live
    if (ablate_acc[0][0] + ablate_acc[1][3] == 1234.5f) sm.slice_max[tid % kRows] = ablate_acc[0][1] + ablate_acc[1][2];
  }
}

// The value warps' epilogue of one piece: its normalized output rows (or FP32 partials for the
// merge) from the thread's accumulators and the score warps' row sums.
template <KvDtype kDtype, int kStages, int kMTiles>
__device__ __forceinline__ void store_piece(const DecodeParams& p, const BlockSmem<kDtype, kStages, kMTiles>& sm,
                                            const Piece& piece, int piece_index, int head0, int rows_here,
                                            float* partial_out, float* partial_lse,
                                            const float (&out_acc)[kMTiles][kValueTiles][4]) {
  using Op = MmaOperand<kDtype>;
  constexpr int kRows = block_rows(kMTiles);
  const int tid = threadIdx.x - kThreads, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, c = lane % 4;
  const int slot = piece_index % kPieceStatSlots;
  mbarrier_wait(sm.stats_full(slot), (piece_index / kPieceStatSlots) & 1);
  // The rows this thread stores, read before the slot is handed back to the score warps.
  float row_sum[2 * kMTiles], row_max[2 * kMTiles];
#pragma unroll
  for (int rows = 0; rows < 2 * kMTiles; ++rows) {
    const int row = kMTileRows * (rows / 2) + g + 8 * (rows % 2);
    row_sum[rows] = sm.piece_stats[(2 * slot) * kRows + row];
    row_max[rows] = sm.piece_stats[(2 * slot + 1) * kRows + row];
  }
  mbarrier_arrive(sm.stats_empty(slot));
  if (piece_index == 0) KVPATCH_MARK(0, 19);  // piece 0: its row sums are read
#pragma unroll
  for (int rows = 0; rows < 2 * kMTiles; ++rows) {
    const int m = rows / 2, half = rows % 2;
    const int row = kMTileRows * m + g + 8 * half;
    if (row >= rows_here) continue;
    const int head = head0 + row, b = piece.b;
    const float sum = row_sum[rows];
    const float inv_sum = sum == 0.f ? 0.f : 1.f / sum;
    const float lse = row_max[rows] + log2f(sum);  // -inf for an empty range, NaN stays NaN
    float v[16];
#pragma unroll
    for (int j = 0; j < kValueTiles; ++j) {
      // The unscale is a power of two (exact), so both instantiations round the same value.
      v[j] = out_acc[m][j][2 * half] * Op::kOutUnscale * inv_sum * p.ckv_scale;          // dim 64w + 16c + j
      v[8 + j] = out_acc[m][j][2 * half + 1] * Op::kOutUnscale * inv_sum * p.ckv_scale;  // dim 64w + 16c + 8 + j
    }
    const int dim0 = 64 * warp + 16 * c;
    if (piece.single) {
      uint16_t* dst = static_cast<uint16_t*>(p.out) + b * p.out_stride_b + head * p.out_stride_h + dim0;
      uint32_t packed[8];
#pragma unroll
      for (int k = 0; k < 8; ++k) packed[k] = pack_bf16x2(v[2 * k], v[2 * k + 1]);
      if (reinterpret_cast<uintptr_t>(dst) % 16 == 0) {
        reinterpret_cast<uint4*>(dst)[0] = make_uint4(packed[0], packed[1], packed[2], packed[3]);
        reinterpret_cast<uint4*>(dst)[1] = make_uint4(packed[4], packed[5], packed[6], packed[7]);
      } else {
#pragma unroll
        for (int k = 0; k < 16; ++k) dst[k] = static_cast<uint16_t>(packed[k / 2] >> (16 * (k % 2)));
      }
      if (p.lse && warp == 0 && c == 0) p.lse[static_cast<int64_t>(b) * p.num_heads + head] = lse;
    } else {
      const int64_t part = static_cast<int64_t>(piece.part) * p.num_heads + head;
      // In store order (partial_position): dims dim0 + 4 k .. + 3 go to position 64 w + 16 k + 4 c,
      // so the quad's 4 lanes fill 64 contiguous bytes per instruction. (Dims in place, 16 B per
      // lane 64 B apart: H200, one 128K request 33.5 / 34.8 us against 32.3 / 32.3, B=32 H=32 16K
      // 156.6 against 153.5 / 152.3, same process.)
      float* dst = partial_out + part * kHeadDimCkv + partial_position(dim0);
#pragma unroll
      for (int k = 0; k < 4; ++k)
        *reinterpret_cast<float4*>(dst + 16 * k) = make_float4(v[4 * k], v[4 * k + 1], v[4 * k + 2], v[4 * k + 3]);
      if (warp == 0 && c == 0) partial_lse[part] = lse;
    }
  }
}

// Warps 8-15: the KV loader and PV, and each piece's output.
template <KvDtype kDtype, int kStages, int kMTiles>
__device__ __forceinline__ void value_warps(const DecodeParams& p, const BlockSmem<kDtype, kStages, kMTiles>& sm,
                                            const BlockPieces& work, int head0, int rows_here, float* partial_out,
                                            float* partial_lse) {
  constexpr int kRows = BlockSmem<kDtype, kStages, kMTiles>::kRows;
  using Tile = KvTile<kDtype>;
  using Op = MmaOperand<kDtype>;
  constexpr int kStageBytes = stage_bytes(kDtype);
  constexpr int kPageRing = page_ring_tiles(kStages);
  static_assert(kThreads == 4 * kTileTokens, "the loader gives each thread two rows' eighths");
  const int tid = threadIdx.x - kThreads, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, c = lane % 4;
  const int total_tiles = work.total_tiles;

  // ---- KV loader: a row per warp instruction (FP8) or 8 threads per row (BF16), below. Page ids
  // come from a ring in shared memory that threads 0-63 fill kStages tiles ahead (with an earlier
  // KV tile), so no tile waits on a dependent global load; next to each page id they write the
  // token's slot within its page (-1: past the piece's end), so the loader needs no piece
  // bookkeeping. ----
  const int64_t ckv_stride = p.ckv_stride_slot * kv_elem_bytes(kDtype);
  const int64_t kpe_stride = p.kpe_stride_slot * kv_elem_bytes(kDtype);
  // Pages are powers of two (the launcher checks): shifts and masks, no division or branch.
  const int page_shift = __ffs(p.page_size) - 1;
  const int page_mask = p.page_size - 1;
  // Threads 0-63 walk the pieces kStages tiles ahead of the loader.
  int ids_piece = 0, ids_first_tile = 0;
  Piece ids = work.first;
  auto issue_page_ids = [&](unsigned tile) {
    if (tid >= kTileTokens || tile >= static_cast<unsigned>(total_tiles)) return;
    while (tile >= static_cast<unsigned>(ids_first_tile + ids.range.tiles())) {
      ids_first_tile += ids.range.tiles();
      ids = later_piece(work, ++ids_piece);
    }
    const int token = ids.range.begin + (static_cast<int>(tile) - ids_first_tile) * kTileTokens + tid;
    const bool valid = token < ids.range.end;
    const int32_t* pages = p.kv_indices + ids.page_offset;
    const int entry = (tile % kPageRing) * kTileTokens + tid;
    cp_async_4(shared_address(sm.page_ring + entry), valid ? pages + (token >> page_shift) : pages, valid);
    sm.page_slot[entry] = valid ? token & page_mask : -1;
  };
  // BF16, 8 threads per row: each cp.async instruction of a warp fills 128 contiguous bytes of each
  // of 4 rows (the ideal 4 shared-memory wavefronts for 1,152-byte rows). Thread t copies rows t / 8
  // and t / 8 + 32: the latent eighth `sub8` of each, and one rope chunk of each.
  // Per-thread constants (rows row_a and row_a + 32 share their swizzle): this thread's first source
  // chunk of slot 0's latent and rope parts (slot s: + s x stride), and its destination row. Its
  // rope chunk is physical chunk sub8 of the 8, holding logical chunk sub8 ^ rope_xor.
  [[maybe_unused]] const int row_a = tid / 8, sub8 = tid % 8;
  [[maybe_unused]] const uint8_t* ckv_src = static_cast<const uint8_t*>(p.ckv) + 16 * (sub8 ^ Tile::latent_xor(row_a));
  [[maybe_unused]] const uint8_t* kpe_src = static_cast<const uint8_t*>(p.kpe) + 16 * (sub8 ^ Tile::rope_xor(row_a));
  [[maybe_unused]] const uint32_t dst_a = shared_address(sm.kv_stages) + row_a * Tile::kRowBytes;
  // FP8 copies a row per instruction instead: a warp's cp.async fills one row's whole latent part
  // (512 contiguous bytes; H200, B=32 H=16 16K: 92.4 us against 93.7 / 94.1 with 128 bytes of 4
  // rows, same process). Warp w copies rows 8w .. 8w + 7: lane l computes row 8w + (l & 7)'s source
  // addresses once, and each row's copy takes them by shuffle; lane l fills physical chunk l, which
  // holds logical chunk l ^ x (x: the row's XOR). The 8 rows' rope parts take one more instruction
  // (4 lanes per row).
  constexpr bool kRowPerCopy = kDtype == KvDtype::kFp8E4M3;
  [[maybe_unused]] const uint32_t rows8_dst = shared_address(sm.kv_stages) + 8 * warp * Tile::kRowBytes + 16 * lane;
  [[maybe_unused]] const uint32_t rope8_dst =
      shared_address(sm.kv_stages) + (8 * warp + lane / 4) * Tile::kRowBytes + 16 * (Tile::kCkvChunks + lane % 4);
  // The logical rope chunk rope8_dst holds: (lane % 4) ^ rope_xor(8w + lane / 4), where the XOR
  // depends only on the row mod 8, so it is ((lane / 4) >> 1) & 3.
  [[maybe_unused]] const int rope8_chunk = (lane % 4) ^ ((lane >> 3) & 3);
  // Tile `tile` and the page ids of tile + kStages; the stage's full barrier gets this thread's
  // arrival once they land (and, from threads 0-63, once the in-page slots are written).
  auto issue_tile = [&](unsigned tile) {
    const int stage_index = static_cast<int>(tile % kStages);
    if constexpr (kRowPerCopy) {
      if (KVPATCH_ABLATE != 2) {
        const int entry = (tile % kPageRing) * kTileTokens + 8 * warp + (lane & 7);
        const int in_page = sm.page_slot[entry];
        const bool valid = in_page >= 0;
        const int64_t slot = valid ? (static_cast<int64_t>(sm.page_ring[entry]) << page_shift) + in_page : 0;
        const uint8_t* ckv_row = static_cast<const uint8_t*>(p.ckv) + slot * ckv_stride;
        const uint8_t* kpe_row = static_cast<const uint8_t*>(p.kpe) + slot * kpe_stride;
        const uint32_t valid_rows = __ballot_sync(0xffffffffu, valid);  // bit k: row 8w + k (lanes k, k + 8, ...)
        const uint32_t stage_offset = stage_index * kStageBytes;
#pragma unroll
        for (int k = 0; k < 8; ++k) {  // row 8w + k, whose XOR is row k's
          const uint8_t* src = reinterpret_cast<const uint8_t*>(__shfl_sync(0xffffffffu, reinterpret_cast<uintptr_t>(ckv_row), k));
          cp_async_16(rows8_dst + stage_offset + k * Tile::kRowBytes, src + 16 * (lane ^ Tile::latent_xor(k)),
                      (valid_rows >> k) & 1);
        }
        const uint8_t* rope_src = reinterpret_cast<const uint8_t*>(__shfl_sync(0xffffffffu, reinterpret_cast<uintptr_t>(kpe_row), lane / 4));
        cp_async_16(rope8_dst + stage_offset, rope_src + 16 * rope8_chunk, (valid_rows >> (lane / 4)) & 1);
      }
    } else if (KVPATCH_ABLATE != 2) {
      static_assert(Tile::kRowChunks - Tile::kCkvChunks == 8, "BF16 rows: 8 rope chunks, one per thread of a row");
      const uint32_t stage = dst_a + stage_index * kStageBytes;
      const int entry = (tile % kPageRing) * kTileTokens + row_a;
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int in_page = sm.page_slot[entry + 32 * half];
        const bool valid = in_page >= 0;
        const int64_t slot = valid ? (static_cast<int64_t>(sm.page_ring[entry + 32 * half]) << page_shift) + in_page : 0;
        const uint32_t dst_row = stage + 32 * half * Tile::kRowBytes;
        copy_row_latent<Tile::kCkvChunks>(dst_row + 16 * sub8, ckv_src + slot * ckv_stride, valid);
        cp_async_16(dst_row + 16 * (Tile::kCkvChunks + sub8), kpe_src + slot * kpe_stride, valid);
      }
    }
    issue_page_ids(tile + kStages);
    cp_async_arrive(sm.kv_full(stage_index));
    if (tid < kTileTokens) mbarrier_arrive(sm.kv_full(stage_index));  // orders the in-page slots
  };
  for (unsigned tile = 0; tile < kStages; ++tile) issue_page_ids(tile);
  cp_async_commit();
  cp_async_wait<0>();
  group_barrier(kValueGroupBarrier, kThreads);  // the first tiles' page ids landed
  KVPATCH_MARK(0, 18);  // value warps: the first page ids landed
  for (int tile = 0; tile < kStages && tile < total_tiles; ++tile) issue_tile(static_cast<unsigned>(tile));
  KVPATCH_MARK(0, 2);  // the first tiles' copies are issued

  const FragmentOffsets frag_offsets = Tile::offsets(0, 0, warp, g, c);  // value offsets of this warp's dims
  float out_acc[kMTiles][kValueTiles][4];
  constexpr int kProbBuffers = BlockSmem<kDtype, kStages, kMTiles>::kProbBuffers;
  unsigned tau = 0;  // the block's tiles so far, over all pieces
  Piece piece = work.first;
  for (int k = 0; k < work.count; ++k) {
    if (k > 0) piece = later_piece(work, k);  // (L2) while the score warps stage its query
#pragma unroll
    for (int m = 0; m < kMTiles; ++m)
#pragma unroll
      for (int j = 0; j < kValueTiles; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) out_acc[m][j][e] = 0.f;
    const int tiles = piece.range.tiles();
    const unsigned tau_end = tau + tiles;
    for (; tau < tau_end; ++tau) {
      const int stage_index = static_cast<int>(tau % kStages), buffer = static_cast<int>(tau % kProbBuffers);
      mbarrier_wait(sm.kv_full(stage_index), (tau / kStages) & 1);
      mbarrier_wait(sm.probs_full(buffer), (tau / kProbBuffers) & 1);
      if (k == 1 && tau + tiles == tau_end) KVPATCH_MARK(0, 12);  // piece 1: its first probabilities are in
      const uint8_t* stage = sm.kv_stages + stage_index * kStageBytes;
      const uint16_t* probs = sm.probs + buffer * kRows * kProbStride;
      if (KVPATCH_ABLATE != 1 && KVPATCH_ABLATE != 4) {
        // PV: rescale (skipped while no row's max moved), then accumulate this tile's probabilities
        // times the values of this warp's dims, each value fragment converted once for all m-tiles.
  #pragma unroll
        for (int m = 0; m < kMTiles; ++m) {
          const float alpha_lo = sm.row_alpha[buffer * kRows + kMTileRows * m + g];
          const float alpha_hi = sm.row_alpha[buffer * kRows + kMTileRows * m + g + 8];
          if (__any_sync(0xffffffffu, alpha_lo != 1.f || alpha_hi != 1.f)) {
  #pragma unroll
            for (int j = 0; j < kValueTiles; ++j) {
              out_acc[m][j][0] *= alpha_lo, out_acc[m][j][1] *= alpha_lo;
              out_acc[m][j][2] *= alpha_hi, out_acc[m][j][3] *= alpha_hi;
            }
          }
        }
  #pragma unroll
        for (int k_step = 0; k_step < kTileTokens / 16; ++k_step) {
          uint32_t prob_frag[kMTiles][4];
  #pragma unroll
          for (int m = 0; m < kMTiles; ++m)
            ldmatrix_x4(prob_frag[m], shared_address(probs + (kMTileRows * m + (lane & 15)) * kProbStride + 16 * k_step +
                                                     (lane >> 4) * 8));
          if constexpr (kMTiles == 1) {
            uint32_t value[kValueTiles][2];
            Tile::load_value(stage, frag_offsets, k_step, value);
  #pragma unroll
            for (int j = 0; j < kValueTiles; ++j)
              if (!((KVPATCH_ABLATE == 5 || KVPATCH_ABLATE == 6 || KVPATCH_ABLATE == 8) && j >= 6))
                Op::mma(out_acc[0][j], prob_frag[0], value[j][0], value[j][1]);
          } else {
            // Half the n-tiles at a time: the 64 accumulators leave little room.
  #pragma unroll
            for (int half = 0; half < 2; ++half) {
              uint32_t value[4][2];
              Tile::load_value_half(stage, frag_offsets, k_step, half, value);
  #pragma unroll
              for (int m = 0; m < kMTiles; ++m)
  #pragma unroll
                for (int j = 0; j < 4; ++j) Op::mma(out_acc[m][4 * half + j], prob_frag[m], value[j][0], value[j][1]);
            }
          }
        }
      }
      mbarrier_arrive(sm.probs_empty(buffer));
      mbarrier_arrive(sm.kv_empty(stage_index));
      if (tau + kStages < static_cast<unsigned>(total_tiles)) {
        mbarrier_wait(sm.kv_empty(stage_index), (tau / kStages) & 1);  // the score warps' QK read it too
        issue_tile(tau + kStages);
      }
    }
    if (k + 1 == work.count) grid_dependents_launch();  // the merge grid may start launching
    if (k == 0) KVPATCH_MARK(0, 10);  // piece 0: its last PV is done
    store_piece(p, sm, piece, k, head0, rows_here, partial_out, partial_lse, out_acc);
    if (k == 0) KVPATCH_MARK(0, 11);  // piece 0: its output is stored
  }
}

template <KvDtype kDtype, int kStages, int kMTiles>
__global__ void __launch_bounds__(kBlockThreads, 1)
    mla_decode_kernel(const DecodeParams p, float* partial_out, float* partial_lse, const int4* work_table) {
  KVPATCH_MARK(0, 0);  // entry
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1200
  // Wide blocks need SM90's shared memory per block; SM120 runs narrow ones (the launcher never
  // starts this instance there), so its SM120 build is left empty.
  if constexpr (kMTiles == 2) {
    __trap();
    return;
  }
#endif
  extern __shared__ __align__(128) uint8_t smem[];
  using Smem = BlockSmem<kDtype, kStages, kMTiles>;
  constexpr int kRows = Smem::kRows;
  const Smem sm(smem);
  // This grid's programmatic primary, when it has one, is mla_schedule_kernel (a length-aware plan's
  // table) or the caller's kernel (LaunchOptions::programmatic: it may write the query or the KV):
  // wait for it before any read of an input or any write (a no-op in any other launch).
  grid_dependency_wait();
  const BlockPieces work = work_table != nullptr ? table_pieces(work_table) : uniform_pieces(p);
  KVPATCH_MARK(0, 6);  // the block knows its pieces
  if (work.count == 0) return;
  const int head0 = blockIdx.x * kRows;
  const int rows_here = min(kRows, p.num_heads - head0);
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbarrier_init(sm.kv_full(s), kThreads + kTileTokens);
      mbarrier_init(sm.kv_empty(s), kBlockThreads);
    }
    for (int i = 0; i < Smem::kProbBuffers; ++i) {
      mbarrier_init(sm.probs_full(i), kThreads);
      mbarrier_init(sm.probs_empty(i), kThreads);
    }
    for (int i = 0; i < kPieceStatSlots; ++i) {
      mbarrier_init(sm.stats_full(i), kThreads);
      mbarrier_init(sm.stats_empty(i), kThreads);
    }
  }
  __syncthreads();  // the barriers are initialized

  // Narrow blocks' score warps hold two k-slices of query: registers move to them from the value
  // warps (mla_decode_config.h).
  constexpr bool kMoveRegisters = slices_per_score_warp(kMTiles) == 2;
  if (threadIdx.x < kThreads) {
    KVPATCH_MARK(0, 13);  // the barriers are initialized
    if constexpr (kMoveRegisters) registers_increase<score_registers(kDtype)>();
    KVPATCH_MARK(0, 14);  // score warps: registers moved
    score_warps(p, sm, work, head0, rows_here);
    return;
  }
  if constexpr (kMoveRegisters) registers_decrease<value_registers(kDtype)>();
  KVPATCH_MARK(0, 17);  // value warps: registers moved
  value_warps(p, sm, work, head0, rows_here, partial_out, partial_lse);
  KVPATCH_MARK(0, 5);  // outputs stored
}

}  // namespace kvpatch::mla::device
