// The 16-bit mma operand type each KV dtype computes in, and how the query, the probabilities and
// the KV bytes become that type. The two instantiations give the tensor cores the same real values
// (and so, given the mma's fixed accumulation order, the same FP32 sums):
//
//  - BF16 KV: BF16 operands as given; probabilities rounded to BF16.
//  - FP8 KV: FP16 operands, because E4M3 -> FP16 is one exact instruction while E4M3 -> BF16 needs
//    four. Every E4M3 value is a normal FP16. A BF16 query row is moved by a power of two 2^-shift
//    into FP16's range (its largest magnitude lands in [2^15, 2^16)), exact for every element
//    >= 2^-32 times the row's largest; the score is multiplied back by 2^shift, exactly. Each
//    probability is first rounded to BF16 (the BF16 path's value), then scaled by 2^15, exact in
//    FP16 for probabilities >= 2^-29; the output is scaled back by 2^-15.
// So the FP8 kernel and the BF16 kernel on an exactly cast cache see identical products except for
// query elements below 2^-32 of their row's largest and probabilities below 2^-29.
#pragma once

#include <cstdint>

#include "device_primitives.cuh"
#include "kvpatch/mla_decode.h"
#include "kvpatch/numeric.h"

namespace kvpatch::mla::device {

template <KvDtype kDtype>
struct MmaOperand;

template <>
struct MmaOperand<KvDtype::kBf16> {
  static constexpr bool kScaledQuery = false;
  static constexpr float kOutUnscale = 1.f;

  // A pair of BF16 query values, as loaded: no shift on this path.
  __device__ static uint32_t query_pair(uint32_t bf16x2, float /*unit*/) { return bf16x2; }
  __device__ static uint32_t prob_pair(float lo, float hi) { return pack_bf16x2(lo, hi); }
  __device__ static void mma(float (&acc)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    mma_bf16_m16n8k16(acc, a, b0, b1);
  }
};

template <>
struct MmaOperand<KvDtype::kFp8E4M3> {
  static constexpr bool kScaledQuery = true;
  static constexpr float kProbScale = 32768.f;          // 2^15
  static constexpr float kOutUnscale = 1.f / 32768.f;  // 2^-15

  // A pair of BF16 query values times 2^-shift (`scale`), as FP16.
  __device__ static uint32_t query_pair(uint32_t bf16x2, float scale) {
    const float lo = bf16_bits_to_float(static_cast<uint16_t>(bf16x2 & 0xFFFFu)) * scale;
    const float hi = bf16_bits_to_float(static_cast<uint16_t>(bf16x2 >> 16)) * scale;
    return pack_f16x2(lo, hi);
  }
  __device__ static uint32_t prob_pair(float lo, float hi) {
    const uint32_t rounded = pack_bf16x2(lo, hi);  // the BF16 path's probabilities
    return pack_f16x2(__uint_as_float(rounded << 16) * kProbScale, __uint_as_float(rounded & 0xFFFF0000u) * kProbScale);
  }
  __device__ static void mma(float (&acc)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    mma_f16_m16n8k16(acc, a, b0, b1);
  }
};

// 2^-shift for a query row whose largest magnitude is `max_abs`: lands it in [2^15, 2^16).
// Zero and non-finite rows keep their scale (shift 0). The shift stays in [-126, 126] so that both
// 2^shift and 2^-shift are normal floats: a finite BF16 row's largest is < 2^128 (shift <= 112, no
// FP16 overflow); a row whose largest is below 2^-111 is scaled by 2^126 only, landing below 2^15
// (still exact for elements >= 2^-17 after scaling).
__device__ inline int query_shift(float max_abs) {
  if (!(max_abs > 0.f) || max_abs == INFINITY) return 0;
  const int exponent = static_cast<int>((__float_as_uint(max_abs) >> 23) & 0xFFu) - 127;
  return max(-126, min(126, exponent - 15));
}

__device__ inline float pow2(int e) { return __uint_as_float(static_cast<uint32_t>(127 + e) << 23); }

}  // namespace kvpatch::mla::device
