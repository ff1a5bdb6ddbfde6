// MLA paged decode, one template for FP8 E4M3 and BF16 KV (kv_tile.cuh holds the only difference).
//
// A block owns one (head group of <= 32 heads, KV split, request) and reads each KV byte of its
// split once. Per 32-token tile, after cp.async lands it in a stage:
//   QK:      warp (k-slice q = w % 4, token half = w / 4) multiplies its register-resident query
//            slice with 16 tokens' keys; FP32 partial scores go to shared memory.
//   softmax: warp w owns rows [w * R, w * R + R) (R = rows / 8); it sums the 4 partials in fixed
//            order, updates the running max / sum and writes BF16 probabilities.
//   PV:      warp w owns latent dims [64w, 64w + 64) of the output for every row.
// Scales are FP32 outside the mma: score = (ckv_scale * latent + kpe_scale * rope) * sm_scale.
// With num_splits > 1 it writes FP32 partial outputs and base-2 LSEs for mla_merge_kernel.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "device_primitives.cuh"
#include "kv_tile.cuh"
#include "kvpatch/mla_decode.h"
#include "kvpatch/numeric.h"
#include "mla_decode_config.h"

namespace kvpatch::mla::device {

using namespace kvpatch::mla::tiling;

// The block's share of request b: a 32-aligned token range of its split.
struct SplitRange {
  int begin = 0, end = 0;
  __device__ int tiles() const { return (end - begin + kTileTokens - 1) / kTileTokens; }
};

__device__ inline SplitRange split_range(int len, int split, int num_splits) {
  const int per_split = (len + num_splits - 1) / num_splits;
  const int chunk = (per_split + kTileTokens - 1) / kTileTokens * kTileTokens;
  SplitRange range;
  range.begin = min(len, split * chunk);
  range.end = min(len, range.begin + chunk);
  return range;
}

__device__ inline uint32_t load_bf16_pair(const uint16_t* base, int64_t index) {
  return static_cast<uint32_t>(base[index]) | (static_cast<uint32_t>(base[index + 1]) << 16);
}

// FP8 with 16 rows fits 128 registers, so two blocks share an SM on SM90 (SM120's shared memory
// holds one either way); the others need more registers and run one block per SM.
template <KvDtype kDtype, int kMTiles>
inline constexpr int kMinBlocksPerSm = (kDtype == KvDtype::kFp8E4M3 && kMTiles == 1) ? 2 : 1;

template <KvDtype kDtype, int kMTiles>
__global__ void __launch_bounds__(kThreads, (kMinBlocksPerSm<kDtype, kMTiles>))
    mla_decode_kernel(const DecodeParams p, const int num_splits, float* partial_out, float* partial_lse) {
  using Tile = KvTile<kDtype>;
  constexpr int kRows = kMTiles * kRowsPerMTile;
  constexpr int kStages = pipeline_stages(kDtype);
  constexpr int kStageBytes = stage_bytes(kDtype);
  constexpr int kPageRing = page_ring_tiles(kDtype);
  constexpr SmemLayout kLayout = smem_layout(kDtype, kMTiles);
  constexpr int kRowsPerWarp = kRows / kWarps;            // softmax rows per warp
  constexpr int kLanesPerRow = 32 / kRowsPerWarp;          // softmax lanes sharing a row
  constexpr int kTokensPerLane = kTileTokens / kLanesPerRow;
  constexpr int kLoadsPerThread = (Tile::kRowChunks * kTileTokens + kThreads - 1) / kThreads;
  static_assert(kThreads % kTileTokens == 0 && kLanesPerRow * kTokensPerLane == kTileTokens);

  extern __shared__ __align__(128) uint8_t smem[];
  uint8_t* kv_stages = smem + kLayout.kv_offset;
  float* scores = reinterpret_cast<float*>(smem + kLayout.score_offset);
  uint16_t* probs = reinterpret_cast<uint16_t*>(smem + kLayout.prob_offset);
  float* row_alpha = reinterpret_cast<float*>(smem + kLayout.row_stat_offset);
  float* row_sum = row_alpha + kRows;
  float* row_max = row_sum + kRows;
  int32_t* page_ring = reinterpret_cast<int32_t*>(smem + kLayout.page_offset);

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, c = lane % 4;
  const int group = blockIdx.x, split = blockIdx.y, b = blockIdx.z;
  const int rows_per_group = (p.num_heads + gridDim.x - 1) / gridDim.x;
  const int head0 = group * rows_per_group;
  const int rows_here = min(rows_per_group, p.num_heads - head0);
  const SplitRange range = split_range(p.kv_len[b], split, num_splits);
  const int num_tiles = range.tiles();

  // ---- KV loader: 8 threads per token row, chunks sub, sub + 8, ... Page ids come from a ring in
  // shared memory that warp 0 fills 2 * kStages - 2 tiles ahead (in the cp.async group of an
  // earlier KV tile), so no iteration waits on a global load. ----
  const int load_row = threadIdx.x / 8, load_sub = threadIdx.x % 8;
  const int32_t* pages = p.kv_indices + p.kv_indptr[b];
  const uint8_t* ckv_bytes = static_cast<const uint8_t*>(p.ckv);
  const uint8_t* kpe_bytes = static_cast<const uint8_t*>(p.kpe);
  const int64_t ckv_stride = p.ckv_stride_slot * kv_elem_bytes(kDtype);
  const int64_t kpe_stride = p.kpe_stride_slot * kv_elem_bytes(kDtype);
  // Pages of 1 (SGLang), 16, 64: shifts instead of an integer division per tile.
  const int page_shift = (p.page_size & (p.page_size - 1)) == 0 ? __ffs(p.page_size) - 1 : -1;
  auto page_of = [&](int token) { return page_shift >= 0 ? token >> page_shift : token / p.page_size; };
  auto in_page = [&](int token) { return page_shift >= 0 ? token & (p.page_size - 1) : token % p.page_size; };
  auto issue_page_ids = [&](int tile) {
    if (warp != 0 || tile >= num_tiles) return;
    const int token = range.begin + tile * kTileTokens + lane;
    const bool valid = token < range.end;
    cp_async_4(shared_address(page_ring + (tile % kPageRing) * kTileTokens + lane), valid ? pages + page_of(token) : pages,
               valid);
  };
  auto issue_tile = [&](int tile) {
    if (tile >= num_tiles) return;
    const int token = range.begin + tile * kTileTokens + load_row;
    const bool valid = token < range.end;
    const int64_t slot =
        valid ? static_cast<int64_t>(page_ring[(tile % kPageRing) * kTileTokens + load_row]) * p.page_size + in_page(token) : 0;
    uint8_t* stage = kv_stages + (tile % kStages) * kStageBytes;
#pragma unroll
    for (int i = 0; i < kLoadsPerThread; ++i) {
      const int chunk = load_sub + 8 * i;
      if (chunk < Tile::kRowChunks) {
        const uint8_t* src = chunk < Tile::kCkvChunks ? ckv_bytes + slot * ckv_stride + 16 * chunk
                                                      : kpe_bytes + slot * kpe_stride + 16 * (chunk - Tile::kCkvChunks);
        cp_async_16(shared_address(Tile::chunk_pointer(stage, load_row, chunk)), src, valid);
      }
    }
  };
  for (int tile = 0; tile < kStages - 1; ++tile) issue_page_ids(tile);
  cp_async_commit();

  // ---- query fragments for this warp's k-slice, in the key fragment map of kv_tile.cuh ----
  const int k_slice = warp % kKSlices, token_half = warp / kKSlices;
  uint32_t q_frag[kMTiles][kKeySteps][4];
  {
    const uint16_t* q_nope = static_cast<const uint16_t*>(p.q_nope);
    const uint16_t* q_pe = static_cast<const uint16_t*>(p.q_pe);
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = mt * kRowsPerMTile + g + 8 * half;
        const bool live = row < rows_here;
        const int64_t nope_base = b * p.q_nope_stride_b + (head0 + row) * p.q_nope_stride_h;
        const int64_t pe_base = b * p.q_pe_stride_b + (head0 + row) * p.q_pe_stride_h;
#pragma unroll
        for (int s = 0; s < kKeySteps; ++s) {
          uint32_t lo = 0, hi = 0;
          if (live) {
            if (s < 8) {
              const int dim = 128 * k_slice + 64 * (s / 4) + 16 * c + 4 * (s % 4);
              lo = load_bf16_pair(q_nope, nope_base + dim);
              hi = load_bf16_pair(q_nope, nope_base + dim + 2);
            } else {
              const int dim = 16 * k_slice + 4 * c;
              lo = load_bf16_pair(q_pe, pe_base + dim);
              hi = load_bf16_pair(q_pe, pe_base + dim + 2);
            }
          }
          q_frag[mt][s][half] = lo;      // a0 / a1: k-slots 2c, 2c + 1
          q_frag[mt][s][2 + half] = hi;  // a2 / a3: k-slots 2c + 8, 2c + 9
        }
      }
    }
  }

  // The first tiles' page ids were loaded while the query came in; now fill the pipeline.
  cp_async_wait<0>();
  __syncthreads();
  for (int tile = 0; tile < kStages - 1; ++tile) {
    issue_tile(tile);
    issue_page_ids(tile + kStages - 1);
    cp_async_commit();
  }

  // ---- running state ----
  float out_acc[kMTiles][kValueTiles][4];
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int j = 0; j < kValueTiles; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) out_acc[mt][j][e] = 0.f;
  const int softmax_row = warp * kRowsPerWarp + lane / kLanesPerRow;
  const int softmax_token0 = (lane % kLanesPerRow) * kTokensPerLane;
  float running_max = -INFINITY, running_sum = 0.f;
  const float score_scale = p.sm_scale * 1.4426950408889634f;  // base-2 domain

  for (int tile = 0; tile < num_tiles; ++tile) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // stage `tile` landed; everyone is done with tile - 1 and its stage
    issue_tile(tile + kStages - 1);
    issue_page_ids(tile + 2 * kStages - 2);
    cp_async_commit();
    const uint8_t* stage = kv_stages + (tile % kStages) * kStageBytes;

    // QK: partial scores over this warp's k-slice for its 16 tokens (with two blocks per SM, one
    // token group's fragments at a time, to stay within 128 registers).
