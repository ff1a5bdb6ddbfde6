// The tensor-core rate the decode kernel can reach with the instructions issue 3 allows on both SM90
// and SM120: mma.sync m16n8k16 with FP32 accumulation, BF16 and FP16 operands, and m16n8k32 with
// E4M3 operands, operands in registers (no memory traffic), 8 independent accumulators per warp,
// 16 warps per SM. Prints TFLOP/s over the whole GPU (4,096 FLOP per k16 mma, 8,192 per k32) from
// CUDA events, best of 5 runs.
// What it is for: at H = 32 the kernel runs 544 mma per 64-token tile per 16-head group (QK 288,
// PV 256), so a shape's mma count over a target time is the mma rate it needs (NOTES.md).
// It also probes how exactly each form accumulates: D = C + A x B with one or two nonzero products
// of powers of two, against the exact FP32 sum. Why: an E4M3 mma could take the keys of QK as they
// are stored (no conversion), if it runs at least as fast as FP16 and keeps FP32 sums exact.
// (sm_90a has no E4M3 mma.sync instruction: ptxas emits F2FP conversions, two FP16 HMMA from zero
// and FP32 adds; sm_120a emits one QMMA.16832. Read the SASS with cuobjdump -sass.)
// Build and run (GPU machine): nvcc -O3 -arch=sm_90a -Ikernels/include -Ikernels/src kernels/bench/mma_peak.cu -o /tmp/mp && /tmp/mp
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "kvpatch/cuda_check.h"
#include "device_primitives.cuh"

using namespace kvpatch::mla::device;

constexpr int kChains = 8, kIters = 4096, kThreads = 512;

enum class Form { kBf16, kF16, kE4m3 };

template <Form kForm>
__device__ __forceinline__ void mma(float (&acc)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (kForm == Form::kBf16) mma_bf16_m16n8k16(acc, a, b0, b1);
  else if constexpr (kForm == Form::kF16) mma_f16_m16n8k16(acc, a, b0, b1);
  else mma_e4m3_m16n8k32(acc, a, b0, b1);
}

template <Form kForm>
__global__ void __launch_bounds__(kThreads) mma_loop(float* sink, uint32_t seed) {
  // Finite operands in every form (E4M3 0x7F / 0xFF are NaN: the high bit of each byte is cleared).
  const uint32_t mask = kForm == Form::kE4m3 ? 0x3f3f3f3fu : 0x3fff3fffu;
  uint32_t a[4] = {seed & mask, (seed ^ 0x3c003c00u) & mask, (seed + 1) & mask, (seed ^ 0x38003800u) & mask};
  const uint32_t b0 = (seed * 3u) & mask, b1 = (seed ^ 0x34003400u) & mask;
  // A different B operand per chain: ptxas must not merge chains whose inputs are equal (it would
  // for E4M3 on SM90, whose mma.sync is not one instruction there).
  uint32_t b0s[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) b0s[c] = (b0 ^ (0x01010101u * c)) & mask;
  float acc[kChains][4] = {};
  for (int i = 0; i < kIters; ++i) {
#pragma unroll
    for (int c = 0; c < kChains; ++c) {
      mma<kForm>(acc[c], a, b0s[c], b1);
      // SM90 runs an E4M3 mma.sync as FP16 products from zero plus FP32 adds into C: with fixed
      // operands ptxas would hoist the products out of the loop. A new B each time keeps them in.
      if constexpr (kForm == Form::kE4m3) b0s[c] = __funnelshift_l(b0s[c], b0s[c], 8);
    }
  }
  float total = 0.f;
#pragma unroll
  for (int c = 0; c < kChains; ++c) total += acc[c][0] + acc[c][1] + acc[c][2] + acc[c][3];
  if (total == 1234.5f) *sink = total;  // keeps the mma chains
}

template <Form kForm>
double tflops(int sms, float* sink) {
  const int blocks = sms;  // one 16-warp block per SM, as the decode kernel runs
  cudaEvent_t start, stop;
  KVPATCH_CUDA_CHECK(cudaEventCreate(&start));
  KVPATCH_CUDA_CHECK(cudaEventCreate(&stop));
  mma_loop<kForm><<<blocks, kThreads>>>(sink, 1);  // warm-up
  float best = 1e30f;
  for (int run = 0; run < 5; ++run) {
    KVPATCH_CUDA_CHECK(cudaEventRecord(start));
    mma_loop<kForm><<<blocks, kThreads>>>(sink, 7u + run);
    KVPATCH_CUDA_CHECK(cudaEventRecord(stop));
    KVPATCH_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.f;
    KVPATCH_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    best = std::min(best, ms);
  }
  const double mmas = static_cast<double>(blocks) * (kThreads / 32) * kIters * kChains;
  const double flop_per_mma = kForm == Form::kE4m3 ? 8192.0 : 4096.0;
  return mmas * flop_per_mma / (best * 1e-3) / 1e12;
}

