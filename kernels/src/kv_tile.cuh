// The KV-dtype-specific part of the decode kernel: where a token row's 16-byte chunks sit in a
// pipeline stage (swizzled so the two fragment access patterns below are bank-conflict free), and
// how a thread turns stage bytes into mma fragments: FP16 for FP8 bytes (one exact conversion per
// pair), BF16 as stored (mma_operand.cuh says why the two give the tensor cores the same values).
//
// Fragment maps (g = lane / 4, c = lane % 4, as in the PTX mma fragment layouts):
//  - Key (QK, B operand of m16n8k16, k = dims; a warp's tokens start at row r0, a multiple of 8,
//    and n-tile n's column g is row r0 + 8 n + g): k-slice q covers latent dims [128q, 128q + 128) in
//    8 k-steps and rope dims [16q, 16q + 16) in one. In k-step s the thread holds the dims
//    base(s) + {0, 1} (b0) and base(s) + {2, 3} (b1), base(s) = 128q + 64 (s / 4) + 16c + 4 (s % 4);
//    for the rope step, base = 16q + 4c. The query fragments use the same map.
//  - Value (PV, B operand, k = tokens): warp w owns latent dims [64w, 64w + 64); n-tile j's column
//    g is dim 64w + 8g + j. In token k-step i the thread holds tokens 16i + 2c + {0, 1} (b0) and
//    16i + 2c + {8, 9} (b1).
//
// Every row a thread reads for keys (r0 + 8 n + g) or values (16 i + 2c + {0, 1, 8, 9}) has the same
// swizzle as n-tile 0 / k-step 0, so its byte offsets are computed once per thread (FragmentOffsets)
// and each n-tile or k-step adds a compile-time constant: no address arithmetic per tile.
#pragma once

#include <cstdint>

#include "device_primitives.cuh"
#include "kvpatch/mla_decode.h"

namespace kvpatch::mla::device {

inline constexpr int kKeySteps = 9;     // 8 latent k-steps + 1 rope k-step per k-slice
inline constexpr int kValueTiles = 8;   // n8 tiles per warp in PV (64 dims)

// Per-thread byte offsets within a stage, for n-tile 0 (keys) and k-step 0 (values).
struct FragmentOffsets {
  int key_a = 0, key_b = 0, key_rope = 0;  // the two latent reads (k-step groups) and the rope read
  int value_even = 0, value_odd = 0;       // rows 2c (+ 8) and 2c + 1 (+ 8) of load_value
};

template <KvDtype kDtype>
struct KvTile;

template <>
struct KvTile<KvDtype::kFp8E4M3> {
  static constexpr int kRowBytes = 576;
  static constexpr int kCkvChunks = 32;  // 512 latent bytes
  static constexpr int kRowChunks = 36;  // + 64 rope bytes

  // Rows are 576 B (4 chunks past a 128 B line), so rows r and r + 1 already sit on opposite
  // halves of the banks; the XOR spreads rows 2c (the value loads) over all 8 chunk positions.
  __device__ static int latent_xor(int row) { return 2 * ((row >> 1) & 3); }
  __device__ static int rope_xor(int row) { return (row >> 1) & 3; }
  __device__ static int physical_chunk(int row, int chunk) {
    return chunk < kCkvChunks ? chunk ^ latent_xor(row) : kCkvChunks + ((chunk - kCkvChunks) ^ rope_xor(row));
  }

  __device__ static int byte_offset(int row, int chunk) { return row * kRowBytes + 16 * physical_chunk(row, chunk); }

  // Key rows r0 + 8 n + g all have latent_xor 2 (g >> 1) and rope_xor g >> 1; value rows
  // 16 i + 2c + {0, 1, 8, 9} all have latent_xor 2c.
  __device__ static FragmentOffsets offsets(int key_row0, int k_slice, int warp, int g, int c) {
    const int key_row = key_row0 + g;
    FragmentOffsets o;
    o.key_a = byte_offset(key_row, 8 * k_slice + c);
    o.key_b = byte_offset(key_row, 8 * k_slice + 4 + c);
    o.key_rope = byte_offset(key_row, kCkvChunks + k_slice) + 4 * c;
    o.value_even = byte_offset(2 * c, 4 * warp + (g >> 1)) + 8 * (g & 1);
    o.value_odd = o.value_even + kRowBytes;
    return o;
  }