#pragma unroll(kMinBlocksPerSm<kDtype, kMTiles> == 2 ? 1 : 2)
    for (int nt = 0; nt < 2; ++nt) {
      const int token_row = 16 * token_half + 8 * nt + g;
      uint32_t key[kKeySteps][2];
      Tile::load_key(stage, token_row, k_slice, c, key);
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt) {
        // Two independent accumulation chains over the latent k-steps halve the mma latency chain.
        float near[4] = {0.f, 0.f, 0.f, 0.f}, far[4] = {0.f, 0.f, 0.f, 0.f}, rope[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
        for (int s = 0; s < 4; ++s) {
          mma_bf16_m16n8k16(near, q_frag[mt][s], key[s][0], key[s][1]);
          mma_bf16_m16n8k16(far, q_frag[mt][4 + s], key[4 + s][0], key[4 + s][1]);
        }
        mma_bf16_m16n8k16(rope, q_frag[mt][8], key[8][0], key[8][1]);
        const int col = 16 * token_half + 8 * nt + 2 * c;
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int row = mt * kRowsPerMTile + g + 8 * half;
          float2 partial;
          partial.x = p.ckv_scale * (near[2 * half] + far[2 * half]) + p.kpe_scale * rope[2 * half];
          partial.y = p.ckv_scale * (near[2 * half + 1] + far[2 * half + 1]) + p.kpe_scale * rope[2 * half + 1];
          *reinterpret_cast<float2*>(scores + (k_slice * kRows + row) * kScoreStride + col) = partial;
        }
      }
    }
    __syncthreads();

    // Online softmax for this warp's rows (base 2; NaN scores pass through exp2 into the sum).
    {
      float s[kTokensPerLane];
#pragma unroll
      for (int t = 0; t < kTokensPerLane; ++t) s[t] = 0.f;
#pragma unroll
      for (int q = 0; q < kKSlices; ++q) {
        const float* src = scores + (q * kRows + softmax_row) * kScoreStride + softmax_token0;
#pragma unroll
        for (int t = 0; t < kTokensPerLane; ++t) s[t] += src[t];
      }
      const int token_base = range.begin + tile * kTileTokens + softmax_token0;
      float tile_max = -INFINITY;
#pragma unroll
      for (int t = 0; t < kTokensPerLane; ++t) {
        s[t] = token_base + t < range.end ? s[t] * score_scale : -INFINITY;
        tile_max = fmaxf(tile_max, s[t]);
      }
#pragma unroll
      for (int offset = kLanesPerRow / 2; offset > 0; offset /= 2)
        tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, offset));
      const float new_max = fmaxf(running_max, tile_max);
      const float base = new_max == -INFINITY ? 0.f : new_max;
      const float alpha = exp2f(running_max - base);
      float tile_sum = 0.f;
      uint16_t prob_bits[kTokensPerLane];
