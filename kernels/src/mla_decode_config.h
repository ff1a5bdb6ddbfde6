// Tiling of the MLA decode kernel: plain C++ constants, shared by the kernel, its launcher and the
// resource test (which must know the dynamic shared memory a launch requests).
#pragma once

#include <cstddef>

#include "kvpatch/mla_decode.h"

#if defined(__CUDACC__)
#define KVPATCH_TILING_FN constexpr __host__ __device__
#else
#define KVPATCH_TILING_FN constexpr
#endif

namespace kvpatch::mla::tiling {

// A block is two warp groups of kThreads each: warps 0-7 compute scores and the softmax, warps 8-15
// copy the KV and compute PV; mbarriers in shared memory hand tiles and probabilities between them.
inline constexpr int kWarps = 8;             // per group
inline constexpr int kThreads = kWarps * 32;  // per group
inline constexpr int kBlockThreads = 2 * kThreads;
inline constexpr int kTileTokens = 64;       // tokens per pipeline stage and per online-softmax step
// Head rows per block: one mma m16 tile ("narrow" blocks), or two ("wide", SM90 only: H > 16) so
// that every KV byte is converted once for 32 heads instead of once per 16. More heads: groups.
inline constexpr int kMTileRows = 16;
KVPATCH_TILING_FN int block_rows(int m_tiles) { return kMTileRows * m_tiles; }
inline constexpr int kMaxRows = block_rows(2);
inline constexpr int kKSlices = 4;           // QK splits the 576 dims into 4 k-slices (128 latent + 16 rope)
// A score warp covers slices_per_score_warp k-slices of score_warp_tokens tokens: a wide block's
// warps one k-slice of 32 tokens (4 n8 tiles), a narrow block's warps two k-slices of 16 tokens
// (2 n8 tiles). Then the softmax sums 2 partial scores instead of 4, QK stores half as many and
// adds the latent and rope parts for half as many scores (H200, B=32 H=16 FP8: 32K 177.1 us, 16K
// 94.1, B=64 8K 95.3 against 189.3 / 101.7 / 102.6 with one k-slice per warp, in one process).
KVPATCH_TILING_FN int slices_per_score_warp(int m_tiles) { return m_tiles == 1 ? 2 : 1; }
KVPATCH_TILING_FN int score_partials(int m_tiles) { return kKSlices / slices_per_score_warp(m_tiles); }
KVPATCH_TILING_FN int score_warp_tokens(int m_tiles) { return kTileTokens * score_partials(m_tiles) / kWarps; }
// Two k-slices of query are 72 registers: a narrow block moves registers from the value warps to
// the score warps (setmaxnreg; SM90 and SM120 both have it), so that the 512 threads still share
// 65,536. FP8: 160 for the score warps, 96 for the value warps (same session: 136 gave no gain, 152
// half of it, 168 starved the value warps: 1.5-3x slower). BF16's value warps need more (1,152-byte
// rows, 16-byte value reads): 136 / 120, the most without spills on sm_90a and sm_120a.
KVPATCH_TILING_FN int score_registers(KvDtype dtype) { return dtype == KvDtype::kFp8E4M3 ? 160 : 136; }
KVPATCH_TILING_FN int value_registers(KvDtype dtype) { return 2 * 128 - score_registers(dtype); }
// Softmax: the score threads share the rows out, 16 threads per row of a narrow block (4 tokens
// each), 8 per row of a wide one (8 tokens each).
KVPATCH_TILING_FN int softmax_lanes_per_row(int m_tiles) { return kThreads / block_rows(m_tiles); }
KVPATCH_TILING_FN int softmax_tokens(int m_tiles) { return kTileTokens / softmax_lanes_per_row(m_tiles); }
inline constexpr int kScoreStride = kTileTokens + 8;  // floats per score row: row r + 1 starts 32 B on
inline constexpr int kProbStride = kTileTokens + 8;   // 16-bit values per probability row: 16 B on
// A wide block keeps its second m-tile's query in shared memory as mma operands in k-step order
// (ldmatrix rows, 16 B apart in the banks).
inline constexpr int kQueryRowElems = kHeadDimCkv + kHeadDimKpe;
inline constexpr int kQueryStageStride = kQueryRowElems + 8;  // 16-bit values per row
inline constexpr int kRowBytesFp8 = kHeadDimCkv + kHeadDimKpe;
inline constexpr int kSmemLimitSm120 = 101376;  // opt-in shared memory per block on SM120
inline constexpr int kMaxSplits = 256;                 // KV splits per request (flash-decoding)
// Length-aware plans (mla_schedule.cuh): the schedule kernel gives each request a thread and keeps
// its length in shared memory, so they take up to 256 requests (larger batches fill the GPU anyway).
inline constexpr int kMaxLengthAwareBatch = 256;
inline constexpr int kScheduleThreads = 256;  // mla_schedule_kernel: one thread per request
// Merge pass: a block of kMergeThreads per (head, request, dim slice); the launcher picks 1-16
// slices of 512 / slices dims. A slice's dims take 4 per lane; the lanes left over sum other
// splits side by side (groups), added in a fixed order at the end.
inline constexpr int kMergeThreads = 128;
inline constexpr int kMergeMaxSlices = 16;  // 32 dims: 8 lanes x 16 groups of splits
inline constexpr int kMergeRegisterSplits = 16;  // one slice and up to 16 splits: summed in registers
// Split partials keep each 64-dim block in the decode kernel's store order: position 16 k + 4 c + i
// holds dim 16 c + 4 k + i, where c is the storing lane's place in its quad (lanes of one row) and
// k its k-th float4. One store instruction then writes 64 contiguous bytes of each row, whole
// 32-byte sectors, instead of 16 bytes 64 apart. The merge maps positions back to dims; the map
// swaps two 2-bit fields, so it is its own inverse.
KVPATCH_TILING_FN int partial_position(int dim) { return (dim & ~63) | ((dim & 12) << 2) | ((dim >> 2) & 12) | (dim & 3); }
inline constexpr int kCastThreads = 256;               // cast kernels: no shared memory
// One 16-warp block per SM (128 registers per thread fill the register file).
inline constexpr int kBlocksPerSm = 1;

// A request's 64-token tiles, and the splits it needs when no split may exceed `cap` tiles (an empty
// request still gets one block, which writes its zeros and LSE -inf).
KVPATCH_TILING_FN int request_tiles(int len) { return len <= 0 ? 0 : (len + kTileTokens - 1) / kTileTokens; }
KVPATCH_TILING_FN int capped_splits(int tiles, int cap) { return tiles <= cap ? 1 : (tiles + cap - 1) / cap; }
// What a block pays, in tile-times, to go from one piece of KV to the next request's (its query
// staged, the first piece's output stored). H200, v12 (timeline.cu, B=32 H=16 32K): the value warps
// wait 2.6 us and the score warps 3.8 us for the next query, against ~1.3 us per tile; and in one
// process one piece per block (125 + 3 > 128 tiles) took 175.2 us against 177.1 with even shares.
// (v11's tiles took ~1.4 us: 2 tiles then.) A length-aware schedule shares tiles evenly only when
// that beats one piece per block by more than these switches cost.
inline constexpr int kPieceSwitchTiles = 3;

KVPATCH_TILING_FN int kv_elem_bytes(KvDtype dtype) { return dtype == KvDtype::kFp8E4M3 ? 1 : 2; }
KVPATCH_TILING_FN int kv_row_bytes(KvDtype dtype) { return kRowBytesFp8 * kv_elem_bytes(dtype); }
// One 64-token stage is 36,864 B of FP8 or 73,728 B of BF16. The launcher takes the deepest
// pipeline that fits the device's shared memory per block: SM90 (227 KB) 4 FP8 / 2 BF16 stages in
// narrow blocks, 3 / 2 in wide ones (their score and probability buffers are twice the size);
// SM120 (99 KB) 2 / 1, narrow blocks only.
KVPATCH_TILING_FN int max_stages(KvDtype dtype, int m_tiles = 1) {
  return dtype == KvDtype::kFp8E4M3 ? (m_tiles == 1 ? 4 : 3) : 2;
}
KVPATCH_TILING_FN int min_stages(KvDtype dtype) { return dtype == KvDtype::kFp8E4M3 ? 2 : 1; }
KVPATCH_TILING_FN int stage_bytes(KvDtype dtype) { return kTileTokens * kv_row_bytes(dtype); }
// Tile t's page ids arrive with KV tile t - stages (a dependent global load per tile would stall
// the loader); the ring holds them until their KV is issued.
KVPATCH_TILING_FN int page_ring_tiles(int stages) { return 2 * stages; }
// Probabilities of later tiles are written while PV reads tile t's; partial scores of tile t + 1
// while the softmax reads tile t's (two score buffers save the score warps a barrier per tile).
// With the deepest pipeline (SM90) there is room for 4 and 2 (FP8, B=32 H=16 32K: 189.7 us against
// 195.1 with 2 and 1, in one process); SM120's 99 KB holds 2 and 1 next to two FP8 stages. A wide
// BF16 block's two stages leave room for one score buffer.
KVPATCH_TILING_FN bool deep_pipeline(KvDtype dtype, int stages, int m_tiles) { return stages == max_stages(dtype, m_tiles); }
KVPATCH_TILING_FN int prob_buffers(KvDtype dtype, int stages, int m_tiles = 1) {
  return deep_pipeline(dtype, stages, m_tiles) ? 4 : 2;
}
KVPATCH_TILING_FN int score_buffers(KvDtype dtype, int stages, int m_tiles = 1) {
  return deep_pipeline(dtype, stages, m_tiles) && (m_tiles == 1 || dtype == KvDtype::kFp8E4M3) ? 2 : 1;
}

// Per-row FP32 statistics after the probability buffers: a rescale factor per probability buffer,
// a piece's final (sum, max) in two slots (pieces alternate), the per-k-slice query row maxima.
KVPATCH_TILING_FN int row_stat_floats(int prob_buffer_count) { return prob_buffer_count + 2 * 2 + kKSlices; }
inline constexpr int kPieceStatSlots = 2;

struct SmemLayout {
  size_t kv_offset = 0;        // [stages][kTileTokens][row bytes], 16-byte chunks swizzled per row
  size_t score_offset = 0;     // [score buffers][kKSlices][rows][kScoreStride] FP32 partial scores
                               // (narrow blocks fill score_partials = 2 of the kKSlices; the first
                               // buffer also stages a piece's query, which needs all of it)
  size_t prob_offset = 0;      // [prob buffers][rows][kProbStride] 16-bit probabilities
  size_t row_stat_offset = 0;  // [row_stat_floats(prob buffers)][rows] FP32
  size_t query_offset = 0;     // wide blocks: [16][kQueryStageStride] second m-tile's query operands
  size_t page_offset = 0;      // [page ring tiles][kTileTokens] int32 page ids, then as many in-page
                               // offsets (-1: no token)
  size_t barrier_offset = 0;   // mbarriers: KV full, KV empty [stages]; probs full, probs empty [prob
                               // buffers]; piece stats full, empty [kPieceStatSlots]
  size_t total = 0;
};

KVPATCH_TILING_FN SmemLayout smem_layout(KvDtype dtype, int stages, int m_tiles = 1) {
  const int rows = block_rows(m_tiles);
  SmemLayout layout;
  layout.kv_offset = 0;
  layout.score_offset = layout.kv_offset + static_cast<size_t>(stages) * stage_bytes(dtype);
  layout.prob_offset =
      layout.score_offset + score_buffers(dtype, stages, m_tiles) * kKSlices * rows * kScoreStride * sizeof(float);
  layout.row_stat_offset = layout.prob_offset + prob_buffers(dtype, stages, m_tiles) * rows * kProbStride * 2;
  layout.query_offset = layout.row_stat_offset + row_stat_floats(prob_buffers(dtype, stages, m_tiles)) * rows * sizeof(float);
  layout.page_offset = layout.query_offset + (m_tiles == 2 ? kMTileRows * kQueryStageStride * 2 : 0);
  layout.barrier_offset =
      layout.page_offset + 2 * static_cast<size_t>(page_ring_tiles(stages)) * kTileTokens * sizeof(int32_t);
  layout.total = layout.barrier_offset +
                 static_cast<size_t>(2 * stages + 2 * prob_buffers(dtype, stages, m_tiles) + 2 * kPieceStatSlots) *
                     sizeof(uint64_t);
  return layout;
}

// The stage count a device with `smem_per_block` bytes of opt-in shared memory runs (narrow blocks).
KVPATCH_TILING_FN int stages_for(KvDtype dtype, size_t smem_per_block) {
  return smem_layout(dtype, max_stages(dtype)).total <= smem_per_block ? max_stages(dtype) : min_stages(dtype);
}
// Whether wide blocks (both KV dtypes at their depth) fit `smem_per_block`: the plan and the launch
// must agree on the head rows per block, whatever the dtype.
KVPATCH_TILING_FN bool wide_blocks_fit(size_t smem_per_block) {
  return smem_layout(KvDtype::kFp8E4M3, max_stages(KvDtype::kFp8E4M3, 2), 2).total <= smem_per_block &&
         smem_layout(KvDtype::kBf16, max_stages(KvDtype::kBf16, 2), 2).total <= smem_per_block;
}

static_assert(smem_layout(KvDtype::kFp8E4M3, 2).total <= kSmemLimitSm120);
static_assert(smem_layout(KvDtype::kBf16, 1).total <= kSmemLimitSm120);
static_assert(smem_layout(KvDtype::kFp8E4M3, 4).total <= 227 * 1024);
static_assert(smem_layout(KvDtype::kBf16, 2).total <= 227 * 1024);
static_assert(wide_blocks_fit(227 * 1024) && !wide_blocks_fit(kSmemLimitSm120));
static_assert(score_warp_tokens(1) % 8 == 0 && score_warp_tokens(2) == 32);
static_assert(score_registers(KvDtype::kFp8E4M3) % 8 == 0 && score_registers(KvDtype::kBf16) % 8 == 0);
static_assert(softmax_lanes_per_row(1) * softmax_tokens(1) == kTileTokens && softmax_tokens(1) % 4 == 0);
static_assert(softmax_lanes_per_row(2) * softmax_tokens(2) == kTileTokens && softmax_tokens(2) == 8);

}  // namespace kvpatch::mla::tiling
