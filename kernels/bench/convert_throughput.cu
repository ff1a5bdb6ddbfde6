// Throughput of the two exact E4M3 -> FP16 conversions the FP8 decode kernel can use, per SM per
// clock (lane results, i.e. FP16 pairs produced by 32 lanes count 32): the one-instruction
// cvt.rn.f16x2.e4m3x2 (SASS F2FP) and the integer form (PRMT with sign replication, shift, mask).
// 32 warps per SM, 8 independent chains per thread; cycles from clock64() per block.
// Then F2FP next to mma.sync, as the kernel runs them (one 16-warp block per SM, 8 chains): each step
// an m16n8k16 FP16 mma whose B operand is (a) the same throughout, (b) a new register each step,
// (c) two F2FP results, or (d) the two F2FP alone. Why: if (c) takes as long as (b) + (d), the conversion and the tensor core take
// turns, and the kernel's 2 conversions per mma cost tensor time, not only issue slots.
// Last, (e) a B operand from two 8 x 8 transposes (movmatrix) and (f) the transposes alone: what a
// design that makes PV's value fragments from QK's converted key fragments would pay instead of (c)
// (kernels/bench/NOTES.md, item 28).
// Build and run (GPU machine): nvcc -O3 -arch=sm_90a -Ikernels/include -Ikernels/src kernels/bench/convert_throughput.cu -o /tmp/ct && /tmp/ct
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "device_primitives.cuh"
#include "probe_timing.cuh"

using namespace kvpatch::mla::device;
using namespace kvpatch::probe;

// The integer form (tried for the kernel's values in v6: slower there; kept here to compare).
// PTX prmt in its default mode, where a selector nibble's bit 3 replicates the sign bit of the
// selected byte (__byte_perm's documentation only promises the low three bits).
__device__ __forceinline__ uint32_t byte_perm_sign(uint32_t a, uint32_t b, uint32_t selector) {
  uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(selector));
  return d;
}

// Two E4M3 codes, each already sign-extended to its 16-bit half (a PRMT with sign replication), to
// FP16 x 2^-8 with integer instructions: sign to bit 15, exponent and mantissa to bits 13-7. Exact
// for every code but NaN, subnormals included (E4M3's bias 7 is FP16's 15 minus 8).
__device__ __forceinline__ uint32_t e4m3x2_to_f16x2_scaled(uint32_t sign_extended) {
  return (sign_extended << 7) & 0xBF80BF80u;
}

constexpr int kIters = 4096, kChains = 8, kThreads = 256, kBlocksPerSm = 4;

template <bool kInteger>
__global__ void __launch_bounds__(kThreads) convert_loop(uint32_t* sink, long long* cycles) {
  uint32_t x[kChains];
  seed_chains(x);
  timed(cycles, [&] {
    for (int it = 0; it < kIters; ++it)
#pragma unroll
      for (int i = 0; i < kChains; ++i) {
        if constexpr (kInteger) {
          x[i] = e4m3x2_to_f16x2_scaled(byte_perm_sign(x[i], x[i] >> 3, 0xC480u));
        } else {
          uint32_t lo, hi;
          e4m3x4_to_f16x2x2(x[i], lo, hi);
          x[i] = lo ^ hi;
        }
      }
  });
  uint32_t acc = 0;
  for (int i = 0; i < kChains; ++i) acc ^= x[i];
  if (acc == 0x12345678u) sink[0] = acc;  // keeps the loop alive
}