  // n-tile `nt` of this thread's keys, latent k-steps 4 group .. 4 group + 3: one 16-byte read
  // (group 0 at key_a, 1 at key_b).
  __device__ static void load_key_latent(const uint8_t* stage, const FragmentOffsets& o, int nt, int group,
                                         uint32_t (&frag)[4][2]) {
    const uint4 w = *reinterpret_cast<const uint4*>(stage + (group ? o.key_b : o.key_a) + 8 * nt * kRowBytes);
    const uint32_t words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (int s = 0; s < 4; ++s) e4m3x4_to_f16x2x2(words[s], frag[s][0], frag[s][1]);
  }
  // Latent k-steps 2 pair and 2 pair + 1 (an 8-byte read).
  __device__ static void load_key_pair(const uint8_t* stage, const FragmentOffsets& o, int nt, int pair,
                                       uint32_t (&frag)[2][2]) {
    const uint2 w = *reinterpret_cast<const uint2*>(stage + (pair < 2 ? o.key_a : o.key_b) + 8 * (pair % 2) + 8 * nt * kRowBytes);
    e4m3x4_to_f16x2x2(w.x, frag[0][0], frag[0][1]);
    e4m3x4_to_f16x2x2(w.y, frag[1][0], frag[1][1]);
  }
  __device__ static void load_key_rope(const uint8_t* stage, const FragmentOffsets& o, int nt, uint32_t (&frag)[2]) {
    e4m3x4_to_f16x2x2(*reinterpret_cast<const uint32_t*>(stage + o.key_rope + 8 * nt * kRowBytes), frag[0], frag[1]);
  }

  __device__ static void load_value(const uint8_t* stage, const FragmentOffsets& o, int k_step,
                                    uint32_t (&frag)[kValueTiles][2]) {
    const uint8_t* even = stage + o.value_even + 16 * k_step * kRowBytes;
    const uint8_t* odd = stage + o.value_odd + 16 * k_step * kRowBytes;
    const uint2 rows[4] = {*reinterpret_cast<const uint2*>(even), *reinterpret_cast<const uint2*>(odd),
                           *reinterpret_cast<const uint2*>(even + 8 * kRowBytes),
                           *reinterpret_cast<const uint2*>(odd + 8 * kRowBytes)};
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      // Interleave the bytes of tokens (2c, 2c + 1) and (2c + 8, 2c + 9) so one conversion yields
      // a (token, token + 1) pair of the same dim.
      const uint32_t lo0 = half ? rows[0].y : rows[0].x, lo1 = half ? rows[1].y : rows[1].x;
      const uint32_t hi0 = half ? rows[2].y : rows[2].x, hi1 = half ? rows[3].y : rows[3].x;
      const int j = 4 * half;
      e4m3x4_to_f16x2x2(byte_perm(lo0, lo1, 0x5140), frag[j + 0][0], frag[j + 1][0]);
      e4m3x4_to_f16x2x2(byte_perm(lo0, lo1, 0x7362), frag[j + 2][0], frag[j + 3][0]);
      e4m3x4_to_f16x2x2(byte_perm(hi0, hi1, 0x5140), frag[j + 0][1], frag[j + 1][1]);
      e4m3x4_to_f16x2x2(byte_perm(hi0, hi1, 0x7362), frag[j + 2][1], frag[j + 3][1]);
    }
  }