// A power of two 2^-i as an operand code: FP16 / BF16 (16 bits; i <= 14 normal), E4M3 (8 bits;
// i <= 6 normal, 7-9 subnormal).
__host__ __device__ inline uint32_t pow2_code(Form form, int i) {
  if (form == Form::kF16) return static_cast<uint32_t>(15 - i) << 10;
  if (form == Form::kBf16) return static_cast<uint32_t>(127 - i) << 7;
  return i <= 6 ? static_cast<uint32_t>(7 - i) << 3 : 0x04u >> (i - 7);
}

// One warp: D[0][0] = c + A[0][0] B[0][0] + A[0][1] B[1][0], every other operand zero. Lane 0 holds
// row 0's first k-slots in a[0] (k 0-1 in 16-bit forms, 0-3 in E4M3) and column 0's in b0.
template <Form kForm>
__global__ void accumulate_probe(float c, int i0, int j0, int i1, int j1, float* out) {
  const int lane = threadIdx.x;
  uint32_t a[4] = {0, 0, 0, 0}, b0 = 0, b1 = 0;
  if (lane == 0) {
    const int width = kForm == Form::kE4m3 ? 8 : 16;
    a[0] = pow2_code(kForm, i0) | (i1 >= 0 ? pow2_code(kForm, i1) << width : 0u);
    b0 = pow2_code(kForm, j0) | (j1 >= 0 ? pow2_code(kForm, j1) << width : 0u);
  }
  float acc[4] = {lane == 0 ? c : 0.f, 0.f, 0.f, 0.f};
  mma<kForm>(acc, a, b0, b1);
  if (lane == 0) *out = acc[0];
}

// The largest k for which the form returns 1 + 2^-k exactly: (a) c = 1 plus one product 2^-k; (b)
// c = 0, products 1 and 2^-k in one mma. E4M3 products reach 2^-18 (2^-9 x 2^-9).
template <Form kForm>
void probe(const char* name, float* out) {
  const int max_k = kForm == Form::kE4m3 ? 18 : 23;  // FP32 holds 1 + 2^-23
  int exact_a = 0, exact_b = 0;
  for (int k = 1; k <= max_k; ++k) {
    const int i = (k + 1) / 2, j = k / 2;  // 2^-i x 2^-j = 2^-k
    const float want = 1.f + std::ldexp(1.f, -k);
    float got = 0.f;
    accumulate_probe<kForm><<<1, 32>>>(1.f, i, j, -1, -1, out);
    KVPATCH_CUDA_CHECK(cudaMemcpy(&got, out, sizeof got, cudaMemcpyDeviceToHost));
    if (got == want && exact_a == k - 1) exact_a = k;
    accumulate_probe<kForm><<<1, 32>>>(0.f, 0, 0, i, j, out);
    KVPATCH_CUDA_CHECK(cudaMemcpy(&got, out, sizeof got, cudaMemcpyDeviceToHost));
    if (got == want && exact_b == k - 1) exact_b = k;
  }
  std::printf("  %-5s 1 + 2^-k exact up to k = %d with C = 1 and one product (of %d tried), %d with two products\n",
              name, exact_a, max_k, exact_b);
}

int main() {
  int device = 0, sms = 0, clock_khz = 0;
  KVPATCH_CUDA_CHECK(cudaGetDevice(&device));
  KVPATCH_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  KVPATCH_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
  float* sink = nullptr;
  KVPATCH_CUDA_CHECK(cudaMalloc(&sink, sizeof(float)));
  const double bf16 = tflops<Form::kBf16>(sms, sink), f16 = tflops<Form::kF16>(sms, sink);
  const double e4m3 = tflops<Form::kE4m3>(sms, sink);
  std::printf("%d SMs, max clock %.0f MHz: mma.sync FP32-accumulate: m16n8k16 BF16 %.1f TFLOP/s, FP16 %.1f TFLOP/s; "
              "m16n8k32 E4M3 %.1f TFLOP/s\n",
              sms, clock_khz / 1e3, bf16, f16, e4m3);
  std::printf("accumulation (the exact FP32 result keeps 1 + 2^-k up to k = 23):\n");
  probe<Form::kBf16>("BF16", sink);
  probe<Form::kF16>("FP16", sink);
  probe<Form::kE4m3>("E4M3", sink);
  return 0;
}