// An 8 x 8 matrix of 16-bit values, one row pair per quad, transposed across the warp.
__device__ __forceinline__ uint32_t transpose_8x8(uint32_t a) {
  uint32_t d;
  asm("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(d) : "r"(a));
  return d;
}

enum class Mix { kMmaFixedB, kMmaOnly, kMmaAndConvert, kConvertOnly, kMmaAndTranspose, kTransposeOnly };
constexpr int kMixThreads = 512;

template <Mix kMix>
__global__ void __launch_bounds__(kMixThreads, 1) mix_loop(uint32_t* sink, long long* cycles) {
  const uint32_t a[4] = {0x3c003c00u, 0x38003800u ^ threadIdx.x, 0x34003400u, 0x30003000u};
  uint32_t x[kChains], folded = 0;
  float acc[kChains][4] = {};
  seed_chains(x);
  timed(cycles, [&] {
    for (int it = 0; it < kIters; ++it)
#pragma unroll
      for (int i = 0; i < kChains; ++i) {
        // Raw registers as FP16 are finite here (exponent < 31), like converted E4M3 codes.
        uint32_t b0 = x[i] & 0x3fff3fffu, b1 = (x[i] ^ 0x00ff00ffu) & 0x3fff3fffu;
        if constexpr (kMix == Mix::kMmaFixedB) b0 = a[1], b1 = a[2];
        if constexpr (kMix == Mix::kMmaAndConvert || kMix == Mix::kConvertOnly) e4m3x4_to_f16x2x2(x[i], b0, b1);
        if constexpr (kMix == Mix::kMmaAndTranspose || kMix == Mix::kTransposeOnly)
          b0 = transpose_8x8(b0), b1 = transpose_8x8(b1);
        if constexpr (kMix == Mix::kConvertOnly || kMix == Mix::kTransposeOnly) folded ^= b0 ^ b1;
        else mma_f16_m16n8k16(acc[i], a, b0, b1);
        x[i] = __funnelshift_l(x[i], x[i], 8);  // new codes each step (no hoisting)
      }
  });
  float total = 0.f;
  for (int i = 0; i < kChains; ++i) total += acc[i][0] + acc[i][1] + acc[i][2] + acc[i][3];
  if (total == 1234.5f || folded == 0x12345678u) sink[0] = folded;  // keeps the loop alive
}

template <bool kInteger>
void measure(const char* name, int sms, int conversions_per_step) {
  const int blocks = sms * kBlocksPerSm;
  const long long worst = worst_block_cycles(
      blocks, [&](uint32_t* sink, long long* cycles) { convert_loop<kInteger><<<blocks, kThreads>>>(sink, cycles); });
  const double results = double(kBlocksPerSm) * kThreads * kIters * kChains * conversions_per_step;
  std::printf("%-34s %6.1f FP16-pair results per SM per clock (%lld cycles)\n", name, results / worst, worst);
}

// Cycles per step and SM (a step: 16 warps x 8 chains of one mma and / or two F2FP).
template <Mix kMix>
double mix_cycles(int sms) {
  const long long worst = worst_block_cycles(
      sms, [&](uint32_t* sink, long long* cycles) { mix_loop<kMix><<<sms, kMixThreads>>>(sink, cycles); });
  return static_cast<double>(worst) / kIters;
}

int main() {
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess) return 77;
  measure<false>("cvt.rn.f16x2.e4m3x2 (F2FP)", sms, 2);
  measure<true>("integer (PRMT, shift, mask)", sms, 1);
  const double fixed = mix_cycles<Mix::kMmaFixedB>(sms);
  const double mma = mix_cycles<Mix::kMmaOnly>(sms), both = mix_cycles<Mix::kMmaAndConvert>(sms);
  const double convert = mix_cycles<Mix::kConvertOnly>(sms);
  const double with_transpose = mix_cycles<Mix::kMmaAndTranspose>(sms);
  const double transpose = mix_cycles<Mix::kTransposeOnly>(sms);
  const int steps = kMixThreads / 32 * kChains;  // warp-level mma (or F2FP pairs) per step and SM
  std::printf("16 warps per SM, %d mma per step: mma with one B throughout %.1f cycles per step, with a new B "
              "each mma %.1f, with a new B from 2 F2FP %.1f; the F2FP alone %.1f (mma + F2FP %.1f)\n",
              steps, fixed, mma, both, convert, mma + convert);
  std::printf("16 warps per SM, %d mma per step: with a new B from 2 movmatrix %.1f cycles per step; the movmatrix "
              "alone %.1f (mma + movmatrix %.1f)\n",
              steps, with_transpose, transpose, mma + transpose);
  return 0;
}