  // n-tiles 4 half .. 4 half + 3 of load_value, from 4-byte reads (fewer live registers).
  __device__ static void load_value_half(const uint8_t* stage, const FragmentOffsets& o, int k_step, int half,
                                         uint32_t (&frag)[4][2]) {
    const uint8_t* even = stage + o.value_even + 16 * k_step * kRowBytes + 4 * half;
    const uint8_t* odd = stage + o.value_odd + 16 * k_step * kRowBytes + 4 * half;
    const uint32_t lo0 = *reinterpret_cast<const uint32_t*>(even), lo1 = *reinterpret_cast<const uint32_t*>(odd);
    const uint32_t hi0 = *reinterpret_cast<const uint32_t*>(even + 8 * kRowBytes);
    const uint32_t hi1 = *reinterpret_cast<const uint32_t*>(odd + 8 * kRowBytes);
    e4m3x4_to_f16x2x2(byte_perm(lo0, lo1, 0x5140), frag[0][0], frag[1][0]);
    e4m3x4_to_f16x2x2(byte_perm(lo0, lo1, 0x7362), frag[2][0], frag[3][0]);
    e4m3x4_to_f16x2x2(byte_perm(hi0, hi1, 0x5140), frag[0][1], frag[1][1]);
    e4m3x4_to_f16x2x2(byte_perm(hi0, hi1, 0x7362), frag[2][1], frag[3][1]);
  }
};

template <>
struct KvTile<KvDtype::kBf16> {
  static constexpr int kRowBytes = 1152;
  static constexpr int kCkvChunks = 64;  // 1024 latent bytes
  static constexpr int kRowChunks = 72;  // + 128 rope bytes

  // Rows are 1152 B (a whole number of 128 B lines): the XOR alone spreads rows over the banks.
  __device__ static int latent_xor(int row) { return row & 7; }
  __device__ static int rope_xor(int row) { return row & 7; }
  __device__ static int physical_chunk(int row, int chunk) {
    return chunk < kCkvChunks ? chunk ^ latent_xor(row) : kCkvChunks + ((chunk - kCkvChunks) ^ rope_xor(row));
  }

  __device__ static int byte_offset(int row, int chunk) { return row * kRowBytes + 16 * physical_chunk(row, chunk); }

  // Key rows r0 + 8 n + g all have XOR g; value rows 16 i + 2c + {0, 8} have 2c, + {1, 9} 2c + 1.
  // The second latent group (chunks + 8) and the second value row pair (+ 8 rows) keep the XOR.
  __device__ static FragmentOffsets offsets(int key_row0, int k_slice, int warp, int g, int c) {
    const int key_row = key_row0 + g;
    FragmentOffsets o;
    o.key_a = byte_offset(key_row, 16 * k_slice + 2 * c);
    o.key_b = byte_offset(key_row, 16 * k_slice + 2 * c + 1);
    o.key_rope = byte_offset(key_row, kCkvChunks + 2 * k_slice + (c >> 1)) + 8 * (c & 1);
    o.value_even = byte_offset(2 * c, 8 * warp + g);
    o.value_odd = byte_offset(2 * c + 1, 8 * warp + g);
    return o;
  }

  __device__ static void load_key_latent(const uint8_t* stage, const FragmentOffsets& o, int nt, int group,
                                         uint32_t (&frag)[4][2]) {
    const int offset = 8 * nt * kRowBytes + 128 * group;
    const uint4 a = *reinterpret_cast<const uint4*>(stage + o.key_a + offset);
    const uint4 b = *reinterpret_cast<const uint4*>(stage + o.key_b + offset);
    frag[0][0] = a.x, frag[0][1] = a.y;
    frag[1][0] = a.z, frag[1][1] = a.w;
    frag[2][0] = b.x, frag[2][1] = b.y;
    frag[3][0] = b.z, frag[3][1] = b.w;
  }
  // Latent k-steps 2 pair and 2 pair + 1 (a 16-byte read).
  __device__ static void load_key_pair(const uint8_t* stage, const FragmentOffsets& o, int nt, int pair,
                                       uint32_t (&frag)[2][2]) {
    const uint4 w = *reinterpret_cast<const uint4*>(stage + (pair % 2 ? o.key_b : o.key_a) + 128 * (pair / 2) + 8 * nt * kRowBytes);
    frag[0][0] = w.x, frag[0][1] = w.y;
    frag[1][0] = w.z, frag[1][1] = w.w;
  }
  __device__ static void load_key_rope(const uint8_t* stage, const FragmentOffsets& o, int nt, uint32_t (&frag)[2]) {
    const uint2 rope = *reinterpret_cast<const uint2*>(stage + o.key_rope + 8 * nt * kRowBytes);
    frag[0] = rope.x, frag[1] = rope.y;
  }

