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

inline constexpr int kWarps = 8;
inline constexpr int kThreads = kWarps * 32;
inline constexpr int kTileTokens = 64;       // tokens per pipeline stage and per online-softmax step
inline constexpr int kRows = 16;             // head rows per block (one mma m16 tile); more heads: groups
inline constexpr int kKSlices = 4;           // QK splits the 576 dims over 4 warps (128 latent + 16 rope)
inline constexpr int kTokenHalves = 2;       // ... and the tile's 64 tokens over 2 warps (4 n8 tiles each)
inline constexpr int kSoftmaxLanesPerRow = kThreads / kRows;                  // 16 threads per head row
inline constexpr int kSoftmaxTokens = kTileTokens / kSoftmaxLanesPerRow;      // 4 tokens per thread
inline constexpr int kScoreStride = kTileTokens + 8;  // floats per score row: row r + 1 starts 32 B on
inline constexpr int kProbStride = kTileTokens + 8;   // 16-bit values per probability row: 16 B on
// The block's query rows (BF16, latent then rope) are staged once, before the first tile, in the
// score and probability buffers; rows 16 B apart in the banks.
inline constexpr int kQueryStageStride = kHeadDimCkv + kHeadDimKpe + 8;  // BF16 values per row
inline constexpr int kRowBytesFp8 = kHeadDimCkv + kHeadDimKpe;
inline constexpr int kSmemLimitSm120 = 101376;  // opt-in shared memory per block on SM120
inline constexpr int kMaxSplits = 256;                 // KV splits per request (flash-decoding)
inline constexpr int kMergeThreads = 256;              // merge pass, many splits: 32 groups of 8 lanes ...
inline constexpr int kMergeDimsPerBlock = 32;          // ... over the splits of one 32-dim slice
inline constexpr int kMergeLanes = kMergeDimsPerBlock / 4;     // lanes per split (one float4 each)
inline constexpr int kMergeGroups = kMergeThreads / kMergeLanes;  // splits summed side by side
inline constexpr int kMergeFewSplits = 16;             // up to this many splits: one thread per 4 dims
inline constexpr int kMergeFewThreads = kHeadDimCkv / 4;  // ... sums every split of its dims in registers
inline constexpr int kCastThreads = 256;               // cast kernels: no shared memory
// Both instantiations fit 128 registers, so two blocks share an SM90 multiprocessor (one block of
// a stage's load overlaps the other's arithmetic); SM120's 100 KB per SM holds one.
inline constexpr int kBlocksPerSm = 2;

KVPATCH_TILING_FN int kv_elem_bytes(KvDtype dtype) { return dtype == KvDtype::kFp8E4M3 ? 1 : 2; }
KVPATCH_TILING_FN int kv_row_bytes(KvDtype dtype) { return kRowBytesFp8 * kv_elem_bytes(dtype); }
// One 64-token stage is 36,864 B of FP8 or 73,728 B of BF16: under SM120's 101,376 B, FP8 double-
// buffers within a block and BF16 (the baseline) relies on the second resident block for overlap.
KVPATCH_TILING_FN int pipeline_stages(KvDtype dtype) { return dtype == KvDtype::kFp8E4M3 ? 2 : 1; }
KVPATCH_TILING_FN int stage_bytes(KvDtype dtype) { return kTileTokens * kv_row_bytes(dtype); }
// Tile t's page ids arrive with KV tile t - stages (a dependent global load per tile would stall
// the pipeline); the ring holds them until their KV is issued.
KVPATCH_TILING_FN int page_ring_tiles(KvDtype dtype) { return 2 * pipeline_stages(dtype); }

struct SmemLayout {
  size_t kv_offset = 0;        // [stages][kTileTokens][row bytes], 16-byte chunks swizzled per row
  size_t score_offset = 0;     // [kKSlices][kRows][kScoreStride] FP32 partial scores
  size_t prob_offset = 0;      // [kRows][kProbStride] 16-bit probabilities (mma operand type)
  size_t row_stat_offset = 0;  // [4][kRows] FP32: rescale factor, final sum, final max; first the
                               // per-k-slice query row maxima
  size_t page_offset = 0;      // [page ring tiles][kTileTokens] int32 page ids
  size_t total = 0;
};

KVPATCH_TILING_FN SmemLayout smem_layout(KvDtype dtype) {
  SmemLayout layout;
  layout.kv_offset = 0;
  layout.score_offset = layout.kv_offset + static_cast<size_t>(pipeline_stages(dtype)) * stage_bytes(dtype);
  layout.prob_offset = layout.score_offset + kKSlices * kRows * kScoreStride * sizeof(float);
  layout.row_stat_offset = layout.prob_offset + kRows * kProbStride * 2;
  layout.page_offset = layout.row_stat_offset + kKSlices * kRows * sizeof(float);
  layout.total = layout.page_offset + static_cast<size_t>(page_ring_tiles(dtype)) * kTileTokens * sizeof(int32_t);
  return layout;
}

static_assert(kRows * kQueryStageStride * 2 <= smem_layout(KvDtype::kFp8E4M3).row_stat_offset - smem_layout(KvDtype::kFp8E4M3).score_offset);
static_assert(kRows * kQueryStageStride * 2 <= smem_layout(KvDtype::kBf16).row_stat_offset - smem_layout(KvDtype::kBf16).score_offset);
static_assert(smem_layout(KvDtype::kFp8E4M3).total <= kSmemLimitSm120);
static_assert(smem_layout(KvDtype::kBf16).total <= kSmemLimitSm120);
static_assert(kSoftmaxLanesPerRow * kSoftmaxTokens == kTileTokens && kSoftmaxTokens % 4 == 0);

}  // namespace kvpatch::mla::tiling