#pragma unroll
      for (int t = 0; t < kTokensPerLane; ++t) {
        const float prob = exp2f(s[t] - base);
        tile_sum += prob;
        prob_bits[t] = float_to_bf16_bits(prob);
      }
      running_sum = running_sum * alpha + tile_sum;
      running_max = new_max;
      uint16_t* dst = probs + softmax_row * kProbStride + softmax_token0;
#pragma unroll
      for (int t = 0; t < kTokensPerLane; t += 2)
        *reinterpret_cast<uint32_t*>(dst + t) = prob_bits[t] | (static_cast<uint32_t>(prob_bits[t + 1]) << 16);
      if (lane % kLanesPerRow == 0) row_alpha[softmax_row] = alpha;
    }
    __syncthreads();

    // PV: rescale, then accumulate this tile's probabilities times the values of this warp's dims.
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
      const float alpha_lo = row_alpha[mt * kRowsPerMTile + g], alpha_hi = row_alpha[mt * kRowsPerMTile + g + 8];
#pragma unroll
      for (int j = 0; j < kValueTiles; ++j) {
        out_acc[mt][j][0] *= alpha_lo, out_acc[mt][j][1] *= alpha_lo;
        out_acc[mt][j][2] *= alpha_hi, out_acc[mt][j][3] *= alpha_hi;
      }
    }
