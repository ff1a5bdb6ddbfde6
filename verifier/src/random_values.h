// Counter-based random inputs: value i of a stream is a pure function of (seed, stream, i), so the
// host (CPU mode, small-shape references) and device generators produce the same bytes.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define KVVERIFY_HD __host__ __device__ __forceinline__
#else
#define KVVERIFY_HD inline
#endif

namespace kvverify {

enum class RandomStream : uint32_t { kQuery = 1, kKvFp8 = 2, kKvBf16 = 3, kLengths = 4, kPages = 5 };

KVVERIFY_HD uint64_t mix64(uint64_t x) {  // splitmix64's finalizer: full avalanche
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}

KVVERIFY_HD uint64_t random_bits(uint64_t seed, RandomStream stream, uint64_t index) {
  return mix64(mix64(seed ^ (static_cast<uint64_t>(stream) * 0x9E3779B97F4A7C15ull)) + index);
}

// FP8 E4M3 code with magnitude 2^-4..7.5 (exponent field 3..9), a sixteenth of them subnormal or
// zero; never a NaN code. With ~1-magnitude keys and the query below, scores spread over a few
// units, so the softmax is neither uniform nor one-hot.
KVVERIFY_HD uint8_t random_fp8_code(uint64_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 1u) << 7;
  const uint32_t selector = static_cast<uint32_t>(bits >> 1) & 15u;
  const uint32_t exponent = selector == 0 ? 0u : 3u + selector % 7u;
  const uint32_t mantissa = static_cast<uint32_t>(bits >> 5) & 7u;
  return static_cast<uint8_t>(sign | (exponent << 3) | mantissa);
}

// BF16 query value with magnitude 2^-5..1 (all 7 mantissa bits random).
KVVERIFY_HD uint16_t random_query_bf16(uint64_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 1u) << 15;
  const uint32_t exponent = 122u + static_cast<uint32_t>((bits >> 1) % 5u);
  const uint32_t mantissa = static_cast<uint32_t>(bits >> 8) & 0x7Fu;
  return static_cast<uint16_t>(sign | (exponent << 7) | mantissa);
}

// BF16 KV value for the BF16-KV pair: the FP8 keys' magnitude range, but with 7 mantissa bits, so
// values that FP8 cannot hold are exercised too.
KVVERIFY_HD uint16_t random_kv_bf16(uint64_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 1u) << 15;
  const uint32_t exponent = 123u + static_cast<uint32_t>((bits >> 1) % 7u);
  const uint32_t mantissa = static_cast<uint32_t>(bits >> 8) & 0x7Fu;
  return static_cast<uint16_t>(sign | (exponent << 7) | mantissa);
}

}  // namespace kvverify