  __device__ static void load_value(const uint8_t* stage, const FragmentOffsets& o, int k_step,
                                    uint32_t (&frag)[kValueTiles][2]) {
    const uint8_t* even = stage + o.value_even + 16 * k_step * kRowBytes;
    const uint8_t* odd = stage + o.value_odd + 16 * k_step * kRowBytes;
    const uint4 rows[4] = {*reinterpret_cast<const uint4*>(even), *reinterpret_cast<const uint4*>(odd),
                           *reinterpret_cast<const uint4*>(even + 8 * kRowBytes),
                           *reinterpret_cast<const uint4*>(odd + 8 * kRowBytes)};
    const uint32_t r0[4] = {rows[0].x, rows[0].y, rows[0].z, rows[0].w};
    const uint32_t r1[4] = {rows[1].x, rows[1].y, rows[1].z, rows[1].w};
    const uint32_t r8[4] = {rows[2].x, rows[2].y, rows[2].z, rows[2].w};
    const uint32_t r9[4] = {rows[3].x, rows[3].y, rows[3].z, rows[3].w};
#pragma unroll
    for (int j = 0; j < kValueTiles; ++j) {
      const uint32_t selector = (j & 1) ? 0x7632 : 0x5410;  // high or low halves of both tokens
      frag[j][0] = byte_perm(r0[j / 2], r1[j / 2], selector);
      frag[j][1] = byte_perm(r8[j / 2], r9[j / 2], selector);
    }
  }

  // n-tiles 4 half .. 4 half + 3 of load_value, from 8-byte reads (fewer live registers).
  __device__ static void load_value_half(const uint8_t* stage, const FragmentOffsets& o, int k_step, int half,
                                         uint32_t (&frag)[4][2]) {
    const uint8_t* even = stage + o.value_even + 16 * k_step * kRowBytes + 8 * half;
    const uint8_t* odd = stage + o.value_odd + 16 * k_step * kRowBytes + 8 * half;
    const uint2 r0 = *reinterpret_cast<const uint2*>(even), r1 = *reinterpret_cast<const uint2*>(odd);
    const uint2 r8 = *reinterpret_cast<const uint2*>(even + 8 * kRowBytes);
    const uint2 r9 = *reinterpret_cast<const uint2*>(odd + 8 * kRowBytes);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const uint32_t selector = (j & 1) ? 0x7632 : 0x5410;
      frag[j][0] = byte_perm(j < 2 ? r0.x : r0.y, j < 2 ? r1.x : r1.y, selector);
      frag[j][1] = byte_perm(j < 2 ? r8.x : r8.y, j < 2 ? r9.x : r9.y, selector);
    }
  }
};

// n-tile `nt` of this thread's keys, all 9 k-steps (latent groups 0 and 1, then the rope).
template <KvDtype kDtype>
__device__ __forceinline__ void load_key(const uint8_t* stage, const FragmentOffsets& o, int nt,
                                         uint32_t (&frag)[kKeySteps][2]) {
#pragma unroll
  for (int group = 0; group < 2; ++group) {
    uint32_t steps[4][2];
    KvTile<kDtype>::load_key_latent(stage, o, nt, group, steps);
#pragma unroll
    for (int s = 0; s < 4; ++s) frag[4 * group + s][0] = steps[s][0], frag[4 * group + s][1] = steps[s][1];
  }
  KvTile<kDtype>::load_key_rope(stage, o, nt, frag[8]);
}

// cp.async of a row's latent region by the 8 threads that share it: the thread that fills physical
// chunks sub, sub + 8, ... (`dst`: the first) reads logical chunks 8 i + (sub ^ x) for the row's XOR x
// (< 8; `src`: the first). The source pointer is made opaque so that the copies keep immediate
// offsets from one 64-bit address (otherwise the compiler folds each offset into its own 64-bit
// multiply-add of slot x stride).
template <int kChunks>
__device__ __forceinline__ void copy_row_latent(uint32_t dst, const uint8_t* src, bool valid) {
  static_assert(kChunks % 8 == 0);
  asm("" : "+l"(src));
#pragma unroll
  for (int i = 0; i < kChunks / 8; ++i) cp_async_16(dst + 128 * i, src + 128 * i, valid);
}

}  // namespace kvpatch::mla::device