#pragma unroll
    for (int k_step = 0; k_step < kTileTokens / 16; ++k_step) {
      uint32_t value[kValueTiles][2];
      Tile::load_value(stage, k_step, warp, g, c, value);
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt) {
        uint32_t prob_frag[4];
        const int row = mt * kRowsPerMTile + (lane & 15);
        ldmatrix_x4(prob_frag, shared_address(probs + row * kProbStride + 16 * k_step + (lane >> 4) * 8));
#pragma unroll
        for (int j = 0; j < kValueTiles; ++j) mma_bf16_m16n8k16(out_acc[mt][j], prob_frag, value[j][0], value[j][1]);
      }
    }
  }
  cp_async_wait<0>();

  // ---- epilogue: final sums, then normalized output (or FP32 partials for the merge) ----
#pragma unroll
  for (int offset = kLanesPerRow / 2; offset > 0; offset /= 2)
    running_sum += __shfl_xor_sync(0xffffffffu, running_sum, offset);
  if (lane % kLanesPerRow == 0) {
    row_sum[softmax_row] = running_sum;
    row_max[softmax_row] = running_max;
  }
  __syncthreads();

#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int row = mt * kRowsPerMTile + g + 8 * half;
      if (row >= rows_here) continue;
      const int head = head0 + row;
      const float sum = row_sum[row];
      const float inv_sum = sum == 0.f ? 0.f : 1.f / sum;
      const float lse = row_max[row] + log2f(sum);  // -inf for an empty range, NaN stays NaN
      float v[16];
#pragma unroll
      for (int j = 0; j < kValueTiles; ++j) {
        v[j] = out_acc[mt][j][2 * half] * inv_sum * p.ckv_scale;          // dim 64w + 16c + j
        v[8 + j] = out_acc[mt][j][2 * half + 1] * inv_sum * p.ckv_scale;  // dim 64w + 16c + 8 + j
      }
      const int dim0 = 64 * warp + 16 * c;
      if (num_splits == 1) {
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
        const int64_t part = (static_cast<int64_t>(b) * p.num_heads + head) * num_splits + split;
        float4* dst = reinterpret_cast<float4*>(partial_out + part * kHeadDimCkv + dim0);
#pragma unroll
        for (int k = 0; k < 4; ++k) dst[k] = make_float4(v[4 * k], v[4 * k + 1], v[4 * k + 2], v[4 * k + 3]);
        if (warp == 0 && c == 0) partial_lse[part] = lse;
      }
    }
  }
}

}  // namespace kvpatch::mla::device
