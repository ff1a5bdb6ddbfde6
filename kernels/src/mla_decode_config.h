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
inline constexpr int kTileTokens = 32;       // tokens per pipeline stage and per softmax step
inline constexpr int kRowsPerMTile = 16;     // head rows per mma m16 tile
inline constexpr int kMaxMTiles = 2;         // head rows per block: 32 (more heads: head groups)
inline constexpr int kKSlices = 4;           // QK splits the 576 dims over 4 warps (128 latent + 16 rope)
inline constexpr int kTokenHalves = 2;       // ... and the tile's 32 tokens over 2 warps
inline constexpr int kScoreStride = kTileTokens + 8;  // floats per score row; padding spreads banks
inline constexpr int kProbStride = kTileTokens + 8;   // BF16 per probability row; same reason
inline constexpr int kRowBytesFp8 = kHeadDimCkv + kHeadDimKpe;
inline constexpr int kSmemLimitSm120 = 101376;  // opt-in shared memory per block on SM120
inline constexpr int kMaxSplits = 256;                 // KV splits per request (flash-decoding)
inline constexpr int kMergeThreads = 128;              // merge pass: 4 warps over the splits ...
inline constexpr int kMergeDimsPerBlock = 128;         // ... of one 128-dim quarter, 4 dims per lane
inline constexpr int kCastThreads = 256;               // cast kernels: no shared memory

KVPATCH_TILING_FN int kv_elem_bytes(KvDtype dtype) { return dtype == KvDtype::kFp8E4M3 ? 1 : 2; }
KVPATCH_TILING_FN int kv_row_bytes(KvDtype dtype) { return kRowBytesFp8 * kv_elem_bytes(dtype); }
// Deep enough to keep ~55 KB (FP8) / ~37 KB (BF16) of KV in flight per block under the SM120 limit.
KVPATCH_TILING_FN int pipeline_stages(KvDtype dtype) { return dtype == KvDtype::kFp8E4M3 ? 4 : 2; }
KVPATCH_TILING_FN int stage_bytes(KvDtype dtype) { return kTileTokens * kv_row_bytes(dtype); }
// Page ids are fetched 2 * stages - 2 tiles ahead of their KV loads (a dependent global load per
// tile would otherwise stall the pipeline); the ring holds them until then.
KVPATCH_TILING_FN int page_ring_tiles(KvDtype dtype) { return 2 * pipeline_stages(dtype); }

struct SmemLayout {
  size_t kv_offset = 0;        // [stages][kTileTokens][row bytes], 16-byte chunks swizzled per row
  size_t score_offset = 0;     // [kKSlices][rows][kScoreStride] FP32 partial scores
  size_t prob_offset = 0;      // [rows][kProbStride] BF16 probabilities
  size_t row_stat_offset = 0;  // [3][rows] FP32: rescale factor, final sum, final max
  size_t page_offset = 0;      // [page ring tiles][kTileTokens] int32 page ids
  size_t total = 0;
};

KVPATCH_TILING_FN SmemLayout smem_layout(KvDtype dtype, int m_tiles) {
  const size_t rows = static_cast<size_t>(m_tiles) * kRowsPerMTile;
  SmemLayout layout;
  layout.kv_offset = 0;
  layout.score_offset = layout.kv_offset + static_cast<size_t>(pipeline_stages(dtype)) * stage_bytes(dtype);
  layout.prob_offset = layout.score_offset + kKSlices * rows * kScoreStride * sizeof(float);
  layout.row_stat_offset = layout.prob_offset + rows * kProbStride * 2;
  layout.page_offset = layout.row_stat_offset + 3 * rows * sizeof(float);
  layout.total = layout.page_offset + static_cast<size_t>(page_ring_tiles(dtype)) * kTileTokens * sizeof(int32_t);
  return layout;
}

static_assert(smem_layout(KvDtype::kFp8E4M3, kMaxMTiles).total <= kSmemLimitSm120);
static_assert(smem_layout(KvDtype::kBf16, kMaxMTiles).total <= kSmemLimitSm120);

}  // namespace kvpatch::mla::tiling
