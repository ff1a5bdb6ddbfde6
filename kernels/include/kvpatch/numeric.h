// Exact scalar conversions shared by the host reference, the verifier and device code.
// E4M3 (OCP FP8, as torch.float8_e4m3fn): 1 sign, 4 exponent (bias 7), 3 mantissa bits; no
// infinities; 0x7F and 0xFF are NaN. Every E4M3 value is exactly representable in BF16 and FP32.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define KVPATCH_HD __host__ __device__ __forceinline__
#else
#define KVPATCH_HD inline
#endif

namespace kvpatch::mla {

KVPATCH_HD float bits_to_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

KVPATCH_HD uint32_t float_to_bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

// Exact E4M3 -> FP32, built from the bit fields (no table, no rounding).
KVPATCH_HD float e4m3_to_float(uint8_t code) {
  const uint32_t sign = static_cast<uint32_t>(code & 0x80u) << 24;
  const uint32_t exponent = (code >> 3) & 0xFu;
  const uint32_t mantissa = code & 0x7u;
  if (exponent == 0xFu && mantissa == 0x7u) return bits_to_float(sign | 0x7FC00000u);  // NaN
  if (exponent == 0) {
    // Subnormal: mantissa/8 * 2^-6 = mantissa * 2^-9, exact in FP32.
    const float magnitude = static_cast<float>(mantissa) * bits_to_float(0x3B000000u);  // 2^-9
    return bits_to_float(sign | float_to_bits(magnitude));
  }
  // Normal: rebias 7 -> 127 and widen the mantissa 3 -> 23 bits.
  return bits_to_float(sign | ((exponent + 120u) << 23) | (mantissa << 20));
}

// FP32 -> BF16 bits, round to nearest even; NaN stays a quiet NaN of the same sign.
KVPATCH_HD uint16_t float_to_bf16_bits(float f) {
  const uint32_t bits = float_to_bits(f);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  const uint32_t rounding_bias = 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding_bias) >> 16);
}

KVPATCH_HD float bf16_bits_to_float(uint16_t bits) { return bits_to_float(static_cast<uint32_t>(bits) << 16); }

}  // namespace kvpatch::mla
